package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/agentc/agentc/runtime/store"
)

// migration is one step of the schema's history. Versions start at 1 and
// are append-only: a released migration never changes, a new one follows.
type migration struct {
	version int
	about   string
	sql     string
}

// migrations is the schema's history; SchemaVersion is its last version.
var migrations = []migration{
	{1, "initial schema", schemaV1},
	{2, "run usage", schemaV2},
	{3, "run first event", schemaV3},
}

// SchemaVersion is the schema version this build writes and reads.
var SchemaVersion = migrations[len(migrations)-1].version

// Every string the store is given is kept as bytea (its bytes, unchanged);
// times are timestamptz (microseconds); steps and sequences are bigint.
const schemaV1 = `
CREATE TABLE programs (
	hash    bytea PRIMARY KEY,
	program bytea
);
CREATE TABLE sessions (
	app      bytea NOT NULL,
	usr      bytea NOT NULL,
	session  bytea NOT NULL,
	created  timestamptz NOT NULL,
	updated  timestamptz NOT NULL,
	last_seq bigint NOT NULL DEFAULT 0,
	state    bytea,
	PRIMARY KEY (app, usr, session)
);
CREATE TABLE events (
	app     bytea NOT NULL,
	usr     bytea NOT NULL,
	session bytea NOT NULL,
	seq     bigint NOT NULL,
	data    bytea,
	PRIMARY KEY (app, usr, session, seq)
);
CREATE TABLE summaries (
	app        bytea NOT NULL,
	usr        bytea NOT NULL,
	session    bytea NOT NULL,
	filter_key bytea NOT NULL,
	text       bytea NOT NULL,
	boundary   bigint NOT NULL,
	time       timestamptz NOT NULL,
	PRIMARY KEY (app, usr, session, filter_key)
);
CREATE TABLE runs (
	id           bytea PRIMARY KEY,
	index_key    bytea NOT NULL UNIQUE,
	app          bytea NOT NULL,
	usr          bytea NOT NULL,
	session      bytea NOT NULL,
	runnable     bytea NOT NULL,
	program_hash bytea NOT NULL,
	status       bytea NOT NULL,
	parent_run   bytea NOT NULL,
	parent_step  bigint NOT NULL,
	created      timestamptz NOT NULL,
	updated      timestamptz NOT NULL,
	meta         bytea,
	latest_step  bigint,
	journal_next bigint NOT NULL DEFAULT 1
);
CREATE TABLE checkpoints (
	run          bytea NOT NULL,
	step         bigint NOT NULL,
	kind         smallint NOT NULL,
	state        bytea,
	frontier     bytea,
	counters     bytea,
	interrupts   bytea,
	program_hash bytea NOT NULL,
	schema_hash  bytea NOT NULL,
	time         timestamptz NOT NULL,
	journal_next bigint NOT NULL,
	PRIMARY KEY (run, step)
);
CREATE TABLE pending_writes (
	run     bytea NOT NULL,
	step    bigint NOT NULL,
	node    bytea NOT NULL,
	attempt bigint NOT NULL,
	writes  bytea,
	PRIMARY KEY (run, step, node, attempt)
);
CREATE TABLE effects (
	run     bytea NOT NULL,
	node    bytea NOT NULL,
	attempt bigint NOT NULL,
	done    boolean NOT NULL DEFAULT false,
	result  bytea,
	PRIMARY KEY (run, node, attempt)
);
CREATE TABLE journal (
	run  bytea NOT NULL,
	seq  bigint NOT NULL,
	data bytea,
	PRIMARY KEY (run, seq)
);
CREATE TABLE leases (
	key     bytea PRIMARY KEY,
	owner   bytea NOT NULL,
	expires timestamptz NOT NULL,
	token   bigint NOT NULL
);
CREATE TABLE tasks (
	usr  bytea NOT NULL,
	task bytea NOT NULL,
	run  bytea NOT NULL,
	PRIMARY KEY (usr, task)
);
CREATE INDEX tasks_run ON tasks (run);
-- commit_check locks the run's row for a step commit and checks the step:
-- it raises AG404 (no such run or session), AG409 (step at or below the
-- latest) or AG400 (a first checkpoint that is not full), and returns the
-- run's next journal sequence.
CREATE FUNCTION commit_check(p_run bytea, p_step bigint, p_kind smallint, p_events integer) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
	r runs%ROWTYPE;
BEGIN
	SELECT * INTO r FROM runs WHERE id = p_run FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'run not found' USING ERRCODE = 'AG404';
	END IF;
	IF r.latest_step IS NOT NULL AND p_step <= r.latest_step THEN
		RAISE EXCEPTION 'latest is step %', r.latest_step USING ERRCODE = 'AG409';
	END IF;
	IF r.latest_step IS NULL AND p_kind <> 1 THEN
		RAISE EXCEPTION 'a run''s first checkpoint must be full' USING ERRCODE = 'AG400';
	END IF;
	IF p_events > 0 AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.app = r.app AND s.usr = r.usr AND s.session = r.session) THEN
		RAISE EXCEPTION 'session not found' USING ERRCODE = 'AG404';
	END IF;
	RETURN r.journal_next;
END
$$;
-- fence_check locks the lease row FOR SHARE and raises AG409 unless
-- p_owner holds p_key with token p_token at p_now: a write fenced by it
-- commits only while its writer still holds the lease, and a new holder's
-- acquisition waits for it.
CREATE FUNCTION fence_check(p_key bytea, p_owner bytea, p_token bigint, p_now timestamptz) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
	l leases%ROWTYPE;
BEGIN
	SELECT * INTO l FROM leases WHERE key = p_key FOR SHARE;
	IF NOT FOUND OR l.owner <> p_owner OR l.token <> p_token OR l.expires <= p_now THEN
		RAISE EXCEPTION 'lease % is not held by % with token %', encode(p_key, 'escape'), encode(p_owner, 'escape'), p_token
			USING ERRCODE = 'AG409';
	END IF;
END
$$;
CREATE TABLE docs (
	coll  bytea NOT NULL,
	key   bytea NOT NULL,
	value bytea,
	PRIMARY KEY (coll, key)
);
`

// schemaV2 adds a run's usage (store.RunUsage); runs recorded before it
// read as no usage.
const schemaV2 = `
ALTER TABLE runs
	ADD COLUMN model_calls   bigint NOT NULL DEFAULT 0,
	ADD COLUMN input_tokens  bigint NOT NULL DEFAULT 0,
	ADD COLUMN output_tokens bigint NOT NULL DEFAULT 0,
	ADD COLUMN cached_tokens bigint NOT NULL DEFAULT 0,
	ADD COLUMN cost          double precision NOT NULL DEFAULT 0,
	ADD COLUMN priced        boolean NOT NULL DEFAULT false;
`

// schemaV3 adds a run's first event (store.Run.FirstEvent); runs recorded
// before it read as an unknown one (0).
const schemaV3 = `
ALTER TABLE runs ADD COLUMN first_event bigint NOT NULL DEFAULT 0;
`

// migrate creates the schema when missing and applies the migrations it
// lacks, all in one transaction under a transaction-scoped advisory lock
// keyed by the schema's name, so concurrent Opens of one schema take turns
// and a failed migration leaves nothing behind. A schema whose recorded
// version is newer than SchemaVersion is refused.
func (s *Store) migrate(ctx context.Context) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('agentc.migrate'), hashtext($1))`, s.schema); err != nil {
			return fmt.Errorf("lock for migration: %w", err)
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, s.schema).Scan(&exists); err != nil {
			return fmt.Errorf("look up schema: %w", err)
		}
		if !exists {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{s.schema}.Sanitize()); err != nil {
				return fmt.Errorf("create schema (the role needs CREATE on the database, or an operator creates it): %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			about      text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		var current int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if current > SchemaVersion {
			return fmt.Errorf("schema version %d, this build reads up to %d (migrated by a newer agentc): %w",
				current, SchemaVersion, store.ErrLayoutVersion)
		}
		for _, m := range migrations {
			if m.version <= current {
				continue
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %d (%s): %w", m.version, m.about, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, about) VALUES ($1, $2)`, m.version, m.about); err != nil {
				return fmt.Errorf("record migration %d: %w", m.version, err)
			}
		}
		return nil
	})
}

// errNoRows reports whether err is "no rows", the not-found of a QueryRow.
func errNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
