package storetest

import (
	"errors"
	"testing"

	"github.com/agentc/agentc/runtime/store"
)

// testAdmitRun checks a store.RunAdmitter: AdmitRun leaves what
// GetOrCreateSession, AppendEvents and CreateRun leave, and writes nothing
// when it fails.
func testAdmitRun(t *testing.T, s store.Store) {
	a, ok := s.(store.RunAdmitter)
	if !ok {
		t.Skip("the store has no AdmitRun: the Runner admits runs with three calls")
	}
	key := sess("app", "u", "admit")
	r1 := store.Run{ID: "run_1", Session: key, Runnable: "main", ProgramHash: "h", Status: store.RunRunning, Created: at(1), Updated: at(1)}
	first, err := a.AdmitRun(ctx, r1, byteses("in1"), at(1))
	must(t, err)
	if first != 1 {
		t.Errorf("first event of a new session %d, want 1", first)
	}
	got, err := s.GetSession(ctx, key)
	must(t, err)
	if !got.Created.Equal(at(1)) || !got.Updated.Equal(at(1)) || got.LastSeq != 1 {
		t.Errorf("session after AdmitRun: %+v", got)
	}
	run, err := s.GetRun(ctx, "run_1")
	must(t, err)
	if run.Session != key || run.Status != store.RunRunning || run.Runnable != "main" || !run.Created.Equal(at(1)) {
		t.Errorf("run after AdmitRun: %+v", run)
	}
	runs, _, err := s.ListRuns(ctx, store.RunFilter{App: "app", User: "u", Session: "admit"})
	must(t, err)
	if len(runs) != 1 || runs[0].ID != "run_1" {
		t.Errorf("ListRuns after AdmitRun: %+v", runs)
	}
	// The first step commits through the admitted run.
	_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: store.Checkpoint{Run: "run_1", Kind: store.Full, Time: at(2)}, Events: byteses("step")})
	must(t, err)

	// A second run of the same session goes on from its ledger.
	r2 := r1
	r2.ID, r2.Created, r2.Updated = "run_2", at(3), at(3)
	first, err = a.AdmitRun(ctx, r2, byteses("in2a", "in2b"), at(3))
	must(t, err)
	if first != 3 {
		t.Errorf("first event of the second run %d, want 3", first)
	}
	// Each run's record names its first event, and keeps it through
	// its steps and its end.
	_, err = s.CommitStep(ctx, store.StepCommit{Checkpoint: store.Checkpoint{Run: "run_2", Kind: store.Full, Time: at(3)}, Status: store.RunInterrupted})
	must(t, err)
	for id, want := range map[string]uint64{"run_1": 1, "run_2": 3} {
		if run, err := s.GetRun(ctx, id); err != nil || run.FirstEvent != want {
			t.Errorf("%s: first event %d, %v; want %d", id, run.FirstEvent, err, want)
		}
	}
	must(t, s.UpdateRunStatus(ctx, "run_2", store.RunRunning, at(3)))
	if _, err := s.EndRun(ctx, "run_2", nil, store.RunCompleted, nil, at(3)); err != nil {
		t.Fatal(err)
	}
	if run, err := s.GetRun(ctx, "run_2"); err != nil || run.FirstEvent != 3 {
		t.Errorf("run_2 after its end: first event %d, %v; want 3", run.FirstEvent, err)
	}
	got, err = s.GetSession(ctx, key)
	must(t, err)
	if !got.Created.Equal(at(1)) || !got.Updated.Equal(at(3)) || got.LastSeq != 4 {
		t.Errorf("session after the second AdmitRun: %+v", got)
	}
	es, err := s.ListEvents(ctx, key, 0, 0)
	must(t, err)
	want := []string{"in1", "step", "in2a", "in2b"}
	if len(es) != len(want) {
		t.Fatalf("ledger %d events, want %v", len(es), want)
	}
	for i, e := range es {
		if string(e.Data) != want[i] || e.Seq != uint64(i+1) {
			t.Errorf("event %d: seq %d %q, want seq %d %q", i, e.Seq, e.Data, i+1, want[i])
		}
	}

	// An existing run id writes nothing, not even a new session.
	other := sess("app", "u", "other")
	r3 := r1
	r3.Session = other
	if _, err := a.AdmitRun(ctx, r3, byteses("x"), at(4)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("AdmitRun of an existing run id: %v, want ErrConflict", err)
	}
	if _, err := s.GetSession(ctx, other); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused AdmitRun created its session: %v", err)
	}
	if got, err := s.GetSession(ctx, key); err != nil || got.LastSeq != 4 {
		t.Errorf("a refused AdmitRun changed the first run's session: %+v, %v", got, err)
	}

	// No events: the session and the run, nothing in the ledger.
	r4 := r1
	r4.ID, r4.Session = "run_4", sess("app", "u", "quiet")
	first, err = a.AdmitRun(ctx, r4, nil, at(5))
	must(t, err)
	if first != 0 {
		t.Errorf("AdmitRun without events returned %d, want 0", first)
	}
	if got, err := s.GetSession(ctx, r4.Session); err != nil || got.LastSeq != 0 {
		t.Errorf("session of a run admitted without events: %+v, %v", got, err)
	}

	// Docs go in the same write; an IfAbsent doc whose key exists refuses
	// the whole admission (ErrDocExists), a missing session included.
	r5 := r1
	r5.ID, r5.Session = "run_5", sess("app", "u", "recorded")
	rec := store.DocOp{Coll: "admit.recs", Key: "app/u/recorded/r1", Value: []byte(`{"run":"run_5"}`), IfAbsent: true}
	_, err = a.AdmitRun(ctx, r5, byteses("in5"), at(7), rec)
	must(t, err)
	if v, err := s.GetDoc(ctx, rec.Coll, rec.Key); err != nil || string(v) != `{"run":"run_5"}` {
		t.Errorf("doc admitted with run_5: %q, %v", v, err)
	}
	r6 := r1
	r6.ID, r6.Session = "run_6", sess("app", "u", "second")
	rec6 := rec
	rec6.Value = []byte(`{"run":"run_6"}`)
	if _, err := a.AdmitRun(ctx, r6, byteses("in6"), at(8), rec6); !errors.Is(err, store.ErrDocExists) || !errors.Is(err, store.ErrConflict) {
		t.Errorf("AdmitRun with an IfAbsent doc that exists: %v, want ErrDocExists (an ErrConflict)", err)
	}
	if _, err := s.GetRun(ctx, "run_6"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a run refused for its doc was written: %v", err)
	}
	if _, err := s.GetSession(ctx, r6.Session); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a run refused for its doc created its session: %v", err)
	}
	if v, err := s.GetDoc(ctx, rec.Coll, rec.Key); err != nil || string(v) != `{"run":"run_5"}` {
		t.Errorf("a refused admission changed the doc: %q, %v", v, err)
	}

	// An invalid run is refused before anything is written.
	bad := r1
	bad.ID, bad.Session = "", sess("app", "u", "bad")
	if _, err := a.AdmitRun(ctx, bad, byteses("x"), at(6)); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("AdmitRun of a run without id: %v, want ErrInvalid", err)
	}
	if _, err := s.GetSession(ctx, bad.Session); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an invalid AdmitRun created its session: %v", err)
	}
}
