package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/store"
)

// TestEndRunFencedAndGetLeases: a run's end is written only under the
// lease it is fenced by; GetLeases reads leases as stored, held or not.
func TestEndRunFencedAndGetLeases(t *testing.T) {
	s := openFresh(t)
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if _, _, err := s.GetOrCreateSession(ctx, key, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(ctx, store.Run{ID: "run_1", Session: key, Status: store.RunRunning}); err != nil {
		t.Fatal(err)
	}
	la, err := s.AcquireLease(ctx, "session/s", "a", 10*time.Second, t0)
	if err != nil {
		t.Fatal(err)
	}
	// b takes the lease over once a's expired: a's end is refused.
	lb, err := s.AcquireLease(ctx, "session/s", "b", 10*time.Second, t0.Add(11*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.EndRunFenced(ctx, "run_1", [][]byte{[]byte("end a")}, store.RunCanceled, nil, la, t0.Add(12*time.Second)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a's fenced end after b took the lease: %v", err)
	}
	if evs, _ := s.ListEvents(ctx, key, 0, 0); len(evs) != 0 {
		t.Fatalf("a refused end wrote %d events", len(evs))
	}
	first, err := s.EndRunFenced(ctx, "run_1", [][]byte{[]byte("end b")}, store.RunCompleted, &store.RunUsage{ModelCalls: 1}, lb, t0.Add(12*time.Second))
	if err != nil || first != 1 {
		t.Fatalf("b's fenced end: %d %v", first, err)
	}
	if r, _ := s.GetRun(ctx, "run_1"); r.Status != store.RunCompleted || r.Usage.ModelCalls != 1 {
		t.Fatalf("status %s usage %+v", r.Status, r.Usage)
	}
	if _, err := s.EndRunFenced(ctx, "run_1", nil, store.RunFailed, nil, lb, t0.Add(30*time.Second)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("an end fenced by an expired lease: %v", err)
	}

	got, err := s.GetLeases(ctx, []string{"session/s", "session/none"})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := got["session/s"]; len(got) != 1 || !ok || l.Owner != "b" || l.Token != lb.Token || !l.Expires.Equal(lb.Expires) {
		t.Fatalf("GetLeases: %+v (b's: %+v)", got, lb)
	}
}

// TestFollow: Follow says "" once connected, then passes each payload on,
// and returns ctx's error when it ends.
func TestFollow(t *testing.T) {
	s := openFresh(t)
	got := make(chan string, 8)
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Follow(fctx, "runs", func(p string) { got <- p }) }()
	next := func() string {
		select {
		case p := <-got:
			return p
		case <-time.After(10 * time.Second):
			t.Fatal("no notification")
			return ""
		}
	}
	if p := next(); p != "" {
		t.Fatalf("first call %q, want the connected hint", p)
	}
	if err := s.Notify(ctx, "runs", "end run_1"); err != nil {
		t.Fatal(err)
	}
	if p := next(); p != "end run_1" {
		t.Fatalf("payload %q", p)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow returned %v", err)
	}
}

// TestCommitNotices: a step commit and a run's end are each announced on
// store.RunsChannel with the run, after they commit; a refused commit
// announces nothing; a run id that cannot travel in a payload still
// commits, announced without its id.
func TestCommitNotices(t *testing.T) {
	s := openFresh(t)
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if _, _, err := s.GetOrCreateSession(ctx, key, t0); err != nil {
		t.Fatal(err)
	}
	odd := "run_\x00odd"
	for _, id := range []string{"run_1", odd} {
		if err := s.CreateRun(ctx, store.Run{ID: id, Session: key, Status: store.RunRunning}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := s.Listen(ctx, store.RunsChannel)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	next := func() string {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		p, err := l.Wait(wctx)
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		return p
	}
	step := func(run string, n uint64) store.StepCommit {
		return store.StepCommit{Checkpoint: store.Checkpoint{Run: run, Step: n, Kind: store.Full, Time: t0},
			Events: [][]byte{[]byte("e")}, Status: store.RunRunning}
	}
	if _, err := s.CommitStep(ctx, step("run_1", 0)); err != nil {
		t.Fatal(err)
	}
	if p := next(); p != "commit run_1" {
		t.Fatalf("after a step commit: %q", p)
	}
	if _, err := s.CommitStep(ctx, step("run_1", 0)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a repeated step: %v", err)
	}
	if _, err := s.CommitStep(ctx, step(odd, 0)); err != nil {
		t.Fatalf("commit of a run id with a NUL: %v", err)
	}
	if p := next(); p != "commit" {
		t.Fatalf("after the refused commit and the odd run's: %q, want the odd run's bare notice", p)
	}
	la, err := s.AcquireLease(ctx, "session/s", "a", 10*time.Second, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitStepFenced(ctx, step("run_1", 1), la, t0); err != nil {
		t.Fatal(err)
	}
	if p := next(); p != "commit run_1" {
		t.Fatalf("after a fenced commit: %q", p)
	}
	if _, err := s.EndRun(ctx, "run_1", [][]byte{[]byte("end")}, store.RunCompleted, nil, t0); err != nil {
		t.Fatal(err)
	}
	if p := next(); p != "commit run_1" {
		t.Fatalf("after a run's end: %q", p)
	}
}
