package inspect

import (
	"context"

	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/evolution"
)

// Artifacts lists the latest revision of each artifact f selects.
func (in *Inspector) Artifacts(ctx context.Context, f artifact.Filter) ([]artifact.Meta, error) {
	return in.artifacts.List(ctx, f)
}

// Artifact returns revision rev of artifact k (0: the latest), bytes
// included.
func (in *Inspector) Artifact(ctx context.Context, k artifact.Key, rev int) (*artifact.Artifact, error) {
	return in.artifacts.Get(ctx, k, rev)
}

// Pending lists the evolution candidates waiting for a person or an
// evaluation (spec/skills.md).
func (in *Inspector) Pending(ctx context.Context) ([]*evolution.Candidate, error) {
	return in.evolution.Pending(ctx)
}

// Candidate returns one evolution candidate.
func (in *Inspector) Candidate(ctx context.Context, id string) (*evolution.Candidate, error) {
	return in.evolution.Get(ctx, id)
}

// Approve publishes pending candidate id on who's decision (its gates are
// checked again).
func (in *Inspector) Approve(ctx context.Context, id, who string) (*evolution.Candidate, error) {
	return in.evolution.Approve(ctx, id, who)
}

// Reject rejects pending candidate id on who's decision, for reason.
func (in *Inspector) Reject(ctx context.Context, id, who, reason string) (*evolution.Candidate, error) {
	return in.evolution.Reject(ctx, id, who, reason)
}

// Revisions lists every revision of artifact k, oldest first (without
// bytes).
func (in *Inspector) Revisions(ctx context.Context, k artifact.Key) ([]artifact.Meta, error) {
	return in.artifacts.Revisions(ctx, k)
}

// Candidates lists the evolution candidates with status ("": all), oldest
// first.
func (in *Inspector) Candidates(ctx context.Context, status string) ([]*evolution.Candidate, error) {
	return in.evolution.List(ctx, status)
}
