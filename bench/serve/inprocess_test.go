package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentc/agentc/internal/cputime"
	art "github.com/agentc/agentc/runtime"
)

// BenchmarkRequest serves one request of each scenario in process, through
// the server's handler with no connection (net/http's own work, the
// transport floor, is left out), next to the baseline's direct Runner.Run
// of the same input, one request at a time. allocs/op of a protocol minus
// the direct row's is the server's own allocations per request (auth,
// routing, parsing, the adapter's translation and framing, the Backend's
// hooks), exact where the harness's figures are sampled from a loaded
// process; cpu-µs/op (the process's CPU time, the store's background work
// included) minus the direct row's is its CPU, without the harness's
// contention:
//
//	go test ./bench/serve -run '^$' -bench Request -benchmem
func BenchmarkRequest(b *testing.B) {
	// Each row has a fresh store of its own: a store grows with every
	// run, and a bigger one costs the Runner more per run.
	open := func(b *testing.B) *assembled {
		a, err := assembleServer(b.TempDir(), "off")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(a.close)
		return a
	}
	b.Run("direct", func(b *testing.B) {
		a := open(b)
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			ch, err := a.runner.Run(context.Background(), art.Invocation{User: "bench", Session: newID("chatcmpl-"), Input: question})
			if err != nil {
				b.Fatal(err)
			}
			ok := false
			for e := range ch {
				ok = e.Kind == art.EventRunFinished && e.Status == art.StatusCompleted
			}
			if !ok {
				b.Fatal("the run did not complete")
			}
		}
	})
	for _, sc := range scenarios {
		b.Run(sc.name, func(b *testing.B) {
			h := open(b).srv.Handler()
			// The requests and recorders are made before the clock
			// starts (StopTimer in the loop would stop the world to
			// read the allocation counters, twice a request).
			type call struct {
				req   *http.Request
				check func([]byte) bool
				w     recorder
			}
			calls := make([]call, b.N)
			for i := range calls {
				req, check := sc.req("http://127.0.0.1", i)
				calls[i] = call{req, check, recorder{httptest.NewRecorder()}}
			}
			b.ReportAllocs()
			b.ResetTimer()
			defer reportCPU(b)()
			for _, c := range calls {
				h.ServeHTTP(c.w, c.req)
				if c.w.Code != 200 || !c.check(c.w.Body.Bytes()) {
					b.Fatalf("%d: %s", c.w.Code, c.w.Body.Bytes())
				}
			}
		})
	}
}

// reportCPU reports the process's CPU time per op from now until the
// returned func is called.
func reportCPU(b *testing.B) func() {
	start := cputime.Process()
	return func() {
		b.ReportMetric(float64((cputime.Process()-start).Microseconds())/float64(b.N), "cpu-µs/op")
	}
}

// recorder is a response recorder with a connection's deadlines (no-ops):
// without them, each of the server's SetReadDeadline and SetWriteDeadline
// calls would build an ErrNotSupported error, allocations a served request
// does not make.
type recorder struct{ *httptest.ResponseRecorder }

func (recorder) SetReadDeadline(time.Time) error  { return nil }
func (recorder) SetWriteDeadline(time.Time) error { return nil }
