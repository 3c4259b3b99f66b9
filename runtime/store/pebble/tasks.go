package pebble

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentc/agentc/runtime/store"
)

// Task ids are client-chosen, so they are keyed under their user: task/user/id.
// A reverse entry run-task/run/user/id lets DeleteRun drop the run's ids.

// PutTaskIndex implements store.Tasks.
func (s *Store) PutTaskIndex(ctx context.Context, user, task, run string) error {
	return store.Op0(ctx, &s.gate, store.CheckTask(user, task), func() error {
		defer s.locks.lock(runKey(run))()
		key := taskKey(user, task)
		defer s.locks.lock(key)()
		fail := func(err error) error { return fmt.Errorf("index task %s/%s: %w", user, task, err) }
		if err := s.needRun(run); err != nil {
			return fail(err)
		}
		p, err := s.get(key)
		switch {
		case err == nil && string(p) == run:
			return nil
		case err == nil:
			return fail(fmt.Errorf("mapped to run %s: %w", p, store.ErrConflict))
		case !errors.Is(err, store.ErrNotFound):
			return fail(err)
		}
		b := s.db.NewBatch()
		b.Set(key, store.Frame([]byte(run)), nil)
		b.Set(runTaskPrefix(run).Str(user).Str(task), store.Frame(nil), nil)
		if err := s.apply(b); err != nil {
			return fail(err)
		}
		return nil
	})
}

// LookupTask implements store.Tasks.
func (s *Store) LookupTask(ctx context.Context, user, task string) (string, error) {
	return store.Op(ctx, &s.gate, store.CheckTask(user, task), func() (string, error) {
		p, err := s.get(taskKey(user, task))
		if err != nil {
			return "", fmt.Errorf("look up task %s of user %s: %w", task, user, err)
		}
		return string(p), nil
	})
}
