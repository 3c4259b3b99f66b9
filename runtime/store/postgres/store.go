// Package postgres is the store.Store on PostgreSQL, for several agentc
// processes sharing one database, and the only package that imports pgx.
//
// Every call is one transaction (or one statement); a step commit writes its
// checkpoint, events, journal entries, the deletion of its pending writes and
// the run's new head in one transaction. Sequences are counters in rows
// (sessions.last_seq, runs.journal_next) advanced under the row's lock inside
// the writing transaction, so they have no gaps whatever the concurrency.
// The schema lives in one PostgreSQL schema (default "agentc") and is created
// and migrated by Open (spec/storage.md, "PostgreSQL").
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentc/agentc/runtime/store"
)

// DefaultSchema is the PostgreSQL schema the store uses when neither Options
// nor the URL's schema parameter names one.
const DefaultSchema = "agentc"

// Options tune a Store. The zero value is a good default.
type Options struct {
	// Schema is the PostgreSQL schema holding the tables. Empty: the URL's
	// "schema" query parameter, else DefaultSchema. It is created when
	// missing (the role needs CREATE on the database for that; otherwise an
	// operator creates it and grants the role CREATE on it).
	Schema string
	// MaxConns caps the connection pool (0: the URL's pool_max_conns, else
	// pgxpool's default of max(4, CPUs)).
	MaxConns int32
}

// Store is a store.Store in a PostgreSQL schema.
type Store struct {
	pool   *pgxpool.Pool
	schema string

	// gate: operations pass it, Close shuts it, so Close waits for
	// operations in flight and later ones see ErrClosed.
	gate             store.Gate
	ann              *announcer // sends commit notices (notify.go)
	store.LeaseRules            // AcquireLease, RenewLease, ReleaseLease over stepLease
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url (postgres://user@host:port/db?…),
// creates the schema when missing and applies the migrations this build
// knows, under an advisory lock, in one transaction. A schema migrated by a
// newer agentc is refused with store.ErrLayoutVersion.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open store: parse postgres url: %w", err)
	}
	params := cfg.ConnConfig.RuntimeParams
	schema := opts.Schema
	if schema == "" {
		schema = params["schema"]
	}
	delete(params, "schema") // ours, not a server setting
	if schema == "" {
		schema = DefaultSchema
	}
	params["search_path"] = pgx.Identifier{schema}.Sanitize() // quoted: the name is kept as given
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	where := fmt.Sprintf("postgres %s:%d/%s schema %s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database, schema)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", where, err)
	}
	s := &Store{pool: pool, schema: schema}
	s.LeaseRules.Step = s.stepLease
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", where, err)
	}
	s.startAnnouncer()
	return s, nil
}

// Schema returns the PostgreSQL schema the store uses.
func (s *Store) Schema() string { return s.schema }

// Close closes the connection pool. It waits for operations in flight; later
// calls return store.ErrClosed, and a second Close returns nil. Commit
// notices not sent yet are dropped.
func (s *Store) Close() error {
	return s.gate.Shut(func() error {
		s.ann.close()
		s.pool.Close()
		return nil
	})
}

// maxAttempts bounds the retries of a transaction that PostgreSQL aborted
// for a deadlock or a serialization failure.
const maxAttempts = 8

// tx runs fn in a transaction and commits it, retrying from the start when
// PostgreSQL aborts it for a deadlock or a serialization failure. fn must not
// keep state between attempts.
func (s *Store) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	return s.retry(ctx, func() error { return pgx.BeginFunc(ctx, s.pool, fn) })
}

// retry runs fn, which makes one transaction, again when PostgreSQL aborted
// it for a deadlock or a serialization failure.
func (s *Store) retry(ctx context.Context, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		if attempt < maxAttempts && retryable(err) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * time.Millisecond):
			}
			continue
		}
		return err
	}
}

// retryable reports whether err is a transient abort worth retrying.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// bs returns s as bytes for a bytea parameter; "" is an empty value, not
// NULL. Identifiers are stored as bytea because Go strings are bytes and
// PostgreSQL text refuses NUL and invalid UTF-8.
func bs(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return []byte(s)
}

// i64 converts a step or sequence to a bigint parameter; ok is false when it
// does not fit.
func i64(u uint64) (int64, bool) {
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// limitArg turns a limit ≤ 0 ("all") into NULL, which LIMIT reads as ALL.
func limitArg(limit int) *int64 {
	if limit <= 0 {
		return nil
	}
	n := int64(limit)
	return &n
}

// utc returns t in UTC, as every backend returns times.
func utc(t time.Time) time.Time { return t.UTC() }
