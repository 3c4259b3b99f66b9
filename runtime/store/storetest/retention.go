package storetest

// What retention relies on: listing sessions, deleting a session with its
// ledger, and deleting a run or a session only when a condition checked
// under the writers' lock holds.

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/agentc/agentc/runtime/store"
)

// sessionNames renders sessions as app/user/session, in order.
func sessionNames(ss []store.Session) []string {
	return pluck(ss, func(s store.Session) string { return s.Key.String() })
}

func testListSessions(t *testing.T, s store.Store) {
	// Keys chosen to catch prefix and order mistakes: "ann" < "ann\x00" <
	// "annie"; a NUL inside a part.
	keys := []store.SessionKey{
		sess("annie", "u", "s"), sess("ann", "v", "s2"), sess("ann", "u", "s1"),
		sess("ann", "u", "s10"), sess("ann", "u\x00", "s"), sess("b", "u", "s"),
	}
	for i, k := range keys {
		_, _, err := s.GetOrCreateSession(ctx, k, at(i))
		must(t, err)
	}
	_, err := s.AppendEvents(ctx, keys[2], byteses("e1", "e2"), at(20))
	must(t, err)
	all := []string{"ann/u/s1", "ann/u/s10", "ann/u\x00/s", "ann/v/s2", "annie/u/s", "b/u/s"}
	for _, tc := range []struct {
		f    store.SessionFilter
		want []string
	}{
		{store.SessionFilter{}, all},
		{store.SessionFilter{App: "ann"}, all[:4]},
		{store.SessionFilter{App: "ann", User: "u"}, all[:2]},
		{store.SessionFilter{App: "an"}, nil},
		{store.SessionFilter{App: "zz"}, nil},
	} {
		ss, next, err := s.ListSessions(ctx, tc.f)
		must(t, err)
		if got := sessionNames(ss); !slices.Equal(got, tc.want) || next != "" {
			t.Errorf("ListSessions(%+v) = %q next %q, want %q", tc.f, got, next, tc.want)
		}
		// Paging by 2 walks the same list.
		var paged []string
		f := tc.f
		f.Limit = 2
		for range 10 {
			ss, next, err := s.ListSessions(ctx, f)
			must(t, err)
			paged = append(paged, sessionNames(ss)...)
			if next == "" {
				break
			}
			f.Cursor = next
		}
		if !slices.Equal(paged, tc.want) {
			t.Errorf("ListSessions(%+v) by pages of 2 = %q, want %q", tc.f, paged, tc.want)
		}
	}
	ss, _, err := s.ListSessions(ctx, store.SessionFilter{App: "ann", User: "u", Limit: 1})
	must(t, err)
	if len(ss) != 1 || ss[0].LastSeq != 2 || !ss[0].Created.Equal(at(2)) || !ss[0].Updated.Equal(at(20)) {
		t.Errorf("listed record: %+v, want ann/u/s1 created at(2), updated at(20), 2 events", ss)
	}
	_, next, err := s.ListSessions(ctx, store.SessionFilter{App: "ann", Limit: 1})
	must(t, err)
	for _, f := range []store.SessionFilter{
		{User: "u"},              // a user needs an app
		{Cursor: "not base64!"},  // not a cursor
		{App: "b", Cursor: next}, // a cursor of another app
		{Cursor: store.RunCursor(store.Run{ID: "r", Session: keys[0]})}, // a run cursor
	} {
		_, _, err := s.ListSessions(ctx, f)
		wantErr(t, fmt.Sprintf("ListSessions(%+v)", f), err, store.ErrInvalid)
	}
}

func testDeleteSession(t *testing.T, s store.Store) {
	key, neighbour := sess("app", "u", "s1"), sess("app", "u", "s10")
	for _, k := range []store.SessionKey{key, neighbour} {
		newSession(t, s, k)
		_, err := s.AppendEvents(ctx, k, byteses("e1", "e2"), at(1))
		must(t, err)
		must(t, s.PutSessionState(ctx, k, []byte("state"), at(2)))
		must(t, s.PutSummary(ctx, k, store.Summary{FilterKey: "f", Text: "sum", Boundary: 1, Time: at(3)}))
	}
	// A condition that says no keeps the session; it sees the record.
	var seen store.Session
	deleted, err := s.DeleteSession(ctx, key, func(ss store.Session) bool { seen = ss; return false })
	must(t, err)
	if deleted || seen.Key != key || seen.LastSeq != 2 || !seen.Updated.Equal(at(2)) {
		t.Errorf("DeleteSession(cond false) = %v; cond saw %+v", deleted, seen)
	}
	// A session with a run is refused, whatever the condition.
	newRun(t, s, key, "run_1")
	_, err = s.DeleteSession(ctx, key, nil)
	wantErr(t, "delete a session that has a run", err, store.ErrConflict)
	if _, err := s.GetSession(ctx, key); err != nil {
		t.Fatalf("session after a refused delete: %v", err)
	}
	must(t, s.DeleteRun(ctx, "run_1"))
	deleted, err = s.DeleteSession(ctx, key, func(store.Session) bool { return true })
	must(t, err)
	if !deleted {
		t.Fatal("DeleteSession(cond true) kept the session")
	}
	_, err = s.GetSession(ctx, key)
	wantErr(t, "get a deleted session", err, store.ErrNotFound)
	_, err = s.ListEvents(ctx, key, 0, 0)
	wantErr(t, "events of a deleted session", err, store.ErrNotFound)
	_, err = s.GetSessionState(ctx, key)
	wantErr(t, "state of a deleted session", err, store.ErrNotFound)
	_, err = s.GetSummary(ctx, key, "f")
	wantErr(t, "summary of a deleted session", err, store.ErrNotFound)
	_, err = s.DeleteSession(ctx, key, nil)
	wantErr(t, "delete again", err, store.ErrNotFound)
	// The key can be reused and starts empty.
	newSession(t, s, key)
	got, err := s.GetSession(ctx, key)
	must(t, err)
	evs, err := s.ListEvents(ctx, key, 0, 0)
	must(t, err)
	st, err := s.GetSessionState(ctx, key)
	must(t, err)
	_, errSum := s.GetSummary(ctx, key, "f")
	if got.LastSeq != 0 || len(evs) != 0 || st != nil || !errors.Is(errSum, store.ErrNotFound) {
		t.Errorf("recreated session: %+v, %d events, state %q, summary error %v", got, len(evs), st, errSum)
	}
	if first, err := s.AppendEvents(ctx, key, byteses("new"), at(4)); err != nil || first != 1 {
		t.Errorf("first event of the recreated session: %d, %v; want 1", first, err)
	}
	// The neighbour is untouched.
	evs, err = s.ListEvents(ctx, neighbour, 0, 0)
	must(t, err)
	st, err = s.GetSessionState(ctx, neighbour)
	must(t, err)
	sum, err := s.GetSummary(ctx, neighbour, "f")
	must(t, err)
	if len(evs) != 2 || string(st) != "state" || sum.Text != "sum" {
		t.Errorf("neighbour after the delete: %d events, state %q, summary %+v", len(evs), st, sum)
	}
}

func testDeleteRunIf(t *testing.T, s store.Store) {
	key := sess("app", "u", "s")
	newRun(t, s, key, "run_1")
	commit(t, s, "run_1", 0, store.Full)
	must(t, s.UpdateRunStatus(ctx, "run_1", store.RunCompleted, at(5)))
	var seen store.Run
	deleted, err := s.DeleteRunIf(ctx, "run_1", func(r store.Run) bool { seen = r; return r.Status != store.RunCompleted })
	must(t, err)
	if deleted || seen.ID != "run_1" || seen.Status != store.RunCompleted || !seen.Updated.Equal(at(5)) {
		t.Errorf("DeleteRunIf(cond false) = %v; cond saw %+v", deleted, seen)
	}
	if _, err := s.LatestCheckpoint(ctx, "run_1"); err != nil {
		t.Errorf("checkpoint of a kept run: %v", err)
	}
	deleted, err = s.DeleteRunIf(ctx, "run_1", func(r store.Run) bool { return r.Status == store.RunCompleted })
	must(t, err)
	if !deleted {
		t.Error("DeleteRunIf(cond true) kept the run")
	}
	_, err = s.GetRun(ctx, "run_1")
	wantErr(t, "get a deleted run", err, store.ErrNotFound)
	cps, err := s.ListCheckpoints(ctx, "run_1", store.CheckpointFilter{})
	must(t, err)
	if len(cps) != 0 {
		t.Errorf("checkpoints of a deleted run: %d", len(cps))
	}
	_, err = s.DeleteRunIf(ctx, "run_1", nil)
	wantErr(t, "delete a missing run", err, store.ErrNotFound)
}

// testDeleteSessionRace deletes a session while a run is created in it:
// either the run exists and the deletion was refused, or the session is
// gone and so is the run (its creation failed). Never a run without its
// session. Run it under -race.
func testDeleteSessionRace(t *testing.T, s store.Store) {
	for i := range 24 {
		key := sess("app", "u", fmt.Sprintf("race%d", i))
		newSession(t, s, key)
		id := fmt.Sprintf("run_%d", i)
		var (
			wg                sync.WaitGroup
			errCreate, errDel error
			deleted           bool
		)
		wg.Go(func() {
			errCreate = s.CreateRun(ctx, store.Run{ID: id, Session: key, Runnable: "r", Status: store.RunRunning, Created: t0, Updated: t0})
		})
		wg.Go(func() { deleted, errDel = s.DeleteSession(ctx, key, nil) })
		wg.Wait()
		_, errRun := s.GetRun(ctx, id)
		_, errSess := s.GetSession(ctx, key)
		switch {
		case errCreate == nil && errors.Is(errDel, store.ErrConflict) && errRun == nil && errSess == nil:
		case errors.Is(errCreate, store.ErrNotFound) && errDel == nil && deleted &&
			errors.Is(errRun, store.ErrNotFound) && errors.Is(errSess, store.ErrNotFound):
		default:
			t.Fatalf("race %d: create %v, delete %v (deleted %v); then run %v, session %v", i, errCreate, errDel, deleted, errRun, errSess)
		}
	}
}
