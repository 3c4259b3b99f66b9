package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/agentc/agentc/runtime/store"
)

// endRecorder is a RunEndObserver (and RunSweeper) that records calls.
type endRecorder struct {
	mu    sync.Mutex
	ended []string // "run:status"
	sweep []string // runs to look up at the sweep
	found []string // "run:status:known"
	fail  bool     // RunEnded panics
}

func (o *endRecorder) RunEnded(ctx context.Context, run string, status RunStatus) error {
	o.mu.Lock()
	o.ended = append(o.ended, run+":"+string(status))
	o.mu.Unlock()
	if o.fail {
		panic("observer kaboom")
	}
	return nil
}

func (o *endRecorder) SweepRuns(ctx context.Context, lookup func(context.Context, string) (RunStatus, bool, error)) error {
	for _, run := range o.sweep {
		st, known, err := lookup(ctx, run)
		if err != nil {
			return err
		}
		o.mu.Lock()
		o.found = append(o.found, run+":"+string(st)+":"+map[bool]string{true: "known", false: "unknown"}[known])
		o.mu.Unlock()
	}
	return nil
}

func (o *endRecorder) calls() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.ended)
}

// scopedTool is a tool whose per-run resources an observer frees.
type scopedTool struct {
	*funcTool
	obs RunEndObserver
}

func (t scopedTool) RunEndObserver() RunEndObserver { return t.obs }

// A run-end observer hears of a run once it ended for good (completed,
// failed, canceled) — never of an interrupted one, which continues —
// before the caller sees run_finished, once however many tools share it.
func TestRunEndObservers(t *testing.T) {
	ctx := context.Background()
	obs := &endRecorder{}
	other := &endRecorder{fail: true} // a panicking observer fails nothing
	p := buildProgram(t, progOpts{})
	f := newFixture(t, backends[0].open(t), p, nil, nil, func(cfg *RunnerConfig) {
		cfg.RunEnd = []RunEndObserver{obs, other}
		cfg.Tools["lookup"] = scopedTool{cfg.Tools["lookup"].(*funcTool), obs}
		cfg.Tools["spare"] = scopedTool{lookupTool(), obs}
	})

	evs := f.collect(ctx, Invocation{User: "u", Session: "s", Input: "q"})
	run := runIDOf(t, evs)
	if last(evs).Status != StatusInterrupted || len(obs.calls()) != 0 {
		t.Fatalf("interrupted run: status %s, observer told %v", last(evs).Status, obs.calls())
	}
	evs = f.collect(ctx, Invocation{User: "u", Session: "s", Resume: &ResumeRequest{Run: run, Values: map[string]json.RawMessage{"approve": json.RawMessage(`true`)}}})
	if last(evs).Status != StatusCompleted {
		t.Fatalf("resumed run ended %s", last(evs).Status)
	}
	// Told before run_finished: the calls are there as soon as the stream
	// closed.
	if got := obs.calls(); !slices.Equal(got, []string{run + ":completed"}) {
		t.Fatalf("observer told %v, want once completed", got)
	}
	if got := other.calls(); !slices.Equal(got, []string{run + ":completed"}) {
		t.Fatalf("second observer told %v", got)
	}

	// A failed run.
	f.tool.fn = func(context.Context, ToolRequest) (json.RawMessage, error) { return nil, errors.New("down") }
	evs = f.collect(ctx, Invocation{User: "u", Session: "s2", Input: "q"})
	failed := runIDOf(t, evs)
	if last(evs).Status != StatusFailed {
		t.Fatalf("status %s", last(evs).Status)
	}
	if got := obs.calls(); !slices.Equal(got, []string{run + ":completed", failed + ":failed"}) {
		t.Fatalf("observer told %v", got)
	}
}

// A canceled run ends for good too.
func TestRunEndObserverCanceled(t *testing.T) {
	obs := &endRecorder{}
	model, entered, release := blockingModel()
	defer close(release)
	f := newFixture(t, backends[0].open(t), buildProgram(t, progOpts{}), model, nil, func(cfg *RunnerConfig) { cfg.RunEnd = []RunEndObserver{obs} })
	ch, err := f.r.Run(context.Background(), Invocation{User: "u", Session: "s", Input: "q"})
	if err != nil {
		t.Fatal(err)
	}
	var evs []*Event
	for e := range ch {
		evs = append(evs, e)
		if e.Kind == EventModelDelta {
			<-entered
			f.r.Cancel(e.Run)
		}
	}
	run := runIDOf(t, evs)
	if last(evs).Status != StatusCanceled {
		t.Fatalf("status %s", last(evs).Status)
	}
	if got := obs.calls(); !slices.Equal(got, []string{run + ":canceled"}) {
		t.Fatalf("observer told %v", got)
	}
}

// NewRunner lets a RunSweeper look up the runs it keeps resources of.
func TestRunSweeperAtStart(t *testing.T) {
	ctx := context.Background()
	st := backends[0].open(t)
	p := buildProgram(t, progOpts{})
	f := newFixture(t, st, p, nil, nil, nil)
	open := runIDOf(t, f.collect(ctx, Invocation{User: "u", Session: "s", Input: "q"}))
	done := runIDOf(t, f.collect(ctx, Invocation{User: "u", Session: "s2", Input: "q"}))
	f.collect(ctx, Invocation{User: "u", Session: "s2", Resume: &ResumeRequest{Run: done, Values: map[string]json.RawMessage{"approve": json.RawMessage(`true`)}}})
	if f.runStatus(open) != store.RunInterrupted || f.runStatus(done) != store.RunCompleted {
		t.Fatal("setup")
	}
	sw := &endRecorder{sweep: []string{open, done, "run_gone"}}
	newFixture(t, st, p, nil, nil, func(cfg *RunnerConfig) {
		cfg.Tools["lookup"] = scopedTool{cfg.Tools["lookup"].(*funcTool), sw}
	})
	want := []string{open + ":interrupted:known", done + ":completed:known", "run_gone::unknown"}
	if !slices.Equal(sw.found, want) {
		t.Fatalf("sweep found %v, want %v", sw.found, want)
	}
}

func TestRunStatusEnded(t *testing.T) {
	for s, want := range map[RunStatus]bool{StatusCompleted: true, StatusFailed: true, StatusCanceled: true,
		StatusInterrupted: false, StatusNeedsDecision: false, StatusRunning: false, "": false} {
		if s.Ended() != want {
			t.Errorf("%q.Ended() = %v", s, !want)
		}
	}
}
