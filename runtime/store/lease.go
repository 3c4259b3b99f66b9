package store

import (
	"context"
	"fmt"
	"time"
)

// The lease state transitions below are the rules of Leases, the same in
// every backend: a backend reads the current lease (the zero lease with Key
// set when there is none), applies one, and writes the result atomically with
// the read. Their errors say why, not what: the caller adds the call and key.

// LeaseStep is Lease.Acquire or Lease.Renew.
type LeaseStep func(l Lease, owner string, ttl time.Duration, now time.Time) (Lease, error)

// Acquire returns l claimed by owner at now until now+ttl. An owner holding l
// renews it; a lease nobody holds changes hands with the next fencing token;
// another owner's live lease is ErrConflict.
func (l Lease) Acquire(owner string, ttl time.Duration, now time.Time) (Lease, error) {
	switch {
	case l.HeldAt(now) && l.Owner != owner:
		return Lease{}, fmt.Errorf("held by %s until %v: %w", l.Owner, l.Expires, ErrConflict)
	case !l.HeldAt(now):
		l = Lease{Key: l.Key, Owner: owner, Token: l.Token + 1}
	}
	l.Expires = now.Add(ttl)
	return l, nil
}

// Renew returns l extended to now+ttl; it is ErrConflict when owner does not
// hold l at now.
func (l Lease) Renew(owner string, ttl time.Duration, now time.Time) (Lease, error) {
	if !l.HeldAt(now) || l.Owner != owner {
		return Lease{}, fmt.Errorf("not held by it: %w", ErrConflict)
	}
	l.Expires = now.Add(ttl)
	return l, nil
}

// Release returns l given up by owner at now: no owner, and the same token so
// that tokens keep increasing. changed is false when nobody holds l (nothing
// to write); another owner's live lease is ErrConflict.
func (l Lease) Release(owner string, now time.Time) (released Lease, changed bool, err error) {
	if !l.HeldAt(now) {
		return l, false, nil
	}
	if l.Owner != owner {
		return Lease{}, false, fmt.Errorf("held by %s: %w", l.Owner, ErrConflict)
	}
	return Lease{Key: l.Key, Token: l.Token}, true, nil
}

// LeaseRules gives a backend the calls of Leases from its one primitive,
// Step: atomically (under a keyed lock, a row lock), read key's lease (the
// zero lease with Key set when there is none), call apply with it, write
// the lease apply returns when write is true, and return it. The rules
// above, the argument checks and the errors' context are LeaseRules'.
type LeaseRules struct {
	Step func(ctx context.Context, key string, apply func(cur Lease) (next Lease, write bool, err error)) (Lease, error)
}

// AcquireLease implements Leases.
func (r LeaseRules) AcquireLease(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (Lease, error) {
	return r.step(ctx, "acquire", key, owner, ttl, now, Lease.Acquire)
}

// RenewLease implements Leases.
func (r LeaseRules) RenewLease(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (Lease, error) {
	return r.step(ctx, "renew", key, owner, ttl, now, Lease.Renew)
}

func (r LeaseRules) step(ctx context.Context, verb, key, owner string, ttl time.Duration, now time.Time, step LeaseStep) (Lease, error) {
	if err := CheckLease(key, owner, ttl); err != nil {
		return Lease{}, err
	}
	l, err := r.Step(ctx, key, func(cur Lease) (Lease, bool, error) {
		l, err := step(cur, owner, ttl, now)
		return l, true, err
	})
	if err != nil {
		return Lease{}, fmt.Errorf("%s lease %q for %s: %w", verb, key, owner, err)
	}
	return l, nil
}

// ReleaseLease implements Leases.
func (r LeaseRules) ReleaseLease(ctx context.Context, key, owner string, now time.Time) error {
	if err := CheckLease(key, owner, time.Nanosecond); err != nil {
		return err
	}
	_, err := r.Step(ctx, key, func(cur Lease) (Lease, bool, error) { return cur.Release(owner, now) })
	return Wrapf(err, "release lease %q for %s", key, owner)
}
