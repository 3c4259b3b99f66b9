// Package store defines agentc's durable storage: the interfaces every backend
// implements, the records they hold, the key layout and the value framing
// (spec/storage.md).
//
// The store is byte-level. State, deltas, frontiers, events and journal
// entries are opaque bytes encoded by their owners; the store owns identity,
// ordering, atomicity, durability and integrity. Every call that can block takes
// a context first. Times are passed in: no backend reads a clock.
//
// Byte slices passed in are copied before a call returns, and byte slices
// returned are the caller's to keep and modify.
//
// Errors wrap the sentinels below (test with errors.Is) and say what was being
// done: "load checkpoint run_1/12: store: not found".
package store

import (
	"context"
	"time"
)

// Store is the whole storage surface a runtime needs. Services that need one
// part depend on the narrower interface (Sessions, Checkpoints, …).
//
// Implementations are safe for concurrent use. After Close, every call returns
// ErrClosed; Close itself may be called more than once.
type Store interface {
	Programs
	Runs
	Checkpoints
	PendingWrites
	Effects
	Sessions
	Leases
	Tasks
	Docs
	Close() error
}

// Programs stores bytecode by its hash so that a checkpoint's program hash can
// be resolved after a restart.
type Programs interface {
	// PutProgram stores program under hash. Storing the same bytes again is a
	// no-op; different bytes under an existing hash are ErrConflict.
	PutProgram(ctx context.Context, hash string, program []byte) error
	// GetProgram returns the bytecode stored under hash, or ErrNotFound.
	GetProgram(ctx context.Context, hash string) ([]byte, error)
}

// Runs stores run records and the per-session index over them.
type Runs interface {
	// CreateRun stores a new run. The run's session must exist (ErrNotFound);
	// an existing run id is ErrConflict.
	CreateRun(ctx context.Context, run Run) error
	// GetRun returns the run, or ErrNotFound.
	GetRun(ctx context.Context, id string) (Run, error)
	// UpdateRunStatus sets the run's status and Updated time.
	UpdateRunStatus(ctx context.Context, id string, status RunStatus, now time.Time) error
	// EndRun appends events to the run's session ledger and sets the run's
	// status, Updated time and, when usage is not nil, its usage, in one
	// synced batch: all or nothing. It returns the sequence number of the
	// first event (0 when events is empty). The run must exist
	// (ErrNotFound).
	EndRun(ctx context.Context, id string, events [][]byte, status RunStatus, usage *RunUsage, now time.Time) (first uint64, err error)
	// ListRuns returns one page of runs matching filter, ordered by (app, user,
	// session, run id), and the cursor of the next page ("" when there is none).
	ListRuns(ctx context.Context, filter RunFilter) (runs []Run, next string, err error)
	// DeleteRun removes the run and everything it owns: its index entry,
	// checkpoints, pending writes, intents, effect results, journal and task
	// ids. Session events stay: the ledger is never rewritten.
	DeleteRun(ctx context.Context, id string) error
	// DeleteRunIf is DeleteRun decided under the run's write lock: cond is
	// called with the run's record while no other writer can change the
	// run, and the run is deleted only when it returns true (deleted
	// reports which). cond must not call the store.
	DeleteRunIf(ctx context.Context, id string, cond func(Run) bool) (deleted bool, err error)
}

// RunAdmitter is implemented by a store that admits a new run in one
// synced write. AdmitRun is GetOrCreateSession(run.Session, now),
// AppendEvents(run.Session, events, now), CreateRun(run) and
// ApplyDocs(docs...) as one batch: all or nothing. It returns the sequence
// number of the first event (0 when events is empty). An existing run id is
// ErrConflict, an IfAbsent doc whose key exists ErrDocExists, and then
// nothing is written, not even a missing session. The Runner admits a new
// run through it when the store has it (two fsyncs fewer per run than the
// three calls), else through the three calls (spec/storage.md).
type RunAdmitter interface {
	AdmitRun(ctx context.Context, run Run, events [][]byte, now time.Time, docs ...DocOp) (first uint64, err error)
}

// Checkpoints stores the durable result of each superstep.
type Checkpoints interface {
	// CommitStep writes, in one synced batch: the checkpoint, the deletion of
	// the run's pending writes at or below the step, the events (appended to
	// the run's session) and journal entries, and the run's new status.
	//
	// Steps of a run strictly increase (a step at or below the latest is
	// ErrConflict) and a run's first checkpoint is Full (else ErrInvalid). The
	// run must exist (ErrNotFound).
	CommitStep(ctx context.Context, commit StepCommit) (Committed, error)
	// GetCheckpoint returns the checkpoint of run at step, or ErrNotFound.
	GetCheckpoint(ctx context.Context, run string, step uint64) (Checkpoint, error)
	// LatestCheckpoint returns the run's checkpoint with the highest step, or
	// ErrNotFound when it has none.
	LatestCheckpoint(ctx context.Context, run string) (Checkpoint, error)
	// ListCheckpoints returns the run's checkpoints matching filter, newest
	// first. An unknown run has none.
	ListCheckpoints(ctx context.Context, run string, filter CheckpointFilter) ([]Checkpoint, error)
	// CheckpointChain returns what rebuilds the state at step: the last Full
	// checkpoint at or before step followed by every later checkpoint up to
	// and including step, in step order. ErrNotFound when step has no
	// checkpoint; ErrCorrupt when no full snapshot precedes it.
	CheckpointChain(ctx context.Context, run string, step uint64) ([]Checkpoint, error)
	// PruneCheckpoints deletes the checkpoints no chain at or after step needs:
	// those before the full snapshot CheckpointChain(run, step) starts with.
	// It returns how many it deleted.
	PruneCheckpoints(ctx context.Context, run string, step uint64) (int, error)
	// ListJournal returns the run's journal entries with Seq ≥ from, in order,
	// at most limit of them (limit ≤ 0: all).
	ListJournal(ctx context.Context, run string, from uint64, limit int) ([]Entry, error)
}

// PendingWrites stores the writes of nodes that finished inside a step that has
// not been committed, so that a resumed step does not re-run them.
type PendingWrites interface {
	// PutPendingWrite durably records the writes of one node attempt in step.
	// The same bytes again are a no-op; different bytes are ErrConflict, and so
	// is a step the run has already committed. The run must exist.
	PutPendingWrite(ctx context.Context, run string, step uint64, node string, attempt uint32, writes []byte) error
	// ListPendingWrites returns the pending writes of run at step, ordered by
	// node, then attempt.
	ListPendingWrites(ctx context.Context, run string, step uint64) ([]PendingWrite, error)
}

// Effects gives side effects exactly-once semantics across crashes: an intent
// is durable before the effect runs, and its result is recorded once and then
// replayed.
type Effects interface {
	// PutIntent durably records that node's attempt in run is about to perform
	// a side effect and returns its idempotency key, IdempotencyKey(run, node,
	// attempt). Calling it again returns the same key. The run must exist.
	PutIntent(ctx context.Context, run, node string, attempt uint32) (string, error)
	// PutEffectResult records the result of the effect keyed key. The intent
	// must exist (ErrNotFound); a recorded result is never replaced: the same
	// bytes again are a no-op, different bytes ErrConflict.
	PutEffectResult(ctx context.Context, key string, result []byte) error
	// GetEffectResult returns the recorded result, or ErrNotFound when there is
	// none yet (the effect may or may not have happened: re-run it with the
	// same key).
	GetEffectResult(ctx context.Context, key string) ([]byte, error)
	// LookupEffect reports everything recorded for key without writing:
	// whether its intent exists and its result, if any. Nothing recorded is
	// not an error: the zero Effect with Key set.
	LookupEffect(ctx context.Context, key string) (Effect, error)
}

// Sessions stores the durable conversation: the event ledger, the state blob
// and one rolling summary per filter key.
type Sessions interface {
	// GetOrCreateSession returns the session, creating it at now when it does
	// not exist; created says which happened.
	GetOrCreateSession(ctx context.Context, key SessionKey, now time.Time) (s Session, created bool, err error)
	// GetSession returns the session, or ErrNotFound.
	GetSession(ctx context.Context, key SessionKey) (Session, error)
	// AppendEvents appends events to the ledger in one synced batch and
	// returns the sequence number of the first; the others follow it without
	// gaps. The session must exist.
	AppendEvents(ctx context.Context, key SessionKey, events [][]byte, now time.Time) (first uint64, err error)
	// ListEvents returns the session's events with Seq > after, in order, at
	// most limit of them (limit ≤ 0: all).
	ListEvents(ctx context.Context, key SessionKey, after uint64, limit int) ([]Entry, error)
	// PutSessionState replaces the session's state blob.
	PutSessionState(ctx context.Context, key SessionKey, state []byte, now time.Time) error
	// GetSessionState returns the session's state blob (nil when never set),
	// or ErrNotFound when the session does not exist.
	GetSessionState(ctx context.Context, key SessionKey) ([]byte, error)
	// PutSummary writes the summary of filter key sum.FilterKey: text and
	// boundary together. The boundary never moves back (ErrConflict) nor past
	// the session's last event (ErrInvalid).
	PutSummary(ctx context.Context, key SessionKey, sum Summary) error
	// GetSummary returns the summary of filterKey, or ErrNotFound.
	GetSummary(ctx context.Context, key SessionKey, filterKey string) (Summary, error)
	// ListSessions returns one page of the sessions filter selects, ordered
	// by (app, user, session), and the cursor of the next page ("" when
	// there is none).
	ListSessions(ctx context.Context, filter SessionFilter) (sessions []Session, next string, err error)
	// DeleteSession removes the session: its record, ledger, state and
	// summaries. cond, when not nil, is called with the session's record
	// while no other writer can change the session, and the session is kept
	// when it returns false (deleted false, no error); cond must not call
	// the store. A session that still has runs is ErrConflict (delete them
	// first), checked atomically with the deletion: a concurrent CreateRun
	// in the session either makes the deletion ErrConflict or fails with
	// ErrNotFound, so no run outlives its session. A missing session is
	// ErrNotFound.
	DeleteSession(ctx context.Context, key SessionKey, cond func(Session) bool) (deleted bool, err error)
}

// Leases are time-bounded exclusive claims on a key (for example one session's
// summary boundary), so that two processes sharing a store cannot both
// advance it. Times are passed in; a lease is held while now < Expires.
type Leases interface {
	// AcquireLease claims key for owner until now+ttl. It is ErrConflict when
	// another owner holds it; an owner re-acquiring its own lease renews it. A
	// new holder gets a fencing token greater than every earlier holder's.
	AcquireLease(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (Lease, error)
	// RenewLease extends owner's lease to now+ttl. It is ErrConflict when
	// owner does not hold the lease at now (expired, released or taken).
	RenewLease(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (Lease, error)
	// ReleaseLease gives up owner's lease. Releasing a lease nobody holds is a
	// no-op; releasing another owner's live lease is ErrConflict.
	ReleaseLease(ctx context.Context, key, owner string, now time.Time) error
}

// Tasks indexes client-chosen task ids (A2A) under the user who chose them.
type Tasks interface {
	// PutTaskIndex maps (user, task) to run. Mapping it to the same run again
	// is a no-op; to another run, ErrConflict. The run must exist.
	PutTaskIndex(ctx context.Context, user, task, run string) error
	// LookupTask returns the run of (user, task). A task id chosen by another
	// user never resolves: ErrNotFound.
	LookupTask(ctx context.Context, user, task string) (string, error)
}
