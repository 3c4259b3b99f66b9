// Package retention deletes what an app no longer needs from a store
// (spec/storage.md, "Retention"): finished runs past an age or beyond a
// count per session, sessions idle past a time to live, the protocols'
// idempotency records past theirs, and the records a deleted run owned. It plans first — what would be deleted,
// and why; what matched a rule but is kept, and why — and applies a plan by
// deleting each item only if a check under the store's writer lock still
// finds it deletable.
//
// It never deletes a run that can still be resumed (anything but completed,
// failed or canceled), a session holding one, or a run that is the base of
// a fork; it deletes whole runs only, so no delta chain loses its base.
package retention

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentc/agentc/runtime/store"
)

// Policy is one app's retention policy. A zero field keeps what it governs.
type Policy struct {
	// MaxAge deletes finished runs whose last update is older.
	MaxAge time.Duration
	// MaxRuns keeps at most this many finished runs per session, the most
	// recently updated; older ones are deleted.
	MaxRuns int
	// SessionTTL deletes sessions whose last activity (their ledger, state
	// or any run's update) is older, with their finished runs.
	SessionTTL time.Duration
	// IdempotencyTTL expires the protocols' idempotency records (a re-sent
	// request's key) of finished runs last updated longer ago, and of
	// reservations made longer ago whose request never started a run.
	IdempotencyTTL time.Duration
}

// IsZero reports whether p deletes nothing but records of deleted runs.
func (p Policy) IsZero() bool { return p == Policy{} }

func (p Policy) String() string {
	var parts []string
	add := func(name string, d time.Duration) {
		if d > 0 {
			parts = append(parts, name+" "+FormatAge(d))
		}
	}
	add("max_age", p.MaxAge)
	if p.MaxRuns > 0 {
		parts = append(parts, "max_runs "+strconv.Itoa(p.MaxRuns))
	}
	add("session_ttl", p.SessionTTL)
	add("idempotency_ttl", p.IdempotencyTTL)
	if len(parts) == 0 {
		return "keep everything"
	}
	return strings.Join(parts, ", ")
}

// Check reports a policy with a negative field.
func (p Policy) Check() error {
	if p.MaxAge < 0 || p.MaxRuns < 0 || p.SessionTTL < 0 || p.IdempotencyTTL < 0 {
		return fmt.Errorf("retention: %+v: values must not be negative", p)
	}
	return nil
}

// ParseAge reads a duration as time.ParseDuration does, and also whole
// days ("30d"). "" and "0" are zero (keep).
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration such as 30d, 12h or 90m", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration such as 30d, 12h or 90m", s)
	}
	return d, nil
}

// FormatAge renders d in days when it is whole days, else as Go does.
func FormatAge(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// Finished reports whether a run in status st can no longer be resumed by
// default: completed, failed or canceled. Every other status — running,
// interrupted, needs_decision, and any this build does not know — is kept.
func Finished(st store.RunStatus) bool {
	switch st {
	case store.RunCompleted, store.RunFailed, store.RunCanceled:
		return true
	}
	return false
}

// Records describes one Docs collection of records that name a run, each
// keyed DocPath(app, user, …): the protocols' idempotency records, and,
// Owned, records that belong to their run (A2A task records).
type Records struct {
	Coll string
	// Owned records go when their run goes, never by idempotency_ttl.
	Owned bool
	// Read returns what a record's value names: the run its request
	// started ("" while it starts it), or the A2A task whose run it is
	// (resolved through the task index), and when it was made (zero when
	// the record does not say).
	Read func(value []byte) (Ref, error)
}

// Ref is what a record refers to. With are documents that go with the
// record (an A2A task's entry in its list index).
type Ref struct {
	Run, Task string
	Made      time.Time
	With      []DocKey
}

// DocKey names a document.
type DocKey struct{ Coll, Key string }

// Config is what a Retainer works with.
type Config struct {
	Store store.Store
	// Now is the clock.
	Now func() time.Time
	// SessionDocs are Docs collections keyed DocPath(app, user, session,
	// …): a deleted session's documents in them go with it (artifacts,
	// memory extraction cursors).
	SessionDocs []string
	// Forget are called for each deleted session, after it is gone, to
	// drop what other services keep about it elsewhere (recall postings).
	Forget []func(ctx context.Context, key store.SessionKey) error
	// Records are the protocols' records that name a run.
	Records []Records
}

// Retainer plans and applies retention over one store.
type Retainer struct {
	cfg Config
}

// New returns a Retainer; cfg.Store and cfg.Now are required.
func New(cfg Config) *Retainer { return &Retainer{cfg: cfg} }

// Kind is what an item of a plan is.
type Kind string

const (
	KindRun         Kind = "run"
	KindSession     Kind = "session"
	KindIdempotency Kind = "idempotency"
	KindRecord      Kind = "record" // a record owned by its run (Records.Owned)
)

// Reasons an item is deleted or kept.
const (
	ReasonMaxAge         = "max_age"         // a finished run older than max_age
	ReasonMaxRuns        = "max_runs"        // a finished run beyond max_runs in its session
	ReasonSessionTTL     = "session_ttl"     // a session (and its finished runs) idle past session_ttl
	ReasonIdempotencyTTL = "idempotency_ttl" // a record whose run finished (or reservation made) past idempotency_ttl
	ReasonRunDeleted     = "run_deleted"     // a record of a run that is gone or goes in this plan
	ReasonResumable      = "resumable"       // kept: a session holding a run that can be resumed
	ReasonForkBase       = "fork_base"       // kept: a run another run was forked from
	ReasonRunKept        = "run_kept"        // kept: a session with a run the plan keeps
)

// Item is one thing a plan deletes or keeps.
type Item struct {
	Kind   Kind   `json:"kind"`
	Reason string `json:"reason"`
	// Why says it in words ("completed 40d ago; max_age 30d").
	Why     string           `json:"why"`
	Session store.SessionKey `json:"-"`
	App     string           `json:"app"`
	User    string           `json:"user"`
	ID      string           `json:"session,omitempty"` // the session id
	Run     string           `json:"run,omitempty"`
	Status  store.RunStatus  `json:"status,omitempty"`
	// Updated is the record's last update the plan decided on; apply
	// deletes only a record still updated then.
	Updated time.Time `json:"updated,omitzero"`
	// Coll and Key name a record (Record is its key's parts after app and
	// user, joined by "/"); Value is what the plan read; With goes with it.
	Coll   string   `json:"coll,omitempty"`
	Record string   `json:"record,omitempty"`
	Key    string   `json:"-"`
	Value  []byte   `json:"-"`
	With   []DocKey `json:"-"`
}

func (it Item) String() string {
	switch it.Kind {
	case KindRun:
		return fmt.Sprintf("run %s (session %s, %s)", it.Run, it.Session, it.Status)
	case KindSession:
		return "session " + it.Session.String()
	}
	return fmt.Sprintf("%s record %s/%s/%s", it.Coll, it.App, it.User, it.Record)
}

// Plan is what applying a policy to an app would delete, and what it
// keeps although a rule matched it.
type Plan struct {
	App    string
	Policy Policy
	Now    time.Time
	Delete []Item
	Keep   []Item
}
