package assemble

import (
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime/runtimetest"
)

// TestReplayFor: a named runnable replays its first test block; an unknown
// name and an ambiguous default are errors naming the runnables.
func TestReplayFor(t *testing.T) {
	src := `workflow w

state S { q: string }

graph one(S) input q {
  node n = set { q = "1" }
  start -> n
  n -> end
}

graph two(S) input q {
  start -> end
}

test "two runs" {
  run   = two
  input = "x"
}
`
	prog := runtimetest.CompileSource(t, "w.agent", src)
	for _, tc := range []struct {
		name, want, wantErr string
	}{
		{"two", "two runs", ""},
		{"one", "", ""},
		{"nosuch", "", `no graph or agent "nosuch" (runnables: one, two)`},
		{"", "", "no serve block and several runnables: choose one of one, two"},
	} {
		test, err := ReplayFor(prog, tc.name)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ReplayFor(%q) = %v, want %q", tc.name, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("ReplayFor(%q): %v", tc.name, err)
		case tc.want == "" && test != nil, tc.want != "" && (test == nil || test.Name != tc.want):
			t.Errorf("ReplayFor(%q) = %+v, want test %q", tc.name, test, tc.want)
		}
	}
}
