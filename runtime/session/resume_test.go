package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

// TestResume: the value answers every pending interrupt, or each its own when it is an
// object keyed by interrupt id or node name; a run that is not there wraps
// ErrNoRun.
func TestResume(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, _, err := st.GetOrCreateSession(ctx, key, now); err != nil {
		t.Fatal(err)
	}
	for _, r := range []store.Run{{ID: "run_1", Status: store.RunInterrupted}, {ID: "run_2", Status: store.RunInterrupted}, {ID: "run_3", Status: store.RunCompleted}} {
		r.Session, r.Runnable, r.ProgramHash, r.Created, r.Updated = key, "g", "h", now, now
		if err := st.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	pending := map[string][]runtime.InterruptInfo{
		"run_1": {{ID: "i1", Node: "ask"}},
		"run_2": {{ID: "i2", Node: "ask"}, {ID: "i3", Node: "check"}},
	}
	var evs [][]byte
	for _, run := range []string{"run_1", "run_2"} {
		b, err := runtime.EncodeEvent(&runtime.Event{ID: "f" + run, Kind: runtime.EventRunFinished, App: "app", User: "u", Session: "s", Run: run,
			Status: runtime.StatusInterrupted, Interrupts: pending[run], Persisted: true})
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, b)
	}
	if _, err := st.AppendEvents(ctx, key, evs, now); err != nil {
		t.Fatal(err)
	}
	svc := session.New(st)
	tests := []struct {
		name, run, value string
		want             map[string]string // interrupt id → value
		wantRun          string
	}{
		{"one value for all", "run_2", `true`, map[string]string{"i2": `true`, "i3": `true`}, "run_2"},
		{"by id and node name", "run_2", `{"i2": 1, "check": 2}`, map[string]string{"i2": `1`, "i3": `2`}, "run_2"},
		{"an object with no key matches answers all", "run_2", `{"x": 1}`, map[string]string{"i2": `{"x": 1}`, "i3": `{"x": 1}`}, "run_2"},
		{"one pending: the object is the answer", "run_1", `{"i1": 1}`, map[string]string{"i1": `{"i1": 1}`}, "run_1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, k, err := svc.Resume(ctx, tc.run, json.RawMessage(tc.value))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for id, v := range req.Values {
				got[id] = string(v)
			}
			if req.Run != tc.wantRun || k != key || len(got) != len(tc.want) {
				t.Fatalf("run %s session %v values %v", req.Run, k, got)
			}
			for id, v := range tc.want {
				if got[id] != v {
					t.Errorf("value of %s = %s, want %s", id, got[id], v)
				}
			}
		})
	}
	if _, _, err := svc.Resume(ctx, "run_9", json.RawMessage(`true`)); !errors.Is(err, session.ErrNoRun) || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a missing run: %v", err)
	}
}
