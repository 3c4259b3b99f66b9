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
type runHead struct {
	run         store.Run
	latest      uint64 // step of the latest checkpoint, when hasLatest
	hasLatest   bool
	journalNext uint64
	// pending is false only when no pending write can exist above latest
	// (none was put since the last commit in this process).
	pending bool
}

// maxHeads bounds the cache; past it the cache starts over.
const maxHeads = 4096

type heads struct {
	mu sync.Mutex
	m  map[string]runHead
}

func (h *heads) get(run string) (runHead, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	hd, ok := h.m[run]
	return hd, ok
}

func (h *heads) put(run string, hd runHead) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || len(h.m) >= maxHeads {
		h.m = make(map[string]runHead)
	}
	h.m[run] = hd
}

func (h *heads) drop(run string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, run)
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
