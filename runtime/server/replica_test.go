package server_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentc/agentc/internal/pgtest"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/postgres"
)

// gatedModel answers once its gate opens (or fails when its call is
// canceled), telling entered when a call starts.
type gatedModel struct {
	gate    chan struct{}
	entered chan struct{}
}

func (gatedModel) Info() runtime.ModelInfo { return runtime.ModelInfo{Name: "m", Model: "test:gated"} }
func (m gatedModel) Generate(ctx context.Context, _ *runtime.ModelRequest, _ func(string)) (*runtime.ModelResponse, error) {
	m.entered <- struct{}{}
	select {
	case <-m.gate:
		return &runtime.ModelResponse{Text: "ok", FinishReason: "stop"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// skewedClock is the wall clock shifted by off (real timers).
type skewedClock struct{ off atomic.Int64 }

func (c *skewedClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *skewedClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

const replicaTTL = 3 * time.Second

// replicaBackend is a Backend over its own connection to the shared store
// target, one replica with owner id owner.
func replicaBackend(t *testing.T, target, owner string, clock *skewedClock, m runtime.Model, ttl time.Duration) *server.Backend {
	t.Helper()
	src := "workflow w \"W\"\nmodel m { provider = openai, name = \"x\" }\nagent a llm \"A\" { model = m }\n"
	prog := runtimetest.Compile(t, fstest.MapFS{"w.agent": {Data: []byte(src)}}, "w.agent")
	st, err := postgres.Open(context.Background(), target, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog, Models: map[string]runtime.Model{"m": m},
		Clock: clock, Entropy: &runtimetest.Entropy{}, Replica: &runtime.Replica{Shared: st, Owner: owner, TTL: ttl}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = r.Close(ctx)
		st.Close()
	})
	return &server.Backend{Runner: r, Docs: st, Sessions: session.New(st), Clock: clock, Metrics: server.NewMetrics()}
}

// TestReplicasFollowCancelAndTakeOver: B follows a run A drives through
// the ledger, cancels it through the store, and, its clock past A's lease,
// takes over A's next run (TakeOver) and finishes it while A is fenced
// off.
func TestReplicasFollowCancelAndTakeOver(t *testing.T) {
	target := pgtest.WithSchema(t, pgtest.URL(t))
	mA := gatedModel{gate: make(chan struct{}), entered: make(chan struct{}, 8)}
	a := replicaBackend(t, target, "A", &skewedClock{}, mA, replicaTTL)
	late := &skewedClock{}
	b := replicaBackend(t, target, "B", late, quietModel{}, replicaTTL)
	ctx := context.Background()
	key := store.SessionKey{App: "w", User: "u", Session: "s"}

	run, err := a.Start(ctx, "test", runtime.Invocation{User: "u", Session: "s", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	<-mA.entered
	followed := b.Follow(ctx, key, run.ID, 0)
	if err := b.Cancel("u", run.ID); err != nil {
		t.Fatalf("cancel on B of A's run: %v", err)
	}
	if err := b.Cancel("v", run.ID); err == nil {
		t.Fatal("another user canceled the run")
	}
	var last *runtime.Event
	for e := range run.Events {
		last = e
	}
	if last == nil || last.Status != runtime.StatusCanceled {
		t.Fatalf("A's run ended %+v", last)
	}
	var kinds []runtime.EventKind
	var fin *runtime.Event
	for e := range followed.Events {
		kinds = append(kinds, e.Kind)
		fin = e
	}
	if fin == nil || fin.Kind != runtime.EventRunFinished || fin.Status != runtime.StatusCanceled || kinds[0] != runtime.EventInput {
		t.Fatalf("B followed %v", kinds)
	}
	if rec, err := b.AwaitEnd(ctx, "u", run.ID); err != nil || rec.Status != store.RunCanceled {
		t.Fatalf("AwaitEnd: %+v %v", rec, err)
	}

	// A's next run, seen by B after A's lease expired.
	run2, err := a.Start(ctx, "test", runtime.Invocation{User: "u", Session: "s2", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	<-mA.entered
	late.off.Store(int64(2 * replicaTTL))
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	took := make(chan []string, 4)
	go b.TakeOver(tctx, func(resumed []string, err error) {
		if err != nil {
			t.Errorf("takeover: %v", err)
		}
		took <- resumed
	})
	select {
	case got := <-took:
		if len(got) != 1 || got[0] != run2.ID {
			t.Fatalf("B took over %v, want %s", got, run2.ID)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("B took nothing over")
	}
	if rec, err := b.AwaitEnd(ctx, "u", run2.ID); err != nil || rec.Status != store.RunCompleted {
		t.Fatalf("the taken-over run: %+v %v", rec, err)
	}
	close(mA.gate) // A's model answers: its commit is fenced off
	for e := range run2.Events {
		if e.Kind == runtime.EventRunFinished {
			t.Fatalf("A, fenced off, reported an end: %+v", e)
		}
	}
	evs, err := b.Sessions.Events(ctx, store.SessionKey{App: "w", User: "u", Session: "s2"}, session.EventFilter{Kinds: []runtime.EventKind{runtime.EventRunFinished}})
	if err != nil || len(evs) != 1 || evs[0].Status != runtime.StatusCompleted {
		t.Fatalf("run ends in the ledger: %v %v", evs, err)
	}
}

// TestReplicaHandsOverAtShutdown: a replica whose shutdown grace ran out
// hands its runs over instead of recording them canceled; the other
// replica, told at once, resumes and finishes them — long before its
// periodic scan (TTL/2 = 30 s) or the lease's expiry would have.
func TestReplicaHandsOverAtShutdown(t *testing.T) {
	target := pgtest.WithSchema(t, pgtest.URL(t))
	const ttl = time.Minute
	mA := gatedModel{gate: make(chan struct{}), entered: make(chan struct{}, 8)}
	a := replicaBackend(t, target, "A", &skewedClock{}, mA, ttl)
	b := replicaBackend(t, target, "B", &skewedClock{}, quietModel{}, ttl)
	ctx := context.Background()
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	took := make(chan []string, 4)
	go b.TakeOver(tctx, func(resumed []string, err error) { took <- resumed })

	run, err := a.Start(ctx, "test", runtime.Invocation{User: "u", Session: "s", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	<-mA.entered
	closed, cancel := context.WithCancel(ctx)
	cancel() // no grace left
	if err := a.Runner.Close(closed); err == nil {
		t.Fatal("Close with no grace left stopped nothing")
	}
	for e := range run.Events {
		if e.Kind == runtime.EventRunFinished {
			t.Fatalf("the handed-over run reported an end on A: %+v", e)
		}
	}
	select {
	case got := <-took:
		if len(got) != 1 || got[0] != run.ID {
			t.Fatalf("B took over %v, want %s", got, run.ID)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("B was not told of the handed-over run")
	}
	if rec, err := b.AwaitEnd(ctx, "u", run.ID); err != nil || rec.Status != store.RunCompleted {
		t.Fatalf("the handed-over run: %+v %v", rec, err)
	}
	evs, err := b.Sessions.Events(ctx, store.SessionKey{App: "w", User: "u", Session: "s"}, session.EventFilter{Kinds: []runtime.EventKind{runtime.EventRunFinished, runtime.EventRunError}})
	if err != nil || len(evs) != 1 || evs[0].Status != runtime.StatusCompleted {
		t.Fatalf("run ends in the ledger: %v %v", evs, err)
	}
}
