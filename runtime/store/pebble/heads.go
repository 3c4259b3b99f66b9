package pebble

import (
	"sync"

	"github.com/agentc/agentc/runtime/store"
)

// runHead is what the write path of a run needs to know before each write:
// its record and the tails of its checkpoints and journal. Reading them from
// Pebble costs a point read and two reverse seeks, which land in sstables once
// a run is older than the memtable; the cache keeps CommitStep at one synced
// batch plus in-memory work.
//
// Invariants: an entry is read and written only under its run's keyed lock,
// and only after the write it describes was applied; a missing entry is
// refilled from Pebble, so dropping one (DeleteRun, a failed apply, the size
// bound) is always safe. Nothing else writes the directory: Pebble's lock
// excludes other processes.
//
// Session records (the last event sequence, the times) are cached the same
// way, under the session's keyed lock (sessions.go): CommitStep appends a
// step's events without a point read. So is a session's absence, read
// before GetOrCreateSession creates it (a new session's first reads):
// every writer of a session record holds its lock and updates the entry
// after its batch is applied (GetOrCreateSession, AppendEvents,
// PutSessionState, CommitStep, EndRun) or drops it (DeleteSession, a
// failed apply), so an absent entry never outlives the record's creation.
// Two reads of a run's context are answered from an entry: ListEvents after
// the last sequence is empty without a scan (said under the session's lock:
// an entry lags its applied write until the writer releases it), and
// GetSummary of a session
// this handle created (bare) and put no summary of since is "none" without
// a point read — PutSummary clears bare, under the session's lock, before
// its write.
type runHead struct {
	run         store.Run
	latest      uint64 // step of the latest checkpoint, when hasLatest
	hasLatest   bool
	journalNext uint64
	// pending is false only when no pending write can exist above latest
	// (none was put since the last commit in this process).
	pending bool
}

// maxHeads bounds each cache; past it the cache starts over.
const maxHeads = 4096

// headCache is a bounded map of write-path records (run heads, session
// records) under the invariants above.
type headCache[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]V
}

func (h *headCache[K, V]) get(k K) (V, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.m[k]
	return v, ok
}

func (h *headCache[K, V]) put(k K, v V) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || len(h.m) >= maxHeads {
		h.m = make(map[K]V)
	}
	h.m[k] = v
}

func (h *headCache[K, V]) drop(k K) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, k)
}

// head returns the run's head, reading it from Pebble on a miss; a missing
// run is store.ErrNotFound. The caller holds the run's lock.
func (s *Store) head(run string) (runHead, error) {
	if hd, ok := s.heads.get(run); ok {
		return hd, nil
	}
	r, err := s.getRun(run)
	if err != nil {
		return runHead{}, err
	}
	latest, has, err := s.lastNum(checkpointPrefix(run))
	if err != nil {
		return runHead{}, err
	}
	last, _, err := s.lastNum(journalPrefix(run))
	if err != nil {
		return runHead{}, err
	}
	hd := runHead{run: r, latest: latest, hasLatest: has, journalNext: last + 1, pending: true}
	s.heads.put(run, hd)
	return hd, nil
}
