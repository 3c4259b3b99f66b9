package postgres

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentc/agentc/internal/pgtest"
	"github.com/agentc/agentc/runtime/store"
)

// Benchmarks of the durable step commit against the bare transaction a
// hand-written application would issue to write the same rows (target
// ≤ 1.3×). Run against the server in AGENTC_TEST_POSTGRES:
//
//	go test ./runtime/store/postgres -run '^$' -bench . -count 5
//
// StepCommit/raw and /CommitStep measure each alone; CommitOverhead
// interleaves them, so both see the same disk and load, and reports their
// ratio. A step is a 10 KiB full state, a frontier, two events and one
// journal entry, with the run's status.

var benchT0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func benchPayload(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// benchRun opens a store in a fresh schema holding one session and one run
// with a full checkpoint at step 0.
func benchRun(b *testing.B) (*Store, store.SessionKey) {
	b.Helper()
	s := openFresh(b)
	b.Cleanup(func() { s.Close() })
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, _, err := s.GetOrCreateSession(ctx, key, benchT0); err != nil {
		b.Fatal(err)
	}
	if err := s.CreateRun(ctx, store.Run{ID: "run_0", Session: key, Status: store.RunRunning}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.CommitStep(ctx, store.StepCommit{Checkpoint: store.Checkpoint{Run: "run_0", Kind: store.Full, Time: benchT0}}); err != nil {
		b.Fatal(err)
	}
	return s, key
}

// benchStep is the step commit both sides write.
func benchStep(step uint64, state []byte) store.StepCommit {
	return store.StepCommit{
		Checkpoint: store.Checkpoint{Run: "run_0", Step: step, Kind: store.Full, State: state, Frontier: []byte("frontier"),
			ProgramHash: "prog-1", SchemaHash: "schema-1", Time: benchT0},
		Events:  [][]byte{[]byte("node a done"), []byte("node b done")},
		Journal: [][]byte{[]byte("model reply")},
		Status:  store.RunRunning,
	}
}

// rawCommit writes the rows of c in one transaction, without the store's
// checks: the checkpoint, the events and journal entries at sequences the
// caller keeps, the session's counter and the run's head, as one pipelined
// batch (one round trip; PostgreSQL commits it as one implicit transaction),
// the cheapest way to write them.
func rawCommit(s *Store, c store.StepCommit, key store.SessionKey, nextEvent, nextJournal int64) error {
	cp := c.Checkpoint
	{
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO checkpoints (run, step, kind, state, frontier, counters, interrupts, program_hash, schema_hash, time, journal_next)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			bs(cp.Run), int64(cp.Step), int16(cp.Kind), cp.State, cp.Frontier, cp.Counters, cp.Interrupts,
			bs(cp.ProgramHash), bs(cp.SchemaHash), cp.Time, nextJournal+int64(len(c.Journal)))
		for i, e := range c.Events {
			b.Queue(`INSERT INTO events (app, usr, session, seq, data) VALUES ($1, $2, $3, $4, $5)`,
				bs(key.App), bs(key.User), bs(key.Session), nextEvent+int64(i), e)
		}
		for i, j := range c.Journal {
			b.Queue(`INSERT INTO journal (run, seq, data) VALUES ($1, $2, $3)`, bs(cp.Run), nextJournal+int64(i), j)
		}
		b.Queue(`UPDATE sessions SET last_seq = $4, updated = $5 WHERE app = $1 AND usr = $2 AND session = $3`,
			bs(key.App), bs(key.User), bs(key.Session), nextEvent+int64(len(c.Events))-1, cp.Time)
		b.Queue(`UPDATE runs SET latest_step = $2, journal_next = $3, status = $4, updated = $5 WHERE id = $1`,
			bs(cp.Run), int64(cp.Step), nextJournal+int64(len(c.Journal)), bs(string(c.Status)), cp.Time)
		return s.pool.SendBatch(ctx, b).Close()
	}
}

// rawSide is the raw baseline's store and the sequences it keeps itself.
type rawSide struct {
	s                      *Store
	key                    store.SessionKey
	nextEvent, nextJournal int64
}

func newRawSide(b *testing.B) *rawSide {
	s, key := benchRun(b)
	return &rawSide{s: s, key: key, nextEvent: 1, nextJournal: 1}
}

func (r *rawSide) commit(c store.StepCommit) error {
	if err := rawCommit(r.s, c, r.key, r.nextEvent, r.nextJournal); err != nil {
		return err
	}
	r.nextEvent += int64(len(c.Events))
	r.nextJournal += int64(len(c.Journal))
	return nil
}

func BenchmarkStepCommit(b *testing.B) {
	state := benchPayload(10 << 10)
	b.Run("raw", func(b *testing.B) {
		raw := newRawSide(b)
		for i := 0; b.Loop(); i++ {
			if err := raw.commit(benchStep(uint64(i+1), state)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CommitStep", func(b *testing.B) {
		s, _ := benchRun(b)
		for i := 0; b.Loop(); i++ {
			if _, err := s.CommitStep(ctx, benchStep(uint64(i+1), state)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCommitOverhead alternates a raw transaction and a CommitStep of
// the same rows (two schemas of one database) and reports each one's mean
// and their ratio.
func BenchmarkCommitOverhead(b *testing.B) {
	s, _ := benchRun(b)
	commitOverhead(b, func(c store.StepCommit) error {
		_, err := s.CommitStep(ctx, c)
		return err
	})
}

// commitOverhead alternates a raw transaction and commit of the same step
// commits and reports each one's mean and their ratio.
func commitOverhead(b *testing.B, commit func(store.StepCommit) error) {
	state := benchPayload(10 << 10)
	raw := newRawSide(b)
	var rawTime, storeTime time.Duration
	n := 0
	for i := 0; b.Loop(); i++ {
		c := benchStep(uint64(i+1), state)
		start := time.Now()
		if err := raw.commit(c); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if err := commit(c); err != nil {
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

// BenchmarkCommitters runs n committers side by side, each on a run of its
// own in a session of its own, over one pool: what concurrent runs gain
// from PostgreSQL's group commit of WAL flushes (ns/op is per commit).
func BenchmarkCommitters(b *testing.B) {
	state := benchPayload(1 << 10)
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			url := pgtest.URL(b)
			s, err := Open(ctx, url, &Options{Schema: pgtest.FreshSchema(b, url), MaxConns: int32(n)})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for g := range n {
				key := store.SessionKey{App: "app", User: "u", Session: fmt.Sprint("s", g)}
				id := fmt.Sprint("run_", g)
				if _, _, err := s.GetOrCreateSession(ctx, key, benchT0); err != nil {
					b.Fatal(err)
				}
				if err := s.CreateRun(ctx, store.Run{ID: id, Session: key, Status: store.RunRunning}); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for g := range n {
				wg.Go(func() {
					id := fmt.Sprint("run_", g)
					for step := uint64(0); next.Add(1) <= int64(b.N); step++ {
						c := benchStep(step, state)
						c.Checkpoint.Run = id
						if _, err := s.CommitStep(ctx, c); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
