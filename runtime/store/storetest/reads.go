package storetest

import (
	"context"
	"slices"
	"sync"

	"github.com/agentc/agentc/runtime/store"
)

// Reads wraps a store and records the reads made through it that tests of
// its users assert on: where each ListEvents read the ledger from (its
// after), how many entries those reads returned, and how many run records
// GetRun read. Safe for concurrent use.
type Reads struct {
	store.Store

	mu      sync.Mutex
	afters  []uint64
	entries int
	runs    int
}

// ListEvents implements store.Sessions, recording the read.
func (r *Reads) ListEvents(ctx context.Context, key store.SessionKey, after uint64, limit int) ([]store.Entry, error) {
	es, err := r.Store.ListEvents(ctx, key, after, limit)
	r.mu.Lock()
	r.afters = append(r.afters, after)
	r.entries += len(es)
	r.mu.Unlock()
	return es, err
}

// GetRun implements store.Runs, counting the read.
func (r *Reads) GetRun(ctx context.Context, id string) (store.Run, error) {
	r.mu.Lock()
	r.runs++
	r.mu.Unlock()
	return r.Store.GetRun(ctx, id)
}

// Afters returns where each ListEvents since the last Reset read from, in
// order.
func (r *Reads) Afters() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.afters)
}

// Entries returns how many ledger entries the reads since the last Reset
// returned.
func (r *Reads) Entries() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entries
}

// Runs returns how many run records GetRun read since the last Reset.
func (r *Reads) Runs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs
}

// Reset forgets the reads recorded so far.
func (r *Reads) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.afters, r.entries, r.runs = nil, 0, 0
}
