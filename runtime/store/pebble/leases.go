package pebble

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/agentc/agentc/runtime/store"
)

// Leases are written without sync: a lease lost in a crash belonged to the
// process that crashed. A released lease keeps its record (owner "") so that
// fencing tokens keep increasing.

// getLease reads the lease of key; a missing one is the zero lease.
func (s *Store) getLease(key string) (store.Lease, error) {
	k := leaseKey(key)
	p, err := s.get(k)
	if errors.Is(err, store.ErrNotFound) {
		return store.Lease{Key: key}, nil
	}
	if err != nil {
		return store.Lease{}, err
	}
	return decodeLease(k, p, key)
}

func (s *Store) putLease(l store.Lease) error {
	return s.db.Set(leaseKey(l.Key), leaseValue(l), pebble.NoSync)
}

// AcquireLease implements store.Leases.
func (s *Store) AcquireLease(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (store.Lease, error) {
	return s.stepLease(ctx, "acquire", key, owner, ttl, now, store.Lease.Acquire)
}

// RenewLease implements store.Leases.
func (s *Store) RenewLease(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (store.Lease, error) {
	return s.stepLease(ctx, "renew", key, owner, ttl, now, store.Lease.Renew)
}

// stepLease writes the lease step makes of key's current one, under the
// key's lock.
func (s *Store) stepLease(ctx context.Context, verb, key, owner string, ttl time.Duration, now time.Time, step store.LeaseStep) (store.Lease, error) {
	return store.Op(ctx, &s.gate, store.CheckLease(key, owner, ttl), func() (store.Lease, error) {
		defer s.locks.lock(leaseKey(key))()
		l, err := s.getLease(key)
		if err == nil {
			l, err = step(l, owner, ttl, now)
		}
		if err == nil {
			err = s.putLease(l)
		}
		if err != nil {
			return store.Lease{}, fmt.Errorf("%s lease %q for %s: %w", verb, key, owner, err)
		}
		return l, nil
	})
}

// ReleaseLease implements store.Leases.
func (s *Store) ReleaseLease(ctx context.Context, key, owner string, now time.Time) error {
	return store.Op0(ctx, &s.gate, store.CheckLease(key, owner, time.Nanosecond), func() error {
		defer s.locks.lock(leaseKey(key))()
		l, err := s.getLease(key)
		changed := false
		if err == nil {
			l, changed, err = l.Release(owner, now)
		}
		if err == nil && changed {
			err = s.putLease(l)
		}
		if err != nil {
			return fmt.Errorf("release lease %q for %s: %w", key, owner, err)
		}
		return nil
	})
}
