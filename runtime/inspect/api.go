package inspect

import (
	"context"
	"fmt"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/evolution"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// API is what agentc's inspection commands ask: an Inspector over a store
// answers it, and so does the client of a running server's inspector API
// (runtime/server/ui.Client) when the server holds the store
// (spec/inspector.md, "The CLI on a served store").
type API interface {
	Sessions(ctx context.Context, f session.ListFilter) ([]Session, error)
	Session(ctx context.Context, key store.SessionKey) (Session, error)
	Events(ctx context.Context, key store.SessionKey, q EventQuery) ([]*runtime.Event, error)
	Checkpoints(ctx context.Context, id string) ([]Checkpoint, error)
	State(ctx context.Context, id string, step int64) (*State, error)
	Fork(ctx context.Context, req ForkRequest) (Forked, error)
	Artifacts(ctx context.Context, f artifact.Filter) ([]artifact.Meta, error)
	Artifact(ctx context.Context, k artifact.Key, rev int) (*artifact.Artifact, error)
	Pending(ctx context.Context) ([]*evolution.Candidate, error)
	Candidate(ctx context.Context, id string) (*evolution.Candidate, error)
	Approve(ctx context.Context, id, who string) (*evolution.Candidate, error)
	Reject(ctx context.Context, id, who, reason string) (*evolution.Candidate, error)
}

var _ API = (*Inspector)(nil)

// RunOrLatest is the run a command names, args[0] (its arguments), else
// LatestRun.
func RunOrLatest(ctx context.Context, in API, args ...string) (string, error) {
	if len(args) > 0 {
		return args[0], nil
	}
	return LatestRun(ctx, in)
}

// LatestRun is the id of the newest run in the sessions in reaches (an
// app's, or every app's): the newest run of the session updated last (a
// run's start updates its session; run ids grow with time). It is what a
// command reads when it names no run.
func LatestRun(ctx context.Context, in API) (string, error) {
	ss, err := in.Sessions(ctx, session.ListFilter{})
	if err != nil {
		return "", err
	}
	var last *Session
	for i := range ss {
		if last == nil || ss[i].Updated.After(last.Updated) {
			last = &ss[i]
		}
	}
	if last == nil {
		return "", fmt.Errorf("no run to read: the store has no session: %w", store.ErrNotFound)
	}
	s, err := in.Session(ctx, store.SessionKey{App: last.App, User: last.User, Session: last.Session})
	if err != nil {
		return "", err
	}
	if len(s.Runs) == 0 {
		return "", fmt.Errorf("no run to read: session %s (user %s, app %s) has no run: %w", s.Session, s.User, s.App, store.ErrNotFound)
	}
	return s.Runs[len(s.Runs)-1].ID, nil
}
