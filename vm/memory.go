package vm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// MemStore is an in-memory Checkpointer with the store's invariants (steps
// strictly increase, the first record is full, pending writes are dropped
// by the commit that covers them, an effect result is recorded once). Tests
// use it, and so can ephemeral runs. It is safe for concurrent use.
type MemStore struct {
	mu      sync.Mutex
	runs    map[string]*memRun
	intents map[string]bool   // idempotency key → intent recorded
	effects map[string][]byte // idempotency key → result
}

type memRun struct {
	records []StepRecord
	pending map[uint64]map[string]PendingWrite // step → task → write
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{runs: map[string]*memRun{}, intents: map[string]bool{}, effects: map[string][]byte{}}
}

// ErrConflict is returned by MemStore for writes that contradict what it
// holds (a step out of order, a different result for a recorded effect).
var ErrConflict = errors.New("conflict")

func (s *MemStore) run(id string) *memRun {
	r := s.runs[id]
	if r == nil {
		r = &memRun{pending: map[uint64]map[string]PendingWrite{}}
		s.runs[id] = r
	}
	return r
}

// CommitStep implements Checkpointer.
func (s *MemStore) CommitStep(ctx context.Context, rec *StepRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.run(rec.Run)
	if n := len(r.records); n > 0 && rec.Step <= r.records[n-1].Step {
		return fmt.Errorf("commit run %s step %d after step %d: %w", rec.Run, rec.Step, r.records[n-1].Step, ErrConflict)
	}
	if len(r.records) == 0 && !rec.Full {
		return fmt.Errorf("commit run %s step %d: the first checkpoint must be full: %w", rec.Run, rec.Step, ErrConflict)
	}
	r.records = append(r.records, *rec)
	for step := range r.pending {
		if step <= rec.Step {
			delete(r.pending, step)
		}
	}
	return nil
}

// PutPendingWrite implements Checkpointer.
func (s *MemStore) PutPendingWrite(ctx context.Context, run string, w PendingWrite) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.run(run)
	if n := len(r.records); n > 0 && w.Step <= r.records[n-1].Step {
		return fmt.Errorf("pending write %s for committed step %d: %w", w.Task, w.Step, ErrConflict)
	}
	m := r.pending[w.Step]
	if m == nil {
		m = map[string]PendingWrite{}
		r.pending[w.Step] = m
	}
	m[w.Task] = w
	return nil
}

// LookupEffect implements Checkpointer.
func (s *MemStore) LookupEffect(ctx context.Context, run, effect string, attempt uint32) (EffectState, error) {
	key := IdempotencyKey(run, effect, attempt)
	s.mu.Lock()
	defer s.mu.Unlock()
	res, done := s.effects[key]
	return EffectState{Intent: s.intents[key], Key: key, Done: done, Result: res}, nil
}

// PutIntent implements Checkpointer.
func (s *MemStore) PutIntent(ctx context.Context, run, effect string, attempt uint32) (string, error) {
	key := IdempotencyKey(run, effect, attempt)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.intents[key] = true
	return key, nil
}

// PutEffectResult implements Checkpointer.
func (s *MemStore) PutEffectResult(ctx context.Context, key string, result []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.intents[key] {
		return fmt.Errorf("effect %s has no intent: %w", key, ErrConflict)
	}
	if old, ok := s.effects[key]; ok {
		if string(old) != string(result) {
			return fmt.Errorf("effect %s already has another result: %w", key, ErrConflict)
		}
		return nil
	}
	s.effects[key] = result
	return nil
}

// Records returns every record of run, in step order.
func (s *MemStore) Records(run string) []StepRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.runs[run]; r != nil {
		return slices.Clone(r.records)
	}
	return nil
}

// Chain returns what resumes run at its latest step: the last full record
// and every record after it.
func (s *MemStore) Chain(run string) []StepRecord {
	recs := s.Records(run)
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Full {
			return recs[i:]
		}
	}
	return nil
}

// Pending returns the pending writes of the step after run's latest record,
// ordered by task.
func (s *MemStore) Pending(run string) []PendingWrite {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[run]
	if r == nil {
		return nil
	}
	var next uint64
	if n := len(r.records); n > 0 {
		next = r.records[n-1].Step + 1
	}
	m := r.pending[next]
	out := make([]PendingWrite, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

// Journal returns run's journal: the entries of its records in step order.
func (s *MemStore) Journal(run string) [][]byte {
	var out [][]byte
	for _, rec := range s.Records(run) {
		out = append(out, rec.Journal...)
	}
	return out
}

// MemCache is an in-memory Cache holding at most a fixed number of entries;
// the oldest entry is evicted first. It is safe for concurrent use.
type MemCache struct {
	mu    sync.Mutex
	max   int
	m     map[[32]byte]CacheEntry
	order [][32]byte // insertion order, a ring of at most max keys
	head  int
}

// NewMemCache returns a cache of at most max entries (max ≤ 0: 4096).
func NewMemCache(max int) *MemCache {
	if max <= 0 {
		max = 4096
	}
	return &MemCache{max: max, m: map[[32]byte]CacheEntry{}}
}

// Get implements Cache.
func (c *MemCache) Get(ctx context.Context, key [32]byte) (CacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	return e, ok
}

// Put implements Cache.
func (c *MemCache) Put(ctx context.Context, key [32]byte, e CacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok {
		if len(c.order) < c.max {
			c.order = append(c.order, key)
		} else {
			delete(c.m, c.order[c.head])
			c.order[c.head] = key
			c.head = (c.head + 1) % c.max
		}
	}
	c.m[key] = e
}
