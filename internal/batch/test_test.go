package batch

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

const hello = `workflow hello "h"

state T {
  name     : string
  greeting : string = ""
}

graph greet(T) input name output greeting {
  node say = set { greeting = "hello {name}" }
  start -> say
  say   -> end
}

test "greets" {
  run    = greet
  input  = "ann"
  expect greeting == "hello ann"
}

test "wrong" {
  run    = greet
  input  = "ann"
  expect greeting == "bye"
}
`

const broken = `workflow broken "x"
graph g(S) { start -> end }
test "t" { run = g }
test "u" { run = g }
`

// TestTest: a passing and a failing test with the graph's coverage, a
// file that does not compile failing each of its blocks (its diagnostics
// shown), and the same tests as JSON objects.
func TestTest(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for name, src := range map[string]string{"hello.agent": hello, "broken.agent": broken} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	open := func(file string) (*project.Project, error) { return project.OpenFor(file, stdlib.Universe()) }
	proj, err := open("hello.agent")
	if err != nil {
		t.Fatal(err)
	}
	var out, errw bytes.Buffer
	shown := 0
	r := Run{Open: open, Diags: func(ds []diag.Diagnostic, _ diag.Sources) error { shown += len(ds); return nil }, Out: &out, Err: &errw, Prefix: "x: "}
	passed, total, err := r.Test(context.Background(), []string{"hello.agent", "broken.agent"}, false)
	if err != nil || passed != 1 || total != 4 || shown == 0 {
		t.Fatalf("passed %d of %d, %d diagnostics\n%s%s", passed, total, shown, out.String(), errw.String())
	}
	for _, want := range []string{"PASS hello.agent: greets (", "FAIL hello.agent: wrong (", "coverage hello.agent: graph greet: 2/2 edges\n", "FAIL broken.agent (does not compile: 2 test(s) not run)\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
	out.Reset()
	if passed, total = r.testFile(context.Background(), proj, "hello.agent", true); passed != 1 || total != 2 {
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
	if _, _, err := r.Test(context.Background(), []string{"missing.agent"}, false); err == nil {
		t.Error("a file that does not exist: no error")
	}
	outside := filepath.Join(t.TempDir(), "o.agent")
	if passed, total = r.testFile(context.Background(), proj, outside, false); passed != 0 || total != 1 || !strings.HasPrefix(errw.String(), "x: ") {
		t.Fatalf("a file outside the project: %d of %d, %q", passed, total, errw.String())
	}
}
