package benchsrc_test

import (
	"strings"
	"testing"

	"github.com/agentc/agentc/bench/internal/benchsrc"
	"github.com/agentc/agentc/compiler/bytecode"
)

const src = `workflow w "A bench"

state S {
  n : int = 0
}

graph g(S) {
  node inc = set { n = n + 1 }

  start -> inc
  inc -> end
}
`

func TestCompileBytes(t *testing.T) {
	prog, enc, err := benchsrc.CompileBytes("w.agent", src)
	if err != nil {
		t.Fatal(err)
	}
	if prog == nil || len(enc) == 0 {
		t.Fatalf("program %v, %d bytes", prog, len(enc))
	}
	if h := bytecode.HashOf(enc); h == ([32]byte{}) {
		t.Error("the encoding carries no hash")
	}
	if _, err := benchsrc.Compile("bad.agent", strings.Replace(src, "n + 1", "m + 1", 1)); err == nil || !strings.Contains(err.Error(), "bad.agent") {
		t.Errorf("an unknown name compiled: %v", err)
	}
}
