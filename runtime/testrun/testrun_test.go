package testrun

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime/runtimetest"
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
  node no   = set { a = "no" }
  start -> echo
  echo  -> ask
  ask   -> end when ok
  ask   -> no otherwise
  no    -> end
}

test "answered" {
  run    = g
  input  = "hi"
  answer ask = true
  expect a == "got hi"
  expect ok
  expect visited(echo) before visited(ask)
}

test "wrong" {
  run    = g
  input  = "hi"
  answer ask = true
  expect a == "nope"
  expect visited(ask) before visited(echo)
}

test "unanswered" {
  run    = g
  input  = "hi"
}
`

// TestRun: answers resume interrupts, expectations are checked on the
// final state and the finishing order, failures name file:line and the
// source, and coverage counts the edges taken.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/mini.agent", []byte(mini), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := runtimetest.Compile(t, os.DirFS(dir), "mini.agent")
	cfg := Config{Root: dir, Display: func(n string) string { return "./" + n }, Verified: true}
	want := []struct {
		pass     bool
		status   string
		failures []string
	}{
		{true, "completed", nil},
		{false, "completed", []string{`./mini.agent:33: not met: expect a == "nope"`,
			`./mini.agent:34: visited(ask) before visited(echo) not met (finished: echo, ask)`}},
		{true, "interrupted", nil},
	}
	if len(prog.Tests) != len(want) {
		t.Fatalf("%d tests", len(prog.Tests))
	}
	var cov Coverage
	for i := range prog.Tests {
		r := Run(context.Background(), prog, &prog.Tests[i], cfg)
		cov.Add(r)
		w := want[i]
		if r.Pass != w.pass || r.Status != w.status || strings.Join(r.Failures, "\n") != strings.Join(w.failures, "\n") {
			t.Errorf("test %q: pass %v status %s failures %q; want %v %s %q", r.Name, r.Pass, r.Status, r.Failures, w.pass, w.status, w.failures)
		}
	}
	gs := cov.Graphs(prog)
	if len(gs) != 1 || gs[0] != (GraphCoverage{Graph: "g", Taken: 3, Total: 5}) {
		t.Errorf("coverage %+v, want g 3/5", gs)
	}
}

// TestFile: every test of a file is reported in order, as text and JSON,
// with the coverage of the graphs they ran.
func TestFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/mini.agent", []byte(mini), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := runtimetest.Compile(t, os.DirFS(dir), "mini.agent")
	var got []string
	cov := File(context.Background(), prog, "w/mini.agent", Config{Root: dir, Verified: true}, func(r Report) {
		got = append(got, regexp.MustCompile(`\(\d[^)]*\)`).ReplaceAllString(r.String(), "(T)"))
	})
	want := []string{
		"PASS w/mini.agent: answered (T)\n",
		"FAIL w/mini.agent: wrong (T)\n    mini.agent:33: not met: expect a == \"nope\"\n    mini.agent:34: visited(ask) before visited(echo) not met (finished: echo, ask)\n",
		"PASS w/mini.agent: unanswered (T)\n",
	}
	if strings.Join(got, "") != strings.Join(want, "") {
		t.Errorf("reports\n%s\nwant\n%s", strings.Join(got, ""), strings.Join(want, ""))
	}
	if len(cov) != 1 || cov[0] != (GraphCoverage{Graph: "g", Taken: 3, Total: 5}) {
		t.Errorf("coverage %+v, want g 3/5", cov)
	}
}
