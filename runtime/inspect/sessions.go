package inspect

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// Session is a session and, when shown on its own, its runs.
type Session struct {
	App     string    `json:"app"`
	User    string    `json:"user"`
	Session string    `json:"session"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	Events  uint64    `json:"events"`
	Runs    []Run     `json:"runs,omitempty"`
}

// Run is one run of a session.
type Run struct {
	ID       string `json:"id"`
	Runnable string `json:"runnable"`
	Status   string `json:"status"`
	Totals
}

// Totals are what a run's model calls used over all its invocations, as
// its record keeps them (spec/storage.md): the calls, their tokens (Usage
// nil when none reported any) and cost in USD (nil when no call was of a
// priced model). A run recorded before runs kept usage has none.
type Totals struct {
	ModelCalls uint64         `json:"model_calls,omitempty"`
	Usage      *runtime.Usage `json:"usage,omitempty"`
	Cost       *float64       `json:"cost,omitempty"`
}

// totalsOf reads a run record's usage.
func totalsOf(r store.Run) Totals {
	u := runtime.RunUsageOf(r.Usage)
	out := Totals{ModelCalls: u.Calls}
	if u.Usage != (runtime.Usage{}) {
		out.Usage = &u.Usage
	}
	if u.Priced {
		out.Cost = &u.Cost
	}
	return out
}

func sessionOf(in session.Info) Session {
	out := Session{App: in.Key.App, User: in.Key.User, Session: in.Key.Session, Created: in.Created.UTC(), Updated: in.Updated.UTC(), Events: in.Events}
	for _, r := range in.Runs {
		out.Runs = append(out.Runs, Run{ID: r.ID, Runnable: r.Runnable, Status: string(r.Status), Totals: totalsOf(r)})
	}
	return out
}

// Sessions lists the sessions f selects, by (user, session).
func (in *Inspector) Sessions(ctx context.Context, f session.ListFilter) ([]Session, error) {
	infos, err := in.sessions.List(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]Session, len(infos))
	for i, s := range infos {
		out[i] = sessionOf(s)
	}
	return out, nil
}

// Session returns one session with its runs.
func (in *Inspector) Session(ctx context.Context, key store.SessionKey) (Session, error) {
	s, err := in.sessions.Get(ctx, key)
	if err != nil {
		return Session{}, fmt.Errorf("session %s: %w", key.Session, err)
	}
	return sessionOf(s), nil
}

// EventQuery selects events of a session's ledger: of one run (Run), of
// some kinds (Kinds, by name); empty selects all.
type EventQuery struct {
	Run   string   `json:"run,omitempty"`
	Kinds []string `json:"kinds,omitempty"`
}

// filter checks the query (ErrInvalid for an unknown kind) and converts it.
func (q EventQuery) filter() (session.EventFilter, error) {
	f := session.EventFilter{Run: q.Run}
	for _, k := range q.Kinds {
		if !runtime.EventKind(k).Valid() {
			return session.EventFilter{}, invalid(fmt.Errorf("unknown event kind %q", k))
		}
		f.Kinds = append(f.Kinds, runtime.EventKind(k))
	}
	return f, nil
}

// Check reports an unknown kind (ErrInvalid), before any store is read.
func (q EventQuery) Check() error {
	_, err := q.filter()
	return err
}

// Events returns the events of session key's ledger that q selects, in
// order; the session must exist.
func (in *Inspector) Events(ctx context.Context, key store.SessionKey, q EventQuery) ([]*runtime.Event, error) {
	f, err := q.filter()
	if err != nil {
		return nil, err
	}
	if _, err := in.sessions.Get(ctx, key); err != nil {
		return nil, fmt.Errorf("session %s: %w", key.Session, err)
	}
	return in.sessions.Events(ctx, key, f)
}

// Summary is a one-line gist of an event's payload ("" when it has none
// worth a line).
func Summary(e *runtime.Event) string {
	short := func(s string) string {
		s = strings.Join(strings.Fields(s), " ")
		if len(s) > 80 {
			s = s[:77] + "..."
		}
		return s
	}
	switch e.Kind {
	case runtime.EventInput:
		if e.Resume != nil {
			return "resume " + e.Resume.Run
		}
		return short(e.Text)
	case runtime.EventRunStarted:
		return e.Run + " " + e.Runnable
	case runtime.EventModelResponse:
		return short(e.Model + " " + e.Text)
	case runtime.EventToolResult:
		if e.ToolCall != nil {
			return short(e.ToolCall.Name + " " + string(e.Result))
		}
	case runtime.EventStateDelta:
		var fs []string
		for _, c := range e.Changes {
			fs = append(fs, c.Op+" "+c.Field)
		}
		return strings.Join(fs, ", ")
	case runtime.EventInterrupt:
		var ids []string
		for _, in := range e.Interrupts {
			ids = append(ids, in.ID)
		}
		return strings.Join(ids, ", ")
	case runtime.EventRunError, runtime.EventNodeFailed:
		if e.Error != nil {
			return short(e.Error.Kind + ": " + e.Error.Message)
		}
	case runtime.EventRunFinished:
		return short(string(e.Status) + " " + string(e.Output))
	}
	return ""
}
