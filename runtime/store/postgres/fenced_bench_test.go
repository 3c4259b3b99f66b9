package postgres

import (
	"testing"
	"time"

	"github.com/agentc/agentc/runtime/store"
)

// BenchmarkFencedCommitOverhead is CommitOverhead for the commit a replica
// makes (CommitStepFenced: the same rows plus the check of the run's
// lease, spec/serve.md "Replicas"), alternated with the raw transaction
// writing the same rows (target ≤ 1.3×):
//
//	go test ./runtime/store/postgres -run '^$' -bench 'CommitOverhead' -benchtime 2s -count 4
func BenchmarkFencedCommitOverhead(b *testing.B) {
	s, key := benchRun(b)
	lease, err := s.AcquireLease(ctx, "session/"+key.Session, "replica-1", time.Hour, benchT0)
	if err != nil {
		b.Fatal(err)
	}
	commitOverhead(b, func(c store.StepCommit) error {
		_, err := s.CommitStepFenced(ctx, c, lease, benchT0)
		return err
	})
}
