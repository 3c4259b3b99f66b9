package testrun

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentc/agentc/runtime/runtimetest"
)

const typedInputSrc = `workflow typed

state E {
  choice : "yes" | "no"
  seen   : string = ""
}

graph pick(E) input choice output seen {
  node see = set { seen = "got {choice}" }
  start -> see
  see   -> end
}

state J {
  doc : json
  n   : json = null
}

graph parse(J) input doc {
  node count = set { n = doc.n }
  start -> count
  count -> end
}

state M {
  log : messages = []
  n   : int = 0
}

graph chat(M) input log {
  node count = set { n = len(log) }
  start -> count
  count -> end
}

test "an enum input" {
  run   = pick
  input = "yes"
  expect seen == "got yes"
}

test "a json input" {
  run   = parse
  input = { n: 3 }
  expect n == 3
}

test "a messages input" {
  run   = chat
  input = [{ role: "user", content: "hi" }, { role: "assistant", content: "hello" }, { role: "user", content: "bye" }]
  expect n == 3
}
`

// TestTypedInputs: a test's input reaches an enum, a json and a messages
// field as the value it is, not as text (issue 18).
func TestTypedInputs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "typed.agent"), []byte(typedInputSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := runtimetest.Compile(t, os.DirFS(dir), "typed.agent")
	for i := range prog.Tests {
		if r := Run(context.Background(), prog, &prog.Tests[i], Config{Root: dir, Verified: true}); !r.Pass {
			t.Errorf("%s: %s %v", r.Name, r.Status, r.Failures)
		}
	}
}
