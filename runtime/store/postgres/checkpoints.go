package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentc/agentc/runtime/store"
)

// CommitStep implements store.Checkpoints in one round trip: a pipelined
// batch, which PostgreSQL runs as one implicit transaction and commits at
// its end. Its first statement, commit_check, locks the run's row (its
// head: latest step and journal counter) and raises when the step is
// refused, which aborts the whole batch; the others write the events, the
// journal entries, the checkpoint, the deletion of the step's pending writes
// and the new head, taking the session key and the journal sequence from the
// locked rows. Once committed, it is announced (store.CommitNotice on
// store.RunsChannel; notify.go).
func (s *Store) CommitStep(ctx context.Context, c store.StepCommit) (store.Committed, error) {
	return s.commitStep(ctx, c, nil, time.Time{})
}

// CommitStepFenced is CommitStep fenced by a lease: the commit happens only
// while fence.Owner holds fence.Key with fence.Token at now (checked in the
// commit's transaction, holding the lease row FOR SHARE), else nothing is
// written and the error wraps store.ErrConflict. A process that lost a run's
// lease to another (it stalled past the lease's expiry) can thus never
// commit a step of that run again.
func (s *Store) CommitStepFenced(ctx context.Context, c store.StepCommit, fence store.Lease, now time.Time) (store.Committed, error) {
	if err := store.CheckLease(fence.Key, fence.Owner, time.Nanosecond); err != nil {
		return store.Committed{}, fmt.Errorf("commit step: fence: %w", err)
	}
	return s.commitStep(ctx, c, &fence, now)
}

func (s *Store) commitStep(ctx context.Context, c store.StepCommit, fence *store.Lease, now time.Time) (store.Committed, error) {
	if err := c.Check(); err != nil {
		return store.Committed{}, fmt.Errorf("commit step: %w", err)
	}
	cp := c.Checkpoint
	step, ok := i64(cp.Step)
	if !ok {
		return store.Committed{}, fmt.Errorf("commit step %s/%d: step out of range: %w", cp.Run, cp.Step, store.ErrInvalid)
	}
	return store.Op(ctx, &s.gate, nil, func() (store.Committed, error) {
		run, nj := bs(cp.Run), int64(len(c.Journal))
		var done store.Committed
		err := s.retry(ctx, func() error {
			done = store.Committed{}
			b := &pgx.Batch{}
			if fence != nil {
				b.Queue(`SELECT fence_check($1, $2, $3, $4)`, bs(fence.Key), bs(fence.Owner), int64(fence.Token), now)
			}
			b.Queue(`SELECT commit_check($1, $2, $3, $4)`, run, step, int16(cp.Kind), int32(len(c.Events))).QueryRow(func(row pgx.Row) error {
				var next int64
				if err := row.Scan(&next); err != nil {
					return err
				}
				if nj > 0 {
					done.FirstJournal = uint64(next)
				}
				return nil
			})
			if len(c.Events) > 0 {
				b.Queue(`
					WITH sess AS (
						UPDATE sessions s SET last_seq = s.last_seq + cardinality($2::bytea[]), updated = $3
						FROM runs r WHERE r.id = $1 AND s.app = r.app AND s.usr = r.usr AND s.session = r.session
						RETURNING s.app, s.usr, s.session, s.last_seq - cardinality($2::bytea[]) AS base),
					ins AS (
						INSERT INTO events (app, usr, session, seq, data)
						SELECT sess.app, sess.usr, sess.session, sess.base + e.i, e.data
						FROM sess, unnest($2::bytea[]) WITH ORDINALITY AS e(data, i))
					SELECT base + 1 FROM sess`, run, c.Events, cp.Time).QueryRow(func(row pgx.Row) error {
					var first int64
					err := row.Scan(&first)
					done.FirstEvent = uint64(first)
					return err
				})
			}
			if nj > 0 {
				b.Queue(`INSERT INTO journal (run, seq, data)
					SELECT $1, r.journal_next + j.i - 1, j.data FROM runs r, unnest($2::bytea[]) WITH ORDINALITY AS j(data, i) WHERE r.id = $1`,
					run, c.Journal)
			}
			b.Queue(`INSERT INTO checkpoints (run, step, kind, state, frontier, counters, interrupts, program_hash, schema_hash, time, journal_next)
				SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, r.journal_next + $11 FROM runs r WHERE r.id = $1`,
				run, step, int16(cp.Kind), cp.State, cp.Frontier, cp.Counters, cp.Interrupts,
				bs(cp.ProgramHash), bs(cp.SchemaHash), cp.Time, nj)
			b.Queue(`DELETE FROM pending_writes WHERE run = $1 AND step <= $2`, run, step)
			b.Queue(commitRunSQL, append([]any{run, step, nj, nullable(string(c.Status)), cp.Time}, usageArgs(c.Usage)...)...)
			return checkErr(s.pool.SendBatch(ctx, b).Close())
		})
		if err != nil {
			return store.Committed{}, fmt.Errorf("commit step %s/%d: %w", cp.Run, cp.Step, err)
		}
		s.announce(cp.Run)
		return done, nil
	})
}

// commitRunSQL advances a run's head in a step commit and sets its status
// and usage when given.
var commitRunSQL = `UPDATE runs SET latest_step = $2, journal_next = journal_next + $3,
	status = coalesce($4, status), updated = CASE WHEN $4::bytea IS NULL THEN updated ELSE $5 END, ` + setUsage(6) + ` WHERE id = $1`

// checkErr maps the errors commit_check raises to the store's sentinels.
func checkErr(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case "AG404":
		return fmt.Errorf("%s: %w", pe.Message, store.ErrNotFound)
	case "AG409":
		return fmt.Errorf("%s: %w", pe.Message, store.ErrConflict)
	case "AG400":
		return fmt.Errorf("%s: %w", pe.Message, store.ErrInvalid)
	}
	return err
}

// checkpointCols are the columns scanCheckpoint reads, in its order.
const checkpointCols = `run, step, kind, state, frontier, counters, interrupts, program_hash, schema_hash, time, journal_next`

func scanCheckpoint(row pgx.Row) (store.Checkpoint, error) {
	var (
		c                 store.Checkpoint
		run, prog, schema []byte
		step, next        int64
		kind              int16
	)
	if err := row.Scan(&run, &step, &kind, &c.State, &c.Frontier, &c.Counters, &c.Interrupts, &prog, &schema, &c.Time, &next); err != nil {
		return store.Checkpoint{}, err
	}
	c.Run, c.Step, c.Kind = string(run), uint64(step), store.CheckpointKind(kind)
	c.ProgramHash, c.SchemaHash, c.Time, c.JournalNext = string(prog), string(schema), utc(c.Time), uint64(next)
	return c, nil
}

// queryCheckpoints runs a query of checkpointCols.
func (s *Store) queryCheckpoints(ctx context.Context, sql string, args ...any) ([]store.Checkpoint, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Checkpoint, error) { return scanCheckpoint(row) })
}

// GetCheckpoint implements store.Checkpoints.
func (s *Store) GetCheckpoint(ctx context.Context, run string, step uint64) (store.Checkpoint, error) {
	return store.Op(ctx, &s.gate, nil, func() (store.Checkpoint, error) {
		n, ok := i64(step)
		if !ok {
			return store.Checkpoint{}, fmt.Errorf("load checkpoint %s/%d: %w", run, step, store.ErrNotFound)
		}
		c, err := scanCheckpoint(s.pool.QueryRow(ctx, `SELECT `+checkpointCols+` FROM checkpoints WHERE run = $1 AND step = $2`, bs(run), n))
		if errNoRows(err) {
			return store.Checkpoint{}, fmt.Errorf("load checkpoint %s/%d: %w", run, step, store.ErrNotFound)
		}
		if err != nil {
			return store.Checkpoint{}, fmt.Errorf("load checkpoint %s/%d: %w", run, step, err)
		}
		return c, nil
	})
}

// LatestCheckpoint implements store.Checkpoints.
func (s *Store) LatestCheckpoint(ctx context.Context, run string) (store.Checkpoint, error) {
	return store.Op(ctx, &s.gate, nil, func() (store.Checkpoint, error) {
		c, err := scanCheckpoint(s.pool.QueryRow(ctx, `SELECT `+checkpointCols+` FROM checkpoints WHERE run = $1 ORDER BY step DESC LIMIT 1`, bs(run)))
		if errNoRows(err) {
			return store.Checkpoint{}, fmt.Errorf("load latest checkpoint of %s: %w", run, store.ErrNotFound)
		}
		if err != nil {
			return store.Checkpoint{}, fmt.Errorf("load latest checkpoint of %s: %w", run, err)
		}
		return c, nil
	})
}

// ListCheckpoints implements store.Checkpoints.
func (s *Store) ListCheckpoints(ctx context.Context, run string, f store.CheckpointFilter) ([]store.Checkpoint, error) {
	return store.Op(ctx, &s.gate, nil, func() ([]store.Checkpoint, error) {
		before, ok := i64(f.Before)
		if !ok {
			before = 0 // every step is below it
		}
		cps, err := s.queryCheckpoints(ctx, `SELECT `+checkpointCols+` FROM checkpoints
			WHERE run = $1 AND ($2 = 0 OR step < $2) AND ($3 = 0 OR kind = $3)
			ORDER BY step DESC LIMIT $4`, bs(run), before, int16(f.Kind), limitArg(f.Limit))
		if err != nil {
			return nil, fmt.Errorf("list checkpoints of %s: %w", run, err)
		}
		return cps, nil
	})
}

// chainBase returns the step of the full snapshot the chain of step starts
// with: store.ErrNotFound when step has no checkpoint,
// store.ErrNoFullSnapshot when no full snapshot precedes it.
func chainBase(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, run string, step int64) (int64, error) {
	var (
		found bool
		base  *int64
	)
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM checkpoints WHERE run = $1 AND step = $2),
		(SELECT max(step) FROM checkpoints WHERE run = $1 AND step <= $2 AND kind = $3)`,
		bs(run), step, int16(store.Full)).Scan(&found, &base)
	switch {
	case err != nil:
		return 0, err
	case !found:
		return 0, store.ErrNotFound
	case base == nil:
		return 0, store.ErrNoFullSnapshot
	}
	return *base, nil
}

// CheckpointChain implements store.Checkpoints.
func (s *Store) CheckpointChain(ctx context.Context, run string, step uint64) ([]store.Checkpoint, error) {
	return store.Op(ctx, &s.gate, nil, func() ([]store.Checkpoint, error) {
		n, ok := i64(step)
		if !ok {
			return nil, fmt.Errorf("load checkpoint chain %s/%d: %w", run, step, store.ErrNotFound)
		}
		var chain []store.Checkpoint
		err := s.tx(ctx, func(tx pgx.Tx) error {
			base, err := chainBase(ctx, tx, run, n)
			if err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `SELECT `+checkpointCols+` FROM checkpoints WHERE run = $1 AND step >= $2 AND step <= $3 ORDER BY step`,
				bs(run), base, n)
			if err != nil {
				return err
			}
			chain, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Checkpoint, error) { return scanCheckpoint(row) })
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("load checkpoint chain %s/%d: %w", run, step, err)
		}
		return chain, nil
	})
}

// PruneCheckpoints implements store.Checkpoints.
func (s *Store) PruneCheckpoints(ctx context.Context, run string, step uint64) (int, error) {
	return store.Op(ctx, &s.gate, nil, func() (int, error) {
		n, ok := i64(step)
		if !ok {
			return 0, fmt.Errorf("prune checkpoints %s before %d: %w", run, step, store.ErrNotFound)
		}
		var pruned int
		err := s.tx(ctx, func(tx pgx.Tx) error {
			base, err := chainBase(ctx, tx, run, n)
			if err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, `DELETE FROM checkpoints WHERE run = $1 AND step < $2`, bs(run), base)
			pruned = int(tag.RowsAffected())
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("prune checkpoints %s before %d: %w", run, step, err)
		}
		return pruned, nil
	})
}

// ListJournal implements store.Checkpoints.
func (s *Store) ListJournal(ctx context.Context, run string, from uint64, limit int) ([]store.Entry, error) {
	return store.Op(ctx, &s.gate, nil, func() ([]store.Entry, error) {
		n, ok := i64(from)
		if !ok {
			return nil, nil
		}
		es, err := s.queryEntries(ctx, `SELECT seq, data FROM journal WHERE run = $1 AND seq >= $2 ORDER BY seq LIMIT $3`,
			bs(run), n, limitArg(limit))
		if err != nil {
			return nil, fmt.Errorf("list journal of %s: %w", run, err)
		}
		return es, nil
	})
}

// queryEntries runs a query of (seq, data).
func (s *Store) queryEntries(ctx context.Context, sql string, args ...any) ([]store.Entry, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Entry, error) {
		var (
			seq int64
			e   store.Entry
		)
		err := row.Scan(&seq, &e.Data)
		e.Seq = uint64(seq)
		return e, err
	})
}

// PutPendingWrite implements store.PendingWrites. The run's row is read
// FOR SHARE, which waits for a CommitStep of the run in flight, so a write
// never lands in a step that has just been committed.
func (s *Store) PutPendingWrite(ctx context.Context, run string, step uint64, node string, attempt uint32, writes []byte) error {
	if err := store.CheckName("node", node); err != nil {
		return fmt.Errorf("put pending write %s/%d: %w", run, step, err)
	}
	n, ok := i64(step)
	if !ok {
		return fmt.Errorf("put pending write %s/%d: step out of range: %w", run, step, store.ErrInvalid)
	}
	return store.Op0(ctx, &s.gate, nil, func() error {
		var (
			found, allowed, inserted bool
		)
		err := s.pool.QueryRow(ctx, `
			WITH r AS (SELECT latest_step IS NULL OR latest_step < $2 AS allowed FROM runs WHERE id = $1 FOR SHARE),
			ins AS (
				INSERT INTO pending_writes (run, step, node, attempt, writes)
				SELECT $1, $2, $3, $4, $5 FROM r WHERE r.allowed
				ON CONFLICT DO NOTHING RETURNING 1)
			SELECT EXISTS (SELECT 1 FROM r), coalesce((SELECT allowed FROM r), false), EXISTS (SELECT 1 FROM ins)`,
			bs(run), n, bs(node), int64(attempt), writes).Scan(&found, &allowed, &inserted)
		switch {
		case err != nil:
			return fmt.Errorf("put pending write %s/%d/%s: %w", run, step, node, err)
		case !found:
			return fmt.Errorf("put pending write: run %s: %w", run, store.ErrNotFound)
		case !allowed:
			return fmt.Errorf("put pending write %s/%d/%s: step already committed: %w", run, step, node, store.ErrConflict)
		case inserted:
			return nil
		}
		var old []byte
		err = s.pool.QueryRow(ctx, `SELECT writes FROM pending_writes WHERE run = $1 AND step = $2 AND node = $3 AND attempt = $4`,
			bs(run), n, bs(node), int64(attempt)).Scan(&old)
		switch {
		case errNoRows(err): // committed (and deleted) in between
			return fmt.Errorf("put pending write %s/%d/%s: step already committed: %w", run, step, node, store.ErrConflict)
		case err != nil:
			return fmt.Errorf("put pending write %s/%d/%s: %w", run, step, node, err)
		case !bytes.Equal(old, writes):
			return fmt.Errorf("put pending write %s/%d/%s/%d: different writes recorded: %w", run, step, node, attempt, store.ErrConflict)
		}
		return nil
	})
}

// ListPendingWrites implements store.PendingWrites.
func (s *Store) ListPendingWrites(ctx context.Context, run string, step uint64) ([]store.PendingWrite, error) {
	return store.Op(ctx, &s.gate, nil, func() ([]store.PendingWrite, error) {
		n, ok := i64(step)
		if !ok {
			return nil, nil
		}
		rows, err := s.pool.Query(ctx, `SELECT node, attempt, writes FROM pending_writes WHERE run = $1 AND step = $2 ORDER BY node, attempt`, bs(run), n)
		if err != nil {
			return nil, fmt.Errorf("list pending writes %s/%d: %w", run, step, err)
		}
		ws, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.PendingWrite, error) {
			var (
				node    []byte
				attempt int64
				w       store.PendingWrite
			)
			err := row.Scan(&node, &attempt, &w.Writes)
			w.Node, w.Attempt = string(node), uint32(attempt)
			return w, err
		})
		if err != nil {
			return nil, fmt.Errorf("list pending writes %s/%d: %w", run, step, err)
		}
		return ws, nil
	})
}

// PutIntent implements store.Effects.
func (s *Store) PutIntent(ctx context.Context, run, node string, attempt uint32) (string, error) {
	return store.Op(ctx, &s.gate, store.Wrapf(store.CheckName("node", node), "put intent %s", run), func() (string, error) {
		var found bool
		err := s.pool.QueryRow(ctx, `
			WITH r AS (SELECT 1 FROM runs WHERE id = $1 FOR SHARE),
			ins AS (INSERT INTO effects (run, node, attempt) SELECT $1, $2, $3 FROM r ON CONFLICT DO NOTHING)
			SELECT EXISTS (SELECT 1 FROM r)`, bs(run), bs(node), int64(attempt)).Scan(&found)
		if err != nil {
			return "", fmt.Errorf("put intent %s/%s/%d: %w", run, node, attempt, err)
		}
		if !found {
			return "", fmt.Errorf("put intent: run %s: %w", run, store.ErrNotFound)
		}
		return store.IdempotencyKey(run, node, attempt), nil
	})
}

// lookupEffect reads what is recorded for key.
func (s *Store) lookupEffect(ctx context.Context, key string) (store.Effect, error) {
	run, node, attempt, err := store.ParseIdempotencyKey(key)
	if err != nil {
		return store.Effect{}, err
	}
	e := store.Effect{Key: key}
	err = s.pool.QueryRow(ctx, `SELECT done, result FROM effects WHERE run = $1 AND node = $2 AND attempt = $3`,
		bs(run), bs(node), int64(attempt)).Scan(&e.Done, &e.Result)
	switch {
	case errNoRows(err):
		return e, nil
	case err != nil:
		return store.Effect{}, err
	}
	e.Intent = true
	return e, nil
}

// PutEffectResult implements store.Effects.
func (s *Store) PutEffectResult(ctx context.Context, key string, result []byte) error {
	run, node, attempt, err := store.ParseIdempotencyKey(key)
	if err != nil {
		return fmt.Errorf("put effect result: %w", err)
	}
	return store.Op0(ctx, &s.gate, nil, func() error {
		tag, err := s.pool.Exec(ctx, `UPDATE effects SET done = true, result = $4 WHERE run = $1 AND node = $2 AND attempt = $3 AND NOT done`,
			bs(run), bs(node), int64(attempt), result)
		if err != nil {
			return fmt.Errorf("put effect result %s: %w", key, err)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		e, err := s.lookupEffect(ctx, key)
		switch {
		case err != nil:
			return fmt.Errorf("put effect result %s: %w", key, err)
		case !e.Intent:
			return fmt.Errorf("put effect result %s: no intent: %w", key, store.ErrNotFound)
		case !bytes.Equal(e.Result, result):
			return fmt.Errorf("put effect result %s: a different result is recorded: %w", key, store.ErrConflict)
		}
		return nil
	})
}

// GetEffectResult implements store.Effects.
func (s *Store) GetEffectResult(ctx context.Context, key string) ([]byte, error) {
	if _, _, _, err := store.ParseIdempotencyKey(key); err != nil {
		return nil, fmt.Errorf("get effect result: %w", err)
	}
	return store.Op(ctx, &s.gate, nil, func() ([]byte, error) {
		e, err := s.lookupEffect(ctx, key)
		switch {
		case err != nil:
			return nil, fmt.Errorf("get effect result %s: %w", key, err)
		case !e.Intent:
			return nil, fmt.Errorf("get effect result %s: no intent: %w", key, store.ErrNotFound)
		case !e.Done:
			return nil, fmt.Errorf("get effect result %s: %w", key, store.ErrNotFound)
		}
		return e.Result, nil
	})
}

// LookupEffect implements store.Effects.
func (s *Store) LookupEffect(ctx context.Context, key string) (store.Effect, error) {
	if _, _, _, err := store.ParseIdempotencyKey(key); err != nil {
		return store.Effect{}, fmt.Errorf("look up effect: %w", err)
	}
	return store.Op(ctx, &s.gate, nil, func() (store.Effect, error) {
		e, err := s.lookupEffect(ctx, key)
		if err != nil {
			return store.Effect{}, fmt.Errorf("look up effect %s: %w", key, err)
		}
		return e, nil
	})
}
