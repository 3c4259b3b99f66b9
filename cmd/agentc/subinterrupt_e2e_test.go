package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
)

// nestSource: an interrupt inside a sub-graph (review) inside a sub-graph
// (vet) inside a map (each): three pending interrupts at once, by path id.
const nestSource = `workflow nest

state Ask { item: string, note: string = "" }

graph ask(Ask) input item output note {
  node q = interrupt "Approve {item}?" returns string into note
  start -> q
  q -> end
}

state Review { item: string, note: string = "", verdict: string = "" }

graph review(Review) input item output verdict {
  node vet  = graph ask { item = item } into note
  node mark = set { verdict = item + ":" + note }
  start -> vet
  vet -> mark
  mark -> end
}

state Batch { items: list<string> = ["a", "b", "c"], verdicts: list<string> = [] reduce append, done: bool = false }

graph batch(Batch) {
  node each = map x in items { graph review { item = x } } into verdicts
  node fin  = set { done = true }
  start -> each
  each -> fin
  fin -> end
}
`

// twinSource is nestSource without the interrupt: the answer is computed.
var twinSource = strings.Replace(nestSource, `node q = interrupt "Approve {item}?" returns string into note`,
	`node q = set { note = upper(item) }`, 1)

// TestSubRunInterruptsAcrossRestarts (issue 16 item 2 acceptance): three
// interrupts inside a sub-graph inside a map are listed with their path
// ids, answered one at a time by three more processes (by full id, by the
// path relative to the runnable, then the last one with a bare value), and
// the run ends in the state of an uninterrupted run; a wrong type for a
// nested interrupt is refused, and the journal replays to the same state.
func TestSubRunInterruptsAcrossRestarts(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{"nest.agent": nestSource, "twin.agent": twinSource} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := cleanEnv("AGENTC_DATA=" + filepath.Join(root, ".agentc"))
	finished := func(r result) *runtime.Event {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		fin, err := runtime.DecodeEvent([]byte(lines[len(lines)-1]))
		if err != nil || fin.Kind != runtime.EventRunFinished {
			t.Fatalf("last line %q: %v\n%s", lines[len(lines)-1], err, r.stderr)
		}
		return fin
	}
	pending := func(fin *runtime.Event) []string {
		var ids []string
		for _, in := range fin.Interrupts {
			ids = append(ids, in.ID)
			if in.Schema["type"] != "string" || !strings.HasPrefix(in.Prompt, "Approve ") {
				t.Errorf("interrupt %+v", in)
			}
		}
		return ids
	}

	r := runAgentc(t, root, env, "run", "nest.agent", "--input", "go", "--run", "batch", "--session", "s", "--json")
	fin := finished(r)
	want := []string{"batch/each/0/review/vet/ask/q", "batch/each/1/review/vet/ask/q", "batch/each/2/review/vet/ask/q"}
	if r.code != 3 || fin.Status != runtime.StatusInterrupted || !slices.Equal(pending(fin), want) {
		t.Fatalf("first run: exit %d, %s, pending %v\n%s", r.code, fin.Status, pending(fin), r.stderr)
	}
	run := fin.Run

	// A value of the wrong type for a nested interrupt is refused; the run still waits on all three.
	r = runAgentc(t, root, env, "run", "nest.agent", "--resume", run, "--value", `{"`+want[1]+`": 7}`, "--json")
	if r.code != 2 || !strings.Contains(r.stderr, want[1]) {
		t.Fatalf("a wrong value: exit %d\n%s", r.code, r.stderr)
	}

	steps := []struct {
		value string
		left  []string
	}{
		{`{"` + want[1] + `": "B"}`, []string{want[0], want[2]}},
		{`{"each/0/review/vet/ask/q": "A"}`, []string{want[2]}},
		{`"C"`, nil},
	}
	for i, s := range steps {
		r = runAgentc(t, root, env, "run", "nest.agent", "--resume", run, "--value", s.value, "--json")
		fin = finished(r)
		if fin.Run != run {
			t.Fatalf("answer %d resumed %s, not %s", i, fin.Run, run)
		}
		if s.left != nil {
			if r.code != 3 || !slices.Equal(pending(fin), s.left) {
				t.Fatalf("answer %d: exit %d, pending %v, want %v\n%s", i, r.code, pending(fin), s.left, r.stderr)
			}
			continue
		}
		if r.code != 0 || fin.Status != runtime.StatusCompleted {
			t.Fatalf("last answer: exit %d %s\n%s", r.code, fin.Status, r.stderr)
		}
	}

	twin := runAgentc(t, root, env, "run", "twin.agent", "--input", "go", "--run", "batch", "--session", "t", "--json")
	tfin := finished(twin)
	if twin.code != 0 {
		t.Fatalf("twin: exit %d\n%s", twin.code, twin.stderr)
	}
	var got, exp map[string]any
	if err := json.Unmarshal(fin.Output, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(tfin.Output, &exp); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(got)
	eb, _ := json.Marshal(exp)
	if string(gb) != string(eb) || !strings.Contains(string(gb), `"verdicts":["a:A","b:B","c:C"]`) {
		t.Fatalf("final state %s, uninterrupted %s", gb, eb)
	}

	r = runAgentc(t, root, env, "replay", run)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "identical state") {
		t.Fatalf("replay: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
