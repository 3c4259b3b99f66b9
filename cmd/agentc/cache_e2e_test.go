package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
)

const cachedSource = `workflow cached "A cached lookup"

tool lookup "Answers" {
  input  { q: string }
  run    = exec { command = ["echo", "answer for {input.q}"] }
  effect = read_only
}

state S { q: string, a: string = "" }

graph g(S) input q output a {
  node look = tool lookup { q = q } into a
    cache ttl 1h
  start -> look
  look -> end
}
`

// TestDurableCacheE2E: two agentc run processes over one store with the
// same input: the cached tool is called once, the second run replays the
// stored entry (spec/vm.md, "Policies"; issue 16 item 6). Another input is
// a miss.
func TestDurableCacheE2E(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "cached.agent"), []byte(cachedSource), 0o644); err != nil {
		t.Fatal(err)
	}
	env := cleanEnv("AGENTC_DATA=" + filepath.Join(root, ".agentc"))
	// calls counts the tool's calls in one run's events: a hit calls no
	// tool, so it emits no tool_call.
	run := func(input, session string) (calls int) {
		t.Helper()
		r := runAgentc(t, root, env, "run", "cached.agent", "--input", input, "--session", session, "--json")
		if r.code != 0 || !strings.Contains(r.stdout, "answer for "+input) {
			t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			e, err := runtime.DecodeEvent([]byte(line))
			if err != nil {
				t.Fatalf("event %s: %v", line, err)
			}
			if e.Kind == runtime.EventToolCall && e.Node == "look" {
				calls++
			}
		}
		return calls
	}
	total := run("x", "s1")
	total += run("x", "s2")
	if total != 1 {
		t.Fatalf("two runs with one input called the cached tool %d times, want 1", total)
	}
	if n := run("y", "s3"); n != 1 {
		t.Fatalf("another input called the tool %d times, want 1", n)
	}
}
