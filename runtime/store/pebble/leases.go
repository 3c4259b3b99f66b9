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
	if err := store.CheckLease(key, owner, ttl); err != nil {
		return store.Lease{}, err
	}
	exit, err := s.enter(ctx)
	if err != nil {
		return store.Lease{}, err
	}
	defer exit()
	defer s.locks.lock(leaseKey(key))()
	l, err := s.getLease(key)
	if err != nil {
		return store.Lease{}, fmt.Errorf("acquire lease %q: %w", key, err)
	}
	switch {
	case l.HeldAt(now) && l.Owner != owner:
		return store.Lease{}, fmt.Errorf("acquire lease %q for %s: held by %s until %v: %w", key, owner, l.Owner, l.Expires, store.ErrConflict)
	case !l.HeldAt(now):
		l = store.Lease{Key: key, Owner: owner, Token: l.Token + 1}
	}
	l.Expires = now.Add(ttl)
	if err := s.putLease(l); err != nil {
		return store.Lease{}, fmt.Errorf("acquire lease %q: %w", key, err)
	}
	return l, nil
}

// RenewLease implements store.Leases.
func (s *Store) RenewLease(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (store.Lease, error) {
	if err := store.CheckLease(key, owner, ttl); err != nil {
		return store.Lease{}, err
	}
	exit, err := s.enter(ctx)
	if err != nil {
		return store.Lease{}, err
	}
	defer exit()
	defer s.locks.lock(leaseKey(key))()
	l, err := s.getLease(key)
	if err != nil {
		return store.Lease{}, fmt.Errorf("renew lease %q: %w", key, err)
	}
	if !l.HeldAt(now) || l.Owner != owner {
		return store.Lease{}, fmt.Errorf("renew lease %q for %s: not held by it: %w", key, owner, store.ErrConflict)
	}
	l.Expires = now.Add(ttl)
	if err := s.putLease(l); err != nil {
		return store.Lease{}, fmt.Errorf("renew lease %q: %w", key, err)
	}
	return l, nil
}

// ReleaseLease implements store.Leases.
func (s *Store) ReleaseLease(ctx context.Context, key, owner string, now time.Time) error {
	if err := store.CheckLease(key, owner, time.Nanosecond); err != nil {
		return err
	}
	exit, err := s.enter(ctx)
	if err != nil {
		return err
	}
	defer exit()
	defer s.locks.lock(leaseKey(key))()
	l, err := s.getLease(key)
	if err != nil {
		return fmt.Errorf("release lease %q: %w", key, err)
	}
	if !l.HeldAt(now) {
		return nil
	}
	if l.Owner != owner {
		return fmt.Errorf("release lease %q for %s: held by %s: %w", key, owner, l.Owner, store.ErrConflict)
	}
	if err := s.putLease(store.Lease{Key: key, Token: l.Token}); err != nil {
		return fmt.Errorf("release lease %q: %w", key, err)
	}
	return nil
}
