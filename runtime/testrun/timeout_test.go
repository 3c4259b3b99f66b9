package testrun

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentc/agentc/runtime/runtimetest"
)

const timeoutSrc = `workflow slow

tool lookup "Looks a word up" {
  input  { q: string }
  output string
  run    = exec { command = ["false"] }
  effect = read_only
}

state S {
  q : string
  a : string = ""
}

graph g(S) input q output a {
  node look = tool lookup { q = q } timeout 1s retry 2 backoff 10ms..20ms on [unavailable] into a
  start -> look
  look  -> end
}

test "a replayed result beats a short timeout" {
  run   = g
  input = "hi"
  tool lookup replay "lookup.yaml"
  expect a == "found"
}
`

const timeoutFixture = `version: 1
tool: lookup
results:
  - match: {}
    times: 1
    error: {kind: unavailable, message: "try again"}
  - match: {}
    output: "found"
`

// TestShortTimeoutIsDeterministic: a node with a 1 s timeout whose result
// is replayed (after a retried failure, so the backoff waits too) passes
// every time: the test clock skips backoff waits and never fires a
// timeout (issue 18).
func TestShortTimeoutIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"slow.agent": timeoutSrc, "lookup.yaml": timeoutFixture} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prog := runtimetest.Compile(t, os.DirFS(dir), "slow.agent")
	cfg := Config{Root: dir, Verified: true}
	failed := 0
	for i := 0; i < 200; i++ {
		if r := Run(context.Background(), prog, &prog.Tests[0], cfg); !r.Pass {
			if failed++; failed == 1 {
				t.Errorf("run %d: %s %v", i, r.Status, r.Failures)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of 200 runs failed", failed)
	}
}

// TestExamplesAreDeterministic: every test block of the examples passes
// 200 times over (20 with -short or -race).
func TestExamplesAreDeterministic(t *testing.T) {
	root, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "*", "*.agent"))
	if err != nil || len(files) == 0 {
		t.Fatalf("examples: %v", err)
	}
	reps := 200
	if testing.Short() || raceEnabled {
		reps = 20
	}
	for _, f := range files {
		name, _ := filepath.Rel(root, f)
		prog := runtimetest.Compile(t, os.DirFS(root), filepath.ToSlash(name))
		for i := range prog.Tests {
			test := &prog.Tests[i]
			for rep := 0; rep < reps; rep++ {
				if r := Run(context.Background(), prog, test, Config{Root: root, Verified: true}); !r.Pass {
					t.Fatalf("%s: %q failed on repetition %d: %s %v", name, test.Name, rep+1, r.Status, r.Failures)
				}
			}
		}
	}
}
