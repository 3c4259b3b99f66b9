package pebble

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentc/agentc/runtime/store"
)

// CommitStep implements store.Checkpoints. Under the run's lock (and the
// session's, when there are events) it checks the step against the latest
// checkpoint, assigns event and journal sequences, deletes the pending writes
// at or below the step, and applies everything as one synced batch.
func (s *Store) CommitStep(ctx context.Context, c store.StepCommit) (store.Committed, error) {
	if err := c.Check(); err != nil {
		return store.Committed{}, fmt.Errorf("commit step: %w", err)
	}
	cp := c.Checkpoint
	return store.Op(ctx, &s.gate, nil, func() (store.Committed, error) {
		defer s.locks.lock(runKey(cp.Run))()
		fail := func(err error) (store.Committed, error) {
			return store.Committed{}, fmt.Errorf("commit step %s/%d: %w", cp.Run, cp.Step, err)
		}
		hd, err := s.head(cp.Run)
		switch {
		case err != nil:
			return fail(err)
		case hd.hasLatest && cp.Step <= hd.latest:
			return fail(fmt.Errorf("latest is step %d: %w", hd.latest, store.ErrConflict))
		case !hd.hasLatest && cp.Kind != store.Full:
			return fail(fmt.Errorf("a run's first checkpoint must be full: %w", store.ErrInvalid))
		}
		var done store.Committed
		var sr sessionRecord
		b := s.db.NewBatchWithSize(len(cp.State) + 512)
		batchOK := false
		defer func() {
			if !batchOK {
				b.Close()
			}
		}()

		if len(c.Events) > 0 {
			defer s.locks.lock(sessionKey(hd.run.Session))()
			first, r, err := s.appendEvents(b, hd.run.Session, c.Events, cp.Time)
			if err != nil {
				return fail(err)
			}
			done.FirstEvent, sr = first, r
		}
		if len(c.Journal) > 0 {
			done.FirstJournal = hd.journalNext
			for _, j := range c.Journal {
				b.Set(journalPrefix(cp.Run).U64(hd.journalNext), store.Frame(j), nil)
				hd.journalNext++
			}
		}
		cp.JournalNext = hd.journalNext

		if hd.pending {
			// Pending writes at or below the latest step were deleted by its
			// commit: start above it, past their tombstones.
			lower := pendingPrefix(cp.Run)
			if hd.hasLatest {
				lower = lower.U64(hd.latest + 1)
			}
			it, err := s.iter(lower, store.PrefixEnd(pendingPrefix(cp.Run).U64(cp.Step)))
			if err != nil {
				return fail(err)
			}
			for ok := it.First(); ok; ok = it.Next() {
				b.Delete(it.Key(), nil)
			}
			if err := it.close(nil); err != nil {
				return fail(err)
			}
		}
		b.Set(checkpointKey(cp.Run, cp.Step), checkpointCodec.value(cp), nil)
		if c.Status != "" {
			hd.run.Status, hd.run.Updated = c.Status, cp.Time
		}
		if c.Usage != nil {
			hd.run.Usage = *c.Usage
		}
		if c.Status != "" || c.Usage != nil {
			b.Set(runKey(cp.Run), runCodec.value(hd.run), nil)
		}
		batchOK = true
		err = s.apply(b)
		if len(c.Events) > 0 {
			s.wroteSession(hd.run.Session, sr, err)
		}
		if err != nil {
			s.heads.drop(cp.Run)
			return fail(err)
		}
		hd.latest, hd.hasLatest, hd.pending = cp.Step, true, false
		s.heads.put(cp.Run, hd)
		return done, nil
	})
}

// GetCheckpoint implements store.Checkpoints.
func (s *Store) GetCheckpoint(ctx context.Context, run string, step uint64) (store.Checkpoint, error) {
	return store.Op(ctx, &s.gate, nil, func() (store.Checkpoint, error) {
		key := checkpointKey(run, step)
		p, err := s.get(key)
		if err != nil {
			return store.Checkpoint{}, fmt.Errorf("load checkpoint %s/%d: %w", run, step, err)
		}
		c, err := decodeCheckpoint(key, p, run, step)
		if err != nil {
			return store.Checkpoint{}, fmt.Errorf("load checkpoint %s/%d: %w", run, step, err)
		}
		return c, nil
	})
}

// checkpointAt decodes the checkpoint at the iterator.
func checkpointAt(it iter, run string) (store.Checkpoint, error) {
	step, err := tailNum(it.Key())
	if err != nil {
		return store.Checkpoint{}, err
	}
	p, err := it.payload()
	if err != nil {
		return store.Checkpoint{}, err
	}
	return decodeCheckpoint(it.Key(), p, run, step)
}

// LatestCheckpoint implements store.Checkpoints.
func (s *Store) LatestCheckpoint(ctx context.Context, run string) (store.Checkpoint, error) {
	return store.Op(ctx, &s.gate, nil, func() (store.Checkpoint, error) {
		it, err := s.prefix(checkpointPrefix(run))
		if err != nil {
			return store.Checkpoint{}, fmt.Errorf("load latest checkpoint of %s: %w", run, err)
		}
		var c store.Checkpoint
		if it.Last() {
			c, err = checkpointAt(it, run)
		} else {
			err = store.ErrNotFound
		}
		if err := it.close(err); err != nil {
			return store.Checkpoint{}, fmt.Errorf("load latest checkpoint of %s: %w", run, err)
		}
		return c, nil
	})
}

// ListCheckpoints implements store.Checkpoints.
func (s *Store) ListCheckpoints(ctx context.Context, run string, f store.CheckpointFilter) ([]store.Checkpoint, error) {
	return store.Op(ctx, &s.gate, nil, func() ([]store.Checkpoint, error) {
		p := checkpointPrefix(run)
		upper := store.PrefixEnd(p)
		if f.Before > 0 {
			upper = checkpointKey(run, f.Before)
		}
		it, err := s.iter(p, upper)
		if err != nil {
			return nil, fmt.Errorf("list checkpoints of %s: %w", run, err)
		}
		var out []store.Checkpoint
		for ok := it.Last(); ok && (f.Limit <= 0 || len(out) < f.Limit); ok = it.Prev() {
			var c store.Checkpoint
			if c, err = checkpointAt(it, run); err != nil {
				break
			}
			if f.Selects(c) {
				out = append(out, c)
			}
		}
		if err := it.close(err); err != nil {
			return nil, fmt.Errorf("list checkpoints of %s: %w", run, err)
		}
		return out, nil
	})
}

// chain walks back from step to the full snapshot its chain starts with and
// returns the chain in step order. An iterator is a consistent snapshot, so
// the chain is whole even while the run commits.
func (s *Store) chain(run string, step uint64) ([]store.Checkpoint, error) {
	it, err := s.iter(checkpointPrefix(run), store.PrefixEnd(checkpointKey(run, step)))
	if err != nil {
		return nil, err
	}
	var out []store.Checkpoint
	ok := it.Last()
	if ok {
		if n, _ := tailNum(it.Key()); n != step {
			ok = false
		}
	}
	if !ok {
		return nil, it.close(store.ErrNotFound)
	}
	for ; ok; ok = it.Prev() {
		var c store.Checkpoint
		if c, err = checkpointAt(it, run); err != nil {
			break
		}
		out = append(out, c)
		if c.Kind == store.Full {
			break
		}
	}
	if err := it.close(err); err != nil {
		return nil, err
	}
	if len(out) == 0 || out[len(out)-1].Kind != store.Full {
		return nil, store.ErrNoFullSnapshot
	}
	slices.Reverse(out)
	return out, nil
}

// CheckpointChain implements store.Checkpoints.
func (s *Store) CheckpointChain(ctx context.Context, run string, step uint64) ([]store.Checkpoint, error) {
	return store.Op(ctx, &s.gate, nil, func() ([]store.Checkpoint, error) {
		out, err := s.chain(run, step)
		if err != nil {
			return nil, fmt.Errorf("load checkpoint chain %s/%d: %w", run, step, err)
		}
		return out, nil
	})
}

// PruneCheckpoints implements store.Checkpoints.
func (s *Store) PruneCheckpoints(ctx context.Context, run string, step uint64) (int, error) {
	return store.Op(ctx, &s.gate, nil, func() (int, error) {
		defer s.locks.lock(runKey(run))()
		fail := func(err error) (int, error) {
			return 0, fmt.Errorf("prune checkpoints %s before %d: %w", run, step, err)
		}
		chain, err := s.chain(run, step)
		if err != nil {
			return fail(err)
		}
		lower, upper := checkpointPrefix(run), checkpointKey(run, chain[0].Step)
		it, err := s.iter(lower, upper)
		if err != nil {
			return fail(err)
		}
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.close(nil); err != nil {
			return fail(err)
		}
		if n == 0 {
			return 0, nil
		}
		b := s.db.NewBatch()
		b.DeleteRange(lower, upper, nil)
		if err := s.apply(b); err != nil {
			return fail(err)
		}
		return n, nil
	})
}

// ListJournal implements store.Checkpoints.
func (s *Store) ListJournal(ctx context.Context, run string, from uint64, limit int) ([]store.Entry, error) {
	return store.Op(ctx, &s.gate, nil, func() ([]store.Entry, error) {
		es, err := s.entries(journalPrefix(run), max(from, 1), limit)
		if err != nil {
			return nil, fmt.Errorf("list journal of %s: %w", run, err)
		}
		return es, nil
	})
}

// entries lists the log under p (keys p·seq) from seq from, at most limit.
func (s *Store) entries(p store.Key, from uint64, limit int) ([]store.Entry, error) {
	it, err := s.iter(p.U64(from), store.PrefixEnd(p))
	if err != nil {
		return nil, err
	}
	var out []store.Entry
	for ok := it.First(); ok && (limit <= 0 || len(out) < limit); ok = it.Next() {
		var seq uint64
		if seq, err = tailNum(it.Key()); err != nil {
			break
		}
		var data []byte
		if data, err = it.payload(); err != nil {
			break
		}
		out = append(out, store.Entry{Seq: seq, Data: append([]byte(nil), data...)})
	}
	return out, it.close(err)
}

// needRun fails with store.ErrNotFound unless run exists. The caller holds
// the run's lock.
func (s *Store) needRun(run string) error {
	_, err := s.head(run)
	return err
}
