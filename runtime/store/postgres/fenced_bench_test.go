package postgres

import (
	"testing"
	"time"
)

// BenchmarkFencedCommitOverhead is CommitOverhead for the commit a replica
// makes (CommitStepFenced: the same rows plus the check of the run's
// lease, spec/serve.md "Replicas"), alternated with the raw transaction
// writing the same rows (target ≤ 1.3×):
//
//	go test ./runtime/store/postgres -run '^$' -bench 'CommitOverhead' -benchtime 2s -count 4
func BenchmarkFencedCommitOverhead(b *testing.B) {
	state := benchPayload(10 << 10)
	raw := newRawSide(b)
	s, key := benchRun(b)
	lease, err := s.AcquireLease(ctx, "session/"+key.Session, "replica-1", time.Hour, benchT0)
	if err != nil {
		b.Fatal(err)
	}
	var rawTime, storeTime time.Duration
	n := 0
	for i := 0; b.Loop(); i++ {
		c := benchStep(uint64(i+1), state)
		start := time.Now()
		if err := raw.commit(c); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if _, err := s.CommitStepFenced(ctx, c, lease, benchT0); err != nil {
			b.Fatal(err)
		}
		rawTime += mid.Sub(start)
		storeTime += time.Since(mid)
		n++
	}
	if n > 0 && rawTime > 0 {
		b.ReportMetric(float64(rawTime.Microseconds())/float64(n), "raw-µs/op")
		b.ReportMetric(float64(storeTime.Microseconds())/float64(n), "commit-µs/op")
		b.ReportMetric(float64(storeTime)/float64(rawTime), "ratio")
	}
}
