package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// seed writes two sessions of user u (and one of user v): s1 with two runs
// and a ledger of mixed events, s2 with one run.
func seed(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	for _, k := range []store.SessionKey{{App: "app", User: "u", Session: "s1"}, {App: "app", User: "u", Session: "s2"}, {App: "app", User: "v", Session: "s1"}} {
		if _, _, err := st.GetOrCreateSession(ctx, k, now); err != nil {
			t.Fatal(err)
		}
	}
	runs := []store.Run{
		{ID: "run_1", Session: store.SessionKey{App: "app", User: "u", Session: "s1"}},
		{ID: "run_2", Session: store.SessionKey{App: "app", User: "u", Session: "s1"}},
		{ID: "run_3", Session: store.SessionKey{App: "app", User: "u", Session: "s2"}},
		{ID: "run_4", Session: store.SessionKey{App: "app", User: "v", Session: "s1"}},
	}
	for _, r := range runs {
		r.Status, r.Runnable, r.ProgramHash, r.Created, r.Updated = store.RunCompleted, "g", "h", now, now
		if err := st.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	var evs [][]byte
	for i, k := range []runtime.EventKind{runtime.EventInput, runtime.EventRunStarted, runtime.EventModelResponse, runtime.EventRunFinished,
		runtime.EventInput, runtime.EventRunStarted, runtime.EventToolResult, runtime.EventRunFinished} {
		run := "run_1"
		if i >= 4 {
			run = "run_2"
		}
		fk := ""
		if k == runtime.EventModelResponse || k == runtime.EventToolResult {
			fk = "team/writer"
		}
		b, err := runtime.EncodeEvent(&runtime.Event{ID: fmt.Sprint("e", i), Kind: k, App: "app", User: "u", Session: "s1", Run: run, FilterKey: fk, Persisted: true})
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, b)
	}
	if _, err := st.AppendEvents(ctx, store.SessionKey{App: "app", User: "u", Session: "s1"}, evs, now); err != nil {
		t.Fatal(err)
	}
}

func TestService(t *testing.T) {
	st := memory.New()
	defer st.Close()
	seed(t, st)
	svc := session.New(st)
	ctx := context.Background()
	key := store.SessionKey{App: "app", User: "u", Session: "s1"}

	info, err := svc.Get(ctx, key)
	if err != nil || info.Events != 8 || len(info.Runs) != 2 || info.Runs[1].ID != "run_2" {
		t.Fatalf("Get: %+v %v", info, err)
	}
	if _, err := svc.Get(ctx, store.SessionKey{App: "app", User: "u", Session: "nope"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of a missing session: %v", err)
	}

	for _, tc := range []struct {
		key  store.SessionKey
		want bool
	}{
		{key, true},
		{store.SessionKey{App: "app", User: "v", Session: "s1"}, true},
		{store.SessionKey{App: "app", User: "u", Session: "nope"}, false},
		{store.SessionKey{App: "app", User: "w", Session: "s1"}, false}, // another user's thread id
	} {
		if ok, err := svc.Exists(ctx, tc.key); err != nil || ok != tc.want {
			t.Errorf("Exists(%v) = %v, %v; want %v", tc.key, ok, err, tc.want)
		}
	}

	list, err := svc.List(ctx, session.ListFilter{App: "app", User: "u"})
	if err != nil || len(list) != 2 || list[0].Key.Session != "s1" || list[1].Key.Session != "s2" || list[0].Events != 8 {
		t.Fatalf("List: %+v %v", list, err)
	}
	if all, _ := svc.List(ctx, session.ListFilter{App: "app"}); len(all) != 3 {
		t.Fatalf("List app: %+v", all)
	}
	if one, _ := svc.List(ctx, session.ListFilter{App: "app", Limit: 1}); len(one) != 1 {
		t.Fatalf("List limit 1: %+v", one)
	}

	for _, tc := range []struct {
		f    session.EventFilter
		want []string
	}{
		{session.EventFilter{}, []string{"e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7"}},
		{session.EventFilter{After: 6}, []string{"e6", "e7"}},
		{session.EventFilter{Run: "run_2", Limit: 2}, []string{"e4", "e5"}},
		{session.EventFilter{Kinds: []runtime.EventKind{runtime.EventRunFinished}}, []string{"e3", "e7"}},
		{session.EventFilter{FilterKey: "team"}, []string{"e2", "e6"}},
		{session.EventFilter{FilterKey: "tea"}, nil},
	} {
		evs, err := svc.Events(ctx, key, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs {
			got = append(got, e.ID)
			if e.Seq == 0 {
				t.Errorf("event %s without seq", e.ID)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Events(%+v) = %v, want %v", tc.f, got, tc.want)
		}
	}

	if s, err := svc.State(ctx, key); err != nil || string(s) != "{}" {
		t.Fatalf("State: %s %v", s, err)
	}
	if err := svc.PutState(ctx, key, json.RawMessage(`[1]`), now); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("PutState of a list: %v", err)
	}
	if err := svc.PutState(ctx, key, json.RawMessage(`{"a":1}`), now); err != nil {
		t.Fatal(err)
	}
	if s, _ := svc.State(ctx, key); string(s) != `{"a":1}` {
		t.Fatalf("State: %s", s)
	}
	if _, err := svc.Summary(ctx, key, ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Summary: %v", err)
	}
}

// TestLastRun: a session's latest run is its greatest run id, whatever the
// order the runs were made in; a session without runs has none.
func TestLastRun(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	svc := session.New(st)
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, ok, err := svc.LastRun(ctx, k); err != nil || ok {
		t.Fatalf("LastRun of a session without runs: %v, %v", ok, err)
	}
	for _, sk := range []store.SessionKey{k, {App: "app", User: "u", Session: "t"}} {
		if _, _, err := st.GetOrCreateSession(ctx, sk, now); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"run_02", "run_10", "run_01"} {
		r := store.Run{ID: id, Session: k, Runnable: "g", ProgramHash: "h", Status: store.RunCompleted, Created: now, Updated: now}
		if err := st.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// Another session's later run is not this one's.
	other := store.Run{ID: "run_99", Session: store.SessionKey{App: "app", User: "u", Session: "t"}, Runnable: "g", ProgramHash: "h", Status: store.RunCompleted, Created: now, Updated: now}
	if err := st.CreateRun(ctx, other); err != nil {
		t.Fatal(err)
	}
	r, ok, err := svc.LastRun(ctx, k)
	if err != nil || !ok || r.ID != "run_10" || r.Session != k {
		t.Fatalf("LastRun = %+v, %v, %v; want run_10", r, ok, err)
	}
}
