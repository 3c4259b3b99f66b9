package testfiles

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/stdlib"
)

const mini = `workflow mini "tiny"

state S {
  q  : string
  a  : string = ""
  ok : bool = false
}

graph g(S) input q output a {
  node echo = set { a = "got {q}" }
  node ask  = interrupt "OK?" returns bool into ok
  start -> echo
  echo  -> ask
  ask   -> end
}

test "answered" {
  run    = g
  input  = "hi"
  answer ask = true
  expect a == "got hi"
}

test "wrong" {
  run    = g
  input  = "hi"
  answer ask = true
  expect a == "nope"
}
`

const broken = `workflow broken "x"
graph g(S) { start -> end }
test "t" { run = g }
test "u" { run = g }
`

// TestFiles: a passing and a failing test with the graph's coverage, a
// file that does not compile failing each of its blocks (its diagnostics
// shown), and the same tests as JSON objects.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for name, src := range map[string]string{"mini.agent": mini, "broken.agent": broken} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	open := func(file string) (*project.Project, error) { return project.OpenFor(file, stdlib.Universe()) }
	proj, err := open("mini.agent")
	if err != nil {
		t.Fatal(err)
	}
	var out, errw bytes.Buffer
	shown := 0
	r := Run{Open: open, Diags: func(ds []diag.Diagnostic, _ diag.Sources) error { shown += len(ds); return nil }, Out: &out, Err: &errw, Prefix: "x: "}
	passed, total, err := r.Args(context.Background(), []string{"mini.agent", "broken.agent"})
	if err != nil || passed != 1 || total != 4 || shown == 0 {
		t.Fatalf("passed %d of %d, %d diagnostics\n%s%s", passed, total, shown, out.String(), errw.String())
	}
	for _, want := range []string{"PASS mini.agent: answered (", "FAIL mini.agent: wrong (", "coverage mini.agent: graph g: 3/3 edges\n", "FAIL broken.agent (does not compile: 2 test(s) not run)\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
	out.Reset()
	r.JSON = true
	if passed, total = r.File(context.Background(), proj, "mini.agent"); passed != 1 || total != 2 {
		t.Fatalf("json: passed %d of %d", passed, total)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var rep struct {
		Name string `json:"name"`
		Pass bool   `json:"pass"`
	}
	if len(lines) != 2 || json.Unmarshal([]byte(lines[1]), &rep) != nil || rep.Name != "wrong" || rep.Pass {
		t.Fatalf("json lines:\n%s", out.String())
	}
	if _, _, err := r.Args(context.Background(), []string{"missing.agent"}); err == nil {
		t.Error("a file that does not exist: no error")
	}
	outside := filepath.Join(t.TempDir(), "o.agent")
	if passed, total = r.File(context.Background(), proj, outside); passed != 0 || total != 1 || !strings.HasPrefix(errw.String(), "x: ") {
		t.Fatalf("a file outside the project: %d of %d, %q", passed, total, errw.String())
	}
}
