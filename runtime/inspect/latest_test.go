package inspect

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// fakeAPI answers Sessions and Session from a table.
type fakeAPI struct {
	API
	sessions []Session
}

func (f fakeAPI) Sessions(context.Context, session.ListFilter) ([]Session, error) {
	return f.sessions, nil
}

func (f fakeAPI) Session(_ context.Context, k store.SessionKey) (Session, error) {
	for _, s := range f.sessions {
		if s.App == k.App && s.User == k.User && s.Session == k.Session {
			return s, nil
		}
	}
	return Session{}, store.ErrNotFound
}

// TestLatestRun: the newest run of the session updated last; none is an
// error.
func TestLatestRun(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	api := fakeAPI{sessions: []Session{
		{App: "a", User: "u", Session: "old", Updated: t0, Runs: []Run{{ID: "run_1"}}},
		{App: "b", User: "u", Session: "new", Updated: t0.Add(time.Hour), Runs: []Run{{ID: "run_2"}, {ID: "run_3"}}},
	}}
	if id, err := LatestRun(context.Background(), api); err != nil || id != "run_3" {
		t.Errorf("latest %q, %v", id, err)
	}
	if id, err := RunOrLatest(context.Background(), api); err != nil || id != "run_3" {
		t.Errorf("RunOrLatest() = %s, %v", id, err)
	}
	if id, err := RunOrLatest(context.Background(), fakeAPI{}, "run_9"); err != nil || id != "run_9" {
		t.Errorf("RunOrLatest(run_9) = %s, %v", id, err)
	}
	if _, err := LatestRun(context.Background(), fakeAPI{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("empty store: %v", err)
	}
}
