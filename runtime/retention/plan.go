package retention

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentc/agentc/runtime/store"
)

// page is how many sessions, runs or documents one read takes.
const page = 256

// Plan reads app's sessions, their runs and the app's records
// and returns what p deletes, and what a rule matched but is kept.
func (r *Retainer) Plan(ctx context.Context, app string, p Policy) (*Plan, error) {
	if app == "" {
		return nil, fmt.Errorf("retention: an app is required: %w", store.ErrInvalid)
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	pl := &Plan{App: app, Policy: p, Now: r.cfg.Now()}
	gone := map[string]bool{}
	err := pages(ctx, store.SessionFilter{App: app, Limit: page}, r.cfg.Store.ListSessions,
		func(f *store.SessionFilter, next string) { f.Cursor = next },
		func(s store.Session) error { return r.planSession(ctx, pl, s, gone) })
	if err != nil {
		return nil, fmt.Errorf("retention: plan %s: %w", app, err)
	}
	for _, rc := range r.cfg.Records {
		if err := r.planRecords(ctx, pl, rc, gone); err != nil {
			return nil, fmt.Errorf("retention: plan %s: %s records: %w", app, rc.Coll, err)
		}
	}
	return pl, nil
}

// pages calls each for every item of every page list returns.
func pages[F, T any](ctx context.Context, f F, list func(context.Context, F) ([]T, string, error), setCursor func(*F, string), each func(T) error) error {
	for {
		items, next, err := list(ctx, f)
		if err != nil {
			return err
		}
		for _, it := range items {
			if err := each(it); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		setCursor(&f, next)
	}
}

// runsOf returns every run of the session.
func (r *Retainer) runsOf(ctx context.Context, k store.SessionKey) ([]store.Run, error) {
	var out []store.Run
	err := pages(ctx, store.RunFilter{App: k.App, User: k.User, Session: k.Session, Limit: page}, r.cfg.Store.ListRuns,
		func(f *store.RunFilter, next string) { f.Cursor = next },
		func(run store.Run) error { out = append(out, run); return nil })
	return out, err
}

// planSession plans the runs of one session, then the session itself.
// Forks are made in their base's session, so a session's runs tell which
// of them are fork bases.
func (r *Retainer) planSession(ctx context.Context, pl *Plan, s store.Session, gone map[string]bool) error {
	runs, err := r.runsOf(ctx, s.Key)
	if err != nil {
		return err
	}
	p, now := pl.Policy, pl.Now
	last := s.Updated
	for _, run := range runs {
		last = later(last, run.Updated)
	}
	idle := now.Sub(last)
	expired := p.SessionTTL > 0 && idle > p.SessionTTL
	// Finished runs, most recently updated first: the ones max_runs keeps.
	var fin []store.Run
	for _, run := range runs {
		if Finished(run.Status) {
			fin = append(fin, run)
		}
	}
	slices.SortFunc(fin, func(a, b store.Run) int {
		return cmp.Or(b.Updated.Compare(a.Updated), cmp.Compare(b.ID, a.ID))
	})
	candidates := map[string]Item{}
	for i, run := range fin {
		it := runItem(run)
		age := now.Sub(run.Updated)
		switch {
		case expired:
			it.Reason, it.Why = ReasonSessionTTL, fmt.Sprintf("session idle %s; session_ttl %s", FormatAge(idle), FormatAge(p.SessionTTL))
		case p.MaxAge > 0 && age > p.MaxAge:
			it.Reason, it.Why = ReasonMaxAge, fmt.Sprintf("%s %s ago; max_age %s", run.Status, FormatAge(age), FormatAge(p.MaxAge))
		case p.MaxRuns > 0 && i >= p.MaxRuns:
			it.Reason, it.Why = ReasonMaxRuns, fmt.Sprintf("%d newer finished runs in its session; max_runs %d", i, p.MaxRuns)
		default:
			continue
		}
		candidates[run.ID] = it
	}
	// A run stays while a run forked from it stays (forks of forks too).
	for changed := true; changed; {
		changed = false
		for _, run := range runs {
			base, ok := candidates[run.ParentRun]
			if _, child := candidates[run.ID]; ok && !child {
				base.Reason, base.Why = ReasonForkBase, fmt.Sprintf("run %s was forked from it at step %d", run.ID, run.ParentStep)
				pl.Keep = append(pl.Keep, base)
				delete(candidates, run.ParentRun)
				changed = true
			}
		}
	}
	for _, run := range fin {
		if it, ok := candidates[run.ID]; ok {
			pl.Delete = append(pl.Delete, it)
			gone[run.ID] = true
		}
	}
	if !expired {
		return nil
	}
	it := Item{Kind: KindSession, Session: s.Key, App: s.Key.App, User: s.Key.User, ID: s.Key.Session, Updated: s.Updated}
	// Kept when a run stays: say the resumable one, if any.
	kept := slices.IndexFunc(runs, func(run store.Run) bool { return !gone[run.ID] && !Finished(run.Status) })
	it.Reason = ReasonResumable
	if kept < 0 {
		kept = slices.IndexFunc(runs, func(run store.Run) bool { return !gone[run.ID] })
		it.Reason = ReasonRunKept
	}
	if kept >= 0 {
		it.Why = fmt.Sprintf("idle %s, but run %s (%s) is kept", FormatAge(idle), runs[kept].ID, runs[kept].Status)
		pl.Keep = append(pl.Keep, it)
		return nil
	}
	it.Reason, it.Why = ReasonSessionTTL, fmt.Sprintf("idle %s; session_ttl %s", FormatAge(idle), FormatAge(p.SessionTTL))
	pl.Delete = append(pl.Delete, it)
	return nil
}

func runItem(run store.Run) Item {
	k := run.Session
	return Item{Kind: KindRun, Session: k, App: k.App, User: k.User, ID: k.Session, Run: run.ID, Status: run.Status, Updated: run.Updated}
}

// planRecords plans one collection of records: those of runs that are
// gone or go in this plan and, unless owned by their run, those of runs
// finished longer ago than idempotency_ttl and reservations made longer ago
// than it.
func (r *Retainer) planRecords(ctx context.Context, pl *Plan, rc Records, gone map[string]bool) error {
	p, now, st := pl.Policy, pl.Now, r.cfg.Store
	prefix := store.DocPath(pl.App)
	for after := ""; ; {
		docs, err := st.ListDocs(ctx, rc.Coll, prefix, after, page)
		if err != nil || len(docs) == 0 {
			return err
		}
		after = docs[len(docs)-1].Key
		for _, d := range docs {
			parts, ok := store.SplitDocPath(d.Key)
			ref, err := rc.Read(d.Value)
			if !ok || len(parts) < 3 || err != nil {
				continue // not a record this build reads: leave it
			}
			it := Item{Kind: KindIdempotency, App: pl.App, User: parts[1], Coll: rc.Coll, Key: d.Key, Value: d.Value,
				Record: strings.Join(parts[2:], "/"), Run: ref.Run, With: ref.With}
			ttl := p.IdempotencyTTL
			if rc.Owned {
				it.Kind, ttl = KindRecord, 0
			}
			if ref.Task != "" {
				// A task not (yet) in the index is a request starting its
				// run: keep it. Retention deletes the record of a task's
				// run when it deletes the run, below.
				it.Run, err = st.LookupTask(ctx, it.User, ref.Task)
				if errors.Is(err, store.ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
			}
			switch {
			case it.Run == "":
				if ttl > 0 && !ref.Made.IsZero() && now.Sub(ref.Made) > ttl {
					it.Reason, it.Why = ReasonIdempotencyTTL, fmt.Sprintf("reserved %s ago without a run; idempotency_ttl %s", FormatAge(now.Sub(ref.Made)), FormatAge(p.IdempotencyTTL))
				}
			case gone[it.Run]:
				it.Reason, it.Why = ReasonRunDeleted, "its run "+it.Run+" is deleted by this plan"
			default:
				run, err := st.GetRun(ctx, it.Run)
				switch {
				case errors.Is(err, store.ErrNotFound):
					it.Reason, it.Why = ReasonRunDeleted, "its run "+it.Run+" no longer exists"
				case err != nil:
					return err
				case ttl > 0 && Finished(run.Status) && now.Sub(run.Updated) > ttl:
					it.Reason, it.Why = ReasonIdempotencyTTL, fmt.Sprintf("run %s %s %s ago; idempotency_ttl %s", run.ID, run.Status, FormatAge(now.Sub(run.Updated)), FormatAge(p.IdempotencyTTL))
				}
			}
			if it.Reason != "" {
				pl.Delete = append(pl.Delete, it)
			}
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
