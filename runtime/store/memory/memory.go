// Package memory is an in-memory store.Store: maps behind one mutex, for
// tests and ephemeral runs. Nothing survives Close. It passes the same
// conformance suite (storetest) as the durable backends, so code tested
// against it behaves the same on Pebble.
//
// Invariant: no byte slice is shared with a caller; bytes are copied on the
// way in and on the way out.
package memory

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentc/agentc/runtime/store"
)

// Store is an in-memory store.Store.
type Store struct {
	mu               sync.Mutex
	closed           bool
	programs         map[string][]byte
	runs             map[string]*run
	sessions         map[store.SessionKey]*session
	leases           map[string]store.Lease
	tasks            map[taskKey]string
	docs             map[docKey][]byte
	store.LeaseRules // AcquireLease, RenewLease, ReleaseLease over stepLease
}

// run is a run and everything it owns; DeleteRun drops it whole.
type run struct {
	rec         store.Run
	checkpoints []store.Checkpoint // ascending steps
	pending     map[uint64]map[nodeAttempt][]byte
	intents     map[nodeAttempt]bool
	effects     map[nodeAttempt][]byte
	journal     [][]byte // journal[i] has Seq i+1
	tasks       []taskKey
}

type nodeAttempt struct {
	node    string
	attempt uint32
}

type taskKey struct{ user, task string }

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	s := &Store{
		programs: map[string][]byte{},
		runs:     map[string]*run{},
		sessions: map[store.SessionKey]*session{},
		leases:   map[string]store.Lease{},
		tasks:    map[taskKey]string{},
		docs:     map[docKey][]byte{},
	}
	s.LeaseRules.Step = s.stepLease
	return s
}

// Close releases the maps; later calls return store.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.programs, s.runs, s.sessions, s.leases, s.tasks, s.docs = nil, nil, nil, nil, nil, nil
	return nil
}

// lock takes the mutex unless ctx is done or the store closed; on success the
// caller must unlock.
func (s *Store) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	return nil
}

// enter is lock as the start of an operation that returns its end.
func (s *Store) enter(ctx context.Context) (func(), error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	return s.mu.Unlock, nil
}

// putOnce stores a copy of b under k and reports true, or, when k is taken,
// reports whether it holds the same bytes (storing them again is a no-op).
func putOnce[K comparable](m map[K][]byte, k K, b []byte) bool {
	if old, ok := m[k]; ok {
		return bytes.Equal(old, b)
	}
	m[k] = bytes.Clone(b)
	return true
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}

// PutProgram implements store.Programs.
func (s *Store) PutProgram(ctx context.Context, hash string, program []byte) error {
	if err := store.CheckName("program hash", hash); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if !putOnce(s.programs, hash, program) {
		return fmt.Errorf("put program %s: different bytes under the same hash: %w", hash, store.ErrConflict)
	}
	return nil
}

// GetProgram implements store.Programs.
func (s *Store) GetProgram(ctx context.Context, hash string) ([]byte, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	p, ok := s.programs[hash]
	if !ok {
		return nil, fmt.Errorf("get program %s: %w", hash, store.ErrNotFound)
	}
	return bytes.Clone(p), nil
}

func cloneRun(r store.Run) store.Run {
	r.Meta = clone(r.Meta)
	return r
}

// CreateRun implements store.Runs.
func (s *Store) CreateRun(ctx context.Context, r store.Run) error {
	if err := r.Check(); err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.runs[r.ID]; ok {
		return fmt.Errorf("create run %s: %w", r.ID, store.ErrConflict)
	}
	if _, ok := s.sessions[r.Session]; !ok {
		return fmt.Errorf("create run %s: session %s: %w", r.ID, r.Session, store.ErrNotFound)
	}
	s.runs[r.ID] = newRun(r)
	return nil
}

// newRun is the entry of a run created with record r.
func newRun(r store.Run) *run {
	return &run{
		rec:     cloneRun(r),
		pending: map[uint64]map[nodeAttempt][]byte{},
		intents: map[nodeAttempt]bool{},
		effects: map[nodeAttempt][]byte{},
	}
}

// AdmitRun implements store.RunAdmitter.
func (s *Store) AdmitRun(ctx context.Context, r store.Run, events [][]byte, now time.Time, docs ...store.DocOp) (uint64, error) {
	err := r.Check()
	if err == nil {
		err = store.CheckDocOps(docs)
	}
	if err != nil {
		return 0, fmt.Errorf("admit run: %w", err)
	}
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if _, ok := s.runs[r.ID]; ok {
		return 0, fmt.Errorf("admit run %s: %w", r.ID, store.ErrConflict)
	}
	if err := s.checkAbsent(docs); err != nil {
		return 0, fmt.Errorf("admit run %s: %w", r.ID, err)
	}
	s.putDocs(docs)
	ss, ok := s.sessions[r.Session]
	if !ok {
		ss = &session{rec: store.Session{Key: r.Session, Created: now, Updated: now}, summaries: map[string]store.Summary{}}
		s.sessions[r.Session] = ss
	}
	var first uint64
	if len(events) > 0 {
		first = ss.append(events, now)
		r.FirstEvent = first
	}
	s.runs[r.ID] = newRun(r)
	return first, nil
}

// locked returns f's answer on the entry get finds under key, with the lock
// held; get's error (the entry is missing) is prefixed by what, f's own
// errors are returned as they are.
func locked[K any, V, T any](ctx context.Context, s *Store, get func(K) (V, error), key K, what string, f func(V) (T, error)) (T, error) {
	var zero T
	if err := s.lock(ctx); err != nil {
		return zero, err
	}
	defer s.mu.Unlock()
	v, err := get(key)
	if err != nil {
		return zero, fmt.Errorf("%s%w", what, err)
	}
	return f(v)
}

// lockedErr is locked for an f that answers only an error.
func lockedErr[K any, V any](ctx context.Context, s *Store, get func(K) (V, error), key K, what string, f func(V) error) error {
	_, err := locked(ctx, s, get, key, what, func(v V) (struct{}, error) { return struct{}{}, f(v) })
	return err
}

// getRun returns the run named id; s.mu is held.
func (s *Store) getRun(id string) (*run, error) {
	r, ok := s.runs[id]
	if !ok {
		return nil, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	return r, nil
}

// GetRun implements store.Runs.
func (s *Store) GetRun(ctx context.Context, id string) (store.Run, error) {
	return locked(ctx, s, s.getRun, id, "get ", func(r *run) (store.Run, error) {
		return cloneRun(r.rec), nil
	})
}

// UpdateRunStatus implements store.Runs.
func (s *Store) UpdateRunStatus(ctx context.Context, id string, status store.RunStatus, now time.Time) error {
	if err := store.CheckName("run status", string(status)); err != nil {
		return fmt.Errorf("update run %s: %w", id, err)
	}
	return lockedErr(ctx, s, s.getRun, id, "update ", func(r *run) error {
		r.rec.Status, r.rec.Updated = status, now
		return nil
	})
}

// EndRun implements store.Runs.
func (s *Store) EndRun(ctx context.Context, id string, events [][]byte, status store.RunStatus, usage *store.RunUsage, now time.Time) (uint64, error) {
	if err := store.CheckEnd(status, usage); err != nil {
		return 0, fmt.Errorf("end run %s: %w", id, err)
	}
	return locked(ctx, s, s.getRun, id, "end ", func(r *run) (uint64, error) {
		ss, err := s.getSession(r.rec.Session)
		if err != nil {
			return 0, fmt.Errorf("end run %s: %w", id, err)
		}
		var first uint64
		if len(events) > 0 {
			first = ss.append(events, now)
		}
		r.rec.Status, r.rec.Updated = status, now
		if usage != nil {
			r.rec.Usage = *usage
		}
		return first, nil
	})
}

// ListRuns implements store.Runs.
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, string, error) {
	return store.List(ctx, s.enter, "list runs", f, func(after []byte, max int) ([]store.Run, error) {
		var runs []store.Run
		for _, r := range s.runs {
			if f.Selects(r.rec) {
				runs = append(runs, r.rec)
			}
		}
		if f.Newest {
			runs = keyedBack(runs, store.RunIndexKey, store.RunIndexPrefix(f), after, max)
		} else {
			runs = keyed(runs, store.RunIndexKey, store.RunIndexPrefix(f), after, max)
		}
		for i := range runs {
			runs[i] = cloneRun(runs[i])
		}
		return runs, nil
	})
}

// keyed returns the items whose key is under prefix and after after, in
// key order, at most max of them (0: all).
func keyed[T any](items []T, key func(T) store.Key, prefix, after []byte, max int) []T {
	return ordered(items, key, prefix, max, func(k store.Key) bool { return bytes.Compare(k, after) > 0 }, 1)
}

// keyedBack is keyed in descending key order, before before (nil: from the
// last).
func keyedBack[T any](items []T, key func(T) store.Key, prefix, before []byte, max int) []T {
	return ordered(items, key, prefix, max, func(k store.Key) bool { return before == nil || bytes.Compare(k, before) < 0 }, -1)
}

// ordered returns the items whose key is under prefix and passes in, in key
// order (dir 1) or its reverse (dir -1), at most max of them (0: all).
func ordered[T any](items []T, key func(T) store.Key, prefix []byte, max int, in func(store.Key) bool, dir int) []T {
	type entry struct {
		key  store.Key
		item T
	}
	var es []entry
	for _, it := range items {
		if k := key(it); bytes.HasPrefix(k, prefix) && in(k) {
			es = append(es, entry{k, it})
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return dir * bytes.Compare(a.key, b.key) })
	if max > 0 && len(es) > max {
		es = es[:max]
	}
	out := make([]T, len(es))
	for i, e := range es {
		out[i] = e.item
	}
	return out
}

// DeleteRun implements store.Runs.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	_, err := s.DeleteRunIf(ctx, id, nil)
	return err
}

// DeleteRunIf implements store.Runs.
func (s *Store) DeleteRunIf(ctx context.Context, id string, cond func(store.Run) bool) (bool, error) {
	return locked(ctx, s, s.getRun, id, "delete ", func(r *run) (bool, error) {
		if cond != nil && !cond(cloneRun(r.rec)) {
			return false, nil
		}
		for _, t := range r.tasks {
			delete(s.tasks, t)
		}
		delete(s.runs, id)
		return true, nil
	})
}
