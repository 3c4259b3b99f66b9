package postgres

// What replicas sharing a store need beyond the store contract (the run
// ownership of spec/serve.md, "Replicas"): the end of a run fenced like a
// step commit, and a subscription that survives a lost connection.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentc/agentc/runtime/store"
)

// EndRunFenced is EndRun fenced by a lease, as CommitStepFenced is
// CommitStep: the events, the status and the usage are written only while
// fence.Owner holds fence.Key with fence.Token at now, else nothing is
// written and the error wraps store.ErrConflict.
func (s *Store) EndRunFenced(ctx context.Context, id string, events [][]byte, status store.RunStatus, usage *store.RunUsage, fence store.Lease, now time.Time) (uint64, error) {
	if err := store.CheckLease(fence.Key, fence.Owner, time.Nanosecond); err != nil {
		return 0, fmt.Errorf("end run %s: fence: %w", id, err)
	}
	return s.endRun(ctx, id, events, status, usage, &fence, now)
}

// followRetry bounds the wait before Follow connects again after losing its
// connection.
const followRetry = 2 * time.Second

// Follow listens on channel name until ctx ends and calls fn with the
// payload of each notification, and with "" once connected and after each
// reconnection (notifications sent while it was not connected are lost: ""
// tells fn to read again what it waits on). A lost connection is
// reconnected after a pause (at most 2 s). It returns ctx's error, or
// store.ErrClosed once the store is closed.
func (s *Store) Follow(ctx context.Context, name string, fn func(payload string)) error {
	pause := 50 * time.Millisecond
	for {
		l, err := s.Listen(ctx, name)
		if errors.Is(err, store.ErrClosed) {
			return err
		}
		if err == nil {
			pause = 50 * time.Millisecond
			fn("")
			for err == nil {
				var p string
				if p, err = l.Wait(ctx); err == nil {
					fn(p)
				}
			}
			_ = l.Close()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, followRetry)
	}
}

// GetLeases returns the leases of keys as they are stored (held or not: the
// caller compares Expires with its clock); a key without a lease row is
// missing from the map. One statement, no lock.
func (s *Store) GetLeases(ctx context.Context, keys []string) (map[string]store.Lease, error) {
	return store.Op(ctx, &s.gate, nil, func() (map[string]store.Lease, error) {
		ks := make([][]byte, len(keys))
		for i, k := range keys {
			ks[i] = bs(k)
		}
		rows, err := s.pool.Query(ctx, `SELECT key, owner, expires, token FROM leases WHERE key = ANY($1::bytea[])`, ks)
		if err != nil {
			return nil, fmt.Errorf("get leases: %w", err)
		}
		defer rows.Close()
		out := make(map[string]store.Lease, len(keys))
		for rows.Next() {
			var key, owner []byte
			var expires time.Time
			var token int64
			if err := rows.Scan(&key, &owner, &expires, &token); err != nil {
				return nil, fmt.Errorf("get leases: %w", err)
			}
			out[string(key)] = store.Lease{Key: string(key), Owner: string(owner), Expires: utc(expires), Token: uint64(token)}
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("get leases: %w", err)
		}
		return out, nil
	})
}
