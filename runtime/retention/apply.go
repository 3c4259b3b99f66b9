package retention

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/agentc/agentc/runtime/store"
)

// Result is what Apply did: the items it deleted, and those it skipped
// because a check right before the deletion found them changed (their Why
// says how).
type Result struct {
	Deleted []Item
	Skipped []Item
}

// Count returns how many deleted items are of kind k.
func (r Result) Count(k Kind) int { return Count(r.Deleted, k) }

// Count returns how many of items are of kind k.
func Count(items []Item, k Kind) int {
	n := 0
	for _, it := range items {
		if it.Kind == k {
			n++
		}
	}
	return n
}

// Apply deletes pl's items: runs, then sessions, then records (a record
// goes after its run, so a re-sent request never starts a second run of one
// that is still there). Each item is checked again under the
// store's writer lock and deleted only when unchanged since the plan: a run
// still finished and last updated when the plan saw it, and no longer a
// fork base; a session not updated since and without runs; a record with
// the same value. Errors of single items are joined and do not stop the
// others; a done ctx does.
func (r *Retainer) Apply(ctx context.Context, pl *Plan) (Result, error) {
	var (
		res  Result
		errs []error
	)
	for _, kind := range []Kind{KindRun, KindSession, KindIdempotency, KindRecord} {
		for _, it := range pl.Delete {
			if it.Kind != kind {
				continue
			}
			if err := ctx.Err(); err != nil {
				return res, errors.Join(append(errs, err)...)
			}
			why, err := r.apply(ctx, it)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("retention: delete %s: %w", it, err))
			case why != "":
				it.Why = why
				res.Skipped = append(res.Skipped, it)
			default:
				res.Deleted = append(res.Deleted, it)
				if it.Kind == KindSession {
					// Gone: what others keep about it goes next; a
					// failure leaves those documents, not the session.
					if err := r.forget(ctx, it.Session); err != nil {
						errs = append(errs, fmt.Errorf("retention: after deleting %s: %w", it, err))
					}
				}
			}
		}
	}
	return res, errors.Join(errs...)
}

// apply deletes one item; why says why it did not.
func (r *Retainer) apply(ctx context.Context, it Item) (why string, err error) {
	st := r.cfg.Store
	switch it.Kind {
	case KindRun:
		child, err := r.forkOf(ctx, it)
		if err != nil || child != "" {
			return "run " + child + " was forked from it since the plan", err
		}
		ok, err := st.DeleteRunIf(ctx, it.Run, func(run store.Run) bool {
			return Finished(run.Status) && run.Updated.Equal(it.Updated)
		})
		return gone(ok, err, "it was updated since the plan")
	case KindSession:
		ok, err := st.DeleteSession(ctx, it.Session, func(s store.Session) bool { return s.Updated.Equal(it.Updated) })
		if errors.Is(err, store.ErrConflict) {
			return "it still has runs (kept, or created since the plan)", nil
		}
		return gone(ok, err, "it was active since the plan")
	default:
		v, err := st.GetDoc(ctx, it.Coll, it.Key)
		if errors.Is(err, store.ErrNotFound) {
			return "it was deleted since the plan", nil
		}
		if err != nil {
			return "", err
		}
		if !bytes.Equal(v, it.Value) {
			return "it was rewritten since the plan", nil
		}
		ops := []store.DocOp{{Coll: it.Coll, Key: it.Key, Delete: true}}
		for _, w := range it.With {
			ops = append(ops, store.DocOp{Coll: w.Coll, Key: w.Key, Delete: true})
		}
		return "", st.ApplyDocs(ctx, ops...)
	}
}

// gone maps a conditional deletion's answer to apply's.
func gone(deleted bool, err error, changed string) (string, error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "it was deleted since the plan", nil
	case err != nil:
		return "", err
	case !deleted:
		return changed, nil
	}
	return "", nil
}

// forkOf returns a run of it's session forked from it, if any.
func (r *Retainer) forkOf(ctx context.Context, it Item) (string, error) {
	runs, err := r.runsOf(ctx, it.Session)
	for _, run := range runs {
		if run.ParentRun == it.Run {
			return run.ID, err
		}
	}
	return "", err
}

// forget deletes what other services keep about a deleted session.
func (r *Retainer) forget(ctx context.Context, k store.SessionKey) error {
	prefix := store.DocPath(k.App, k.User, k.Session)
	for _, coll := range r.cfg.SessionDocs {
		if _, err := store.DeleteDocs(ctx, r.cfg.Store, coll, prefix, nil); err != nil {
			return fmt.Errorf("documents of session %s: %w", k, err)
		}
	}
	for _, f := range r.cfg.Forget {
		if err := f(ctx, k); err != nil {
			return fmt.Errorf("forget session %s: %w", k, err)
		}
	}
	return nil
}
