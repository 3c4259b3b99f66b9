package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/agentc/agentc/runtime/store"
)

func cloneCheckpoint(c store.Checkpoint) store.Checkpoint {
	c.State = clone(c.State)
	c.Frontier = clone(c.Frontier)
	c.Counters = clone(c.Counters)
	c.Interrupts = clone(c.Interrupts)
	return c
}

func cloneAll(in [][]byte) [][]byte {
	out := make([][]byte, len(in))
	for i, b := range in {
		out[i] = bytes.Clone(b)
	}
	return out
}

// committed reports whether step is at or below r's latest checkpoint.
func (r *run) committed(step uint64) bool {
	n := len(r.checkpoints)
	return n > 0 && step <= r.checkpoints[n-1].Step
}

// CommitStep implements store.Checkpoints.
func (s *Store) CommitStep(ctx context.Context, c store.StepCommit) (store.Committed, error) {
	if err := c.Check(); err != nil {
		return store.Committed{}, fmt.Errorf("commit step: %w", err)
	}
	cp := c.Checkpoint
	return locked(ctx, s, s.getRun, cp.Run, fmt.Sprintf("commit step %d: ", cp.Step), func(r *run) (store.Committed, error) {
		if r.committed(cp.Step) {
			return store.Committed{}, fmt.Errorf("commit step %s/%d: latest is step %d: %w",
				cp.Run, cp.Step, r.checkpoints[len(r.checkpoints)-1].Step, store.ErrConflict)
		}
		if len(r.checkpoints) == 0 && cp.Kind != store.Full {
			return store.Committed{}, fmt.Errorf("commit step %s/%d: a run's first checkpoint must be full: %w", cp.Run, cp.Step, store.ErrInvalid)
		}
		var done store.Committed
		if len(c.Events) > 0 {
			sess, ok := s.sessions[r.rec.Session]
			if !ok {
				return store.Committed{}, fmt.Errorf("commit step %s/%d: session %s: %w", cp.Run, cp.Step, r.rec.Session, store.ErrNotFound)
			}
			done.FirstEvent = sess.append(c.Events, cp.Time)
		}
		if len(c.Journal) > 0 {
			done.FirstJournal = uint64(len(r.journal)) + 1
			r.journal = append(r.journal, cloneAll(c.Journal)...)
		}
		cp = cloneCheckpoint(cp)
		cp.JournalNext = uint64(len(r.journal)) + 1
		r.checkpoints = append(r.checkpoints, cp)
		for step := range r.pending {
			if step <= cp.Step {
				delete(r.pending, step)
			}
		}
		if c.Status != "" {
			r.rec.Status, r.rec.Updated = c.Status, cp.Time
		}
		if c.Usage != nil {
			r.rec.Usage = *c.Usage
		}
		return done, nil
	})
}

// find returns the index of step in r.checkpoints, or -1.
func (r *run) find(step uint64) int {
	i, ok := slices.BinarySearchFunc(r.checkpoints, step, func(c store.Checkpoint, s uint64) int { return cmp.Compare(c.Step, s) })
	if !ok {
		return -1
	}
	return i
}

// GetCheckpoint implements store.Checkpoints.
func (s *Store) GetCheckpoint(ctx context.Context, runID string, step uint64) (store.Checkpoint, error) {
	if err := s.lock(ctx); err != nil {
		return store.Checkpoint{}, err
	}
	defer s.mu.Unlock()
	r, ok := s.runs[runID]
	if !ok || r.find(step) < 0 {
		return store.Checkpoint{}, fmt.Errorf("load checkpoint %s/%d: %w", runID, step, store.ErrNotFound)
	}
	return cloneCheckpoint(r.checkpoints[r.find(step)]), nil
}

// LatestCheckpoint implements store.Checkpoints.
func (s *Store) LatestCheckpoint(ctx context.Context, runID string) (store.Checkpoint, error) {
	if err := s.lock(ctx); err != nil {
		return store.Checkpoint{}, err
	}
	defer s.mu.Unlock()
	r, ok := s.runs[runID]
	if !ok || len(r.checkpoints) == 0 {
		return store.Checkpoint{}, fmt.Errorf("load latest checkpoint of %s: %w", runID, store.ErrNotFound)
	}
	return cloneCheckpoint(r.checkpoints[len(r.checkpoints)-1]), nil
}

// ListCheckpoints implements store.Checkpoints.
func (s *Store) ListCheckpoints(ctx context.Context, runID string, f store.CheckpointFilter) ([]store.Checkpoint, error) {
	return readRun(ctx, s, runID, func(r *run) []store.Checkpoint {
		var out []store.Checkpoint
		for i := len(r.checkpoints) - 1; i >= 0 && (f.Limit <= 0 || len(out) < f.Limit); i-- {
			c := r.checkpoints[i]
			if f.Selects(c) {
				out = append(out, cloneCheckpoint(c))
			}
		}
		return out
	})
}

// readRun returns read's answer on runID's run, under the lock; a run that
// does not exist (or no longer does) reads as empty: the zero T.
func readRun[T any](ctx context.Context, s *Store, runID string, read func(*run) T) (T, error) {
	var zero T
	if err := s.lock(ctx); err != nil {
		return zero, err
	}
	defer s.mu.Unlock()
	r, ok := s.runs[runID]
	if !ok {
		return zero, nil
	}
	return read(r), nil
}

// chainStart returns the index of the full snapshot the chain of the
// checkpoint at index i starts with, or -1.
func (r *run) chainStart(i int) int {
	for ; i >= 0; i-- {
		if r.checkpoints[i].Kind == store.Full {
			return i
		}
	}
	return -1
}

// CheckpointChain implements store.Checkpoints.
func (s *Store) CheckpointChain(ctx context.Context, runID string, step uint64) ([]store.Checkpoint, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	r, ok := s.runs[runID]
	if !ok || r.find(step) < 0 {
		return nil, fmt.Errorf("load checkpoint chain %s/%d: %w", runID, step, store.ErrNotFound)
	}
	end := r.find(step)
	start := r.chainStart(end)
	if start < 0 {
		return nil, fmt.Errorf("load checkpoint chain %s/%d: %w", runID, step, store.ErrNoFullSnapshot)
	}
	out := make([]store.Checkpoint, 0, end-start+1)
	for _, c := range r.checkpoints[start : end+1] {
		out = append(out, cloneCheckpoint(c))
	}
	return out, nil
}

// PruneCheckpoints implements store.Checkpoints.
func (s *Store) PruneCheckpoints(ctx context.Context, runID string, step uint64) (int, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	r, ok := s.runs[runID]
	if !ok || r.find(step) < 0 {
		return 0, fmt.Errorf("prune checkpoints %s before %d: %w", runID, step, store.ErrNotFound)
	}
	start := r.chainStart(r.find(step))
	if start < 0 {
		return 0, fmt.Errorf("prune checkpoints %s before %d: %w", runID, step, store.ErrNoFullSnapshot)
	}
	r.checkpoints = slices.Delete(r.checkpoints, 0, start)
	return start, nil
}

// ListJournal implements store.Checkpoints.
func (s *Store) ListJournal(ctx context.Context, runID string, from uint64, limit int) ([]store.Entry, error) {
	return readRun(ctx, s, runID, func(r *run) []store.Entry { return entries(r.journal, max(from, 1), limit) })
}

// entries returns log[from-1:], at most limit of them, as copied entries.
func entries(log [][]byte, from uint64, limit int) []store.Entry {
	var out []store.Entry
	for seq := from; seq <= uint64(len(log)) && (limit <= 0 || len(out) < limit); seq++ {
		out = append(out, store.Entry{Seq: seq, Data: bytes.Clone(log[seq-1])})
	}
	return out
}

// PutPendingWrite implements store.PendingWrites.
func (s *Store) PutPendingWrite(ctx context.Context, runID string, step uint64, node string, attempt uint32, writes []byte) error {
	if err := store.CheckName("node", node); err != nil {
		return fmt.Errorf("put pending write %s/%d: %w", runID, step, err)
	}
	return lockedErr(ctx, s, s.getRun, runID, "put pending write: ", func(r *run) error {
		if r.committed(step) {
			return fmt.Errorf("put pending write %s/%d/%s: step already committed: %w", runID, step, node, store.ErrConflict)
		}
		m := r.pending[step]
		if m == nil {
			m = map[nodeAttempt][]byte{}
			r.pending[step] = m
		}
		na := nodeAttempt{node, attempt}
		if !putOnce(m, na, writes) {
			return fmt.Errorf("put pending write %s/%d/%s/%d: different writes recorded: %w", runID, step, node, attempt, store.ErrConflict)
		}
		return nil
	})
}

// ListPendingWrites implements store.PendingWrites.
func (s *Store) ListPendingWrites(ctx context.Context, runID string, step uint64) ([]store.PendingWrite, error) {
	return readRun(ctx, s, runID, func(r *run) []store.PendingWrite {
		var out []store.PendingWrite
		for na, w := range r.pending[step] {
			out = append(out, store.PendingWrite{Node: na.node, Attempt: na.attempt, Writes: bytes.Clone(w)})
		}
		slices.SortFunc(out, func(a, b store.PendingWrite) int {
			return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Attempt, b.Attempt))
		})
		return out
	})
}

// PutIntent implements store.Effects.
func (s *Store) PutIntent(ctx context.Context, runID, node string, attempt uint32) (string, error) {
	if err := store.CheckName("node", node); err != nil {
		return "", fmt.Errorf("put intent %s: %w", runID, err)
	}
	return locked(ctx, s, s.getRun, runID, "put intent: ", func(r *run) (string, error) {
		r.intents[nodeAttempt{node, attempt}] = true
		return store.IdempotencyKey(runID, node, attempt), nil
	})
}

// effect resolves an idempotency key to its run and node attempt; s.mu is
// held.
func (s *Store) effect(key string) (effectSlot, error) {
	runID, node, attempt, err := store.ParseIdempotencyKey(key)
	if err != nil {
		return effectSlot{}, err
	}
	na := nodeAttempt{node, attempt}
	r, ok := s.runs[runID]
	if !ok || !r.intents[na] {
		return effectSlot{}, fmt.Errorf("no intent: %w", store.ErrNotFound)
	}
	return effectSlot{r, na}, nil
}

// effectSlot is where one node attempt's effect result is kept.
type effectSlot struct {
	r  *run
	na nodeAttempt
}

// PutEffectResult implements store.Effects.
func (s *Store) PutEffectResult(ctx context.Context, key string, result []byte) error {
	return lockedErr(ctx, s, s.effect, key, fmt.Sprintf("put effect result %s: ", key), func(e effectSlot) error {
		if !putOnce(e.r.effects, e.na, result) {
			return fmt.Errorf("put effect result %s: a different result is recorded: %w", key, store.ErrConflict)
		}
		return nil
	})
}

// GetEffectResult implements store.Effects.
func (s *Store) GetEffectResult(ctx context.Context, key string) ([]byte, error) {
	return locked(ctx, s, s.effect, key, fmt.Sprintf("get effect result %s: ", key), func(e effectSlot) ([]byte, error) {
		res, ok := e.r.effects[e.na]
		if !ok {
			return nil, fmt.Errorf("get effect result %s: %w", key, store.ErrNotFound)
		}
		return bytes.Clone(res), nil
	})
}

// LookupEffect implements store.Effects.
func (s *Store) LookupEffect(ctx context.Context, key string) (store.Effect, error) {
	runID, node, attempt, err := store.ParseIdempotencyKey(key)
	if err != nil {
		return store.Effect{}, fmt.Errorf("look up effect: %w", err)
	}
	e, err := readRun(ctx, s, runID, func(r *run) store.Effect {
		na := nodeAttempt{node, attempt}
		res, done := r.effects[na]
		return store.Effect{Intent: r.intents[na], Done: done, Result: clone(res)}
	})
	if err != nil {
		return store.Effect{}, err
	}
	e.Key = key
	return e, nil
}
