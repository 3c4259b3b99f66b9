package postgres

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentc/agentc/runtime/store"
)

// PutProgram implements store.Programs.
func (s *Store) PutProgram(ctx context.Context, hash string, program []byte) error {
	return store.Op0(ctx, &s.gate, store.CheckName("program hash", hash), func() error {
		tag, err := s.pool.Exec(ctx, `INSERT INTO programs (hash, program) VALUES ($1, $2) ON CONFLICT DO NOTHING`, bs(hash), program)
		if err != nil {
			return fmt.Errorf("put program %s: %w", hash, err)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		old, err := s.GetProgram(ctx, hash)
		if err != nil {
			return fmt.Errorf("put program %s: %w", hash, err)
		}
		if !bytes.Equal(old, program) {
			return fmt.Errorf("put program %s: different bytes under the same hash: %w", hash, store.ErrConflict)
		}
		return nil
	})
}

// GetProgram implements store.Programs.
func (s *Store) GetProgram(ctx context.Context, hash string) ([]byte, error) {
	return store.Op(ctx, &s.gate, nil, func() ([]byte, error) {
		var p []byte
		err := s.pool.QueryRow(ctx, `SELECT program FROM programs WHERE hash = $1`, bs(hash)).Scan(&p)
		if errNoRows(err) {
			return nil, fmt.Errorf("get program %s: %w", hash, store.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("get program %s: %w", hash, err)
		}
		return p, nil
	})
}

// runCols are the columns scanRun reads, in its order.
const runCols = `id, app, usr, session, runnable, program_hash, status, parent_run, parent_step, created, updated, meta,
	model_calls, input_tokens, output_tokens, cached_tokens, cost, priced, first_event`

// scanRun reads one row of runCols.
func scanRun(row pgx.Row) (store.Run, error) {
	var (
		id, app, usr, sess, runnable, prog, status, parent []byte
		r                                                  store.Run
		parentStep                                         int64
		calls, in, out, cached, firstEvent                 int64
	)
	if err := row.Scan(&id, &app, &usr, &sess, &runnable, &prog, &status, &parent, &parentStep, &r.Created, &r.Updated, &r.Meta,
		&calls, &in, &out, &cached, &r.Usage.Cost, &r.Usage.Priced, &firstEvent); err != nil {
		return store.Run{}, err
	}
	if min(calls, in, out, cached) < 0 {
		return store.Run{}, fmt.Errorf("run %s: negative usage: %w", id, store.ErrCorrupt)
	}
	if firstEvent < 0 {
		return store.Run{}, fmt.Errorf("run %s: negative first event: %w", id, store.ErrCorrupt)
	}
	r.FirstEvent = uint64(firstEvent)
	r.Usage.ModelCalls, r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.CachedTokens = uint64(calls), uint64(in), uint64(out), uint64(cached)
	r.ID, r.Runnable, r.ProgramHash, r.Status, r.ParentRun = string(id), string(runnable), string(prog), store.RunStatus(status), string(parent)
	r.Session = store.SessionKey{App: string(app), User: string(usr), Session: string(sess)}
	r.ParentStep = uint64(parentStep)
	r.Created, r.Updated = utc(r.Created), utc(r.Updated)
	return r, nil
}

// CreateRun implements store.Runs.
func (s *Store) CreateRun(ctx context.Context, r store.Run) error {
	if err := r.Check(); err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	parentStep, ok := i64(r.ParentStep)
	if !ok {
		return fmt.Errorf("create run %s: parent step %d out of range: %w", r.ID, r.ParentStep, store.ErrInvalid)
	}
	return store.Op0(ctx, &s.gate, nil, func() error {
		k := r.Session
		// One statement: the insert happens only when the session exists, and a
		// duplicate id is a conflict the statement reports instead of raising.
		var sessionFound, inserted bool
		err := s.pool.QueryRow(ctx, `
			WITH sess AS (SELECT 1 FROM sessions WHERE app = $2 AND usr = $3 AND session = $4 FOR SHARE),
			ins AS (
				INSERT INTO runs (id, index_key, app, usr, session, runnable, program_hash, status, parent_run, parent_step, created, updated, meta,
					model_calls, input_tokens, output_tokens, cached_tokens, cost, priced, first_event)
				SELECT $1, $5, $2, $3, $4, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20 FROM sess
				ON CONFLICT DO NOTHING RETURNING 1)
			SELECT EXISTS (SELECT 1 FROM sess), EXISTS (SELECT 1 FROM ins)`,
			append([]any{bs(r.ID), bs(k.App), bs(k.User), bs(k.Session), []byte(store.RunIndexKey(r)), bs(r.Runnable), bs(r.ProgramHash),
				bs(string(r.Status)), bs(r.ParentRun), parentStep, r.Created, r.Updated, r.Meta}, append(usageArgs(&r.Usage), int64(r.FirstEvent))...)...).Scan(&sessionFound, &inserted)
		switch {
		case err != nil:
			return fmt.Errorf("create run %s: %w", r.ID, err)
		case !sessionFound:
			return fmt.Errorf("create run %s: session %s: %w", r.ID, r.Session, store.ErrNotFound)
		case !inserted:
			return fmt.Errorf("create run %s: %w", r.ID, store.ErrConflict)
		}
		return nil
	})
}

// GetRun implements store.Runs.
func (s *Store) GetRun(ctx context.Context, id string) (store.Run, error) {
	return store.Op(ctx, &s.gate, nil, func() (store.Run, error) {
		r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runCols+` FROM runs WHERE id = $1`, bs(id)))
		if errNoRows(err) {
			return store.Run{}, fmt.Errorf("get run %s: %w", id, store.ErrNotFound)
		}
		if err != nil {
			return store.Run{}, fmt.Errorf("get run %s: %w", id, err)
		}
		return r, nil
	})
}

// UpdateRunStatus implements store.Runs.
func (s *Store) UpdateRunStatus(ctx context.Context, id string, status store.RunStatus, now time.Time) error {
	return store.Op0(ctx, &s.gate, store.Wrapf(store.CheckName("run status", string(status)), "update run %s", id), func() error {
		tag, err := s.pool.Exec(ctx, `UPDATE runs SET status = $2, updated = $3 WHERE id = $1`, bs(id), bs(string(status)), now)
		if err != nil {
			return fmt.Errorf("update run %s: %w", id, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("update run %s: %w", id, store.ErrNotFound)
		}
		return nil
	})
}

// appendEventsSQL advances the session's counter under its row lock and
// inserts the events after it, in one statement; it returns the first
// event's sequence, or no row when the session does not exist. $4 is the
// events as a bytea array, $5 the time.
const appendEventsSQL = `
	WITH sess AS (
		UPDATE sessions SET last_seq = last_seq + cardinality($4::bytea[]), updated = $5
		WHERE app = $1 AND usr = $2 AND session = $3
		RETURNING last_seq - cardinality($4::bytea[]) AS base),
	ins AS (
		INSERT INTO events (app, usr, session, seq, data)
		SELECT $1, $2, $3, sess.base + e.i, e.data FROM sess, unnest($4::bytea[]) WITH ORDINALITY AS e(data, i))
	SELECT base + 1 FROM sess`

// appendEventsArgs are the arguments of appendEventsSQL.
func appendEventsArgs(k store.SessionKey, events [][]byte, now time.Time) []any {
	return []any{bs(k.App), bs(k.User), bs(k.Session), events, now}
}

// EndRun implements store.Runs. Once committed, it is announced
// (store.CommitNotice on store.RunsChannel; notify.go).
func (s *Store) EndRun(ctx context.Context, id string, events [][]byte, status store.RunStatus, usage *store.RunUsage, now time.Time) (uint64, error) {
	return s.endRun(ctx, id, events, status, usage, nil, now)
}

// usageArgs are a usage's six columns as arguments (model_calls,
// input_tokens, output_tokens, cached_tokens, cost, priced); all NULL when
// u is nil. The counts fit (store.RunUsage.Check).
func usageArgs(u *store.RunUsage) []any {
	if u == nil {
		return []any{nil, nil, nil, nil, nil, nil}
	}
	return []any{int64(u.ModelCalls), int64(u.InputTokens), int64(u.OutputTokens), int64(u.CachedTokens), u.Cost, u.Priced}
}

// setUsage is the SET list that writes usageArgs from parameter $first
// on, leaving each column as it is when its argument is NULL.
func setUsage(first int) string {
	return fmt.Sprintf(`model_calls = coalesce($%d::bigint, model_calls), input_tokens = coalesce($%d::bigint, input_tokens),
		output_tokens = coalesce($%d::bigint, output_tokens), cached_tokens = coalesce($%d::bigint, cached_tokens),
		cost = coalesce($%d::double precision, cost), priced = coalesce($%d::boolean, priced)`,
		first, first+1, first+2, first+3, first+4, first+5)
}

// endRunSQL sets a run's status, updated time and usage.
var endRunSQL = `UPDATE runs SET status = $2, updated = $3, ` + setUsage(4) + ` WHERE id = $1`

// endRun is EndRun, fenced by a lease when fence is set (EndRunFenced).
func (s *Store) endRun(ctx context.Context, id string, events [][]byte, status store.RunStatus, usage *store.RunUsage, fence *store.Lease, now time.Time) (uint64, error) {
	return store.Op(ctx, &s.gate, store.Wrapf(store.CheckEnd(status, usage), "end run %s", id), func() (uint64, error) {
		var first uint64
		err := s.tx(ctx, func(tx pgx.Tx) error {
			first = 0
			if fence != nil {
				if _, err := tx.Exec(ctx, `SELECT fence_check($1, $2, $3, $4)`, bs(fence.Key), bs(fence.Owner), int64(fence.Token), now); err != nil {
					return checkErr(err)
				}
			}
			var app, usr, sess []byte
			err := tx.QueryRow(ctx, `SELECT app, usr, session FROM runs WHERE id = $1 FOR UPDATE`, bs(id)).Scan(&app, &usr, &sess)
			if errNoRows(err) {
				return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
			}
			if err != nil {
				return err
			}
			k := store.SessionKey{App: string(app), User: string(usr), Session: string(sess)}
			if len(events) > 0 {
				var f int64
				err := tx.QueryRow(ctx, appendEventsSQL, appendEventsArgs(k, events, now)...).Scan(&f)
				if errNoRows(err) {
					return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
				}
				if err != nil {
					return err
				}
				first = uint64(f)
			}
			_, err = tx.Exec(ctx, endRunSQL, append([]any{bs(id), bs(string(status)), now}, usageArgs(usage)...)...)
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("end run %s: %w", id, err)
		}
		s.announce(id)
		return first, nil
	})
}

// ListRuns implements store.Runs. The runs' index_key column holds
// store.RunIndexKey, so the order and the cursors are those of every other
// backend.
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, string, error) {
	return store.List(ctx, s.gate.Enter, "list runs", f, func(after []byte, max int) ([]store.Run, error) {
		prefix := []byte(store.RunIndexPrefix(f))
		q := `SELECT ` + runCols + ` FROM runs
			WHERE index_key >= $1 AND ($2::bytea IS NULL OR index_key < $2) AND index_key > $3
			  AND ($4::bytea IS NULL OR status = $4)
			ORDER BY index_key LIMIT $5`
		start := append([]byte{}, after...) // "": from the first
		if f.Newest {
			q = `SELECT ` + runCols + ` FROM runs
			WHERE index_key >= $1 AND ($2::bytea IS NULL OR index_key < $2) AND ($3::bytea IS NULL OR index_key < $3)
			  AND ($4::bytea IS NULL OR status = $4)
			ORDER BY index_key DESC LIMIT $5`
			start = after // nil: from the last
		}
		rows, err := s.pool.Query(ctx, q, prefix, store.PrefixEnd(prefix), start, nullable(string(f.Status)), limitArg(max))
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Run, error) { return scanRun(row) })
	})
}

// DeleteRun implements store.Runs.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	_, err := s.DeleteRunIf(ctx, id, nil)
	return err
}

// DeleteRunIf implements store.Runs: cond sees the run's row locked FOR
// UPDATE, which every writer of the run takes.
func (s *Store) DeleteRunIf(ctx context.Context, id string, cond func(store.Run) bool) (bool, error) {
	return store.Op(ctx, &s.gate, nil, func() (bool, error) {
		var deleted bool
		err := s.tx(ctx, func(tx pgx.Tx) error {
			r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runCols+` FROM runs WHERE id = $1 FOR UPDATE`, bs(id)))
			deleted = false
			if errNoRows(err) {
				return store.ErrNotFound
			}
			if err != nil || cond != nil && !cond(r) {
				return err
			}
			deleted = true
			b := &pgx.Batch{}
			for _, table := range []string{"runs WHERE id", "checkpoints WHERE run", "pending_writes WHERE run", "effects WHERE run", "journal WHERE run", "tasks WHERE run"} {
				b.Queue(`DELETE FROM `+table+` = $1`, bs(id))
			}
			return tx.SendBatch(ctx, b).Close()
		})
		if err != nil {
			return false, fmt.Errorf("delete run %s: %w", id, err)
		}
		return deleted, nil
	})
}
