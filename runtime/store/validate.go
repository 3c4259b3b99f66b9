package store

import (
	"fmt"
	"math"
	"time"
)

// The Check methods hold the argument preconditions every backend enforces
// the same way; each returns an error wrapping ErrInvalid.

// CheckName reports ErrInvalid when v, the what of a call, is empty.
func CheckName(what, v string) error {
	if v == "" {
		return fmt.Errorf("%s is required: %w", what, ErrInvalid)
	}
	return nil
}

// Check reports ErrInvalid when a part of k is empty.
func (k SessionKey) Check() error {
	if k.App == "" || k.User == "" || k.Session == "" {
		return fmt.Errorf("session %q: app, user and session are required: %w", k.String(), ErrInvalid)
	}
	return nil
}

// Check reports ErrInvalid when r lacks an id, a session or a status.
func (r Run) Check() error {
	if err := CheckName("run id", r.ID); err != nil {
		return err
	}
	if err := r.Session.Check(); err != nil {
		return fmt.Errorf("run %s: %w", r.ID, err)
	}
	if err := CheckName("run "+r.ID+" status", string(r.Status)); err != nil {
		return err
	}
	if r.FirstEvent > math.MaxInt64 {
		return fmt.Errorf("run %s: first event %d is out of range: %w", r.ID, r.FirstEvent, ErrInvalid)
	}
	return r.Usage.Check()
}

// Check reports ErrInvalid when u's cost is not a finite number ≥ 0, or a
// count does not fit a signed 64-bit integer (what PostgreSQL keeps).
func (u RunUsage) Check() error {
	if !(u.Cost >= 0) || math.IsInf(u.Cost, 1) {
		return fmt.Errorf("run usage: cost %v is not a finite number ≥ 0: %w", u.Cost, ErrInvalid)
	}
	if max(u.ModelCalls, u.InputTokens, u.OutputTokens, u.CachedTokens) > math.MaxInt64 {
		return fmt.Errorf("run usage: a count is out of range: %w", ErrInvalid)
	}
	return nil
}

// CheckUsage is u.Check for an optional usage (nil: nothing to check).
func CheckUsage(u *RunUsage) error {
	if u == nil {
		return nil
	}
	return u.Check()
}

// Check reports ErrInvalid when c lacks a run or has an unknown kind.
func (c StepCommit) Check() error {
	if err := CheckName("checkpoint run", c.Checkpoint.Run); err != nil {
		return err
	}
	if k := c.Checkpoint.Kind; k != Full && k != Delta {
		return fmt.Errorf("checkpoint %s/%d: kind %v: %w", c.Checkpoint.Run, c.Checkpoint.Step, k, ErrInvalid)
	}
	if err := CheckUsage(c.Usage); err != nil {
		return fmt.Errorf("checkpoint %s/%d: %w", c.Checkpoint.Run, c.Checkpoint.Step, err)
	}
	return nil
}

// Check reports ErrInvalid when f names a user without an app or a session
// without a user.
func (f RunFilter) Check() error {
	if (f.User != "" && f.App == "") || (f.Session != "" && f.User == "") {
		return fmt.Errorf("run filter %s/%s/%s: a user needs an app and a session a user: %w", f.App, f.User, f.Session, ErrInvalid)
	}
	return nil
}

// CheckLease reports ErrInvalid for an empty key or owner, or a ttl ≤ 0
// (release passes no ttl: any positive value).
func CheckLease(key, owner string, ttl time.Duration) error {
	if key == "" || owner == "" {
		return fmt.Errorf("lease %q owner %q: key and owner are required: %w", key, owner, ErrInvalid)
	}
	if ttl <= 0 {
		return fmt.Errorf("lease %q: ttl %v must be positive: %w", key, ttl, ErrInvalid)
	}
	return nil
}

// CheckTask reports ErrInvalid for an empty user or task id.
func CheckTask(user, task string) error {
	if user == "" || task == "" {
		return fmt.Errorf("task %q of user %q: user and task id are required: %w", task, user, ErrInvalid)
	}
	return nil
}

// CheckEnd reports ErrInvalid for what ends a run: an empty status or a
// bad usage.
func CheckEnd(status RunStatus, usage *RunUsage) error {
	if err := CheckName("run status", string(status)); err != nil {
		return err
	}
	return CheckUsage(usage)
}
