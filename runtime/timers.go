package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// Durable timers (spec/runner.md, "Timers"). A run that stops waiting on a
// wait node or an interrupt with a timeout has deadlines (vm.Result.Timers,
// also in its checkpoint). Its earliest one is indexed in the store's Docs
// under TimerColl, keyed so that keys sort by due time, before the run's
// end is recorded: a process that dies in between leaves an entry whose
// run is still `running`, which firing resumes like any run cut off. The
// index is a wake-up list, not the truth: firing resumes the run without
// values, the VM fires the deadlines that are due by the Runner's clock,
// and an entry whose run has nothing due (answered meanwhile, finished, a
// later deadline) is dropped. A resumed run that still waits indexes its
// next deadline, which sorts after the fired one.

// TimerColl is the Docs collection of the timer index.
const TimerColl = "timers"

// timerDoc is an index entry's value.
type timerDoc struct {
	Run     string `json:"run"`
	App     string `json:"app"`
	User    string `json:"user"`
	Session string `json:"session"`
}

// timerKey sorts by due time, then run.
func timerKey(due time.Time, run string) string {
	return store.DocPath(fmt.Sprintf("%020d", due.UnixNano()), run)
}

// scheduleTimer indexes the earliest of a waiting run's deadlines and wakes
// the timer loop when it is earlier than what it waits for.
func (a *activeRun) scheduleTimer(ctx context.Context, timers []vm.Timer) error {
	if len(timers) == 0 {
		return nil
	}
	due := timers[0].Due
	b, err := json.Marshal(timerDoc{Run: a.id, App: a.key.App, User: a.key.User, Session: a.key.Session})
	if err != nil {
		return err
	}
	if err := a.r.st.ApplyDocs(ctx, store.DocOp{Coll: TimerColl, Key: timerKey(due, a.id), Value: b}); err != nil {
		return fmt.Errorf("runtime: index the timer of run %s: %w", a.id, err)
	}
	a.r.timerWake(due)
	return nil
}

// timerWake tells the timer loop (RunTimers) of a deadline.
func (r *Runner) timerWake(due time.Time) {
	r.mu.Lock()
	ch := r.timerCh
	r.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case ch <- due:
	default:
	}
}

// TimerFire resumes run (a ResumeRequest without values) to fire its due
// timers. FireTimers deletes the index entry once it returns nil; an
// ErrNotResumable or ErrInvalidResume drops the entry too, any other error
// keeps it for a retry.
type TimerFire func(ctx context.Context, run store.Run) error

// FireTimers resumes, one after the other, the runs of this Runner's app
// whose indexed deadline is due by its clock, each read to its end, and
// returns the next deadline of the index (zero: none). A run whose session
// is busy is tried again a second later; an entry that cannot fire (its run
// finished, or has nothing due) is dropped.
func (r *Runner) FireTimers(ctx context.Context) (time.Time, error) {
	return r.FireTimersWith(ctx, nil)
}

// FireTimersWith is FireTimers with fire resuming each run (nil: the
// Runner itself, reading the run's events to their end; agent serve hands
// the run to the protocol adapters that follow it).
func (r *Runner) FireTimersWith(ctx context.Context, fire TimerFire) (time.Time, error) {
	if fire == nil {
		fire = r.fire
	}
	after := ""
	var retry time.Time // a timer that could not fire now: try again in a second
	for {
		docs, err := r.st.ListDocs(ctx, TimerColl, "", after, 32)
		if err != nil || len(docs) == 0 {
			return retry, err
		}
		for _, d := range docs {
			after = d.Key
			due, ok := timerDue(d.Key)
			if !ok {
				_ = r.st.ApplyDocs(ctx, store.DocOp{Coll: TimerColl, Key: d.Key, Delete: true})
				continue
			}
			if now := r.clock.Now(); now.Before(due) {
				if !retry.IsZero() && retry.Before(due) {
					return retry, nil
				}
				return due, nil
			}
			var td timerDoc
			if json.Unmarshal(d.Value, &td) != nil || td.Run == "" {
				_ = r.st.ApplyDocs(ctx, store.DocOp{Coll: TimerColl, Key: d.Key, Delete: true})
				continue
			}
			if td.App != r.app {
				continue // another app's timer on a shared store
			}
			run, err := r.st.GetRun(ctx, td.Run)
			if err == nil && run.Status == store.RunCompleted {
				err = fmt.Errorf("%w: run %s is completed", ErrNotResumable, td.Run)
			} else if err == nil && (run.Session.User != td.User || run.Session.Session != td.Session) {
				err = fmt.Errorf("%w: run %s is not in the timer's session", ErrNotResumable, td.Run)
			} else if err == nil {
				err = fire(ctx, run)
			}
			if err != nil {
				if !errors.Is(err, ErrNotResumable) && !errors.Is(err, ErrInvalidResume) && !errors.Is(err, store.ErrNotFound) {
					// Busy, closing or failing: the entry stays.
					r.log.Debug("runtime: timer not fired yet", "run", td.Run, "err", err)
					if retry.IsZero() {
						retry = r.clock.Now().Add(time.Second)
					}
					continue
				}
				r.log.Info("runtime: timer dropped", "run", td.Run, "reason", err)
			}
			if err := r.st.ApplyDocs(context.WithoutCancel(ctx), store.DocOp{Coll: TimerColl, Key: d.Key, Delete: true}); err != nil {
				return time.Time{}, err
			}
		}
	}
}

// fire resumes run without values and waits for it to end.
func (r *Runner) fire(ctx context.Context, run store.Run) error {
	// The run is not canceled with the timer loop: Close stops it.
	ch, err := r.Run(context.WithoutCancel(ctx), Invocation{User: run.Session.User, Session: run.Session.Session, Resume: &ResumeRequest{Run: run.ID}})
	if err != nil {
		return err
	}
	for range ch {
	}
	return nil
}

// timerDue parses an index key's due time.
func timerDue(key string) (time.Time, bool) {
	num, _, ok := strings.Cut(key, "\x00")
	if !ok {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, n), true
}

// RunTimers fires due timers with fire (nil: FireTimers') until ctx ends
// (agentc serve runs it on a goroutine it owns, through its Backend): it
// sleeps until the earliest indexed deadline, or until a run indexes an
// earlier one, and retries every retry when the store fails.
func (r *Runner) RunTimers(ctx context.Context, retry time.Duration, fire TimerFire) {
	wake := make(chan time.Time, 1)
	r.mu.Lock()
	r.timerCh = wake
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.timerCh = nil
		r.mu.Unlock()
	}()
	for {
		next, err := r.FireTimersWith(ctx, fire)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("runtime: fire timers", "err", err)
			next = r.clock.Now().Add(retry)
		}
		var tick <-chan struct{}
		var stop func() bool
		if !next.IsZero() {
			d := max(next.Sub(r.clock.Now()), 0)
			t := make(chan struct{}, 1)
			stop = r.clock.AfterFunc(d, func() { t <- struct{}{} })
			tick = t
		}
		select {
		case <-ctx.Done():
		case <-tick:
		case <-wake:
		}
		if stop != nil {
			stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}
