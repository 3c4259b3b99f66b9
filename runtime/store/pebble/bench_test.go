package pebble

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/agentc/agentc/internal/cputime"
	"github.com/agentc/agentc/runtime/store"
)

// Benchmarks of the durable write path (ANCHORS.md: a Pebble synced 10 KiB
// batch is ~250 µs p50 on the reference machine). Compare with
// `go test -bench . -count 5` medians:
//
//   - SyncedBatch10KiB/raw vs /CommitStep: the store's overhead over the
//     bare synced batch it issues (target ≤ 1.2×). CommitOverhead measures
//     the same ratio with the two interleaved, which is robust to a loaded
//     machine.
//   - Committers/1 vs /8: throughput gained when runs commit concurrently and
//     Pebble group-commits their fsyncs (target ≥ 2×).
//   - DeltaCommit200B: bytes written to the WAL per step of a 200-byte delta.

// benchDir is a fresh directory for one benchmark store: under
// $AGENTC_BENCH_DIR when set (point it at tmpfs to see CPU cost without
// fsync), else the test's temporary directory.
func benchDir(b *testing.B) string {
	root := os.Getenv("AGENTC_BENCH_DIR")
	if root == "" {
		return b.TempDir()
	}
	dir, err := os.MkdirTemp(root, "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func payload(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// benchStore opens a store in a temporary directory with n runs, each in a
// session of its own and with a full checkpoint at step 0.
func benchStore(b *testing.B, runs int) *Store {
	b.Helper()
	s, err := Open(benchDir(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for i := range runs {
		id := fmt.Sprintf("run_%d", i)
		sk := store.SessionKey{App: "app", User: "u", Session: fmt.Sprint("s", i)}
		if _, _, err := s.GetOrCreateSession(ctx, sk, t0); err != nil {
			b.Fatal(err)
		}
		if err := s.CreateRun(ctx, store.Run{ID: id, Session: sk, Status: store.RunRunning}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.CommitStep(ctx, store.StepCommit{Checkpoint: store.Checkpoint{Run: id, Kind: store.Full, Time: t0}}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

func BenchmarkSyncedBatch10KiB(b *testing.B) {
	state := payload(10 << 10)
	b.Run("raw", func(b *testing.B) {
		db, err := pebble.Open(benchDir(b), &pebble.Options{FormatMajorVersion: formatVersion, Logger: quietLogger{}})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		b.SetBytes(int64(len(state)))
		for i := 0; b.Loop(); i++ {
			batch := db.NewBatch()
			batch.Set(checkpointKey("run_0", uint64(i+1)), state, nil)
			if err := db.Apply(batch, pebble.Sync); err != nil {
				b.Fatal(err)
			}
			batch.Close()
		}
	})
	b.Run("CommitStep", func(b *testing.B) {
		s := benchStore(b, 1)
		b.SetBytes(int64(len(state)))
		for i := 0; b.Loop(); i++ {
			c := store.StepCommit{Checkpoint: store.Checkpoint{Run: "run_0", Step: uint64(i + 1), Kind: store.Full, State: state, Time: t0}}
			if _, err := s.CommitStep(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCommitOverhead interleaves raw synced 10 KiB batches and
// CommitSteps of the same bytes (two directories on one disk), so that both
// see the same disk and load, and reports each one's mean and their ratio.
// With AGENTC_BENCH_DIR on tmpfs it isolates the store's CPU overhead.
func BenchmarkCommitOverhead(b *testing.B) {
	state := payload(10 << 10)
	db, err := pebble.Open(benchDir(b), &pebble.Options{FormatMajorVersion: formatVersion, Logger: quietLogger{}})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s := benchStore(b, 1)
	var raw, commit time.Duration
	n := 0
	rawOnce := func() {
		start := time.Now()
		batch := db.NewBatch()
		batch.Set(checkpointKey("run_0", uint64(n)), state, nil)
		if err := db.Apply(batch, pebble.Sync); err != nil {
			b.Fatal(err)
		}
		batch.Close()
		raw += time.Since(start)
	}
	commitOnce := func() {
		start := time.Now()
		c := store.StepCommit{Checkpoint: store.Checkpoint{Run: "run_0", Step: uint64(n), Kind: store.Full, State: state, Time: t0}}
		if _, err := s.CommitStep(ctx, c); err != nil {
			b.Fatal(err)
		}
		commit += time.Since(start)
	}
	for b.Loop() {
		n++
		// Alternate which goes first: on a journaling file system one
		// fsync can pay for the other directory's dirty data.
		if n%2 == 0 {
			rawOnce()
			commitOnce()
		} else {
			commitOnce()
			rawOnce()
		}
	}
	b.ReportMetric(float64(raw.Microseconds())/float64(n), "raw-µs/op")
	b.ReportMetric(float64(commit.Microseconds())/float64(n), "commit-µs/op")
	b.ReportMetric(float64(commit)/float64(raw), "commit/raw")
}

// BenchmarkCommitters commits 200-byte delta steps (with one event and one
// journal entry each) from 1 and from 8 goroutines, each advancing its own
// run. ns/op is wall time per commit, so throughput is its inverse.
func BenchmarkCommitters(b *testing.B) {
	delta := payload(200)
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := benchStore(b, n)
			var next atomic.Int64
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for g := range n {
				wg.Go(func() {
					run := fmt.Sprintf("run_%d", g)
					for step := uint64(1); next.Add(1) <= int64(b.N); step++ {
						c := store.StepCommit{
							Checkpoint: store.Checkpoint{Run: run, Step: step, Kind: store.Delta, State: delta, Time: t0},
							Events:     [][]byte{delta[:100]}, Journal: [][]byte{delta[:16]},
						}
						if _, err := s.CommitStep(ctx, c); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "commits/s")
		})
	}
}

// BenchmarkDeltaCommit200B reports the bytes one step of a 200-byte delta adds
// to the WAL: logical (the batch) and physical (with WAL framing).
func BenchmarkDeltaCommit200B(b *testing.B) {
	delta := payload(200)
	s := benchStore(b, 1)
	before := s.db.Metrics().WAL
	for i := 0; b.Loop(); i++ {
		c := store.StepCommit{Checkpoint: store.Checkpoint{Run: "run_0", Step: uint64(i + 1), Kind: store.Delta, State: delta,
			ProgramHash: "sha256:8f14e45fceea167a5a36dedd4bea2543", SchemaHash: "sha256:c9f0f895fb98ab9159f51fd0297e236d", Time: t0}}
		if _, err := s.CommitStep(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	after := s.db.Metrics().WAL
	b.ReportMetric(float64(after.BytesIn-before.BytesIn)/float64(b.N), "wal-logical-B/op")
	b.ReportMetric(float64(after.BytesWritten-before.BytesWritten)/float64(b.N), "wal-physical-B/op")
}

// BenchmarkGetSummaryNone reads the summary of sessions that have none —
// every run's context does, for a session not summarized yet — on a store
// whose records are in its tables: the store tells "no summary" from "no
// session" by the session record, which its session cache holds for a
// session just read or written.
func BenchmarkGetSummaryNone(b *testing.B) {
	s := benchStore(b, 2000)
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	keys := make([]store.SessionKey, 2000)
	for i := range keys {
		keys[i] = store.SessionKey{App: "app", User: "u", Session: fmt.Sprint("s", i)}
		if _, err := s.GetSession(ctx, keys[i]); err != nil { // as the Runner's admission does
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.GetSummary(ctx, keys[i%len(keys)], ""); !errors.Is(err, store.ErrNotFound) {
			b.Fatalf("got %v, want not found", err)
		}
	}
}

// BenchmarkSessionRuns reads a session's latest run, as the AG-UI and
// OpenAI adapters do for every request on a thread: ListRuns newest first
// with Limit 1 ("latest") against the listing of all its runs ("all"), at
// 10 and 1,000 runs. The first stays flat as the session grows.
func BenchmarkSessionRuns(b *testing.B) {
	for _, n := range []int{10, 1000} {
		s, err := Open(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		k := store.SessionKey{App: "a", User: "u", Session: "s"}
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		if _, _, err := s.GetOrCreateSession(ctx, k, now); err != nil {
			b.Fatal(err)
		}
		for i := range n {
			if err := s.CreateRun(ctx, store.Run{ID: fmt.Sprintf("run_%08d", i), Session: k, Runnable: "g", Status: store.RunCompleted, Created: now, Updated: now}); err != nil {
				b.Fatal(err)
			}
		}
		for _, c := range []struct {
			name string
			f    store.RunFilter
			want int
		}{
			{"latest", store.RunFilter{App: "a", User: "u", Session: "s", Limit: 1, Newest: true}, 1},
			{"all", store.RunFilter{App: "a", User: "u", Session: "s"}, n},
		} {
			b.Run(fmt.Sprintf("%s/runs=%d", c.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					runs, _, err := s.ListRuns(ctx, c.f)
					if err != nil || len(runs) != c.want {
						b.Fatal(len(runs), err)
					}
				}
			})
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGrowth writes runs shaped as agentc's (an admission with its
// input event, two step commits with checkpoints, journal entries and
// events, an end with its last event: 14 records, about 4 KiB, in the
// run, session, checkpoint, journal and event key ranges), 16 at a time,
// into a store that grows by b.N runs, with this package's engine options
// and with Pebble's default LSM shape (4 MiB memtables, 2 MiB L0 tables).
// It reports the process's CPU time per run over the last quarter of the
// runs, background flushes and compactions included (the store is flushed
// and quiet before and after), and the bytes the engine wrote to tables per run
// over all of them:
//
//	go test ./runtime/store/pebble -run '^$' -bench Growth -benchtime 160000x
func BenchmarkGrowth(b *testing.B) {
	for _, shape := range []struct {
		name   string
		engine func(*pebble.Options)
	}{
		{"agentc", nil},
		{"pebble-default", func(po *pebble.Options) {
			po.MemTableSize, po.TargetFileSizes = 0, [len(po.TargetFileSizes)]int64{}
		}},
	} {
		b.Run(shape.name, func(b *testing.B) {
			s, err := Open(benchDir(b), &Options{engine: shape.engine})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			event, state, entry := payload(415), payload(240), payload(90)
			var next atomic.Int64
			run := func() error {
				i := next.Add(1)
				id := fmt.Sprintf("run_%012d", i)
				sk := store.SessionKey{App: "app", User: "u", Session: fmt.Sprintf("s%012d", i)}
				now := t0.Add(time.Duration(i) * time.Millisecond)
				if _, err := s.AdmitRun(ctx, store.Run{ID: id, Session: sk, Runnable: "main", Status: store.RunRunning, Created: now, Updated: now}, [][]byte{event}, now); err != nil {
					return err
				}
				for step := range uint64(2) {
					c := store.StepCommit{Checkpoint: store.Checkpoint{Run: id, Step: step, Kind: store.Full, State: state, Time: now},
						Events: [][]byte{event, event}, Journal: [][]byte{entry}}
					if _, err := s.CommitStep(ctx, c); err != nil {
						return err
					}
				}
				_, err := s.EndRun(ctx, id, [][]byte{event}, store.RunCompleted, nil, now)
				return err
			}
			quiet := func() {
				if err := s.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				for n := 0; n < 2; {
					if s.Background() > 0 {
						n = 0
					} else {
						n++
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			const writers = 16
			head := b.N - b.N/4
			var cpu0 time.Duration
			for part, runs := range []int{head, b.N - head} {
				if part == 1 {
					quiet()
					cpu0 = cputime.Process()
				}
				var wg sync.WaitGroup
				var failed atomic.Pointer[error]
				for w := range writers {
					wg.Go(func() {
						for i := w; i < runs; i += writers {
							if err := run(); err != nil {
								failed.CompareAndSwap(nil, &err)
								return
							}
						}
					})
				}
				wg.Wait()
				if p := failed.Load(); p != nil {
					b.Fatal(*p)
				}
			}
			quiet()
			if last := b.N - head; last > 0 {
				b.ReportMetric(float64((cputime.Process()-cpu0).Microseconds())/float64(last), "cpu-µs/run")
			}
			m := s.db.Metrics()
			var written uint64
			for _, l := range m.Levels {
				written += l.TableBytesFlushed + l.TableBytesCompacted
			}
			b.ReportMetric(float64(written)/float64(b.N), "table-B/run")
		})
	}
}
