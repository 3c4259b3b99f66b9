package memory

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"time"

	"github.com/agentc/agentc/runtime/store"
)

// session is a session's record, ledger, state and summaries.
type session struct {
	rec       store.Session
	state     []byte
	events    [][]byte // events[i] has Seq i+1
	summaries map[string]store.Summary
}

// append adds events to the ledger and returns the first one's sequence.
func (ss *session) append(events [][]byte, now time.Time) uint64 {
	first := uint64(len(ss.events)) + 1
	ss.events = append(ss.events, cloneAll(events)...)
	ss.rec.LastSeq = uint64(len(ss.events))
	ss.rec.Updated = now
	return first
}

// getSession returns the session named key; s.mu is held.
func (s *Store) getSession(key store.SessionKey) (*session, error) {
	ss, ok := s.sessions[key]
	if !ok {
		return nil, fmt.Errorf("session %s: %w", key, store.ErrNotFound)
	}
	return ss, nil
}

// GetOrCreateSession implements store.Sessions.
func (s *Store) GetOrCreateSession(ctx context.Context, key store.SessionKey, now time.Time) (store.Session, bool, error) {
	if err := key.Check(); err != nil {
		return store.Session{}, false, err
	}
	if err := s.lock(ctx); err != nil {
		return store.Session{}, false, err
	}
	defer s.mu.Unlock()
	if ss, ok := s.sessions[key]; ok {
		return ss.rec, false, nil
	}
	ss := &session{rec: store.Session{Key: key, Created: now, Updated: now}, summaries: map[string]store.Summary{}}
	s.sessions[key] = ss
	return ss.rec, true, nil
}

// GetSession implements store.Sessions.
func (s *Store) GetSession(ctx context.Context, key store.SessionKey) (store.Session, error) {
	return locked(ctx, s, s.getSession, key, "get ", func(ss *session) (store.Session, error) {
		return ss.rec, nil
	})
}

// AppendEvents implements store.Sessions.
func (s *Store) AppendEvents(ctx context.Context, key store.SessionKey, events [][]byte, now time.Time) (uint64, error) {
	return locked(ctx, s, s.getSession, key, "append events: ", func(ss *session) (uint64, error) {
		if len(events) == 0 {
			return 0, nil
		}
		return ss.append(events, now), nil
	})
}

// ListEvents implements store.Sessions.
func (s *Store) ListEvents(ctx context.Context, key store.SessionKey, after uint64, limit int) ([]store.Entry, error) {
	return locked(ctx, s, s.getSession, key, "list events: ", func(ss *session) ([]store.Entry, error) {
		if after == math.MaxUint64 {
			return nil, nil
		}
		return entries(ss.events, after+1, limit), nil
	})
}

// PutSessionState implements store.Sessions.
func (s *Store) PutSessionState(ctx context.Context, key store.SessionKey, state []byte, now time.Time) error {
	return lockedErr(ctx, s, s.getSession, key, "put state: ", func(ss *session) error {
		ss.state = bytes.Clone(state)
		ss.rec.Updated = now
		return nil
	})
}

// GetSessionState implements store.Sessions.
func (s *Store) GetSessionState(ctx context.Context, key store.SessionKey) ([]byte, error) {
	return locked(ctx, s, s.getSession, key, "get state: ", func(ss *session) ([]byte, error) {
		return clone(ss.state), nil
	})
}

// PutSummary implements store.Sessions.
func (s *Store) PutSummary(ctx context.Context, key store.SessionKey, sum store.Summary) error {
	return lockedErr(ctx, s, s.getSession, key, fmt.Sprintf("put summary %q: ", sum.FilterKey), func(ss *session) error {
		if sum.Boundary > ss.rec.LastSeq {
			return fmt.Errorf("put summary %q of %s: boundary %d is past the last event %d: %w",
				sum.FilterKey, key, sum.Boundary, ss.rec.LastSeq, store.ErrInvalid)
		}
		if old, ok := ss.summaries[sum.FilterKey]; ok && sum.Boundary < old.Boundary {
			return fmt.Errorf("put summary %q of %s: boundary %d is behind the stored %d: %w",
				sum.FilterKey, key, sum.Boundary, old.Boundary, store.ErrConflict)
		}
		ss.summaries[sum.FilterKey] = sum
		return nil
	})
}

// GetSummary implements store.Sessions.
func (s *Store) GetSummary(ctx context.Context, key store.SessionKey, filterKey string) (store.Summary, error) {
	return locked(ctx, s, s.getSession, key, fmt.Sprintf("get summary %q: ", filterKey), func(ss *session) (store.Summary, error) {
		sum, ok := ss.summaries[filterKey]
		if !ok {
			return store.Summary{}, fmt.Errorf("get summary %q of %s: %w", filterKey, key, store.ErrNotFound)
		}
		return sum, nil
	})
}

// ListSessions implements store.Sessions.
func (s *Store) ListSessions(ctx context.Context, f store.SessionFilter) ([]store.Session, string, error) {
	return store.List(ctx, s.enter, "list sessions", f, func(after []byte, max int) ([]store.Session, error) {
		var all []store.Session
		for _, ss := range s.sessions {
			all = append(all, ss.rec)
		}
		return keyed(all, func(r store.Session) store.Key { return store.SessionRecordKey(store.KindSession, r.Key) }, store.SessionPrefix(f), after, max), nil
	})
}

// DeleteSession implements store.Sessions.
func (s *Store) DeleteSession(ctx context.Context, key store.SessionKey, cond func(store.Session) bool) (bool, error) {
	return locked(ctx, s, s.getSession, key, "delete ", func(ss *session) (bool, error) {
		if cond != nil && !cond(ss.rec) {
			return false, nil
		}
		for id, r := range s.runs {
			if r.rec.Session == key {
				return false, fmt.Errorf("delete session %s: it has run %s: %w", key, id, store.ErrConflict)
			}
		}
		delete(s.sessions, key)
		return true, nil
	})
}

// lease returns key's lease: the zero one with Key set when there is none.
func (s *Store) lease(key string) store.Lease {
	l := s.leases[key]
	l.Key = key
	return l
}

// stepLease is the Step of the store's LeaseRules, under the store's lock.
func (s *Store) stepLease(ctx context.Context, key string, apply func(store.Lease) (store.Lease, bool, error)) (store.Lease, error) {
	if err := s.lock(ctx); err != nil {
		return store.Lease{}, err
	}
	defer s.mu.Unlock()
	l, write, err := apply(s.lease(key))
	if err == nil && write {
		s.leases[key] = l
	}
	return l, err
}

// PutTaskIndex implements store.Tasks.
func (s *Store) PutTaskIndex(ctx context.Context, user, task, runID string) error {
	if err := store.CheckTask(user, task); err != nil {
		return err
	}
	return lockedErr(ctx, s, s.getRun, runID, fmt.Sprintf("index task %s/%s: ", user, task), func(r *run) error {
		tk := taskKey{user, task}
		if old, ok := s.tasks[tk]; ok {
			if old != runID {
				return fmt.Errorf("index task %s/%s: mapped to run %s: %w", user, task, old, store.ErrConflict)
			}
			return nil
		}
		s.tasks[tk] = runID
		r.tasks = append(r.tasks, tk)
		return nil
	})
}

// LookupTask implements store.Tasks.
func (s *Store) LookupTask(ctx context.Context, user, task string) (string, error) {
	if err := store.CheckTask(user, task); err != nil {
		return "", err
	}
	if err := s.lock(ctx); err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	runID, ok := s.tasks[taskKey{user, task}]
	if !ok {
		return "", fmt.Errorf("look up task %s of user %s: %w", task, user, store.ErrNotFound)
	}
	return runID, nil
}
