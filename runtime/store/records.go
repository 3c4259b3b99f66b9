package store

import (
	"fmt"
	"time"
)

// SessionKey identifies a session: the durable conversation of one user of
// one app. All three parts are non-empty.
type SessionKey struct {
	App, User, Session string
}

func (k SessionKey) String() string { return k.App + "/" + k.User + "/" + k.Session }

// Session is a session's record. LastSeq is the sequence number of its last
// event (0: none yet).
type Session struct {
	Key              SessionKey
	Created, Updated time.Time
	LastSeq          uint64
}

// RunStatus is where a run is in its life. The store treats it as an opaque
// non-empty string; these are the values the runtime uses.
type RunStatus string

const (
	RunRunning     RunStatus = "running"
	RunInterrupted RunStatus = "interrupted" // waiting on an interrupt; resumable
	RunCompleted   RunStatus = "completed"
	RunFailed      RunStatus = "failed"
	RunCanceled    RunStatus = "canceled"
)

// Run is a run's record: one durable execution of a runnable inside a session.
type Run struct {
	ID          string
	Session     SessionKey
	Runnable    string // the graph or agent it runs
	ProgramHash string
	Status      RunStatus
	// ParentRun and ParentStep name the checkpoint this run was forked from
	// (time travel); ParentRun is "" for a fresh run.
	ParentRun        string
	ParentStep       uint64
	Created, Updated time.Time
	// Meta is opaque to the store (the runtime's own fields).
	Meta []byte
	// Usage is what the run's model calls used over all its invocations,
	// as of the end of its last one (the zero value: none recorded, or a
	// record written before runs carried it).
	Usage RunUsage
	// FirstEvent is the sequence number in its session's ledger of the
	// run's first event: no event of the run precedes it, so a read of the
	// run's events starts there, not at the ledger's start. AdmitRun sets
	// it to the input's; CreateRun keeps the one it is given, which its
	// caller must not append an event of the run before. 0: unknown (a
	// record written before runs carried it), read from the ledger's start.
	FirstEvent uint64
}

// EventsAfter is the sequence number a read of a run's events starts
// after, given its first event (Run.FirstEvent): the one before it, or 0
// (the ledger's start) when it is unknown.
func EventsAfter(first uint64) uint64 { return max(first, 1) - 1 }

// RunUsage is a run's model calls and what they used: tokens (input
// includes the cached ones) and the cost in USD of the priced ones. Priced
// says some call was of a priced model, so Cost is known.
type RunUsage struct {
	ModelCalls                              uint64
	InputTokens, OutputTokens, CachedTokens uint64
	Cost                                    float64
	Priced                                  bool
}

// RunFilter selects runs. App, User and Session narrow by prefix: User needs
// App and Session needs User (else ErrInvalid). Status, when set, keeps only
// runs in that status. Limit ≤ 0 returns every match; Cursor is the next
// cursor of the previous page ("" for the first). Newest lists in reverse
// index order (app, user, session, run id, all descending): a session's
// newest run first, its run ids being time-ordered, so that {Session,
// Limit: 1, Newest: true} reads its latest run without the others.
type RunFilter struct {
	App, User, Session string
	Status             RunStatus
	Limit              int
	Cursor             string
	Newest             bool
}

// SessionFilter selects sessions. App narrows to one app ("": every app)
// and User to one user of it (User needs App, else ErrInvalid). Limit ≤ 0
// returns every match; Cursor is the next cursor of the previous page (""
// for the first).
type SessionFilter struct {
	App, User string
	Limit     int
	Cursor    string
}

// CheckpointKind tells whether a checkpoint's State is the whole state or a
// delta over the previous checkpoint.
type CheckpointKind uint8

const (
	Full  CheckpointKind = 1
	Delta CheckpointKind = 2
)

func (k CheckpointKind) String() string {
	switch k {
	case Full:
		return "full"
	case Delta:
		return "delta"
	}
	return fmt.Sprintf("CheckpointKind(%d)", uint8(k))
}

// Checkpoint is the durable result of one superstep of a run. The byte fields
// are encoded by the VM.
type Checkpoint struct {
	Run        string
	Step       uint64
	Kind       CheckpointKind
	State      []byte // the whole state (Full) or the delta over the previous step (Delta)
	Frontier   []byte // nodes ready for the next step
	Counters   []byte // join and loop counters
	Interrupts []byte // pending interrupts (non-empty: the run waits on them)
	// ProgramHash and SchemaHash bind the checkpoint to the bytecode and the
	// state schema that wrote it.
	ProgramHash, SchemaHash string
	Time                    time.Time
	// JournalNext is set by the store: the sequence number the run's next
	// journal entry will get. Replay from this checkpoint starts there.
	JournalNext uint64
}

// CheckpointFilter selects checkpoints of one run. Zero values do not filter:
// Before > 0 keeps steps < Before, Kind ≠ 0 keeps that kind, Limit > 0 keeps
// the newest Limit.
type CheckpointFilter struct {
	Before uint64
	Kind   CheckpointKind
	Limit  int
}

// Selects reports whether c passes f's step bound and kind (Limit aside).
func (f CheckpointFilter) Selects(c Checkpoint) bool {
	return (f.Before == 0 || c.Step < f.Before) && (f.Kind == 0 || c.Kind == f.Kind)
}

// StepCommit is everything one superstep makes durable at once.
type StepCommit struct {
	Checkpoint Checkpoint
	// Events are appended to the run's session ledger.
	Events [][]byte
	// Journal entries are appended to the run's journal.
	Journal [][]byte
	// Status, when set, becomes the run's status (Updated = Checkpoint.Time).
	Status RunStatus
	// Usage, when set, becomes the run's usage (the runtime sets it with the
	// status that ends an invocation).
	Usage *RunUsage
}

// Committed reports the sequence numbers a CommitStep assigned: the first of
// its events and of its journal entries (0 when it had none); the others
// follow without gaps.
type Committed struct {
	FirstEvent, FirstJournal uint64
}

// PendingWrite is the recorded output of one node attempt inside an
// uncommitted step.
type PendingWrite struct {
	Node    string
	Attempt uint32
	Writes  []byte
}

// Effect is what is recorded for one side effect attempt. Intent without
// Done means the effect may have run before a crash: run it again with the
// same Key, which the provider deduplicates.
type Effect struct {
	Key    string
	Intent bool
	Done   bool
	Result []byte
}

// Entry is one element of an ordered log: a session event or a journal entry.
// Seq starts at 1 and has no gaps.
type Entry struct {
	Seq  uint64
	Data []byte
}

// Summary is a rolling summary of a session's events under one filter key:
// Text covers every event with Seq ≤ Boundary.
type Summary struct {
	FilterKey string
	Text      string
	Boundary  uint64
	Time      time.Time
}

// Lease is a claim on a key held by Owner while now < Expires. Token is a
// fencing token: it increases every time the lease changes hands.
type Lease struct {
	Key, Owner string
	Expires    time.Time
	Token      uint64
}

// HeldAt reports whether the lease is held at now.
func (l Lease) HeldAt(now time.Time) bool { return l.Owner != "" && now.Before(l.Expires) }
