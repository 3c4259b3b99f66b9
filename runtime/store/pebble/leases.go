package pebble

import (
	"context"
	"errors"

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
	return leaseCodec.decode(k, p, store.Lease{Key: key})
}

func (s *Store) putLease(l store.Lease) error {
	return s.db.Set(leaseKey(l.Key), leaseCodec.value(l), pebble.NoSync)
}

// stepLease is the Step of the store's LeaseRules, under the key's lock.
func (s *Store) stepLease(ctx context.Context, key string, apply func(store.Lease) (store.Lease, bool, error)) (store.Lease, error) {
	return store.Op(ctx, &s.gate, nil, func() (store.Lease, error) {
		defer s.locks.lock(leaseKey(key))()
		cur, err := s.getLease(key)
		if err != nil {
			return store.Lease{}, err
		}
		l, write, err := apply(cur)
		if err == nil && write {
			err = s.putLease(l)
		}
		return l, err
	})
}
