package pebble

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentc/agentc/runtime/store"
)

// PutProgram implements store.Programs.
func (s *Store) PutProgram(ctx context.Context, hash string, program []byte) error {
	return store.Op0(ctx, &s.gate, store.CheckName("program hash", hash), func() error {
		key := programKey(hash)
		defer s.locks.lock(key)()
		old, err := s.get(key)
		switch {
		case err == nil && bytes.Equal(old, program):
			return nil
		case err == nil:
			return fmt.Errorf("put program %s: different bytes under the same hash: %w", hash, store.ErrConflict)
		case !errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("put program %s: %w", hash, err)
		}
		b := s.db.NewBatch()
		b.Set(key, store.Frame(program), nil)
		if err := s.apply(b); err != nil {
			return fmt.Errorf("put program %s: %w", hash, err)
		}
		return nil
	})
}

// GetProgram implements store.Programs.
func (s *Store) GetProgram(ctx context.Context, hash string) ([]byte, error) {
	return store.Op(ctx, &s.gate, nil, func() ([]byte, error) {
		p, err := s.get(programKey(hash))
		if err != nil {
			return nil, fmt.Errorf("get program %s: %w", hash, err)
		}
		return p, nil
	})
}

// getRun reads the run record.
func (s *Store) getRun(id string) (store.Run, error) {
	key := runKey(id)
	p, err := s.get(key)
	if err != nil {
		return store.Run{}, fmt.Errorf("run %s: %w", id, err)
	}
	return runCodec.decode(key, p, store.Run{})
}

// CreateRun implements store.Runs.
func (s *Store) CreateRun(ctx context.Context, r store.Run) error {
	return store.Op0(ctx, &s.gate, store.Wrapf(r.Check(), "create run"), func() error {
		key := runKey(r.ID)
		defer s.locks.lock(key)()
		// The session's lock too: DeleteSession checks under it that the
		// session has no run.
		defer s.locks.lock(sessionKey(r.Session))()
		if ok, err := s.has(key); err != nil || ok {
			return fmt.Errorf("create run %s: %w", r.ID, cmpErr(err, store.ErrConflict))
		}
		// The session's record through its cache: the Runner created or
		// read it just before.
		if _, err := s.lockedSession(r.Session); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("create run %s: session %s: %w", r.ID, r.Session, store.ErrNotFound)
			}
			return fmt.Errorf("create run %s: %w", r.ID, err)
		}
		b := s.db.NewBatch()
		b.Set(key, runCodec.value(r), nil)
		b.Set(store.RunIndexKey(r), store.Frame(nil), nil)
		if err := s.apply(b); err != nil {
			return fmt.Errorf("create run %s: %w", r.ID, err)
		}
		s.seedHead(r)
		return nil
	})
}

// AdmitRun implements store.RunAdmitter: the session's record (created
// when missing), the events, the run and docs in one synced batch.
func (s *Store) AdmitRun(ctx context.Context, r store.Run, events [][]byte, now time.Time, docs ...store.DocOp) (uint64, error) {
	check := r.Check()
	if check == nil {
		check = store.CheckDocOps(docs)
	}
	return store.Op(ctx, &s.gate, store.Wrapf(check, "admit run"), func() (uint64, error) {
		key := runKey(r.ID)
		defer s.locks.lock(key)() // CreateRun's order: the run's lock, then the session's, then the docs' (ApplyDocs' order)
		defer s.locks.lock(sessionKey(r.Session))()
		var docKeys []store.Key
		if len(docs) > 0 {
			var unlock func()
			docKeys, unlock = s.lockDocs(docs)
			defer unlock()
		}
		if ok, err := s.has(key); err != nil || ok {
			return 0, fmt.Errorf("admit run %s: %w", r.ID, cmpErr(err, store.ErrConflict))
		}
		if err := s.checkAbsent(docs, docKeys); err != nil {
			return 0, fmt.Errorf("admit run %s: %w", r.ID, err)
		}
		sr, err := s.lockedSession(r.Session)
		switch {
		case errors.Is(err, store.ErrNotFound):
			sr = sessionRecord{created: now, updated: now, bare: true}
		case err != nil:
			return 0, fmt.Errorf("admit run %s: %w", r.ID, err)
		}
		b := s.db.NewBatch()
		var first uint64
		if len(events) > 0 {
			first = sr.lastSeq + 1
			p := eventPrefix(r.Session)
			for _, e := range events {
				sr.lastSeq++
				b.Set(p.U64(sr.lastSeq), store.Frame(e), nil)
			}
			sr.updated = now
			r.FirstEvent = first
		}
		b.Set(sessionKey(r.Session), sessionCodec.value(sr), nil)
		b.Set(key, runCodec.value(r), nil)
		b.Set(store.RunIndexKey(r), store.Frame(nil), nil)
		putDocs(b, docs, docKeys)
		err = s.apply(b)
		s.wroteSession(r.Session, sr, err)
		if err != nil {
			return 0, fmt.Errorf("admit run %s: %w", r.ID, err)
		}
		s.seedHead(r)
		return first, nil
	})
}

// seedHead caches the head of run r, just created. A new run owns nothing
// yet (DeleteRun drops a run's keys with its record, and nothing writes them
// without it): its head is known without the point read and two reverse
// seeks a miss costs its first CommitStep.
func (s *Store) seedHead(r store.Run) {
	r.Meta = bytes.Clone(r.Meta) // the caller's slice stays the caller's
	s.heads.put(r.ID, runHead{run: r, journalNext: 1})
}

// cmpErr returns err when it is set, else the sentinel.
func cmpErr(err, sentinel error) error {
	if err != nil {
		return err
	}
	return sentinel
}

// GetRun implements store.Runs.
func (s *Store) GetRun(ctx context.Context, id string) (store.Run, error) {
	return store.Op(ctx, &s.gate, nil, func() (store.Run, error) {
		r, err := s.getRun(id)
		if err != nil {
			return store.Run{}, fmt.Errorf("get %w", err)
		}
		return r, nil
	})
}

// UpdateRunStatus implements store.Runs.
func (s *Store) UpdateRunStatus(ctx context.Context, id string, status store.RunStatus, now time.Time) error {
	return store.Op0(ctx, &s.gate, store.Wrapf(store.CheckName("run status", string(status)), "update run %s", id), func() error {
		defer s.locks.lock(runKey(id))()
		r, err := s.getRun(id)
		if err != nil {
			return fmt.Errorf("update %w", err)
		}
		r.Status, r.Updated = status, now
		b := s.db.NewBatch()
		b.Set(runKey(id), runCodec.value(r), nil)
		s.heads.drop(id)
		if err := s.apply(b); err != nil {
			return fmt.Errorf("update run %s: %w", id, err)
		}
		return nil
	})
}

// EndRun implements store.Runs. Locks: the run, then its session.
func (s *Store) EndRun(ctx context.Context, id string, events [][]byte, status store.RunStatus, usage *store.RunUsage, now time.Time) (uint64, error) {
	return store.Op(ctx, &s.gate, store.Wrapf(store.CheckEnd(status, usage), "end run %s", id), func() (uint64, error) {
		defer s.locks.lock(runKey(id))()
		r, err := s.getRun(id)
		if err != nil {
			return 0, fmt.Errorf("end %w", err)
		}
		defer s.locks.lock(sessionKey(r.Session))()
		b := s.db.NewBatch()
		var first uint64
		var sr sessionRecord
		if len(events) > 0 {
			if first, sr, err = s.appendEvents(b, r.Session, events, now); err != nil {
				b.Close()
				return 0, fmt.Errorf("end run %s: %w", id, err)
			}
		}
		r.Status, r.Updated = status, now
		if usage != nil {
			r.Usage = *usage
		}
		b.Set(runKey(id), runCodec.value(r), nil)
		s.heads.drop(id)
		err = s.apply(b)
		if len(events) > 0 {
			s.wroteSession(r.Session, sr, err)
		}
		if err != nil {
			return 0, fmt.Errorf("end run %s: %w", id, err)
		}
		return first, nil
	})
}

// ListRuns implements store.Runs. It walks the run index from the cursor and
// reads each run's record for its status.
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, string, error) {
	return store.List(ctx, s.gate.Enter, "list runs", f, func(after []byte, max int) ([]store.Run, error) {
		scan := scan[store.Run]
		if f.Newest {
			scan = scanBack[store.Run]
		}
		return scan(ctx, s, store.RunIndexPrefix(f), after, max, func(parts []store.Part, _ iter) (store.Run, bool, error) {
			r, err := s.getRun(parts[3].Str)
			return r, err == nil && f.Selects(r), err
		})
	})
}

// DeleteRun implements store.Runs.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	_, err := s.DeleteRunIf(ctx, id, nil)
	return err
}

// DeleteRunIf implements store.Runs.
func (s *Store) DeleteRunIf(ctx context.Context, id string, cond func(store.Run) bool) (bool, error) {
	return store.Op(ctx, &s.gate, nil, func() (bool, error) {
		defer s.locks.lock(runKey(id))()
		r, err := s.getRun(id)
		if err != nil {
			return false, fmt.Errorf("delete %w", err)
		}
		if cond != nil && !cond(r) {
			return false, nil
		}
		it, err := s.prefix(runTaskPrefix(id))
		if err != nil {
			return false, fmt.Errorf("delete run %s: %w", id, err)
		}
		var tasks []store.Key
		for ok := it.First(); ok; ok = it.Next() {
			var parts []store.Part
			if _, parts, err = store.DecodeKey(it.Key()); err != nil {
				break
			}
			tasks = append(tasks, taskKey(parts[1].Str, parts[2].Str))
		}
		if err := it.close(err); err != nil {
			return false, fmt.Errorf("delete run %s: %w", id, err)
		}
		b := s.db.NewBatch()
		b.Delete(runKey(id), nil)
		b.Delete(store.RunIndexKey(r), nil)
		for _, k := range tasks {
			b.Delete(k, nil)
		}
		for _, p := range runOwned(id) {
			b.DeleteRange(p, store.PrefixEnd(p), nil)
		}
		s.heads.drop(id)
		if err := s.apply(b); err != nil {
			return false, fmt.Errorf("delete run %s: %w", id, err)
		}
		return true, nil
	})
}
