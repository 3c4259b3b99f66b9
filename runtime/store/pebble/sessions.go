package pebble

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/agentc/agentc/runtime/store"
)

// getSession reads a session's record, from the cache when it holds it
// (heads.go). Only a holder of the session's lock fills the cache: on a
// miss, getSession takes the lock when it is free (lockedSession), and
// reads Pebble past the cache when it is not.
func (s *Store) getSession(k store.SessionKey) (sessionRecord, error) {
	if r, ok := s.sessions.get(k); ok {
		return r.cached(k)
	}
	if unlock, ok := s.locks.tryLock(sessionKey(k)); ok {
		defer unlock()
		return s.lockedSession(k)
	}
	return s.readSession(k)
}

// lockedSession is getSession for a holder of the session's lock; it
// caches what it reads, the record or its absence (a new session's reads
// before its creation are the common case).
func (s *Store) lockedSession(k store.SessionKey) (sessionRecord, error) {
	if r, ok := s.sessions.get(k); ok {
		return r.cached(k)
	}
	r, err := s.readSession(k)
	switch {
	case err == nil:
		s.sessions.put(k, r)
	case errors.Is(err, store.ErrNotFound):
		s.sessions.put(k, sessionRecord{absent: true})
	}
	return r, err
}

// cached is what the cache's entry r tells of session k.
func (r sessionRecord) cached(k store.SessionKey) (sessionRecord, error) {
	if r.absent {
		return sessionRecord{}, &sessionError{k: k, err: store.ErrNotFound}
	}
	return r, nil
}

// wroteSession updates the cache after a batch writing session k's record
// r was applied (err nil) or failed.
func (s *Store) wroteSession(k store.SessionKey, r sessionRecord, err error) {
	if err != nil {
		s.sessions.drop(k)
		return
	}
	s.sessions.put(k, r)
}

// readSession reads a session's record from Pebble.
func (s *Store) readSession(k store.SessionKey) (sessionRecord, error) {
	key := sessionKey(k)
	p, err := s.get(key)
	if err != nil {
		return sessionRecord{}, &sessionError{k: k, err: err}
	}
	return sessionCodec.decode(key, p, sessionRecord{})
}

// sessionError is a failed read of session k's record, worded only when
// asked (a missing record is an answer, not a failure, to most callers).
type sessionError struct {
	op  string // what read it, "" or a prefix ending in a space
	k   store.SessionKey
	err error
}

func (e *sessionError) Error() string {
	return e.op + "session " + e.k.String() + ": " + e.err.Error()
}
func (e *sessionError) Unwrap() error { return e.err }

func (r sessionRecord) session(k store.SessionKey) store.Session {
	return store.Session{Key: k, Created: r.created, Updated: r.updated, LastSeq: r.lastSeq}
}

// GetOrCreateSession implements store.Sessions.
func (s *Store) GetOrCreateSession(ctx context.Context, k store.SessionKey, now time.Time) (store.Session, bool, error) {
	return store.Op2(ctx, &s.gate, k.Check(), func() (store.Session, bool, error) {
		defer s.locks.lock(sessionKey(k))()
		r, err := s.lockedSession(k)
		if err == nil {
			return r.session(k), false, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return store.Session{}, false, fmt.Errorf("get or create %w", err)
		}
		r = sessionRecord{created: now, updated: now, bare: true}
		b := s.db.NewBatch()
		b.Set(sessionKey(k), sessionCodec.value(r), nil)
		err = s.apply(b)
		s.wroteSession(k, r, err)
		if err != nil {
			return store.Session{}, false, fmt.Errorf("create session %s: %w", k, err)
		}
		return r.session(k), true, nil
	})
}

// GetSession implements store.Sessions.
func (s *Store) GetSession(ctx context.Context, k store.SessionKey) (store.Session, error) {
	return store.Op(ctx, &s.gate, nil, func() (store.Session, error) {
		r, err := s.getSession(k)
		if se, ok := err.(*sessionError); ok {
			se.op = "get " // getSession's own, fresh: worded only when asked
			return store.Session{}, se
		}
		if err != nil {
			return store.Session{}, fmt.Errorf("get %w", err)
		}
		return r.session(k), nil
	})
}

// appendEvents adds events to b under the next sequences of session k and
// updates its record, which it returns for wroteSession; the caller holds
// the session's lock.
func (s *Store) appendEvents(b *pebble.Batch, k store.SessionKey, events [][]byte, now time.Time) (uint64, sessionRecord, error) {
	r, err := s.lockedSession(k)
	if err != nil {
		return 0, r, err
	}
	first := r.lastSeq + 1
	p := eventPrefix(k)
	for _, e := range events {
		r.lastSeq++
		b.Set(p.U64(r.lastSeq), store.Frame(e), nil)
	}
	r.updated = now
	b.Set(sessionKey(k), sessionCodec.value(r), nil)
	return first, r, nil
}

// AppendEvents implements store.Sessions.
func (s *Store) AppendEvents(ctx context.Context, k store.SessionKey, events [][]byte, now time.Time) (uint64, error) {
	return store.Op(ctx, &s.gate, nil, func() (uint64, error) {
		defer s.locks.lock(sessionKey(k))()
		if len(events) == 0 {
			if _, err := s.lockedSession(k); err != nil {
				return 0, fmt.Errorf("append events: %w", err)
			}
			return 0, nil
		}
		b := s.db.NewBatch()
		first, r, err := s.appendEvents(b, k, events, now)
		if err != nil {
			b.Close()
			return 0, fmt.Errorf("append events: %w", err)
		}
		err = s.apply(b)
		s.wroteSession(k, r, err)
		if err != nil {
			return 0, fmt.Errorf("append events to %s: %w", k, err)
		}
		return first, nil
	})
}

// ListEvents implements store.Sessions.
func (s *Store) ListEvents(ctx context.Context, k store.SessionKey, after uint64, limit int) ([]store.Entry, error) {
	return store.Op(ctx, &s.gate, nil, func() ([]store.Entry, error) {
		// The session's record, from the session cache when it holds
		// it, tells the last sequence: nothing after it, no scan.
		r, err := s.getSession(k)
		if err == nil && after >= r.lastSeq {
			// A writer updates the cache after its batch is applied,
			// under the session's lock: an entry may lag what Pebble (and
			// GetRun, which reads it) already shows. "Nothing after" is
			// said under the lock, from an entry every applied write has
			// updated.
			unlock := s.locks.lock(sessionKey(k))
			r, err = s.lockedSession(k)
			unlock()
		}
		if se := (*sessionError)(nil); errors.As(err, &se) {
			err = se.err
		}
		if err != nil {
			return nil, fmt.Errorf("list events: session %s: %w", k, err)
		}
		if after >= r.lastSeq {
			return nil, nil
		}
		es, err := s.entries(eventPrefix(k), after+1, limit)
		if err != nil {
			return nil, fmt.Errorf("list events of %s: %w", k, err)
		}
		return es, nil
	})
}

// PutSessionState implements store.Sessions.
func (s *Store) PutSessionState(ctx context.Context, k store.SessionKey, state []byte, now time.Time) error {
	return store.Op0(ctx, &s.gate, nil, func() error {
		defer s.locks.lock(sessionKey(k))()
		r, err := s.lockedSession(k)
		if err != nil {
			return fmt.Errorf("put state: %w", err)
		}
		r.updated = now
		b := s.db.NewBatch()
		b.Set(stateKey(k), store.Frame(state), nil)
		b.Set(sessionKey(k), sessionCodec.value(r), nil)
		err = s.apply(b)
		s.wroteSession(k, r, err)
		if err != nil {
			return fmt.Errorf("put state of %s: %w", k, err)
		}
		return nil
	})
}

// GetSessionState implements store.Sessions.
func (s *Store) GetSessionState(ctx context.Context, k store.SessionKey) ([]byte, error) {
	return store.Op(ctx, &s.gate, nil, func() ([]byte, error) {
		st, err := s.get(stateKey(k))
		if errors.Is(err, store.ErrNotFound) {
			if ok, err2 := s.has(sessionKey(k)); err2 != nil || !ok {
				return nil, fmt.Errorf("get state: session %s: %w", k, cmpErr(err2, store.ErrNotFound))
			}
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("get state of %s: %w", k, err)
		}
		return st, nil
	})
}

// PutSummary implements store.Sessions.
func (s *Store) PutSummary(ctx context.Context, k store.SessionKey, sum store.Summary) error {
	return store.Op0(ctx, &s.gate, nil, func() error {
		defer s.locks.lock(sessionKey(k))()
		fail := func(err error) error { return fmt.Errorf("put summary %q of %s: %w", sum.FilterKey, k, err) }
		r, err := s.lockedSession(k)
		if err != nil {
			return fail(err)
		}
		if sum.Boundary > r.lastSeq {
			return fail(fmt.Errorf("boundary %d is past the last event %d: %w", sum.Boundary, r.lastSeq, store.ErrInvalid))
		}
		if r.bare {
			// Before the write: no reader may be told "none" once
			// it is applied.
			r.bare = false
			s.sessions.put(k, r)
		}
		key := summaryKey(k, sum.FilterKey)
		p, err := s.get(key)
		switch {
		case err == nil:
			old, err := summaryCodec.decode(key, p, store.Summary{FilterKey: sum.FilterKey})
			if err != nil {
				return fail(err)
			}
			if sum.Boundary < old.Boundary {
				return fail(fmt.Errorf("boundary %d is behind the stored %d: %w", sum.Boundary, old.Boundary, store.ErrConflict))
			}
		case !errors.Is(err, store.ErrNotFound):
			return fail(err)
		}
		b := s.db.NewBatch()
		b.Set(key, summaryCodec.value(sum), nil)
		if err := s.apply(b); err != nil {
			return fail(err)
		}
		return nil
	})
}

// GetSummary implements store.Sessions.
func (s *Store) GetSummary(ctx context.Context, k store.SessionKey, filterKey string) (store.Summary, error) {
	return store.Op(ctx, &s.gate, nil, func() (store.Summary, error) {
		key := summaryKey(k, filterKey)
		if r, ok := s.sessions.get(k); ok && r.bare && !r.absent {
			// Created here, no summary put since: none, without a read.
			return store.Summary{}, fmt.Errorf("get summary %q of %s: %w", filterKey, k, store.ErrNotFound)
		}
		p, err := s.get(key)
		if errors.Is(err, store.ErrNotFound) {
			// No summary: of a session, or of none? The session cache
			// answers for a session the Runner has just read or written.
			if _, err2 := s.getSession(k); err2 != nil {
				if se := (*sessionError)(nil); errors.As(err2, &se) {
					err2 = se.err
				}
				return store.Summary{}, fmt.Errorf("get summary %q: session %s: %w", filterKey, k, err2)
			}
		}
		if err != nil {
			return store.Summary{}, fmt.Errorf("get summary %q of %s: %w", filterKey, k, err)
		}
		sum, err := summaryCodec.decode(key, p, store.Summary{FilterKey: filterKey})
		if err != nil {
			return store.Summary{}, fmt.Errorf("get summary %q of %s: %w", filterKey, k, err)
		}
		return sum, nil
	})
}

// ListSessions implements store.Sessions: it walks the session records.
func (s *Store) ListSessions(ctx context.Context, f store.SessionFilter) ([]store.Session, string, error) {
	return store.List(ctx, s.gate.Enter, "list sessions", f, func(after []byte, max int) ([]store.Session, error) {
		return scan(ctx, s, store.SessionPrefix(f), after, max, func(parts []store.Part, it iter) (store.Session, bool, error) {
			p, err := it.payload()
			if err != nil {
				return store.Session{}, false, err
			}
			r, err := sessionCodec.decode(it.Key(), p, sessionRecord{})
			return r.session(store.SessionKey{App: parts[0].Str, User: parts[1].Str, Session: parts[2].Str}), err == nil, err
		})
	})
}

// DeleteSession implements store.Sessions. CreateRun takes the session's
// lock too, so the check that the session has no run holds until the
// batch is applied.
func (s *Store) DeleteSession(ctx context.Context, k store.SessionKey, cond func(store.Session) bool) (bool, error) {
	return store.Op(ctx, &s.gate, nil, func() (bool, error) {
		defer s.locks.lock(sessionKey(k))()
		r, err := s.lockedSession(k)
		if err != nil {
			return false, fmt.Errorf("delete %w", err)
		}
		if cond != nil && !cond(r.session(k)) {
			return false, nil
		}
		it, err := s.prefix(store.RunIndexPrefix(store.RunFilter{App: k.App, User: k.User, Session: k.Session}))
		if err != nil {
			return false, fmt.Errorf("delete session %s: %w", k, err)
		}
		hasRun := it.First()
		if err := it.close(nil); err != nil {
			return false, fmt.Errorf("delete session %s: %w", k, err)
		}
		if hasRun {
			return false, fmt.Errorf("delete session %s: it has runs: %w", k, store.ErrConflict)
		}
		b := s.db.NewBatch()
		b.Delete(sessionKey(k), nil)
		b.Delete(stateKey(k), nil)
		for _, p := range sessionOwned(k) {
			b.DeleteRange(p, store.PrefixEnd(p), nil)
		}
		s.sessions.drop(k)
		if err := s.apply(b); err != nil {
			return false, fmt.Errorf("delete session %s: %w", k, err)
		}
		return true, nil
	})
}
