package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime/debug"
	"slices"

	"github.com/agentc/agentc/runtime/store"
)

// RunEndObserver is told, on the run's own goroutine, when a run has ended
// for good: completed, failed or canceled (Ended). Not when it stops
// interrupted or needing a decision, nor when it is cut off while running:
// those continue. It frees what was kept for the run (its workspace). An
// error is logged; a panic is recovered and logged. The caller sees
// run_finished after every observer returned.
type RunEndObserver interface {
	RunEnded(ctx context.Context, run string, status RunStatus) error
}

// RunScoped is implemented by a Tool that keeps resources per run (the
// workspace tools): the Runner registers the RunEndObserver it returns,
// once per distinct observer however many tools share it, after
// RunnerConfig.RunEnd's.
type RunScoped interface {
	RunEndObserver() RunEndObserver
}

// RunSweeper is a RunEndObserver that may hold resources of runs that
// ended while no Runner observed them (the process was killed between
// recording a run's end and its observers). NewRunner calls SweepRuns once;
// lookup reports a run's status in the Runner's store (known false: the
// store has no such run).
type RunSweeper interface {
	SweepRuns(ctx context.Context, lookup func(ctx context.Context, run string) (status RunStatus, known bool, err error)) error
}

// Ended reports whether s is an end for good: completed, failed or
// canceled.
func (s RunStatus) Ended() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCanceled
}

// runEndObservers collects cfg.RunEnd and the observers of RunScoped tools,
// each distinct observer once.
func runEndObservers(cfg RunnerConfig) []RunEndObserver {
	var out []RunEndObserver
	add := func(o RunEndObserver) {
		if o == nil {
			return
		}
		if reflect.TypeOf(o).Comparable() { // == of equal non-comparable types panics
			for _, have := range out {
				if have == o {
					return
				}
			}
		}
		out = append(out, o)
	}
	for _, o := range cfg.RunEnd {
		add(o)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Tools)) { // a stable order
		if rs, ok := cfg.Tools[name].(RunScoped); ok {
			add(rs.RunEndObserver())
		}
	}
	return out
}

// runEnded tells the observers that run ended with status, when that is an
// end for good.
func (r *Runner) runEnded(ctx context.Context, run string, status RunStatus) {
	if !status.Ended() || run == "" {
		return
	}
	for i, o := range r.endObs {
		if err := safeRunEnded(ctx, o, run, status); err != nil {
			r.log.Warn("runtime: run-end observer failed", "observer", i, "run", run, "status", status, "err", err)
		}
	}
}

func safeRunEnded(ctx context.Context, o RunEndObserver, run string, status RunStatus) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("run-end observer panicked: %v\n%s", v, debug.Stack())
		}
	}()
	return o.RunEnded(ctx, run, status)
}

// sweepRuns lets every RunSweeper observer free what it keeps for runs
// that ended while no Runner observed them.
func (r *Runner) sweepRuns(ctx context.Context) {
	lookup := func(ctx context.Context, run string) (RunStatus, bool, error) {
		rec, err := r.st.GetRun(ctx, run)
		if errors.Is(err, store.ErrNotFound) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		return RunStatus(rec.Status), true, nil
	}
	for i, o := range r.endObs {
		s, ok := o.(RunSweeper)
		if !ok {
			continue
		}
		func() {
			defer func() {
				if v := recover(); v != nil {
					r.log.Warn("runtime: run sweep panicked", "observer", i, "panic", v)
				}
			}()
			if err := s.SweepRuns(ctx, lookup); err != nil {
				r.log.Warn("runtime: run sweep failed", "observer", i, "err", err)
			}
		}()
	}
}
