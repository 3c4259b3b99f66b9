package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/store/memory"
)

type quietModel struct{}

func (quietModel) Info() runtime.ModelInfo { return runtime.ModelInfo{Name: "m", Model: "test:quiet"} }
func (quietModel) Generate(context.Context, *runtime.ModelRequest, func(string)) (*runtime.ModelResponse, error) {
	return &runtime.ModelResponse{Text: "ok", FinishReason: "stop"}, nil
}

// chattyModel answers in three deltas.
type chattyModel struct{}

func (chattyModel) Info() runtime.ModelInfo {
	return runtime.ModelInfo{Name: "m", Model: "test:chatty"}
}
func (chattyModel) Generate(_ context.Context, _ *runtime.ModelRequest, delta func(string)) (*runtime.ModelResponse, error) {
	for _, d := range []string{"o", "k", "!"} {
		delta(d)
	}
	return &runtime.ModelResponse{Text: "ok!", FinishReason: "stop"}, nil
}

func backend(t *testing.T) *server.Backend { return backendWith(t, quietModel{}) }

// backendWith is a Backend over the memory store whose one agent calls m.
func backendWith(t *testing.T, m runtime.Model) *server.Backend {
	t.Helper()
	src := "workflow w \"W\"\nmodel m { provider = openai, name = \"x\" }\nagent a llm \"A\" { model = m }\n"
	prog := runtimetest.Compile(t, fstest.MapFS{"w.agent": {Data: []byte(src)}}, "w.agent")
	st := memory.New()
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog, Models: map[string]runtime.Model{"m": m},
		Clock: &runtimetest.Clock{RealTimers: true}, Entropy: &runtimetest.Entropy{}})
	if err != nil {
		t.Fatal(err)
	}
	return &server.Backend{Runner: r, Docs: st, Clock: &runtimetest.Clock{RealTimers: true}, Metrics: server.NewMetrics(),
		Limits: server.Limits{MaxBodyBytes: 64}}
}

// whoami answers with the authenticated user and the body it read.
var whoami = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		server.WriteError(w, r, http.StatusRequestEntityTooLarge, "body_too_large", err.Error())
		return
	}
	_, _ = io.WriteString(w, server.UserFrom(r.Context())+":"+string(b))
})

func TestParseTokens(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]string
		wantErr bool
	}{
		{"tok1=alice,tok2=bob", map[string]string{"tok1": "alice", "tok2": "bob"}, false},
		{" tok1 = alice , tok2=bob\n", map[string]string{"tok1": "alice", "tok2": "bob"}, false},
		{"", map[string]string{}, false},
		{"tok1", nil, true},
		{"=alice", nil, true},
		{"tok1=", nil, true},
		{"tok1=alice,tok1=bob", nil, true},
	}
	for _, tc := range tests {
		got, err := server.ParseTokens(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseTokens(%q) error %v", tc.in, err)
			continue
		}
		if err == nil && !equal(got, tc.want) {
			t.Errorf("ParseTokens(%q) = %v, want %v", tc.in, got, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "tok1=") {
			t.Errorf("the error shows a whole token: %v", err)
		}
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestNewRefuses(t *testing.T) {
	b := backend(t)
	tests := []struct {
		name string
		cfg  server.Config
		ok   bool
	}{
		{"tokens", server.Config{Addr: "0.0.0.0:8080", Tokens: map[string]string{"t": "u"}}, true},
		{"open on loopback", server.Config{Addr: "127.0.0.1:8080", Open: true}, true},
		{"open on localhost", server.Config{Addr: "localhost:8080", Open: true}, true},
		{"open on ::1", server.Config{Addr: "[::1]:8080", Open: true}, true},
		{"open on all interfaces", server.Config{Addr: ":8080", Open: true}, false},
		{"open on a public address", server.Config{Addr: "192.0.2.1:8080", Open: true}, false},
		{"no tokens, not open", server.Config{Addr: "127.0.0.1:8080"}, false},
		{"conflicting mounts", server.Config{Addr: "127.0.0.1:0", Tokens: map[string]string{"t": "u"},
			Mounts: []server.Mount{{Pattern: "/x/", Handler: whoami}, {Pattern: "/x/", Handler: whoami}}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Backend = b
			_, err := server.New(tc.cfg)
			if (err == nil) != tc.ok {
				t.Fatalf("New: %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

type serving struct {
	url string
	srv *server.Server
}

func serve(t *testing.T, cfg server.Config) serving {
	t.Helper()
	if cfg.Backend == nil {
		cfg.Backend = backend(t)
	}
	cfg.Addr = "127.0.0.1:0"
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return serving{url: "http://" + l.Addr().String(), srv: srv}
}

func get(t *testing.T, method, url, token, body string, headers ...string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func protoError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	w.WriteHeader(status)
	_, _ = io.WriteString(w, "proto-error:"+code)
}

func TestAuthAndRouting(t *testing.T) {
	s := serve(t, server.Config{
		Tokens: map[string]string{"tok-a": "alice", "tok-b": "bob"},
		Mounts: []server.Mount{
			{Pattern: "/p/", Protocol: "p", Handler: whoami, Error: protoError},
			{Pattern: "/card.json", Protocol: "card", Handler: whoami, Public: true},
			{Pattern: "/panic", Protocol: "p", Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }), Error: protoError},
		},
	})
	tests := []struct {
		name, method, path, auth, body string
		status                         int
		want                           string // body prefix
	}{
		{"alice", "POST", "/p/x", "Bearer tok-a", "hi", 200, "alice:hi"},
		{"bob", "POST", "/p/x", "Bearer tok-b", "", 200, "bob:"},
		{"scheme is case-insensitive", "POST", "/p/x", "bearer tok-a", "", 200, "alice:"},
		{"no token", "POST", "/p/x", "", "", 401, "proto-error:unauthorized"},
		{"wrong token", "POST", "/p/x", "Bearer tok-c", "", 401, "proto-error:unauthorized"},
		{"basic auth", "POST", "/p/x", "Basic dG9rLWE6", "", 401, "proto-error:unauthorized"},
		{"public mount", "GET", "/card.json", "", "", 200, ":"},
		{"body over the limit", "POST", "/p/x", "Bearer tok-a", strings.Repeat("x", 65), 413, "proto-error:body_too_large"},
		{"healthz is public", "GET", "/healthz", "", "", 200, `{"status":"ok","app":"w","running":0}`},
		{"metrics need a token", "GET", "/metrics", "", "", 401, `{"error":{"code":"unauthorized"`},
		{"metrics", "GET", "/metrics", "Bearer tok-a", "", 200, "# HELP"},
		{"unknown path", "GET", "/nope", "", "", 404, `{"error":{"code":"not_found"`},
		{"panic", "GET", "/panic", "Bearer tok-a", "", 500, "proto-error:internal"},
		{"still serving after a panic", "POST", "/p/x", "Bearer tok-a", "again", 200, "alice:again"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := get(t, tc.method, s.url+tc.path, tc.auth, tc.body)
			if status != tc.status || !strings.HasPrefix(body, tc.want) {
				t.Fatalf("%d %q, want %d %q", status, body, tc.status, tc.want)
			}
		})
	}
	_, body, _ := get(t, "GET", s.url+"/metrics", "Bearer tok-a", "")
	for _, want := range []string{
		`agentc_http_requests_total{protocol="p",code="200"} 4`,
		`agentc_http_requests_total{protocol="p",code="401"} 3`,
		`agentc_errors_total{protocol="p",code="unauthorized"} 3`,
		"# TYPE agentc_http_request_seconds summary",
		"agentc_runs_active 0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}

// TestRequestLog: each request is one "request" record at Info with its
// protocol, method, path, status, size, duration, user and remote address,
// and no source location; a logger above Info writes none.
func TestRequestLog(t *testing.T) {
	var buf bytes.Buffer
	s := serve(t, server.Config{
		Tokens: map[string]string{"tok-a": "alice"},
		Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{AddSource: true})),
		Mounts: []server.Mount{{Pattern: "/p/", Protocol: "p", Handler: whoami, Error: protoError}},
	})
	if status, _, _ := get(t, "POST", s.url+"/p/x", "Bearer tok-a", "hi"); status != 200 {
		t.Fatalf("status %d", status)
	}
	var rec map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "request" {
			rec = m
		}
	}
	if rec == nil {
		t.Fatalf("no request record in %s", buf.String())
	}
	for k, want := range map[string]any{"level": "INFO", "protocol": "p", "method": "POST", "path": "/p/x",
		"status": float64(200), "bytes": float64(len("alice:hi")), "user": "alice"} {
		if rec[k] != want {
			t.Errorf("%s = %v, want %v (%v)", k, rec[k], want, rec)
		}
	}
	if _, ok := rec["duration"]; !ok || rec["remote"] == "" || rec["time"] == nil {
		t.Errorf("record %v lacks duration, remote or time", rec)
	}
	if _, ok := rec["source"]; ok {
		t.Errorf("record %v has a source location", rec)
	}

	buf.Reset()
	quiet := serve(t, server.Config{
		Tokens: map[string]string{"tok-a": "alice"},
		Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Mounts: []server.Mount{{Pattern: "/p/", Protocol: "p", Handler: whoami, Error: protoError}},
	})
	get(t, "POST", quiet.url+"/p/x", "Bearer tok-a", "hi")
	if strings.Contains(buf.String(), `"msg":"request"`) {
		t.Errorf("a Warn logger wrote a request record: %s", buf.String())
	}
}

func TestOpenMode(t *testing.T) {
	s := serve(t, server.Config{Open: true, Mounts: []server.Mount{{Pattern: "/p/", Protocol: "p", Handler: whoami}}})
	tests := []struct {
		name   string
		header []string
		want   string
	}{
		{"anonymous", nil, "anonymous:"},
		{"user header", []string{server.UserHeader, "carol"}, "carol:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := get(t, "GET", s.url+"/p/", "", "", tc.header...)
			if status != 200 || body != tc.want {
				t.Fatalf("%d %q", status, body)
			}
		})
	}
}

func TestShutdownDrains(t *testing.T) {
	b := backend(t)
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Backend: b, Tokens: map[string]string{"t": "u"}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	url := "http://" + l.Addr().String()
	if status, _, _ := get(t, "GET", url+"/healthz", "", ""); status != 200 {
		t.Fatalf("healthz %d", status)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := b.Start(context.Background(), "p", runtime.Invocation{User: "u", Session: "s", Input: "x"}); err != server.ErrShuttingDown {
		t.Fatalf("Start after Shutdown: %v", err)
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Fatal("still accepting connections")
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

func TestMetricsFormat(t *testing.T) {
	m := server.NewMetrics()
	m.Request("openai", 200, 1500*time.Millisecond)
	m.RunStarted("openai")
	m.RunFinished("openai", "completed", time.Second)
	m.Event("openai", "model_delta")
	m.Error("openai", `we"ird`)
	var b strings.Builder
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	want := `# HELP agentc_errors_total Protocol error responses by protocol and code.
# TYPE agentc_errors_total counter
agentc_errors_total{protocol="openai",code="we\"ird"} 1
# HELP agentc_events_total Runtime events streamed by protocol and kind.
# TYPE agentc_events_total counter
agentc_events_total{protocol="openai",kind="model_delta"} 1
# HELP agentc_http_request_seconds HTTP request time in seconds (to the end of the response).
# TYPE agentc_http_request_seconds summary
agentc_http_request_seconds_count{protocol="openai"} 1
agentc_http_request_seconds_sum{protocol="openai"} 1.5
# HELP agentc_http_requests_total HTTP requests by protocol and status.
# TYPE agentc_http_requests_total counter
agentc_http_requests_total{protocol="openai",code="200"} 1
# HELP agentc_run_seconds Run time in seconds.
# TYPE agentc_run_seconds summary
agentc_run_seconds_count{protocol="openai"} 1
agentc_run_seconds_sum{protocol="openai"} 1
# HELP agentc_runs_finished_total Runs finished by protocol and status.
# TYPE agentc_runs_finished_total counter
agentc_runs_finished_total{protocol="openai",status="completed"} 1
# HELP agentc_runs_started_total Runs started by protocol.
# TYPE agentc_runs_started_total counter
agentc_runs_started_total{protocol="openai"} 1
`
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	var nilMetrics *server.Metrics
	nilMetrics.Request("x", 200, 0) // a nil registry discards
}

func TestMetricsCountWithoutAllocating(t *testing.T) {
	m := server.NewMetrics()
	m.Event("openai", "model_delta")
	if n := testing.AllocsPerRun(100, func() { m.Event("openai", "model_delta") }); n != 0 {
		t.Fatalf("Event allocates %v times per call", n)
	}
	m.Request("openai", 200, time.Millisecond)
	if n := testing.AllocsPerRun(100, func() { m.Request("openai", 200, time.Millisecond) }); n != 0 {
		t.Fatalf("Request allocates %v times per call", n)
	}
}

// TestMetricsSeriesApart: series whose names and labels would run
// together are counted apart, and concurrent adds lose nothing.
func TestMetricsSeriesApart(t *testing.T) {
	m := server.NewMetrics()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				m.Event("a", "bc")
				m.Event("ab", "c")
			}
		})
	}
	wg.Wait()
	var b strings.Builder
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`agentc_events_total{protocol="a",kind="bc"} 4000`, `agentc_events_total{protocol="ab",kind="c"} 4000`} {
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("no %s in\n%s", want, b.String())
		}
	}
}

// BenchmarkMetricsEvent: one event counted, from two goroutines.
func BenchmarkMetricsEvent(b *testing.B) {
	m := server.NewMetrics()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Event("agui", "model_delta")
		}
	})
}

// TestMetricsHistograms: latencies are cumulative histograms with the
// buckets in increasing order and +Inf last; tokens count by type.
func TestMetricsHistograms(t *testing.T) {
	m := server.NewMetrics()
	m.Duration("tool", "support", "cert_scan", 30*time.Millisecond)
	m.Duration("tool", "support", "cert_scan", 2*time.Second)
	m.Duration("step", "support", "", time.Second) // not a histogram of its own
	m.Tokens("support", "scripted:fast", "alice", runtime.Usage{PromptTokens: 410, CompletionTokens: 24, CachedTokens: 400})
	m.Tokens("support", "scripted:fast", "bob", runtime.Usage{PromptTokens: 10, CompletionTokens: 2})
	m.Cost("support", "scripted:fast", "alice", 0.25)
	m.Cost("support", "scripted:fast", "alice", 0.5)
	m.Cost("support", "scripted:free", "alice", 0)
	var b strings.Builder
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	var buckets []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "agentc_tool_duration_seconds_bucket") {
			buckets = append(buckets, l)
		}
	}
	wantBuckets := []string{`le="0.005"} 0`, `le="0.01"} 0`, `le="0.025"} 0`, `le="0.05"} 1`, `le="0.1"} 1`, `le="0.25"} 1`,
		`le="0.5"} 1`, `le="1"} 1`, `le="2.5"} 2`, `le="5"} 2`, `le="10"} 2`, `le="30"} 2`, `le="60"} 2`, `le="300"} 2`, `le="+Inf"} 2`}
	if len(buckets) != len(wantBuckets) {
		t.Fatalf("buckets:\n%s", strings.Join(buckets, "\n"))
	}
	for i, w := range wantBuckets {
		if !strings.HasSuffix(buckets[i], w) || !strings.Contains(buckets[i], `{app="support",tool="cert_scan",`) {
			t.Errorf("bucket %d = %s, want …%s", i, buckets[i], w)
		}
	}
	for _, want := range []string{
		"# TYPE agentc_tool_duration_seconds histogram\n",
		`agentc_tool_duration_seconds_count{app="support",tool="cert_scan"} 2` + "\n",
		`agentc_tool_duration_seconds_sum{app="support",tool="cert_scan"} 2.03` + "\n",
		`agentc_model_tokens_total{app="support",model="scripted:fast",user="alice",type="input"} 410` + "\n",
		`agentc_model_tokens_total{app="support",model="scripted:fast",user="alice",type="output"} 24` + "\n",
		`agentc_model_tokens_total{app="support",model="scripted:fast",user="alice",type="cached"} 400` + "\n",
		`agentc_model_tokens_total{app="support",model="scripted:fast",user="bob",type="input"} 10` + "\n",
		"# TYPE agentc_model_cost_usd_total counter\n",
		`agentc_model_cost_usd_total{app="support",model="scripted:fast",user="alice"} 0.75` + "\n",
		`agentc_model_cost_usd_total{app="support",model="scripted:free",user="alice"} 0` + "\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "step") {
		t.Errorf("a superstep has a series:\n%s", b.String())
	}
}

// Past MaxUserLabels users, the token and cost counters of any new user go
// to the user label OtherUser: a client naming new users cannot grow
// /metrics without end; a user seen before keeps its series.
func TestMetricsUserCardinality(t *testing.T) {
	m := server.NewMetrics()
	for i := range server.MaxUserLabels + 5 {
		m.Tokens("app", "m", fmt.Sprint("u", i), runtime.Usage{PromptTokens: 1})
	}
	m.Cost("app", "m", "u0", 1)
	m.Cost("app", "m", "late", 2)
	var b strings.Builder
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, `agentc_model_tokens_total{app="app",model="m",user="u`); n != 2*server.MaxUserLabels {
		t.Errorf("%d named token series, want %d", n, 2*server.MaxUserLabels)
	}
	for _, want := range []string{
		`agentc_model_tokens_total{app="app",model="m",user="_other",type="input"} 5` + "\n",
		`agentc_model_cost_usd_total{app="app",model="m",user="u0"} 1` + "\n",
		`agentc_model_cost_usd_total{app="app",model="m",user="_other"} 2` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q", want)
		}
	}
}

// TestRunEventsCounted: every event a run hands over is counted under its
// protocol and kind, run after run (a run keeps the counters it found).
func TestRunEventsCounted(t *testing.T) {
	b := backendWith(t, chattyModel{})
	want := map[string]int{}
	for i := range 3 {
		run, err := b.Start(context.Background(), "test", runtime.Invocation{User: "u", Session: fmt.Sprintf("s%d", i), Input: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		for e := range run.Events {
			want[string(e.Kind)]++
		}
	}
	if len(want) < 4 || want[string(runtime.EventModelDelta)] != 9 {
		t.Fatalf("the runs handed over %v", want)
	}
	var out strings.Builder
	if _, err := b.Metrics.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	for kind, n := range want {
		line := fmt.Sprintf(`agentc_events_total{protocol="test",kind=%q} %d`, kind, n)
		if !strings.Contains(out.String(), line+"\n") {
			t.Errorf("no %s in\n%s", line, out.String())
		}
	}
	if got := strings.Count(out.String(), `agentc_events_total{protocol="test"`); got != len(want) {
		t.Errorf("%d event series, want %d:\n%s", got, len(want), out.String())
	}
}
