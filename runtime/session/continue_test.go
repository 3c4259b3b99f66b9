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

// TestContinue: a named run continues in its own session with the value
// answering its interrupt; a run that is not there wraps ErrNoRun.
func TestContinue(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, _, err := st.GetOrCreateSession(ctx, key, now); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateRun(ctx, store.Run{ID: "run_1", Session: key, Status: store.RunInterrupted, Runnable: "g", ProgramHash: "h", Created: now, Updated: now}); err != nil {
		t.Fatal(err)
	}
	b, err := runtime.EncodeEvent(&runtime.Event{ID: "f1", Kind: runtime.EventRunFinished, App: "app", User: "u", Session: "s", Run: "run_1",
		Status: runtime.StatusInterrupted, Interrupts: []runtime.InterruptInfo{{ID: "i1", Node: "ask"}}, Persisted: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendEvents(ctx, key, [][]byte{b}, now); err != nil {
		t.Fatal(err)
	}
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
