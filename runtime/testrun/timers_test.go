package testrun

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentc/agentc/runtime/runtimetest"
)

const timersSrc = `workflow follow

state Nap { item: string, out: string = "" }

graph nap(Nap) input item output out {
  node rest = wait 1h
  node mark = set { out = item + " rested" }
  start -> rest
  rest  -> mark
  mark  -> end
}

state S {
  q      : string
  items  : list<string> = ["a", "b"]
  rested : list<string> = [] reduce append
  ok     : bool = false
  note   : string = ""
}

graph g(S) input q {
  node cool = wait 24h
  node each = map x in items { graph nap { item = x } } into rested
  node ask  = interrupt "Close?" returns bool timeout 48h else -> esc into ok
  node esc  = set { note = "escalated: {error.kind}" }
  node late = wait until "2030-01-01T00:00:00Z"
  start -> cool
  cool  -> each
  each  -> ask
  ask   -> late
  esc   -> late
  late  -> end
}

test "nobody answers" {
  run   = g
  input = "x"
  expect note == "escalated: timeout"
  expect rested == ["a rested", "b rested"]
  expect visited(cool) before visited(each)
  expect visited(esc) before visited(late)
}

test "an answer beats the timeout" {
  run   = g
  input = "x"
  answer ask = true
  expect ok
  expect note == ""
}
`

// TestTimersInTests: a test block's clock moves to each deadline when no
// answer is left — waits (also inside a map's sub-runs, and until a fixed
// time) end and an unanswered interrupt times out — deterministically, and
// an answer given by the test comes first (issue 16 item 3).
func TestTimersInTests(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "follow.agent"), []byte(timersSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := runtimetest.Compile(t, os.DirFS(dir), "follow.agent")
	cfg := Config{Root: dir, Verified: true}
	for i := 0; i < 50; i++ {
		for ti := range prog.Tests {
			if r := Run(context.Background(), prog, &prog.Tests[ti], cfg); !r.Pass || r.Status != "completed" {
				t.Fatalf("run %d, test %q: %s %v", i, r.Name, r.Status, r.Failures)
			}
		}
	}
}
