package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentc/agentc/runtime/store"
)

// sessionWhere selects one session by $1, $2, $3.
const sessionWhere = `app = $1 AND usr = $2 AND session = $3`

func sessionArgs(k store.SessionKey, more ...any) []any {
	return append([]any{bs(k.App), bs(k.User), bs(k.Session)}, more...)
}

// GetOrCreateSession implements store.Sessions.
func (s *Store) GetOrCreateSession(ctx context.Context, key store.SessionKey, now time.Time) (store.Session, bool, error) {
	return store.Op2(ctx, &s.gate, key.Check(), func() (store.Session, bool, error) {
		tag, err := s.pool.Exec(ctx, `INSERT INTO sessions (app, usr, session, created, updated) VALUES ($1, $2, $3, $4, $4) ON CONFLICT DO NOTHING`,
			sessionArgs(key, now)...)
		if err != nil {
			return store.Session{}, false, fmt.Errorf("create session %s: %w", key, err)
		}
		if tag.RowsAffected() == 1 {
			return store.Session{Key: key, Created: utc(now), Updated: utc(now)}, true, nil
		}
		sess, err := s.getSession(ctx, key)
		if err != nil {
			return store.Session{}, false, fmt.Errorf("get %w", err)
		}
		return sess, false, nil
	})
}

// getSession reads the session's record.
func (s *Store) getSession(ctx context.Context, key store.SessionKey) (store.Session, error) {
	sess := store.Session{Key: key}
	var last int64
	err := s.pool.QueryRow(ctx, `SELECT created, updated, last_seq FROM sessions WHERE `+sessionWhere, sessionArgs(key)...).
		Scan(&sess.Created, &sess.Updated, &last)
	if errNoRows(err) {
		return store.Session{}, fmt.Errorf("session %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("session %s: %w", key, err)
	}
	sess.Created, sess.Updated, sess.LastSeq = utc(sess.Created), utc(sess.Updated), uint64(last)
	return sess, nil
}

// GetSession implements store.Sessions.
func (s *Store) GetSession(ctx context.Context, key store.SessionKey) (store.Session, error) {
	return store.Op(ctx, &s.gate, nil, func() (store.Session, error) {
		sess, err := s.getSession(ctx, key)
		if err != nil {
			return store.Session{}, fmt.Errorf("get %w", err)
		}
		return sess, nil
	})
}

// AppendEvents implements store.Sessions: one statement advances the
// session's counter under its row lock and inserts the events after it.
func (s *Store) AppendEvents(ctx context.Context, key store.SessionKey, events [][]byte, now time.Time) (uint64, error) {
	return store.Op(ctx, &s.gate, nil, func() (uint64, error) {
		if len(events) == 0 {
			var ok bool
			if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE `+sessionWhere+`)`, sessionArgs(key)...).Scan(&ok); err != nil {
				return 0, fmt.Errorf("append events to %s: %w", key, err)
			}
			if !ok {
				return 0, fmt.Errorf("append events: session %s: %w", key, store.ErrNotFound)
			}
			return 0, nil
		}
		var first int64
		err := s.pool.QueryRow(ctx, appendEventsSQL, appendEventsArgs(key, events, now)...).Scan(&first)
		if errNoRows(err) {
			return 0, fmt.Errorf("append events: session %s: %w", key, store.ErrNotFound)
		}
		if err != nil {
			return 0, fmt.Errorf("append events to %s: %w", key, err)
		}
		return uint64(first), nil
	})
}

// ListEvents implements store.Sessions.
func (s *Store) ListEvents(ctx context.Context, key store.SessionKey, after uint64, limit int) ([]store.Entry, error) {
	return store.Op(ctx, &s.gate, nil, func() ([]store.Entry, error) {
		n, fits := i64(after)
		if !fits {
			n = 1<<63 - 1 // nothing follows it
		}
		// One statement: no row when the session does not exist, one row of
		// NULLs when it has no events after n.
		rows, err := s.pool.Query(ctx, `SELECT e.seq, e.data FROM sessions s
			LEFT JOIN LATERAL (SELECT seq, data FROM events
				WHERE app = s.app AND usr = s.usr AND session = s.session AND seq > $4 ORDER BY seq LIMIT $5) e ON true
			WHERE s.app = $1 AND s.usr = $2 AND s.session = $3`, sessionArgs(key, n, limitArg(limit))...)
		if err != nil {
			return nil, fmt.Errorf("list events of %s: %w", key, err)
		}
		defer rows.Close()
		found := false
		var es []store.Entry
		for rows.Next() {
			found = true
			var (
				seq  *int64
				data []byte
			)
			if err := rows.Scan(&seq, &data); err != nil {
				return nil, fmt.Errorf("list events of %s: %w", key, err)
			}
			if seq != nil {
				es = append(es, store.Entry{Seq: uint64(*seq), Data: data})
			}
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("list events of %s: %w", key, err)
		}
		if !found {
			return nil, fmt.Errorf("list events: session %s: %w", key, store.ErrNotFound)
		}
		return es, nil
	})
}

// PutSessionState implements store.Sessions.
func (s *Store) PutSessionState(ctx context.Context, key store.SessionKey, state []byte, now time.Time) error {
	return store.Op0(ctx, &s.gate, nil, func() error {
		if state == nil {
			state = []byte{} // set, though empty: NULL means never set
		}
		tag, err := s.pool.Exec(ctx, `UPDATE sessions SET state = $4, updated = $5 WHERE `+sessionWhere, sessionArgs(key, state, now)...)
		if err != nil {
			return fmt.Errorf("put state of %s: %w", key, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("put state: session %s: %w", key, store.ErrNotFound)
		}
		return nil
	})
}

// GetSessionState implements store.Sessions.
func (s *Store) GetSessionState(ctx context.Context, key store.SessionKey) ([]byte, error) {
	return store.Op(ctx, &s.gate, nil, func() ([]byte, error) {
		var state []byte
		err := s.pool.QueryRow(ctx, `SELECT state FROM sessions WHERE `+sessionWhere, sessionArgs(key)...).Scan(&state)
		if errNoRows(err) {
			return nil, fmt.Errorf("get state: session %s: %w", key, store.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("get state of %s: %w", key, err)
		}
		return state, nil
	})
}

// PutSummary implements store.Sessions. The session's row is locked FOR
// UPDATE, so summaries of one session take turns and the boundary checks
// see the latest ledger.
func (s *Store) PutSummary(ctx context.Context, key store.SessionKey, sum store.Summary) error {
	return store.Op0(ctx, &s.gate, nil, func() error {
		err := s.tx(ctx, func(tx pgx.Tx) error {
			var last int64
			err := tx.QueryRow(ctx, `SELECT last_seq FROM sessions WHERE `+sessionWhere+` FOR UPDATE`, sessionArgs(key)...).Scan(&last)
			if errNoRows(err) {
				return fmt.Errorf("session %s: %w", key, store.ErrNotFound)
			}
			if err != nil {
				return err
			}
			if sum.Boundary > uint64(last) {
				return fmt.Errorf("boundary %d is past the last event %d: %w", sum.Boundary, last, store.ErrInvalid)
			}
			var old int64
			err = tx.QueryRow(ctx, `SELECT boundary FROM summaries WHERE `+sessionWhere+` AND filter_key = $4`,
				sessionArgs(key, bs(sum.FilterKey))...).Scan(&old)
			switch {
			case err == nil && sum.Boundary < uint64(old):
				return fmt.Errorf("boundary %d is behind the stored %d: %w", sum.Boundary, old, store.ErrConflict)
			case err != nil && !errNoRows(err):
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO summaries (app, usr, session, filter_key, text, boundary, time) VALUES ($1, $2, $3, $4, $5, $6, $7)
				ON CONFLICT (app, usr, session, filter_key) DO UPDATE SET text = excluded.text, boundary = excluded.boundary, time = excluded.time`,
				sessionArgs(key, bs(sum.FilterKey), bs(sum.Text), int64(sum.Boundary), sum.Time)...)
			return err
		})
		if err != nil {
			return fmt.Errorf("put summary %q of %s: %w", sum.FilterKey, key, err)
		}
		return nil
	})
}

// GetSummary implements store.Sessions.
func (s *Store) GetSummary(ctx context.Context, key store.SessionKey, filterKey string) (store.Summary, error) {
	return store.Op(ctx, &s.gate, nil, func() (store.Summary, error) {
		var (
			text     []byte
			boundary *int64
			at       *time.Time
		)
		err := s.pool.QueryRow(ctx, `SELECT m.text, m.boundary, m.time FROM sessions s
			LEFT JOIN summaries m ON m.app = s.app AND m.usr = s.usr AND m.session = s.session AND m.filter_key = $4
			WHERE s.app = $1 AND s.usr = $2 AND s.session = $3`,
			sessionArgs(key, bs(filterKey))...).Scan(&text, &boundary, &at)
		switch {
		case errNoRows(err):
			return store.Summary{}, fmt.Errorf("get summary %q: session %s: %w", filterKey, key, store.ErrNotFound)
		case err != nil:
			return store.Summary{}, fmt.Errorf("get summary %q of %s: %w", filterKey, key, err)
		case at == nil || boundary == nil:
			return store.Summary{}, fmt.Errorf("get summary %q of %s: %w", filterKey, key, store.ErrNotFound)
		}
		return store.Summary{FilterKey: filterKey, Text: string(text), Boundary: uint64(*boundary), Time: utc(*at)}, nil
	})
}

// stepLease is the Step of the store's LeaseRules: one transaction holding
// the lease's row. The row is created when missing and then locked FOR
// UPDATE, so steppers of one key take turns; the token is kept in the row
// across holders and only grows.
func (s *Store) stepLease(ctx context.Context, key string, apply func(store.Lease) (store.Lease, bool, error)) (store.Lease, error) {
	return store.Op(ctx, &s.gate, nil, func() (store.Lease, error) {
		var l store.Lease
		err := s.tx(ctx, func(tx pgx.Tx) error {
			cur, err := lockLease(ctx, tx, key)
			if err != nil {
				return err
			}
			var write bool
			if l, write, err = apply(cur); err != nil || !write {
				return err
			}
			return writeLease(ctx, tx, l)
		})
		return l, err
	})
}

// lockLease returns key's lease row, locked, creating an empty one.
func lockLease(ctx context.Context, tx pgx.Tx, key string) (store.Lease, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO leases (key, owner, expires, token) VALUES ($1, '', 'epoch', 0) ON CONFLICT DO NOTHING`, bs(key)); err != nil {
		return store.Lease{}, err
	}
	var (
		owner   []byte
		expires time.Time
		token   int64
	)
	err := tx.QueryRow(ctx, `SELECT owner, expires, token FROM leases WHERE key = $1 FOR UPDATE`,
		bs(key)).Scan(&owner, &expires, &token)
	if err != nil {
		return store.Lease{}, err
	}
	return store.Lease{Key: key, Owner: string(owner), Expires: utc(expires), Token: uint64(token)}, nil
}

// writeLease stores l in its locked row (a released lease expires at the
// epoch).
func writeLease(ctx context.Context, tx pgx.Tx, l store.Lease) error {
	if l.Expires.IsZero() {
		l.Expires = time.Unix(0, 0)
	}
	_, err := tx.Exec(ctx, `UPDATE leases SET owner = $2, expires = $3, token = $4 WHERE key = $1`,
		bs(l.Key), bs(l.Owner), l.Expires, int64(l.Token))
	return err
}

// PutTaskIndex implements store.Tasks.
func (s *Store) PutTaskIndex(ctx context.Context, user, task, run string) error {
	return store.Op0(ctx, &s.gate, store.CheckTask(user, task), func() error {
		var (
			found, inserted bool
			old             []byte
		)
		err := s.pool.QueryRow(ctx, `
			WITH r AS (SELECT 1 FROM runs WHERE id = $3 FOR SHARE),
			ins AS (INSERT INTO tasks (usr, task, run) SELECT $1, $2, $3 FROM r ON CONFLICT DO NOTHING RETURNING 1)
			SELECT EXISTS (SELECT 1 FROM r), EXISTS (SELECT 1 FROM ins)`, bs(user), bs(task), bs(run)).Scan(&found, &inserted)
		switch {
		case err != nil:
			return fmt.Errorf("index task %s/%s: %w", user, task, err)
		case !found:
			return fmt.Errorf("index task %s/%s: run %s: %w", user, task, run, store.ErrNotFound)
		case inserted:
			return nil
		}
		err = s.pool.QueryRow(ctx, `SELECT run FROM tasks WHERE usr = $1 AND task = $2`, bs(user), bs(task)).Scan(&old)
		switch {
		case err != nil:
			return fmt.Errorf("index task %s/%s: %w", user, task, err)
		case string(old) != run:
			return fmt.Errorf("index task %s/%s: mapped to run %s: %w", user, task, old, store.ErrConflict)
		}
		return nil
	})
}

// LookupTask implements store.Tasks.
func (s *Store) LookupTask(ctx context.Context, user, task string) (string, error) {
	return store.Op(ctx, &s.gate, store.CheckTask(user, task), func() (string, error) {
		var run []byte
		err := s.pool.QueryRow(ctx, `SELECT run FROM tasks WHERE usr = $1 AND task = $2`, bs(user), bs(task)).Scan(&run)
		if errNoRows(err) {
			return "", fmt.Errorf("look up task %s of user %s: %w", task, user, store.ErrNotFound)
		}
		if err != nil {
			return "", fmt.Errorf("look up task %s of user %s: %w", task, user, err)
		}
		return string(run), nil
	})
}

// ListSessions implements store.Sessions. Sessions are ordered by their
// bytea key columns, which is the order of their keys on every backend.
func (s *Store) ListSessions(ctx context.Context, f store.SessionFilter) ([]store.Session, string, error) {
	return store.List(ctx, s.gate.Enter, "list sessions", f, func(after []byte, max int) ([]store.Session, error) {
		from := []any{nil, nil, nil}
		if after != nil {
			_, parts, _ := store.DecodeKey(after) // ListStart decoded it
			from = []any{bs(parts[0].Str), bs(parts[1].Str), bs(parts[2].Str)}
		}
		rows, err := s.pool.Query(ctx, `SELECT app, usr, session, created, updated, last_seq FROM sessions
			WHERE ($1::bytea IS NULL OR app = $1) AND ($2::bytea IS NULL OR usr = $2)
			  AND ($3::bytea IS NULL OR (app, usr, session) > ($3, $4, $5))
			ORDER BY app, usr, session LIMIT $6`,
			nullable(f.App), nullable(f.User), from[0], from[1], from[2], limitArg(max))
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Session, error) {
			var (
				app, usr, sess []byte
				last           int64
				r              store.Session
			)
			err := row.Scan(&app, &usr, &sess, &r.Created, &r.Updated, &last)
			r.Key = store.SessionKey{App: string(app), User: string(usr), Session: string(sess)}
			r.Created, r.Updated, r.LastSeq = utc(r.Created), utc(r.Updated), uint64(last)
			return r, err
		})
	})
}

// nullable is an optional filter (an app, a user, a status): NULL when
// unset.
func nullable(v string) []byte {
	if v == "" {
		return nil
	}
	return []byte(v)
}

// DeleteSession implements store.Sessions. The session's row is locked FOR
// UPDATE before its runs are counted; CreateRun holds it FOR SHARE while it
// inserts, so a run created concurrently is either counted here or finds
// the session gone.
func (s *Store) DeleteSession(ctx context.Context, key store.SessionKey, cond func(store.Session) bool) (bool, error) {
	return store.Op(ctx, &s.gate, nil, func() (bool, error) {
		var deleted bool
		err := s.tx(ctx, func(tx pgx.Tx) error {
			deleted = false
			sess := store.Session{Key: key}
			var last int64
			err := tx.QueryRow(ctx, `SELECT created, updated, last_seq FROM sessions WHERE `+sessionWhere+` FOR UPDATE`, sessionArgs(key)...).
				Scan(&sess.Created, &sess.Updated, &last)
			if errNoRows(err) {
				return fmt.Errorf("session %s: %w", key, store.ErrNotFound)
			}
			if err != nil {
				return err
			}
			sess.Created, sess.Updated, sess.LastSeq = utc(sess.Created), utc(sess.Updated), uint64(last)
			if cond != nil && !cond(sess) {
				return nil
			}
			prefix := []byte(store.RunIndexPrefix(store.RunFilter{App: key.App, User: key.User, Session: key.Session}))
			var hasRun bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE index_key >= $1 AND index_key < $2)`,
				prefix, store.PrefixEnd(prefix)).Scan(&hasRun); err != nil {
				return err
			}
			if hasRun {
				return fmt.Errorf("it has runs: %w", store.ErrConflict)
			}
			b := &pgx.Batch{}
			for _, table := range []string{"events", "summaries", "sessions"} {
				b.Queue(`DELETE FROM `+table+` WHERE `+sessionWhere, sessionArgs(key)...)
			}
			deleted = true
			return tx.SendBatch(ctx, b).Close()
		})
		if err != nil {
			return false, fmt.Errorf("delete session %s: %w", key, err)
		}
		return deleted, nil
	})
}
