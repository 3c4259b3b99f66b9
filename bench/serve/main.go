// Command serve measures `agentc serve` under load: 64 concurrent clients on
// loopback against the OpenAI-compatible endpoint (streaming and not) and
// AG-UI, with a zero-latency scripted model and the Pebble store (every run
// persisted: input event, run record, step commits, all synced). It prints a
// table and one JSON document.
//
//	go run ./bench/serve [-clients 64] [-requests 3200] [-warmup 256] [-only NAME,...] [-json FILE] [-cpuprofile PREFIX] [-observe off|metrics|traces] [-fetch]
//
// -only null measures the server without a protocol: net/http, the
// server's middleware and the Backend around the same run, answered with a
// fixed body (nullHandler).
//
// The server runs in a child process (this binary re-executed), so that its
// CPU time and allocations are its own: each row reports the child's CPU
// time (user+system, getrusage) and heap allocations (runtime.MemStats)
// per request. The baseline row drives the same Runner directly, with the
// same concurrency and no HTTP, in a second child built the same way: the
// difference between a protocol row and the baseline is the server's own
// overhead (HTTP, auth, JSON, SSE, translation, metrics, logs).
//
// The same concurrency of callers is not the same concurrency of runs: a
// server's clients spend part of each request on HTTP. Every row reports
// the runs its Runner had in flight on average (runs_in_flight: the time
// its runs took, summed, over the wall time).
//
// Each child has a store of its own, fresh, that the rounds grow alike, and
// a round ends when its child's store runs no flush or compaction: each
// side pays for exactly the background work its own writes cause (a
// compaction costs a round thousands of requests' worth of CPU at once; on
// one shared store, whichever round it fell in paid for it, and the
// difference of two rounds was mostly which one did).
//
// After a scenario's rounds, its transport floor is measured in a second
// child: a handler that answers with a response recorded from the server,
// in its framing, and does nothing else (floor.go). Its ratio is the least
// the protocol row could measure: what HTTP on loopback costs any server.
// A streaming scenario has a second floor, its connection floor: the same
// stream ending with its connection, as the server ends a Fetch-standard
// client's (-fetch sends Sec-Fetch-Mode, so that the protocol rows measure
// that client; spec/serve.md, "Streams").
//
// Each scenario has children of its own with fresh stores, so that no
// scenario's baseline is dearer for the runs of the scenarios before it.
// Stores live under $AGENTC_BENCH_DIR/<scenario>[-baseline] (default: a
// temporary directory in the working directory, so that fsyncs hit the same
// disk as real runs).
//
// The same assembly serves BenchmarkRequest (inprocess_test.go): one request
// at a time through the server's handler, in process, for exact allocation
// counts per request.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/agentc/agentc/bench/internal/benchobs"
	"github.com/agentc/agentc/bench/internal/benchsrc"
	"github.com/agentc/agentc/internal/cputime"
	"github.com/agentc/agentc/internal/gctune"
	art "github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/server/agui"
	"github.com/agentc/agentc/runtime/server/openai"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store/pebble"
)

const token = "bench-token"

const source = `workflow bench "Answers at once"

model m { provider = openai, name = "scripted" }

agent answer llm "Answers" { model = m }
`

// The scripted reply: 8 deltas, a model_response, then run_finished.
const fixture = `version: 1
model: m
default:
  text: "The certificate chain is incomplete: install the intermediate certificate on the load balancer."
  chunks: 8
  usage: {prompt_tokens: 40, completion_tokens: 20}
`

// row is one measured scenario.
type row struct {
	Name        string  `json:"name"`
	Requests    int     `json:"requests"`
	Errors      int     `json:"errors"`
	RPS         float64 `json:"requests_per_second"`
	P50ms       float64 `json:"p50_ms"`
	P99ms       float64 `json:"p99_ms"`
	CPUus       float64 `json:"server_cpu_us_per_request"`
	Allocs      float64 `json:"server_allocs_per_request"`
	AllocKB     float64 `json:"server_alloc_kib_per_request"`
	Writes      float64 `json:"server_writes_per_request"`        // write system calls
	Socket      float64 `json:"server_socket_writes_per_request"` // of which to the clients' connections
	DiskKB      float64 `json:"server_disk_kib_per_request"`      // bytes written to storage
	OverheadP50 float64 `json:"overhead_p50_ms,omitempty"`
	OverheadP99 float64 `json:"overhead_p99_ms,omitempty"`
	OverheadCPU float64 `json:"overhead_cpu_us_per_request,omitempty"`
	// Ratio is the row's CPU per request over its baseline's: the
	// server's for a protocol row; for a floor row, (baseline + floor) /
	// baseline, the least the protocol row could measure.
	Ratio   float64 `json:"cpu_ratio,omitempty"`
	Clients int     `json:"clients"`
	// ClientCPUus is the load generator's CPU per request (a protocol
	// row's): on a machine of few cores, it competes with the server.
	ClientCPUus float64 `json:"client_cpu_us_per_request,omitempty"`
	// RunsInFlight is how many runs the Runner had in flight on average
	// (stats.Runs over the wall time).
	RunsInFlight float64 `json:"runs_in_flight,omitempty"`
}

// stats is the child's resource use so far.
type stats struct {
	CPU     time.Duration `json:"cpu"`
	Mallocs uint64        `json:"mallocs"`
	Writes  uint64        `json:"writes"` // write system calls (/proc/self/io syscw; 0 where there is none)
	Socket  uint64        `json:"socket"` // writes to the server's connections (countingListener)
	Disk    uint64        `json:"disk"`   // bytes written to storage (/proc/self/io write_bytes: the WAL, flushes, compactions)
	Bytes   uint64        `json:"bytes"`
	// Runs is the time the Runner's runs took, summed: over a round's
	// wall time, the runs it had in flight on average (Little's law). The
	// server child reads its agentc_run_seconds; the baseline sums its
	// runs' latencies.
	Runs time.Duration `json:"runs"`
}

func main() {
	child := flag.Bool("child", false, "run the server (internal)")
	floorOnly := flag.Bool("floor", false, "run the transport floor (internal)")
	clients := flag.Int("clients", 64, "concurrent clients")
	requests := flag.Int("requests", 3200, "measured requests per scenario")
	warmup := flag.Int("warmup", 256, "unmeasured requests before each scenario")
	only := flag.String("only", "", "comma-separated scenarios: openai, openai-stream, agui (the default: all three), null (the server without a protocol; only when named)")
	jsonOut := flag.String("json", "", "also write the JSON document to this file")
	cpuProfile := flag.String("cpuprofile", "", "write the server's CPU profiles of each round at -clients to PREFIX-<scenario>-<round>.prof, the baseline's to PREFIX-<scenario>-baseline-<round>.prof, the allocations to PREFIX-<scenario>-allocs.prof")
	observe := flag.String("observe", "off", "the Runner's instrumentation: "+benchobs.Modes+" (spec/telemetry.md)")
	flag.BoolVar(&fetchClient, "fetch", false, "send Sec-Fetch-Mode: cors, as Node's fetch and browsers do: event streams then end with their connections")
	flag.Parse()
	if *floorOnly {
		if err := floorChild(); err != nil {
			fmt.Fprintln(os.Stderr, "bench floor:", err)
			os.Exit(1)
		}
		return
	}
	if *child {
		if err := serveChild(*observe); err != nil {
			fmt.Fprintln(os.Stderr, "bench child:", err)
			os.Exit(1)
		}
		return
	}
	if err := parent(*clients, *requests, *warmup, *only, *jsonOut, *cpuProfile, *observe); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// ---- the child: the server under test ----

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }
func (wallClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// newID mints ids of the shape agentc serve's (assemble.Assembly.NewID):
// the time in milliseconds, base 36, then random hex, so that the sessions
// a scenario creates (an OpenAI session is its completion's id) are keyed
// in time order, as the baseline's are (with the scenario's prefix,
// scenario.session); a counter in base 36 ("…-z",
// "…-10") would scatter them over the store's key space and make the
// Runner's reads dearer than the baseline's for a reason that is the
// harness's, not the server's.
func newID(prefix string) string {
	var buf [64]byte // one allocation, the id's, as assemble's
	id := strconv.AppendInt(append(buf[:0], prefix...), time.Now().UnixMilli(), 36)
	return string(strconv.AppendUint(id, rand.Uint64(), 16))
}

type entropy struct{ n atomic.Uint64 }

func (e *entropy) Uint64() uint64 {
	return e.n.Add(1)*0x9E3779B97F4A7C15 ^ uint64(time.Now().UnixNano())
}

// assembled is the program under test, assembled as agentc serve
// assembles it: the server child's, and the in-process benchmarks'.
type assembled struct {
	st      *pebble.Store
	runner  *art.Runner
	srv     *server.Server
	metrics *server.Metrics
	close   func()
}

// assembleServer opens a Pebble store in dir and assembles the bench's
// program, with the model scripted, an empty environment and the
// instrumentation asked for (-observe; agentc serve runs "metrics"
// without OTEL_*), behind a server with the OpenAI and AG-UI mounts.
func assembleServer(dir, observe string) (*assembled, error) {
	prog, out, err := benchsrc.CompileBytes("bench.agent", source)
	if err != nil {
		return nil, err
	}
	fx, err := model.LoadFixture("bench.yaml", []byte(fixture))
	if err != nil {
		return nil, err
	}
	st, err := pebble.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	metrics := server.NewMetrics()
	obs, err := benchobs.New(context.Background(), observe, metrics)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	a := &assembled{st: st, metrics: metrics}
	a.close = func() {
		if a.runner != nil {
			_ = a.runner.Close(context.Background()) // its post-run work, before the store goes
		}
		obs.Close(context.Background())
		_ = st.Close()
	}
	a.runner, err = assemble.New(st, assemble.Options{Program: prog, Verified: true, Encoding: out,
		Clock: wallClock{}, Entropy: &entropy{}, Env: func(string) (string, bool) { return "", false },
		Models:   map[string]art.Model{"m": model.NewScripted(art.ModelInfo{Name: "m"}, fx)},
		Observer: obs.Observer})
	if err != nil {
		a.close()
		return nil, err
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil)) // the request log is written and discarded
	b := &server.Backend{Runner: a.runner, Docs: st, Sessions: session.New(st), Clock: wallClock{},
		NewID:  newID,
		Logger: logger, Limits: server.Limits{MaxRuns: 256}, Metrics: metrics}
	oa := openai.New(b, openai.Options{})
	ag := agui.New(b, agui.Options{})
	a.srv, err = server.New(server.Config{Addr: "127.0.0.1:0", Backend: b, Store: st, Logger: logger, Tokens: map[string]string{token: "bench"},
		Mounts: []server.Mount{oa.Mount(), {Pattern: "/agui", Protocol: "agui", Handler: ag},
			{Pattern: "/null", Protocol: "null", Handler: nullHandler(b)}}})
	if err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

func serveChild(observe string) error {
	// The collector paced as agentc serve paces it: the server's rounds
	// and the baseline's (the same child) alike.
	gctune.Server(os.LookupEnv, os.DirFS("/"))
	dir := os.Getenv("AGENTC_BENCH_DIR")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp(".", ".bench-serve-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	a, err := assembleServer(dir, observe)
	if err != nil {
		return err
	}
	defer a.close()
	childMetrics = a.metrics
	st, r, srv := a.st, a.runner, a.srv
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	l := countingListener{tl}
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ctl := http.NewServeMux()
	ctl.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(readStats())
	})
	ctl.HandleFunc("GET /direct", func(w http.ResponseWriter, q *http.Request) {
		n, _ := strconv.Atoi(q.URL.Query().Get("n"))
		c, _ := strconv.Atoi(q.URL.Query().Get("c"))
		prefix := q.URL.Query().Get("session")
		if file := q.URL.Query().Get("profile"); file != "" {
			f, err := os.Create(file)
			if err == nil {
				err = pprof.StartCPUProfile(f)
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
		}
		_ = json.NewEncoder(w).Encode(direct(r, n, c, prefix, func() { quiesce(st) }))
	})
	ctl.HandleFunc("POST /quiesce", func(http.ResponseWriter, *http.Request) { quiesce(st) })
	var prof *os.File
	ctl.HandleFunc("POST /profile/start", func(w http.ResponseWriter, q *http.Request) {
		if prof != nil {
			return
		}
		f, err := os.Create(q.URL.Query().Get("file"))
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		prof = f
	})
	ctl.HandleFunc("POST /profile/stop", func(w http.ResponseWriter, _ *http.Request) {
		if prof != nil {
			pprof.StopCPUProfile()
			_ = prof.Close()
			prof = nil
		}
	})
	ctl.HandleFunc("POST /profile/allocs", func(w http.ResponseWriter, q *http.Request) {
		f, err := os.Create(q.URL.Query().Get("file"))
		if err == nil {
			err = errors.Join(pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	ctlSrv := &http.Server{Handler: ctl}
	go func() { _ = ctlSrv.Serve(sl) }() // owned here: closed below
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }() // owned here: Shutdown ends it
	fmt.Printf("ADDR http://%s http://%s\n", l.Addr(), sl.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The parent closes our stdin when it is done.
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); stop() }() // ends with stdin
	<-ctx.Done()
	_ = ctlSrv.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-served; err == nil {
		err = serr
	}
	return err
}

// plus adds the difference after-before to s.
func (s stats) plus(before, after stats) stats {
	return stats{CPU: s.CPU + after.CPU - before.CPU, Mallocs: s.Mallocs + after.Mallocs - before.Mallocs, Bytes: s.Bytes + after.Bytes - before.Bytes,
		Writes: s.Writes + after.Writes - before.Writes, Disk: s.Disk + after.Disk - before.Disk, Socket: s.Socket + after.Socket - before.Socket,
		Runs: s.Runs + after.Runs - before.Runs}
}

func readStats() stats {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	cpu := cputime.Process()
	writes, disk := procIO()
	return stats{CPU: cpu, Mallocs: ms.Mallocs, Bytes: ms.TotalAlloc, Writes: writes, Disk: disk, Socket: socketWrites.Load(), Runs: runTime()}
}

// childMetrics is the server child's metrics (nil elsewhere).
var childMetrics *server.Metrics

// runTime is the time the server child's runs took so far: its
// agentc_run_seconds_sum series, summed over protocols.
func runTime() time.Duration {
	if childMetrics == nil {
		return 0
	}
	var b strings.Builder
	_, _ = childMetrics.WriteTo(&b)
	var sum float64
	for line := range strings.Lines(b.String()) {
		if rest, ok := strings.CutPrefix(line, "agentc_run_seconds_sum{"); ok {
			if _, v, ok := strings.Cut(rest, "} "); ok {
				f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				sum += f
			}
		}
	}
	return time.Duration(sum * float64(time.Second))
}

// procIO is the process's count of write system calls so far (socket
// writes and the store's) and of bytes it caused to be written to
// storage, on Linux; 0 elsewhere.
func procIO() (writes, disk uint64) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, 0
	}
	for line := range strings.Lines(string(b)) {
		name, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		switch name {
		case "syscw":
			writes = n
		case "write_bytes":
			disk = n
		}
	}
	return writes, disk
}

// quiesce flushes st's memtable and waits until st runs no flush or
// compaction (seen twice, 5 ms apart; at most 30 s), so that a round pays
// for the background work its writes caused and the next round starts
// with none in flight. The flush: a round's writes (about 12 MiB for 3,000
// runs) are less than a memtable (16 MiB), so without it the flush and
// the compactions it starts fell in whichever round filled the memtable.
func quiesce(st *pebble.Store) {
	if err := st.Flush(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "bench child: flush:", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for quiet := 0; quiet < 2 && time.Now().Before(deadline); {
		if st.Background() > 0 {
			quiet = 0
		} else {
			quiet++
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// socketWrites counts the writes to the connections of the server's
// listener (countingListener).
var socketWrites atomic.Uint64

// countingListener is a listener whose connections count their writes in
// socketWrites: how many system calls the server's responses take.
type countingListener struct{ net.Listener }

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c}, nil
}

type countingConn struct{ net.Conn }

func (c countingConn) Write(b []byte) (int, error) {
	socketWrites.Add(1)
	return c.Conn.Write(b)
}

// directResult is the baseline measured inside the child.
type directResult struct {
	Lat    []time.Duration `json:"lat"`
	Wall   time.Duration   `json:"wall"`
	Before stats           `json:"before"`
	After  stats           `json:"after"`
	Errors int             `json:"errors"`
}

// direct runs n invocations through the Runner with c at a time, each in a
// new session newID(prefix) names.
func direct(r *art.Runner, n, c int, prefix string, quiesce func()) directResult {
	var res directResult
	lat := make([]time.Duration, n)
	var errs atomic.Int64
	res.Before = readStats()
	res.Wall = fanOut(n, c, func(i int) {
		t0 := time.Now()
		ch, err := r.Run(context.Background(), art.Invocation{User: "bench", Session: newID(prefix), Input: question})
		if err != nil {
			errs.Add(1)
			return
		}
		ok := false
		for e := range ch {
			ok = e.Kind == art.EventRunFinished && e.Status == art.StatusCompleted
		}
		if !ok {
			errs.Add(1)
		}
		lat[i] = time.Since(t0)
	})
	quiesce()
	res.After = readStats()
	for _, d := range lat {
		res.After.Runs += d
	}
	res.Lat = lat
	res.Errors = int(errs.Load())
	return res
}

// ---- the parent: the load generator ----

type scenario struct {
	name string
	// session is the prefix of the sessions the scenario's requests create
	// (newID's), which its baseline's sessions get too: both are keyed in
	// time order in the same part of the store's key space, so that
	// neither's reads land in blocks the other's keys make dearer.
	session string
	req     func(base string, i int) (*http.Request, func(body []byte) bool)
	// optIn scenarios run only when -only names them.
	optIn bool
}

// question is every scenario's user message, and the baseline's input.
const question = "Why does the TLS handshake fail?"

// scenarios are the protocol rows, in the report's order.
var scenarios = []scenario{
	{"openai", "chatcmpl-", func(base string, _ int) (*http.Request, func([]byte) bool) {
		return post(base, "/v1/chat/completions", `{"model":"bench","messages":[{"role":"user","content":"`+question+`"}]}`),
			func(b []byte) bool { return strings.Contains(string(b), `"finish_reason":"stop"`) }
	}, false},
	{"openai-stream", "chatcmpl-", func(base string, _ int) (*http.Request, func([]byte) bool) {
		return post(base, "/v1/chat/completions", `{"model":"bench","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"`+question+`"}]}`),
			func(b []byte) bool { return strings.HasSuffix(string(b), "data: [DONE]\n\n") }
	}, false},
	{"agui", "t", func(base string, _ int) (*http.Request, func([]byte) bool) {
		// Time-ordered thread ids, as the other scenarios' sessions.
		id := newID("t")
		return post(base, "/agui", `{"threadId":"`+id+`","runId":"r`+id+`","messages":[{"id":"m1","role":"user","content":"`+question+`"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`),
			func(b []byte) bool { return strings.Contains(string(b), `"RUN_FINISHED"`) }
	}, false},
	// null is the server without a protocol (nullHandler): what net/http,
	// the server's middleware and the Backend cost before any adapter's
	// parsing, translation and framing. Its row over its baseline is the
	// least any protocol's could be on this server; a protocol's row over
	// null's is its adapter's own.
	{"null", "chatcmpl-", func(base string, _ int) (*http.Request, func([]byte) bool) {
		return post(base, "/null", `{"model":"bench","messages":[{"role":"user","content":"`+question+`"}]}`),
			func(b []byte) bool { return string(b) == nullAnswer }
	}, true},
}

// nullAnswer is nullHandler's whole response.
const nullAnswer = `{"status":"completed"}`

// nullHandler reads a request's body, runs the baseline's invocation
// through Backend.Start as an adapter would, reads its events to the end
// and answers nullAnswer: no protocol at all.
func nullHandler(b *server.Backend) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		run, err := b.Start(r.Context(), "null", art.Invocation{User: server.UserFrom(r.Context()), Session: newID("chatcmpl-"), Input: question})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		ok := false
		for e := range run.Events {
			ok = e.Kind == art.EventRunFinished && e.Status == art.StatusCompleted
		}
		if !ok {
			http.Error(w, "the run did not complete", http.StatusInternalServerError)
			return
		}
		w.Header()["Content-Type"] = []string{"application/json"}
		_, _ = io.WriteString(w, nullAnswer)
	})
}

func parent(clients, requests, warmup int, only, jsonOut, cpuProfile, observe string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	floor, err := startChild(exe, nil, "-floor")
	if err != nil {
		return err
	}
	defer floor.stop()
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	var rows []row
	// Each scenario gets its own server child with a fresh store: the
	// Runner's CPU per run grows as the store fills (more levels for a
	// point read, compactions), so on one store shared by the scenarios
	// the later ones would be compared with a dearer baseline and their
	// ratios flattered by their position.
	for _, sc := range scenarios {
		if len(want) > 0 && !want[sc.name] || len(want) == 0 && sc.optIn {
			continue
		}
		r, err := runScenario(exe, sc, floor, clients, requests, warmup, cpuProfile, observe)
		rows = append(rows, r...)
		if err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scenario\tclients\treq/s\tp50 ms\tp99 ms\tCPU µs/req\t×CPU\tallocs/req\tKiB/req\twrites/req\tsocket\tdisk KiB/req\tΔp50 ms\tΔp99 ms\tΔCPU µs/req\terrors\t\n")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.3f\t%.3f\t%.0f\t%s\t%.0f\t%.1f\t%.1f\t%.2f\t%.1f\t%s\t%s\t%s\t%d\t\n", r.Name, r.Clients, r.RPS, r.P50ms, r.P99ms, r.CPUus, ratio(r), r.Allocs, r.AllocKB, r.Writes, r.Socket, r.DiskKB,
			delta(r.OverheadP50, r.Name), delta(r.OverheadP99, r.Name), delta(r.OverheadCPU, r.Name), r.Errors)
	}
	_ = tw.Flush()
	doc := map[string]any{
		"requests": requests, "cores": runtime.NumCPU(), "go": runtime.Version(),
		"store": "pebble (synced), fresh per scenario", "model": "scripted, zero latency, 8 deltas", "observe": observe, "rows": rows,
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	fmt.Printf("%s\n", b)
	if jsonOut != "" {
		if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	for _, r := range rows {
		if r.Errors > 0 {
			return fmt.Errorf("%s: %d failed requests", r.Name, r.Errors)
		}
	}
	return nil
}

// post is a request of the load, authenticated.
func post(base, path, body string) *http.Request {
	req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	if fetchClient {
		req.Header.Set("Sec-Fetch-Mode", "cors")
	}
	return req
}

// fetchClient is -fetch: the load's requests say they come from a
// Fetch-standard client (Node's fetch, a browser), whose event streams
// end with their connections (server.OwnConnection).
var fetchClient bool

// ratio is a row's CPU ratio column.
func ratio(r row) string {
	if r.Ratio == 0 {
		return "-"
	}
	return strconv.FormatFloat(r.Ratio, 'f', 2, 64)
}

// runScenario measures sc in a server child of its own, on a fresh store,
// against its baseline in a second child on a store of its own: with
// clients at a time, then with one (no queueing, so the latency difference
// is the server's own time on a request's path). With cpuProfile, the
// server's CPU profile of each round of the first measurement is written to
// <cpuProfile>-<scenario>-<round>.prof and the baseline's to
// <cpuProfile>-<scenario>-baseline-<round>.prof (go tool pprof merges the
// rounds given together), and the server child's allocations (sampled) to
// <cpuProfile>-<scenario>-allocs.prof.
func runScenario(exe string, sc scenario, floor child, clients, requests, warmup int, cpuProfile, observe string) ([]row, error) {
	start := func(name string) (child, error) {
		var env []string
		if dir := os.Getenv("AGENTC_BENCH_DIR"); dir != "" {
			env = append(os.Environ(), "AGENTC_BENCH_DIR="+filepath.Join(dir, name))
		}
		return startChild(exe, env, "-child", "-observe", observe)
	}
	server, err := start(sc.name)
	if err != nil {
		return nil, err
	}
	defer server.stop()
	direct, err := start(sc.name + "-baseline")
	if err != nil {
		return nil, err
	}
	defer direct.stop()
	base, ctl := server.base, server.ctl
	fmt.Fprintf(os.Stderr, "%s: server %s, control %s; baseline's control %s\n", sc.name, base, ctl, direct.ctl)
	tr := &http.Transport{MaxIdleConns: clients * 2, MaxIdleConnsPerHost: clients * 2, DisableCompression: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	getStats := func(ctl string) (stats, error) {
		var s stats
		resp, err := hc.Get(ctl + "/stats")
		if err != nil {
			return s, err
		}
		defer resp.Body.Close()
		return s, json.NewDecoder(resp.Body).Decode(&s)
	}
	var rows []row
	// The stores grow with every run and a bigger store costs the Runner
	// more per run, and the machine's speed drifts; so the scenario is
	// measured in rounds interleaved with rounds of its baseline, in
	// alternated order, both stores growing alike, and the overhead
	// columns compare the two.
	const rounds = 4
	baselineRound := func(n, c int, profile string) (directResult, error) {
		u := fmt.Sprintf("%s/direct?n=%d&c=%d&session=%s", direct.ctl, n, c, url.QueryEscape(sc.session))
		if profile != "" {
			abs, _ := filepath.Abs(profile)
			u += "&profile=" + url.QueryEscape(abs)
		}
		resp, err := hc.Get(u)
		if err != nil {
			return directResult{}, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			return directResult{}, fmt.Errorf("baseline: %s: %s", resp.Status, b)
		}
		var d directResult
		return d, json.NewDecoder(resp.Body).Decode(&d)
	}
	if _, err := baselineRound(warmup, clients, ""); err != nil { // warm-up
		return nil, err
	}
	offset := warmup
	stream := false // the scenario's responses are event streams (record)
	// measure runs sc with c clients, n requests in rounds interleaved with
	// rounds of the baseline.
	measure := func(n, c int, profile string) error {
		per := max(1, n/rounds)
		var (
			bl, sl         []time.Duration
			bw, sw         time.Duration
			bs, ss         stats // summed deltas
			cs             stats // the load generator's own (this process)
			berrs, serrors int
		)
		for round := range rounds {
			bprof, sprof := "", ""
			if profile != "" {
				bprof = fmt.Sprintf("%s-%s-baseline-%d.prof", profile, sc.name, round)
				sprof = fmt.Sprintf("%s-%s-%d.prof", profile, sc.name, round)
			}
			baselineRun := func() error {
				d, err := baselineRound(per, c, bprof)
				if err != nil {
					return err
				}
				bl, bw, berrs = append(bl, d.Lat...), bw+d.Wall, berrs+d.Errors
				bs = bs.plus(d.Before, d.After)
				return nil
			}
			serverRun := func() error {
				before, err := getStats(ctl)
				if err != nil {
					return err
				}
				if sprof != "" {
					abs, _ := filepath.Abs(sprof)
					if err := control(hc, ctl+"/profile/start?file="+url.QueryEscape(abs)); err != nil {
						return err
					}
				}
				mine := readStats()
				lat, wall, errs := load(hc, base, sc, per, c, offset)
				cs = cs.plus(mine, readStats())
				offset += per
				if err := control(hc, ctl+"/quiesce"); err != nil {
					return err
				}
				if sprof != "" {
					if err := control(hc, ctl+"/profile/stop"); err != nil {
						return err
					}
				}
				after, err := getStats(ctl)
				if err != nil {
					return err
				}
				sl, sw, serrors = append(sl, lat...), sw+wall, serrors+errs
				ss = ss.plus(before, after)
				return nil
			}
			// Alternated order (baseline, server, server, baseline, …):
			// neither side always runs while the other's child is
			// freshly idle, nor always first after a drift.
			first, second := baselineRun, serverRun
			if round%2 == 1 {
				first, second = serverRun, baselineRun
			}
			if err := first(); err != nil {
				return err
			}
			if err := second(); err != nil {
				return err
			}
		}
		baseline := summarize("  baseline for "+sc.name, bl, bw, stats{}, bs, berrs)
		r := summarize(sc.name, sl, sw, stats{}, ss, serrors)
		baseline.Clients, r.Clients = c, c
		r.OverheadP50 = r.P50ms - baseline.P50ms
		r.OverheadP99 = r.P99ms - baseline.P99ms
		r.OverheadCPU = r.CPUus - baseline.CPUus
		r.ClientCPUus = float64(cs.CPU.Microseconds()) / float64(len(sl))
		if baseline.CPUus > 0 {
			r.Ratio = r.CPUus / baseline.CPUus
		}
		rows = append(rows, baseline, r)
		// The floors after the rounds, in their own child, which does
		// nothing in the background: the server child's rounds stay back
		// to back.
		type floorRow struct{ name, base string }
		floors := []floorRow{{"  floor for " + sc.name, floor.base}}
		if stream && len(floor.more) > 0 && !fetchClient {
			floors = append(floors, floorRow{"  connection floor for " + sc.name, floor.more[0]})
		}
		for _, fb := range floors {
			var (
				fl    []time.Duration
				fw    time.Duration
				fs    stats
				ferrs int
			)
			for range rounds {
				before, err := getStats(floor.ctl)
				if err != nil {
					return err
				}
				lat, wall, errs := load(hc, fb.base, sc, per, c, 0)
				after, err := getStats(floor.ctl)
				if err != nil {
					return err
				}
				fl, fw, ferrs = append(fl, lat...), fw+wall, ferrs+errs
				fs = fs.plus(before, after)
			}
			f := summarize(fb.name, fl, fw, stats{}, fs, ferrs)
			f.Clients = c
			if baseline.CPUus > 0 {
				f.Ratio = (baseline.CPUus + f.CPUus) / baseline.CPUus
			}
			rows = append(rows, f)
		}
		return nil
	}
	if stream, err = record(hc, base, floor, sc); err != nil {
		return nil, err
	}
	load(hc, floor.base, sc, warmup, clients, 0)
	load(hc, base, sc, warmup, clients, 0)
	if err := measure(requests, clients, cpuProfile); err != nil {
		return rows, err
	}
	if cpuProfile != "" {
		// Every allocation of the server's child so far, sampled.
		abs, _ := filepath.Abs(fmt.Sprintf("%s-%s-allocs.prof", cpuProfile, sc.name))
		if err := control(hc, ctl+"/profile/allocs?file="+url.QueryEscape(abs)); err != nil {
			return rows, err
		}
	}
	if err := measure(min(requests, 400), 1, ""); err != nil {
		return rows, err
	}
	return rows, nil
}

// child is a child process of the harness: the server under test or the
// transport floor, each with its control endpoint.
type child struct {
	base, ctl string
	more      []string // further addresses (the floor's: its connection floor)
	stop      func()
}

// startChild runs exe with args (env: nil for the parent's) and reads the
// addresses it prints; stop closes its stdin, which ends it, and waits.
func startChild(exe string, env []string, args ...string) (child, error) {
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return child{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return child{}, err
	}
	if err := cmd.Start(); err != nil {
		return child{}, err
	}
	stop := func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return child{}, fmt.Errorf("child %v: %w", args, err)
	}
	f := strings.Fields(line)
	if len(f) < 3 || f[0] != "ADDR" {
		stop()
		return child{}, fmt.Errorf("child %v said %q", args, line)
	}
	return child{base: f[1], ctl: f[2], more: f[3:], stop: stop}, nil
}

// record makes one request of sc to the server at base and has the floor
// replay its response.
func record(hc *http.Client, base string, floor child, sc scenario) (stream bool, err error) {
	req, ok := sc.req(base, 0)
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !ok(body) {
		return false, fmt.Errorf("%s: recording a response: status %d: %.300s (%v)", sc.name, resp.StatusCode, body, err)
	}
	stream = strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	sse := "0"
	if stream {
		sse = "1"
	}
	u := fmt.Sprintf("%s/floor?sse=%s", floor.ctl, sse)
	resp, err = hc.Post(u, "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%s: %s", u, resp.Status)
	}
	return stream, nil
}

// control posts to the child's control endpoint.
func control(hc *http.Client, u string) error {
	resp, err := hc.Post(u, "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s: %s", u, resp.Status, b)
	}
	return nil
}

func delta(v float64, name string) string {
	if strings.Contains(name, "baseline") || strings.Contains(name, "floor") {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// load sends n requests from c clients; it returns each latency, the wall
// time and the number of failed requests.
func load(hc *http.Client, base string, sc scenario, n, c, offset int) ([]time.Duration, time.Duration, int) {
	lat := make([]time.Duration, n)
	var errs atomic.Int64
	wall := fanOut(n, c, func(i int) {
		req, ok := sc.req(base, offset+i)
		t0 := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			errs.Add(1)
			return
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		lat[i] = time.Since(t0)
		if err != nil || resp.StatusCode != 200 || !ok(body) {
			if errs.Add(1) == 1 {
				fmt.Fprintf(os.Stderr, "%s: status %d: %.300s\n", sc.name, resp.StatusCode, body)
			}
		}
	})
	return lat, wall, int(errs.Load())
}

// fanOut runs do(0) ... do(n-1) on c workers, each taking the next index, and
// returns the wall time.
func fanOut(n, c int, do func(i int)) time.Duration {
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				do(i)
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// quantile is the p-quantile of sorted durations, in milliseconds.
func quantile(s []time.Duration, p float64) float64 {
	if len(s) == 0 {
		return 0
	}
	return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds()) / 1000
}

func summarize(name string, lat []time.Duration, wall time.Duration, before, after stats, errs int) row {
	s := slices.Clone(lat)
	slices.Sort(s)
	q := func(p float64) float64 { return quantile(s, p) }
	n := float64(len(lat))
	return row{
		Name: name, Requests: len(lat), Errors: errs,
		RPS:   n / wall.Seconds(),
		P50ms: q(0.50), P99ms: q(0.99),
		CPUus:        float64((after.CPU - before.CPU).Microseconds()) / n,
		Allocs:       float64(after.Mallocs-before.Mallocs) / n,
		AllocKB:      float64(after.Bytes-before.Bytes) / n / 1024,
		Writes:       float64(after.Writes-before.Writes) / n,
		Socket:       float64(after.Socket-before.Socket) / n,
		DiskKB:       float64(after.Disk-before.Disk) / n / 1024,
		RunsInFlight: (after.Runs - before.Runs).Seconds() / wall.Seconds(),
	}
}
