package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/vm"
)

// manualClock is a clock the test moves: AfterFunc callbacks run when
// Advance passes their deadline.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	for _, t := range c.timers {
		if !t.stopped && !c.now.Before(t.at) {
			t.stopped = true
			due = append(due, t.f)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// timersSource: each item of a map runs a sub-graph that waits an hour,
// then the run asks for an approval that times out after a day.
const timersSource = `workflow timers

state Nap { item: string, out: string = "" }

graph nap(Nap) input item output out {
  node pause = wait 1h
  node mark  = set { out = item + " rested" }
  start -> pause
  pause -> mark
  mark  -> end
}

state S {
  q      : string
  items  : list<string> = ["a", "b"]
  rested : list<string> = [] reduce append
  ok     : bool = false
  note   : string = ""
}

graph g(S) input q {
  node each = map x in items { graph nap { item = x } } into rested
  node ask  = interrupt "Approve?" returns bool timeout 24h else -> esc into ok
  node esc  = set { note = "escalated after {error.kind}" }
  start -> each
  each  -> ask
  ask   -> end
  esc   -> end
}
`

type timerEnv struct {
	t     *testing.T
	clock *manualClock
	st    *memory.Store
	r     *runtime.Runner
}

func newTimerEnv(t *testing.T) *timerEnv {
	prog := runtimetest.Compile(t, fstest.MapFS{"timers.agent": {Data: []byte(timersSource)}}, "timers.agent")
	clock := &manualClock{now: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)}
	st := memory.New()
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog, App: "timers", Clock: clock, Entropy: &runtimetest.Entropy{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return &timerEnv{t: t, clock: clock, st: st, r: r}
}

func (e *timerEnv) run(inv runtime.Invocation) *runtime.Event {
	e.t.Helper()
	ch, err := e.r.Run(context.Background(), inv)
	if err != nil {
		e.t.Fatal(err)
	}
	var fin *runtime.Event
	for ev := range ch {
		if ev.Kind == runtime.EventRunFinished {
			fin = ev
		}
	}
	return fin
}

func (e *timerEnv) status(run string) store.RunStatus {
	e.t.Helper()
	r, err := e.st.GetRun(context.Background(), run)
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Status
}

func (e *timerEnv) indexed() []store.Doc {
	docs, err := e.st.ListDocs(context.Background(), runtime.TimerColl, "", "", 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return docs
}

// TestTimersFire: waits inside sub-runs of a map, then an interrupt's
// timeout, fire when resumed after their deadlines — never before — and
// the run replays to the same state (issue 16 item 3).
func TestTimersFire(t *testing.T) {
	e := newTimerEnv(t)
	ctx := context.Background()
	start := e.clock.Now()
	fin := e.run(runtime.Invocation{User: "u", Session: "s", Input: "go", Runnable: "g"})
	if fin.Status != runtime.StatusInterrupted || len(fin.Interrupts) != 0 || len(fin.Timers) != 2 ||
		fin.Timers[0].ID != "g/each/0/nap/pause" || !fin.Timers[0].Wait || !fin.Timers[1].Due.Equal(start.Add(time.Hour)) {
		t.Fatalf("first run: %s %+v %+v", fin.Status, fin.Interrupts, fin.Timers)
	}
	run := fin.Run
	if docs := e.indexed(); len(docs) != 1 || !strings.Contains(docs[0].Key, run) {
		t.Fatalf("timer index %v", docs)
	}

	// Not due: a resume without values is refused, FireTimers fires nothing.
	_, err := e.r.Run(ctx, runtime.Invocation{User: "u", Session: "s", Resume: &runtime.ResumeRequest{Run: run}})
	if !errors.Is(err, runtime.ErrInvalidResume) || !strings.Contains(err.Error(), "waits until") {
		t.Fatalf("early resume: %v", err)
	}
	next, err := e.r.FireTimers(ctx)
	if err != nil || !next.Equal(start.Add(time.Hour)) {
		t.Fatalf("FireTimers before the deadline: %v, %v", next, err)
	}

	// An hour later both waits fire; the run stops at the approval.
	e.clock.Advance(time.Hour)
	next, err = e.r.FireTimers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.status(run); got != store.RunInterrupted {
		t.Fatalf("after the waits: %s", got)
	}
	if want := e.clock.Now().Add(24 * time.Hour); next.Sub(want).Abs() > time.Second {
		t.Fatalf("next deadline %v, want about %v", next, want)
	}

	// A day later the approval times out into its else route.
	e.clock.Advance(24 * time.Hour)
	if _, err := e.r.FireTimers(ctx); err != nil {
		t.Fatal(err)
	}
	if docs := e.indexed(); len(docs) != 0 {
		t.Fatalf("timer index after the run ended: %v", docs)
	}
	ss, err := e.r.LatestState(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]string{}
	for _, f := range ss.Fields {
		b, _ := types.ToJSON(f.Value)
		state[f.Name] = string(b)
	}
	if state["rested"] != `["a rested","b rested"]` || state["note"] != `"escalated after timeout"` || state["ok"] != "false" {
		t.Fatalf("final state %v", state)
	}
	sr, err := e.st.GetRun(ctx, run)
	if err != nil || sr.Status != store.RunCompleted {
		t.Fatalf("run %+v %v", sr, err)
	}
	rep, err := runtime.ReplayRun(ctx, e.st, runtimetest.Compile(t, fstest.MapFS{"timers.agent": {Data: []byte(timersSource)}}, "timers.agent"), vm.Builtins(), sr)
	if err != nil || !rep.Identical {
		t.Fatalf("replay: %+v %v", rep, err)
	}
}

// TestTimerAnsweredFirst: an answer before the deadline wins; the stale
// index entry is dropped when it comes due.
func TestTimerAnsweredFirst(t *testing.T) {
	e := newTimerEnv(t)
	ctx := context.Background()
	fin := e.run(runtime.Invocation{User: "u", Session: "s", Input: "go", Runnable: "g"})
	e.clock.Advance(time.Hour)
	if _, err := e.r.FireTimers(ctx); err != nil {
		t.Fatal(err)
	}
	fin = e.run(runtime.Invocation{User: "u", Session: "s", Resume: &runtime.ResumeRequest{Run: fin.Run, Values: map[string]json.RawMessage{"ask": json.RawMessage("true")}}})
	if fin.Status != runtime.StatusCompleted {
		t.Fatalf("answered: %s", fin.Status)
	}
	if len(e.indexed()) != 1 {
		t.Fatalf("the approval's timer should still be indexed: %v", e.indexed())
	}
	e.clock.Advance(25 * time.Hour)
	if _, err := e.r.FireTimers(ctx); err != nil {
		t.Fatal(err)
	}
	if docs := e.indexed(); len(docs) != 0 {
		t.Fatalf("stale timer kept: %v", docs)
	}
}

// TestRunTimersWakes: the timer loop sleeps until the earliest deadline
// (on the injected clock) and resumes the run then.
func TestRunTimersWakes(t *testing.T) {
	e := newTimerEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.r.RunTimers(ctx, time.Second, nil)
	}()
	defer func() { cancel(); <-done }()
	fin := e.run(runtime.Invocation{User: "u", Session: "s", Input: "go", Runnable: "g"})
	wait := func(want store.RunStatus, step uint64) {
		t.Helper()
		for i := 0; i < 500; i++ {
			ss, err := e.r.LatestState(context.Background(), fin.Run)
			if err == nil && e.status(fin.Run) == want && ss.Step >= step {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("run is %s, want %s", e.status(fin.Run), want)
	}
	wait(store.RunInterrupted, 1)
	e.clock.Advance(30 * time.Minute) // not due: nothing happens
	time.Sleep(20 * time.Millisecond)
	if st := e.status(fin.Run); st != store.RunInterrupted {
		t.Fatalf("fired early: %s", st)
	}
	e.clock.Advance(30 * time.Minute)
	wait(store.RunInterrupted, 2) // the waits fired; the approval waits
	e.clock.Advance(24 * time.Hour)
	wait(store.RunCompleted, 3)
}
