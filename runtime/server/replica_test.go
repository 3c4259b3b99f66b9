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
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/runtime/store/postgres"
	"github.com/agentc/agentc/vm"
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
func replicaBackend(t *testing.T, target, owner string, clock vm.Clock, m runtime.Model, ttl time.Duration) *server.Backend {
	t.Helper()
	src := "workflow w \"W\"\nmodel m { provider = openai, name = \"x\" }\nagent a llm \"A\" { model = m }\n"
	return replicaBackendOf(t, src, target, owner, clock, m, ttl)
}

// twoSteps is a workflow of two model calls, one superstep each.
const twoSteps = `workflow w "W"
model m { provider = openai, name = "x" }
agent a llm "A" { model = m }
state S { q: string, x: string = "", y: string = "" }
graph g(S) input q output y {
  node one = llm a { prompt = q } into x
  node two = llm a { prompt = x } into y
  start -> one
  one -> two
  two -> end
}
`

// replicaBackendOf is replicaBackend of the program src.
func replicaBackendOf(t *testing.T, src, target, owner string, clock vm.Clock, m runtime.Model, ttl time.Duration) *server.Backend {
	t.Helper()
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

// secondGated answers its first call at once and its later ones once gate
// opens, telling entered when each later call starts.
type secondGated struct {
	calls   *atomic.Int32
	gate    chan struct{}
	entered chan struct{}
}

func (secondGated) Info() runtime.ModelInfo {
	return runtime.ModelInfo{Name: "m", Model: "test:second-gated"}
}
func (m secondGated) Generate(ctx context.Context, req *runtime.ModelRequest, f func(string)) (*runtime.ModelResponse, error) {
	if m.calls.Add(1) == 1 {
		return &runtime.ModelResponse{Text: "first", FinishReason: "stop"}, nil
	}
	return gatedModel{gate: m.gate, entered: m.entered}.Generate(ctx, req, f)
}

// frozenTimers is the wall clock whose timers never fire: a follower on it
// reads again only when woken.
type frozenTimers struct{}

func (frozenTimers) Now() time.Time                              { return time.Now() }
func (frozenTimers) AfterFunc(time.Duration, func()) func() bool { return func() bool { return true } }

// followStep starts a run of g on driver, whose model m answers its first
// call and waits on its second, and follows it on follower until it reads
// node one's end, which the run committed in its first step while its
// second waits; then it lets the run end.
func followStep(t *testing.T, driver, follower *server.Backend, m secondGated) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run, err := driver.Start(ctx, "test", runtime.Invocation{User: "u", Session: "s", Input: "hi", Runnable: "g"})
	if err != nil {
		t.Fatal(err)
	}
	followed := follower.Follow(ctx, store.SessionKey{App: "w", User: "u", Session: "s"}, run.ID, 0)
	timeout := time.After(20 * time.Second)
	for seen := false; !seen; {
		select {
		case e, ok := <-followed.Events:
			if !ok {
				t.Fatal("the follow ended before the first step's events")
			}
			seen = e.Kind == runtime.EventNodeFinished && e.Node == "one"
		case <-timeout:
			t.Fatal("the first step's commit did not wake the follower")
		}
	}
	<-m.entered
	close(m.gate)
	for range run.Events {
	}
}

// TestFollowWokenByCommits: a follower of a run is woken by each step the
// run commits — on another replica through the store's notifications
// (B's timers never fire, so nothing polls), and in the process that
// drives it — and reads the step's events while the run goes on.
func TestFollowWokenByCommits(t *testing.T) {
	target := pgtest.WithSchema(t, pgtest.URL(t))
	m := secondGated{calls: &atomic.Int32{}, gate: make(chan struct{}), entered: make(chan struct{}, 8)}
	a := replicaBackendOf(t, twoSteps, target, "A", &skewedClock{}, m, replicaTTL)
	b := replicaBackendOf(t, twoSteps, target, "B", frozenTimers{}, quietModel{}, replicaTTL)
	followStep(t, a, b, m)

	// In one process, with no replicas and timers that never fire.
	mem := memory.New()
	prog := runtimetest.Compile(t, fstest.MapFS{"w.agent": {Data: []byte(twoSteps)}}, "w.agent")
	m2 := secondGated{calls: &atomic.Int32{}, gate: make(chan struct{}), entered: make(chan struct{}, 8)}
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: mem, Program: prog, Models: map[string]runtime.Model{"m": m2},
		Clock: frozenTimers{}, Entropy: &runtimetest.Entropy{}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	one := &server.Backend{Runner: r, Docs: mem, Sessions: session.New(mem), Clock: frozenTimers{}, Metrics: server.NewMetrics()}
	followStep(t, one, one, m2)
}
