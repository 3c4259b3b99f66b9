package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentc/agentc/internal/pgtest"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/postgres"
)

// offsetClock is the wall clock shifted by off: two replicas whose clocks
// disagree by more than a lease's TTL see each other's leases expire.
// Timers are real.
type offsetClock struct{ off atomic.Int64 }

func (c *offsetClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *offsetClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// replicaTTL is the lease TTL of these tests: long enough that a loaded
// machine renews in time, short enough to keep them quick.
const replicaTTL = 3 * time.Second

// openShared opens one fresh PostgreSQL schema twice: the stores of two
// replicas.
func openShared(t *testing.T) (a, b *postgres.Store) {
	t.Helper()
	target := pgtest.WithSchema(t, pgtest.URL(t))
	open := func() *postgres.Store {
		st, err := postgres.Open(context.Background(), target, nil)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	return open(), open()
}

// replicaFixture is a Runner as replica owner on st.
func replicaFixture(t *testing.T, st *postgres.Store, owner string, clock *offsetClock, model *fakeModel, tool *funcTool) *fixture {
	t.Helper()
	return newFixture(t, st, buildProgram(t, progOpts{}), model, tool, func(c *RunnerConfig) {
		c.Clock = clock
		c.Replica = &Replica{Shared: st, Owner: owner, TTL: replicaTTL}
	})
}

// waitRun waits until the run's stored status is want.
func waitRun(t *testing.T, st store.Store, run string, want store.RunStatus) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := st.GetRun(context.Background(), run)
		if err == nil && r.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: status %s (%v), want %s", run, r.Status, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startBlocked starts a run on f whose model blocks, and returns its id
// and events once the model was entered.
func startBlocked(t *testing.T, f *fixture, entered chan struct{}, session string) (string, <-chan *Event) {
	t.Helper()
	ch, err := f.r.Run(context.Background(), Invocation{User: "u", Session: session, Input: "q"})
	if err != nil {
		t.Fatal(err)
	}
	var run string
	for e := range ch {
		if e.Kind == EventRunStarted {
			run = e.Run
		}
		if e.Kind == EventModelDelta {
			break
		}
	}
	<-entered
	return run, ch
}

// TestReplicasOneRunPerSession: a session driven by one replica is busy on
// the other; once the run ends, the other may run in it.
func TestReplicasOneRunPerSession(t *testing.T) {
	stA, stB := openShared(t)
	model, entered, release := blockingModel()
	a := replicaFixture(t, stA, "A", &offsetClock{}, model, nil)
	b := replicaFixture(t, stB, "B", &offsetClock{}, nil, nil)
	run, ch := startBlocked(t, a, entered, "s")
	if _, err := b.r.Run(context.Background(), Invocation{User: "u", Session: "s", Input: "q"}); !errors.Is(err, ErrSessionBusy) {
		t.Fatalf("B in A's session: %v", err)
	}
	if orphans, err := b.r.Orphans(context.Background()); err != nil || len(orphans) != 0 {
		t.Fatalf("B sees orphans while A holds the lease: %v %v", orphans, err)
	}
	close(release)
	if fin := last(drain(t, ch)); fin.Status != StatusInterrupted {
		t.Fatalf("A's run ended %s", fin.Status)
	}
	evs := b.collect(context.Background(), Invocation{User: "u", Session: "s", Resume: &ResumeRequest{Run: run,
		Values: map[string]json.RawMessage{"approve": json.RawMessage("true")}}})
	if fin := last(evs); fin.Status != StatusCompleted {
		t.Fatalf("B resumed A's run: %s %v", fin.Status, kinds(evs))
	}
	ledger := b.ledger("u", "s")
	checkLedger(t, ledger)
	// B's end counted on from A's invocation: the record has every call.
	if rec, err := stB.GetRun(context.Background(), run); err != nil || rec.Usage.ModelCalls == 0 || rec.Usage.ModelCalls != uint64(count(ledger, EventModelResponse)) {
		t.Fatalf("run record usage %+v, %v; want the ledger's %d model calls", rec.Usage, err, count(ledger, EventModelResponse))
	}
}

// TestReplicaTakesOverAndFencesTheLoser: replica B, whose clock is past
// A's lease, sees A's run as an orphan, takes it over and finishes it; A,
// when its model returns, can commit nothing more (its writes are fenced)
// and stops without recording an end. The ledger has one run end and no
// gap, and the read-only tool of the first steps ran once.
func TestReplicaTakesOverAndFencesTheLoser(t *testing.T) {
	stA, stB := openShared(t)
	model, entered, release := blockingModel()
	tool := lookupTool() // one counter for both replicas' lookups
	a := replicaFixture(t, stA, "A", &offsetClock{}, model, tool)
	late := &offsetClock{}
	late.off.Store(int64(2 * replicaTTL))
	b := replicaFixture(t, stB, "B", late, nil, tool)
	run, ch := startBlocked(t, a, entered, "s")

	orphans, err := b.r.Orphans(context.Background())
	if err != nil || len(orphans) != 1 || orphans[0].ID != run {
		t.Fatalf("B's orphans: %v %v", orphans, err)
	}
	evs := b.collect(context.Background(), Invocation{User: "u", Session: "s", Resume: &ResumeRequest{Run: run}})
	if fin := last(evs); fin.Status != StatusInterrupted {
		t.Fatalf("B's takeover ended %s: %v", fin.Status, kinds(evs))
	}
	close(release)
	rest := drain(t, ch)
	if e := find(rest, EventRunFinished); e != nil {
		t.Fatalf("A, fenced off, still reported an end: %v", kinds(rest))
	}
	if got := a.runStatus(run); got != store.RunInterrupted {
		t.Fatalf("run status %s after A stopped", got)
	}
	ledger := b.ledger("u", "s")
	checkLedger(t, ledger)
	if n := count(ledger, EventRunFinished); n != 1 {
		t.Fatalf("%d run ends in the ledger: %v", n, kinds(ledger))
	}
	if n := count(ledger, EventModelResponse); n != 1 {
		t.Fatalf("%d model responses in the ledger (A's must be fenced off): %v", n, kinds(ledger))
	}
	if rec, err := stB.GetRun(context.Background(), run); err != nil || rec.Usage.ModelCalls != 1 {
		t.Fatalf("run record usage %+v, %v; want B's one call (A's end is fenced off)", rec.Usage, err)
	}
	if n := tool.calls.Load(); n != 1 {
		t.Fatalf("lookup ran %d times", n)
	}
}

// TestReplicaCancelElsewhere: a cancel asked on B of a run A drives is
// recorded and notified; A cancels it and records the end, and the
// request is cleared. A cancel of an orphan is acted on by its taker.
func TestReplicaCancelElsewhere(t *testing.T) {
	stA, stB := openShared(t)
	model, entered, _ := blockingModel()
	a := replicaFixture(t, stA, "A", &offsetClock{}, model, nil)
	late := &offsetClock{}
	late.off.Store(int64(2 * replicaTTL))
	b := replicaFixture(t, stB, "B", late, nil, nil)
	run, ch := startBlocked(t, a, entered, "s1")
	changed := b.r.Changed(run)
	if ok, err := b.r.RequestCancel(context.Background(), run); !ok || err != nil {
		t.Fatalf("request cancel: %v %v", ok, err)
	}
	if fin := last(drain(t, ch)); fin.Status != StatusCanceled {
		t.Fatalf("A's run ended %s", fin.Status)
	}
	select { // B hears the end
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("B was not told of the run's end")
	}
	if _, err := stB.GetDoc(context.Background(), cancelColl, run); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cancel request left after the run ended: %v", err)
	}

	// An orphan (B's clock is past A's lease) whose cancel was asked:
	// the taker cancels it at once.
	run2, ch2 := startBlocked(t, a, entered, "s2")
	if err := stB.ApplyDocs(context.Background(), store.DocOp{Coll: cancelColl, Key: run2, Value: []byte("now")}); err != nil {
		t.Fatal(err)
	}
	evs := b.collect(context.Background(), Invocation{User: "u", Session: "s2", Resume: &ResumeRequest{Run: run2}})
	if fin := last(evs); fin.Status != StatusCanceled {
		t.Fatalf("taken-over run with a cancel request ended %s: %v", fin.Status, kinds(evs))
	}
	drain(t, ch2) // A, fenced off, stops
	waitRun(t, stA, run2, store.RunCanceled)
}
