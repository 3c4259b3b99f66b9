package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

// waiting is a store with session app/u/s holding run_1 (interrupted,
// waiting on i1 of ask), run_2 (interrupted, waiting on i2 of ask and i3 of
// check) and run_3 (completed).
func waiting(t *testing.T) *memory.Store {
	t.Helper()
	ctx := context.Background()
	st := memory.New()
	t.Cleanup(func() { st.Close() })
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
	return st
}

// TestResume: the value answers every pending interrupt, or each its own when it is an
// object keyed by interrupt id or node name; a run that is not there wraps
// ErrNoRun.
func TestResume(t *testing.T) {
	ctx := context.Background()
	st := waiting(t)
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
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

// TestDecide: --decide specs name a pending decision by id or node, map
// done/retry onto the Runner's result/rerun, and are refused with the
// pending ids when they name none.
func TestDecide(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, _, err := st.GetOrCreateSession(ctx, key, now); err != nil {
		t.Fatal(err)
	}
	for _, r := range []store.Run{{ID: "run_1", Status: store.RunStatus(runtime.StatusNeedsDecision)}, {ID: "run_2", Status: store.RunCompleted}} {
		r.Session, r.Runnable, r.ProgramHash, r.Created, r.Updated = key, "g", "h", now, now
		if err := st.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	b, err := runtime.EncodeEvent(&runtime.Event{ID: "f1", Kind: runtime.EventRunFinished, App: "app", User: "u", Session: "s", Run: "run_1",
		Status: runtime.StatusNeedsDecision, Persisted: true, Decisions: []runtime.DecisionInfo{
			{ID: "pay#0", Node: "pay", Attempt: 1}, {ID: "ship#0", Node: "ship", MapIndex: 0, Attempt: 1}, {ID: "ship#1", Node: "ship", MapIndex: 1, Attempt: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendEvents(ctx, key, [][]byte{b}, now); err != nil {
		t.Fatal(err)
	}
	svc := session.New(st)
	tests := []struct {
		name    string
		run     string
		specs   []string
		want    map[string]runtime.DecisionRequest
		wantErr string
	}{
		{"node name, done with a result", "run_1", []string{`pay=done:{"ok":true}`},
			map[string]runtime.DecisionRequest{"pay#0": {Action: "result", Value: json.RawMessage(`{"ok":true}`)}}, ""},
		{"ids, retry and fail", "run_1", []string{"ship#0=retry", "ship#1=fail"},
			map[string]runtime.DecisionRequest{"ship#0": {Action: "rerun"}, "ship#1": {Action: "fail"}}, ""},
		{"ambiguous node", "run_1", []string{"ship=rerun"}, nil, "name one by id (ship#0, ship#1)"},
		{"unknown", "run_1", []string{"nope=rerun"}, nil, "not a pending decision (pending: pay#0, ship#0, ship#1)"},
		{"done needs a value", "run_1", []string{"pay=done"}, nil, "needs the side effect's result as JSON"},
		{"bad JSON", "run_1", []string{"pay=done:{"}, nil, "needs the side effect's result as JSON"},
		{"rerun takes no value", "run_1", []string{"pay=rerun:1"}, nil, "takes no value"},
		{"bad action", "run_1", []string{"pay=maybe"}, nil, `decision "maybe" (want done, retry or fail)`},
		{"no equals", "run_1", []string{"pay"}, nil, "want ID=done:JSON"},
		{"twice", "run_1", []string{"pay=fail", "pay#0=rerun"}, nil, "decided twice"},
		{"not waiting on a decision", "run_2", []string{"pay=fail"}, nil, "not needs_decision"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := &runtime.ResumeRequest{Run: tc.run}
			err := svc.Decide(ctx, req, tc.specs)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, session.ErrBadDecision) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrBadDecision containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(req.Decisions) != len(tc.want) {
				t.Fatalf("decisions = %v, want %v", req.Decisions, tc.want)
			}
			for id, w := range tc.want {
				g := req.Decisions[id]
				if g.Action != w.Action || string(g.Value) != string(w.Value) {
					t.Errorf("%s = %+v, want %+v", id, g, w)
				}
			}
		})
	}
	if err := svc.Decide(ctx, &runtime.ResumeRequest{Run: "run_9"}, []string{"a=fail"}); !errors.Is(err, session.ErrNoRun) {
		t.Errorf("missing run: %v", err)
	}
}

// TestContinue: a named run continues in its own session with the value
// answering its interrupt; a run that is not there wraps ErrNoRun.
func TestContinue(t *testing.T) {
	ctx := context.Background()
	st := waiting(t)
	svc := session.New(st)
	inv, err := svc.Continue(ctx, nil, "other", "main", "run_1", json.RawMessage(`true`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if inv.User != "u" || inv.Session != "s" || inv.Resume == nil || string(inv.Resume.Values["i1"]) != "true" {
		t.Fatalf("invocation %+v, resume %+v", inv, inv.Resume)
	}
	if _, err := svc.Continue(ctx, nil, "u", "s", "run_9", nil, nil); !errors.Is(err, session.ErrNoRun) {
		t.Fatalf("missing run: %v", err)
	}
	if _, err := svc.Continue(ctx, nil, "u", "s", "run_1", nil, []string{"x=fail"}); !errors.Is(err, session.ErrBadDecision) {
		t.Fatalf("decision on an interrupted run: %v", err)
	}
}

// TestHint: what a waiting run tells a person, with the schema and an
// example answer quoted for the shell; nothing for a finished run.
func TestHint(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "string"}}, "required": []any{"ok"}}
	for _, tc := range []struct {
		name string
		fin  runtime.Event
		want []string
	}{
		{"interrupt", runtime.Event{Run: "run_1", User: "u", Session: "s", Status: runtime.StatusInterrupted,
			Interrupts: []runtime.InterruptInfo{{ID: "i1", Node: "ask", Prompt: "Sure?", Schema: schema}}},
			[]string{"run run_1 is waiting (session s, user u)\n", "  interrupt i1: Sure?\n", `answer: JSON of schema {"properties"`,
				`resume with: agentc run f.agent --resume run_1 --value '{"ok":"`}},
		{"decision", runtime.Event{Run: "run_2", Status: runtime.StatusNeedsDecision,
			Decisions: []runtime.DecisionInfo{{ID: "d1", Node: "pay", Attempt: 2}}},
			[]string{"run run_2 needs decisions", "  decision d1 (node pay, attempt 2)\n", "settle with: agentc run f.agent --resume run_2 --decide ID=done:RESULT_JSON|retry|fail\n"}},
		{"completed", runtime.Event{Run: "run_3", Status: runtime.StatusCompleted}, nil},
	} {
		got := session.Hint(&tc.fin, "agentc run f.agent")
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: hint %q lacks %q", tc.name, got, w)
			}
		}
		if tc.want == nil && got != "" {
			t.Errorf("%s: hint %q, want none", tc.name, got)
		}
	}
}

// TestListEveryApp: without an app, List lists the sessions of every app,
// by (app, user, session); a user still needs an app.
func TestListEveryApp(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	for _, k := range []store.SessionKey{{App: "b", User: "u", Session: "s1"}, {App: "a", User: "v", Session: "s2"}, {App: "a", User: "u", Session: "s3"}} {
		if _, _, err := st.GetOrCreateSession(ctx, k, now); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := session.New(st).List(ctx, session.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range infos {
		got = append(got, in.Key.App+"/"+in.Key.User+"/"+in.Key.Session)
	}
	if strings.Join(got, " ") != "a/u/s3 a/v/s2 b/u/s1" {
		t.Errorf("sessions %v", got)
	}
	if _, err := session.New(st).List(ctx, session.ListFilter{User: "u"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a user without an app: %v", err)
	}
}
