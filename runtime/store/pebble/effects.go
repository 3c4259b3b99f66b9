package pebble

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/agentc/agentc/runtime/store"
)

// PutPendingWrite implements store.PendingWrites.
func (s *Store) PutPendingWrite(ctx context.Context, run string, step uint64, node string, attempt uint32, writes []byte) error {
	return store.Op0(ctx, &s.gate, store.Wrapf(store.CheckName("node", node), "put pending write %s/%d", run, step), func() error {
		defer s.locks.lock(runKey(run))()
		fail := func(err error) error {
			return fmt.Errorf("put pending write %s/%d/%s/%d: %w", run, step, node, attempt, err)
		}
		hd, err := s.head(run)
		if err != nil {
			return fail(err)
		}
		if hd.hasLatest && step <= hd.latest {
			return fail(fmt.Errorf("step already committed (latest %d): %w", hd.latest, store.ErrConflict))
		}
		if !hd.pending {
			hd.pending = true
			s.heads.put(run, hd) // before the write: pending is a may-exist flag
		}
		key := pendingKey(run, step, node, attempt)
		if err := s.putOnce(key, writes); err != nil {
			return fail(err)
		}
		return nil
	})
}

// putOnce writes payload under key unless the key holds it already; a
// different payload is store.ErrConflict. The caller holds the key's lock.
func (s *Store) putOnce(key []byte, payload []byte) error {
	old, err := s.get(key)
	switch {
	case err == nil && bytes.Equal(old, payload):
		return nil
	case err == nil:
		return fmt.Errorf("different bytes are recorded: %w", store.ErrConflict)
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	b := s.db.NewBatch()
	b.Set(key, store.Frame(payload), nil)
	return s.apply(b)
}

// ListPendingWrites implements store.PendingWrites.
func (s *Store) ListPendingWrites(ctx context.Context, run string, step uint64) ([]store.PendingWrite, error) {
	return store.Op(ctx, &s.gate, nil, func() ([]store.PendingWrite, error) {
		it, err := s.prefix(pendingPrefix(run).U64(step))
		if err != nil {
			return nil, fmt.Errorf("list pending writes %s/%d: %w", run, step, err)
		}
		var out []store.PendingWrite
		for ok := it.First(); ok; ok = it.Next() {
			var parts []store.Part
			if _, parts, err = store.DecodeKey(it.Key()); err != nil {
				break
			}
			var w store.PendingWrite
			if w.Attempt, err = attemptNum(it.Key(), parts[3].Num); err != nil {
				break
			}
			var p []byte
			if p, err = it.payload(); err != nil {
				break
			}
			w.Node, w.Writes = parts[2].Str, append([]byte(nil), p...)
			out = append(out, w)
		}
		if err := it.close(err); err != nil {
			return nil, fmt.Errorf("list pending writes %s/%d: %w", run, step, err)
		}
		return out, nil
	})
}

// PutIntent implements store.Effects.
func (s *Store) PutIntent(ctx context.Context, run, node string, attempt uint32) (string, error) {
	return store.Op(ctx, &s.gate, store.Wrapf(store.CheckName("node", node), "put intent %s", run), func() (string, error) {
		defer s.locks.lock(runKey(run))()
		key := store.IdempotencyKey(run, node, attempt)
		if err := s.needRun(run); err != nil {
			return "", fmt.Errorf("put intent %s: %w", key, err)
		}
		if err := s.putOnce(intentPrefix(run).Str(node).U64(uint64(attempt)), nil); err != nil {
			return "", fmt.Errorf("put intent %s: %w", key, err)
		}
		return key, nil
	})
}

// effectKeys resolves an idempotency key to its intent and effect keys.
func effectKeys(key string) (run string, intent, effect store.Key, err error) {
	run, node, attempt, err := store.ParseIdempotencyKey(key)
	if err != nil {
		return "", nil, nil, err
	}
	return run, intentPrefix(run).Str(node).U64(uint64(attempt)), effectPrefix(run).Str(node).U64(uint64(attempt)), nil
}

// PutEffectResult implements store.Effects.
func (s *Store) PutEffectResult(ctx context.Context, key string, result []byte) error {
	run, intent, effect, err := effectKeys(key)
	if err != nil {
		return fmt.Errorf("put effect result: %w", err)
	}
	return store.Op0(ctx, &s.gate, nil, func() error {
		defer s.locks.lock(runKey(run))()
		if ok, err := s.has(intent); err != nil || !ok {
			return fmt.Errorf("put effect result %s: no intent: %w", key, cmpErr(err, store.ErrNotFound))
		}
		if err := s.putOnce(effect, result); err != nil {
			return fmt.Errorf("put effect result %s: %w", key, err)
		}
		return nil
	})
}

// GetEffectResult implements store.Effects.
func (s *Store) GetEffectResult(ctx context.Context, key string) ([]byte, error) {
	_, _, effect, err := effectKeys(key)
	if err != nil {
		return nil, fmt.Errorf("get effect result: %w", err)
	}
	return store.Op(ctx, &s.gate, nil, func() ([]byte, error) {
		res, err := s.get(effect)
		if err != nil {
			return nil, fmt.Errorf("get effect result %s: %w", key, err)
		}
		return res, nil
	})
}

// LookupEffect implements store.Effects. Both keys are read from one
// snapshot, so a result is never seen without its intent.
func (s *Store) LookupEffect(ctx context.Context, key string) (store.Effect, error) {
	_, intent, effect, err := effectKeys(key)
	if err != nil {
		return store.Effect{}, fmt.Errorf("look up effect: %w", err)
	}
	return store.Op(ctx, &s.gate, nil, func() (store.Effect, error) {
		snap := s.db.NewSnapshot()
		defer snap.Close()
		e := store.Effect{Key: key}
		_, closer, err := snap.Get(intent)
		switch {
		case err == nil:
			e.Intent = true
			closer.Close()
		case !errors.Is(err, pebble.ErrNotFound):
			return store.Effect{}, fmt.Errorf("look up effect %s: %w", key, err)
		}
		v, closer, err := snap.Get(effect)
		switch {
		case err == nil:
			p, perr := store.Payload(effect, v)
			if perr == nil {
				e.Done, e.Result = true, append([]byte(nil), p...)
			}
			closer.Close()
			if perr != nil {
				return store.Effect{}, fmt.Errorf("look up effect %s: %w", key, perr)
			}
		case !errors.Is(err, pebble.ErrNotFound):
			return store.Effect{}, fmt.Errorf("look up effect %s: %w", key, err)
		}
		return e, nil
	})
}
