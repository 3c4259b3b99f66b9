package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime/store"
)

func TestRunDetail(t *testing.T) {
	ctx := context.Background()
	in, _, run := fixture(t)
	d, err := in.RunDetail(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, n := range d.Graph.Nodes {
		states[n.Name] = n.State
	}
	want := map[string]string{"start": NodeFinished, "echo": NodeFinished, "ask": NodeWaiting, "no": NodeIdle, "end": NodeIdle}
	for k, v := range want {
		if states[k] != v {
			t.Errorf("node %s: %s, want %s", k, states[k], v)
		}
	}
	if d.Run.ID != run || d.Run.Status != "interrupted" || d.Run.User != "u" || d.Step != 2 || strings.Join(d.Frontier, ",") != "ask" {
		t.Errorf("detail %+v", d)
	}
	if len(d.Interrupts) != 1 || d.Interrupts[0].ID != "g/ask" || d.Interrupts[0].Node != "ask" || d.Interrupts[0].Schema["type"] != "boolean" {
		t.Errorf("interrupts %+v", d.Interrupts)
	}
	if d.Graph.Nodes[2].Shape != "box" || d.Graph.Nodes[0].Shape != "terminal" {
		t.Errorf("shapes %+v", d.Graph.Nodes)
	}
	runs, next, err := in.Runs(ctx, store.RunFilter{App: "mini", User: "u"})
	if err != nil || next != "" || len(runs) != 1 || runs[0].ID != run || runs[0].Session != "s" {
		t.Errorf("Runs = %+v, %q, %v", runs, next, err)
	}
	// A fork shows what its parent finished before the fork's step.
	fk, err := in.Fork(ctx, ForkRequest{Run: run, Step: 1})
	if err != nil {
		t.Fatal(err)
	}
	fd, err := in.RunDetail(ctx, fk.Run)
	if err != nil || fd.Run.ParentRun != run || fd.Graph.Nodes[2].Name != "echo" || fd.Graph.Nodes[2].State != NodeFinished {
		t.Errorf("the fork's detail %+v, %v; want echo finished", fd, err)
	}
	if _, err := in.RunDetail(ctx, "run_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a missing run: %v", err)
	}
}

func TestDiff(t *testing.T) {
	ctx := context.Background()
	in, _, run := fixture(t)
	tests := []struct {
		step    uint64
		prev    string // "" for none
		changes string
	}{
		{0, "", `[{"field":"q","op":"added","before":null,"after":"hi"},{"field":"a","op":"added","before":null,"after":""},{"field":"ok","op":"added","before":null,"after":false}]`},
		{1, "0", `[{"field":"a","op":"changed","before":"","after":"got hi"}]`},
		{2, "1", `[]`},
	}
	for _, tt := range tests {
		d, err := in.Diff(ctx, run, tt.step)
		if err != nil {
			t.Fatalf("step %d: %v", tt.step, err)
		}
		got, _ := json.Marshal(d.Changes)
		prev := ""
		if d.Previous != nil {
			prev = string(rune('0' + *d.Previous))
		}
		if string(got) != tt.changes || prev != tt.prev || d.Step != tt.step {
			t.Errorf("step %d: previous %q changes %s\nwant %q %s", tt.step, prev, got, tt.prev, tt.changes)
		}
	}
	if _, err := in.Diff(ctx, run, 9); err == nil {
		t.Error("step 9 has a diff")
	}
}

func TestChecks(t *testing.T) {
	ctx := context.Background()
	in, _, run := fixture(t)
	raw := func(m map[string]string) map[string]json.RawMessage {
		out := map[string]json.RawMessage{}
		for k, v := range m {
			out[k] = json.RawMessage(v)
		}
		return out
	}
	answers := []struct {
		values map[string]string
		want   string // FieldErrors' text; "" for none
	}{
		{map[string]string{"ask": "true"}, ""},
		{map[string]string{"g/ask": "false"}, ""},
		{map[string]string{"ask": `"yes"`}, "g/ask $: want boolean, got string"},
		{map[string]string{"nope": "1", "ask": "1"}, "g/ask $: want boolean, got number; nope: no such pending interrupt"},
		{nil, "g/ask: the run waits for an answer: OK?"},
	}
	for _, tt := range answers {
		err := in.CheckAnswers(ctx, run, -1, raw(tt.values))
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || err.Error() != tt.want || !errors.Is(err, ErrInvalid)) {
			t.Errorf("CheckAnswers(%v) = %v; want %q", tt.values, err, tt.want)
		}
	}
	if err := in.CheckAnswers(ctx, run, 1, nil); err != nil {
		t.Errorf("step 1 waits on nothing: %v", err)
	}
	edits := []struct {
		set  map[string]string
		want string
	}{
		{map[string]string{"a": `"x"`, "ok": "true"}, ""},
		{map[string]string{"a": "5", "zz": "1", "$x": "1"}, "$x: the state has no such field; a: does not fit string: $: want string, got number; zz: the state has no such field"},
	}
	for _, tt := range edits {
		err := in.CheckEdits(ctx, run, 1, raw(tt.set))
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || err.Error() != tt.want) {
			t.Errorf("CheckEdits(%v) = %v; want %q", tt.set, err, tt.want)
		}
	}
}
