// Package session is the session service over the store: sessions, their
// runs, their event ledger (decoded runtime.Events), their state blob and
// their summaries. The CLI (`agentc sessions list|show|events`) and the
// protocol servers read sessions through it; the Runner writes them.
package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
)

// Store is the part of the store the service uses.
type Store interface {
	store.Sessions
	store.Runs
}

// Service reads and writes sessions. It is safe for concurrent use.
type Service struct {
	st Store
}

// New returns a Service over st.
func New(st Store) *Service { return &Service{st: st} }

// Info describes a session.
type Info struct {
	Key              store.SessionKey
	Created, Updated time.Time
	// Events is the number of events in the ledger (its last sequence).
	Events uint64
	// Runs are the session's runs, by run id (so in creation order); Get
	// fills it, List leaves it empty.
	Runs []store.Run
}

// Get returns the session with its runs, or an error wrapping
// store.ErrNotFound.
func (s *Service) Get(ctx context.Context, key store.SessionKey) (Info, error) {
	rec, err := s.st.GetSession(ctx, key)
	if err != nil {
		return Info{}, err
	}
	runs, err := s.Runs(ctx, key)
	if err != nil {
		return Info{}, err
	}
	return Info{Key: key, Created: rec.Created, Updated: rec.Updated, Events: rec.LastSeq, Runs: runs}, nil
}

// Exists reports whether the session has a record: a session without one
// has no runs (the Runner creates it before its first run, and a session
// with runs is never deleted). It reads one record — the store's own
// session cache where it has one — where Runs scans the run index.
func (s *Service) Exists(ctx context.Context, key store.SessionKey) (bool, error) {
	_, err := s.st.GetSession(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("session %s: %w", key, err)
	}
	return true, nil
}

// Runs returns the session's runs, by run id.
func (s *Service) Runs(ctx context.Context, key store.SessionKey) ([]store.Run, error) {
	var out []store.Run
	f := store.RunFilter{App: key.App, User: key.User, Session: key.Session, Limit: 256}
	for {
		runs, next, err := s.st.ListRuns(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("session %s: list runs: %w", key, err)
		}
		out = append(out, runs...)
		if next == "" {
			return out, nil
		}
		f.Cursor = next
	}
}

// LastRun returns the session's latest run (the greatest run id: run ids
// are time-ordered) and whether it has one. It reads that run alone,
// however many the session has.
func (s *Service) LastRun(ctx context.Context, key store.SessionKey) (store.Run, bool, error) {
	runs, _, err := s.st.ListRuns(ctx, store.RunFilter{App: key.App, User: key.User, Session: key.Session, Limit: 1, Newest: true})
	if err != nil {
		return store.Run{}, false, fmt.Errorf("session %s: latest run: %w", key, err)
	}
	if len(runs) == 0 {
		return store.Run{}, false, nil
	}
	return runs[0], true, nil
}

// ListFilter selects sessions: those of App, narrowed to User when set.
// Limit > 0 returns at most that many.
type ListFilter struct {
	App, User string
	Limit     int
}

// List returns the sessions of an app (or of one user of it), ordered by
// (user, session). Sessions are found through the run index, so a session
// that never had a run (its only event an input the Runner could not
// start) is not listed. Without an app it lists the sessions of every app
// (store.ListSessions), ordered by (app, user, session); a user then needs
// an app.
func (s *Service) List(ctx context.Context, f ListFilter) ([]Info, error) {
	if f.App == "" {
		return s.listAll(ctx, f)
	}
	var keys []store.SessionKey
	rf := store.RunFilter{App: f.App, User: f.User, Limit: 256}
	for {
		runs, next, err := s.st.ListRuns(ctx, rf)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		for _, r := range runs {
			if n := len(keys); n == 0 || keys[n-1] != r.Session {
				keys = append(keys, r.Session)
			}
		}
		if next == "" || f.Limit > 0 && len(keys) > f.Limit {
			break
		}
		rf.Cursor = next
	}
	keys = slices.Compact(keys)
	if f.Limit > 0 && len(keys) > f.Limit {
		keys = keys[:f.Limit]
	}
	out := make([]Info, 0, len(keys))
	for _, k := range keys {
		rec, err := s.st.GetSession(ctx, k)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Info{Key: k, Created: rec.Created, Updated: rec.Updated, Events: rec.LastSeq})
	}
	return out, nil
}

// listAll is List without an app: every session of the store.
func (s *Service) listAll(ctx context.Context, f ListFilter) ([]Info, error) {
	var out []Info
	sf := store.SessionFilter{User: f.User, Limit: 256}
	for {
		page, next, err := s.st.ListSessions(ctx, sf)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		for _, rec := range page {
			if f.Limit > 0 && len(out) == f.Limit {
				return out, nil
			}
			out = append(out, Info{Key: rec.Key, Created: rec.Created, Updated: rec.Updated, Events: rec.LastSeq})
		}
		if next == "" {
			return out, nil
		}
		sf.Cursor = next
	}
}

// EventFilter selects ledger events. After is a sequence number (events
// after it are returned); Run, Kinds and FilterKey (a prefix match on the
// event's filter key, at a '/' boundary) narrow the result; Limit > 0
// returns at most that many matches.
type EventFilter struct {
	After     uint64
	Limit     int
	Run       string
	Kinds     []runtime.EventKind
	FilterKey string
}

// encodedPrefix is how an event of this build's codec is encoded
// (runtime.EncodeEvent).
var encodedPrefix = []byte(`{"v":` + strconv.Itoa(runtime.EventCodecVersion) + `,`)

// skips reports whether the encoded event b is, by its top-level "kind" or
// "run" member, of a kind or run f rules out, so that it need not be
// decoded. Only an encoding of this build's codec is read so: EncodeEvent
// writes "id", "kind", "time", "app", "user", "session", then "run" when
// set, before any payload, and a JSON string holds no unescaped quote, so
// the first `,"kind":"` is the event's kind and the first `,"run":"` its
// run (or, without one, a member of a payload: the event has no run, and
// a run f asks for is not it). A value with an escape is not read: such
// an event is decoded.
func (f *EventFilter) skips(b []byte) bool {
	if f.Run == "" && len(f.Kinds) == 0 || !bytes.HasPrefix(b, encodedPrefix) {
		return false
	}
	if len(f.Kinds) > 0 {
		if v, ok := stringMember(b, kindKey); ok && !slices.ContainsFunc(f.Kinds, func(k runtime.EventKind) bool { return string(v) == string(k) }) {
			return true
		}
	}
	if f.Run != "" {
		v, ok := stringMember(b, runKey)
		if !ok {
			return !bytes.Contains(b, runKey) // no run at all; with an escape, decode
		}
		return string(v) != f.Run
	}
	return false
}

var kindKey, runKey = []byte(`,"kind":"`), []byte(`,"run":"`)

// stringMember returns the value of the first string member b holds under
// key (`,"name":"`), when it has no escape.
func stringMember(b, key []byte) ([]byte, bool) {
	i := bytes.Index(b, key)
	if i < 0 {
		return nil, false
	}
	v := b[i+len(key):]
	j := bytes.IndexByte(v, '"')
	if j < 0 || bytes.IndexByte(v[:j], '\\') >= 0 {
		return nil, false
	}
	return v[:j], true
}

// runStart is where Events reads f's events after: f.After, or for a run's
// events from the ledger's start, the sequence number before the run's
// first event when its record knows it. Otherwise (a record written before
// records did, a run of another session, or a record that cannot be read:
// none, damaged) the ledger is read from its start, which holds the run's
// events whatever its record says.
func (s *Service) runStart(ctx context.Context, key store.SessionKey, f EventFilter) (uint64, error) {
	if f.Run == "" || f.After > 0 {
		return f.After, nil
	}
	r, err := s.st.GetRun(ctx, f.Run)
	if err != nil {
		return 0, ctx.Err()
	}
	if r.Session != key {
		return 0, nil
	}
	return store.EventsAfter(r.FirstEvent), nil
}

func (f *EventFilter) match(e *runtime.Event) bool {
	if f.Run != "" && e.Run != f.Run {
		return false
	}
	if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, e.Kind) {
		return false
	}
	if k := f.FilterKey; k != "" && e.FilterKey != k &&
		!(len(e.FilterKey) > len(k) && e.FilterKey[:len(k)] == k && e.FilterKey[len(k)] == '/') {
		return false
	}
	return true
}

// Events returns the session's ledger events matching f, in ledger order,
// each with its Seq. A stored event that does not decode is an error naming
// its sequence number, unless its encoding already shows that f's run or
// kinds rule it out (EventFilter.skips): a run's events are read out of a
// long session without decoding the other runs'. A run's events from the
// ledger's start (f.After 0) are read from the run's first event on
// (store.Run.FirstEvent): the ledger before it is not read at all.
func (s *Service) Events(ctx context.Context, key store.SessionKey, f EventFilter) ([]*runtime.Event, error) {
	after, err := s.runStart(ctx, key, f)
	if err != nil {
		return nil, err
	}
	return s.events(ctx, key, f, after)
}

// RunEvents is Events of run's events (f.Run is run.ID) in its session,
// given its record as the caller read it: they are read from the first
// event it names on (store.Run.FirstEvent) without reading it again.
func (s *Service) RunEvents(ctx context.Context, run store.Run, f EventFilter) ([]*runtime.Event, error) {
	f.Run = run.ID
	after := f.After
	if after == 0 {
		after = store.EventsAfter(run.FirstEvent)
	}
	return s.events(ctx, run.Session, f, after)
}

// events is Events reading the ledger after sequence after.
func (s *Service) events(ctx context.Context, key store.SessionKey, f EventFilter, after uint64) ([]*runtime.Event, error) {
	const page = 512
	var out []*runtime.Event
	for {
		entries, err := s.st.ListEvents(ctx, key, after, page)
		if err != nil {
			return nil, fmt.Errorf("session %s: list events: %w", key, err)
		}
		for _, en := range entries {
			if f.skips(en.Data) {
				continue
			}
			e, err := runtime.DecodeEvent(en.Data)
			if err != nil {
				return nil, fmt.Errorf("session %s: event %d: %w", key, en.Seq, err)
			}
			e.Seq = en.Seq
			if !f.match(e) {
				continue
			}
			out = append(out, e)
			if f.Limit > 0 && len(out) == f.Limit {
				return out, nil
			}
		}
		if len(entries) < page {
			return out, nil
		}
		after = entries[len(entries)-1].Seq
	}
}

// State returns the session's state: a JSON object ("{}" when never set).
func (s *Service) State(ctx context.Context, key store.SessionKey) (json.RawMessage, error) {
	b, err := s.st.GetSessionState(ctx, key)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return json.RawMessage("{}"), nil
	}
	return json.RawMessage(b), nil
}

// PutState replaces the session's state with a JSON object.
func (s *Service) PutState(ctx context.Context, key store.SessionKey, state json.RawMessage, now time.Time) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(state, &obj); err != nil || obj == nil {
		return fmt.Errorf("session %s: state must be a JSON object: %w", key, store.ErrInvalid)
	}
	return s.st.PutSessionState(ctx, key, state, now)
}

// Summary returns the session's summary under filterKey, or an error
// wrapping store.ErrNotFound.
func (s *Service) Summary(ctx context.Context, key store.SessionKey, filterKey string) (store.Summary, error) {
	return s.st.GetSummary(ctx, key, filterKey)
}
