package telemetry_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/session"
	memstore "github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/runtime/telemetry"
)

// tracer returns a provider exporting synchronously into a recorder.
func tracer(t testing.TB) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func str(s tracetest.SpanStub, key string) string {
	v, _ := attr(s, key)
	return v.Emit()
}

// runSupport runs examples/support's investigate graph with its first test
// block's scripted replies, under ctx, and returns its events. summary,
// when set, stands in for the post-run summary hook.
func runSupport(t *testing.T, ctx context.Context, obs runtime.Observer, summary ...runtime.PostRunHook) []*runtime.Event {
	t.Helper()
	prog := runtimetest.Compile(t, os.DirFS("../../examples"), "support/support.agent")
	o := assemble.Options{Program: prog, Verified: true, Root: "../../examples",
		Env: func(string) (string, bool) { return "", false }, Replay: assemble.DefaultReplay(prog), Observer: obs}
	if len(summary) > 0 {
		o.Summary = summary[0]
	}
	r, err := assemble.New(memstore.New(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	ch, err := r.Run(ctx, runtime.Invocation{User: "u", Session: "s1", Input: "TLS errors on prod"})
	if err != nil {
		t.Fatal(err)
	}
	var evs []*runtime.Event
	for e := range ch {
		evs = append(evs, e)
	}
	if last := evs[len(evs)-1]; last.Kind != runtime.EventRunFinished || last.Status != runtime.StatusInterrupted {
		t.Fatalf("the run ended with %s %s, want run_finished interrupted", last.Kind, last.Status)
	}
	return evs
}

// TestSpanTree: a run of examples/support under a remote parent (an
// incoming traceparent) gives the span tree of spec/telemetry.md: the run
// under the remote span, supersteps under the run, node attempts under
// their superstep, model and tool calls under their node attempt, commits
// under their superstep or the run; GenAI attributes on model and tool
// spans; the ledger's ids on all of them.
func TestSpanTree(t *testing.T) {
	tp, exp := tracer(t)
	h := http.Header{}
	h.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	ctx := telemetry.Extract(context.Background(), h)
	evs := runSupport(t, ctx, telemetry.New(tp, nil, nil))
	spans := exp.GetSpans()

	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
	}
	parent := func(s tracetest.SpanStub) string {
		p, ok := byID[s.Parent.SpanID()]
		if !ok {
			return ""
		}
		return p.Name
	}
	run := evs[0].Run
	events := map[string]*runtime.Event{}
	for _, e := range evs {
		events[e.ID] = e
	}
	counts := map[string]int{}
	var models, tools int
	for _, s := range spans {
		counts[s.Name]++
		if got := str(s, "agentc.run.id"); got != run {
			t.Errorf("%s: agentc.run.id = %q, want %q", s.Name, got, run)
		}
		if s.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" && s.Name != "history.summary" {
			t.Errorf("%s: trace id %s is not the incoming traceparent's", s.Name, s.SpanContext.TraceID())
		}
		p := parent(s)
		switch {
		case s.Name == "invoke_workflow investigate":
			if s.Parent.SpanID().String() != "00f067aa0ba902b7" || !s.Parent.IsRemote() {
				t.Errorf("run span's parent = %v, want the remote span 00f067aa0ba902b7", s.Parent)
			}
			if str(s, "gen_ai.operation.name") != "invoke_workflow" || str(s, "agentc.run.status") != "interrupted" ||
				str(s, "gen_ai.conversation.id") != "s1" {
				t.Errorf("run span attributes: %v", s.Attributes)
			}
			if e := events[str(s, "agentc.event.id")]; e == nil || e.Kind != runtime.EventRunFinished {
				t.Errorf("run span's agentc.event.id %q is not the run_finished event", str(s, "agentc.event.id"))
			}
		case s.Name == "superstep":
			if p != "invoke_workflow investigate" {
				t.Errorf("superstep %s under %q", str(s, "agentc.step"), p)
			}
		case strings.HasPrefix(s.Name, "node "):
			if p != "superstep" {
				t.Errorf("%s under %q, want superstep", s.Name, p)
			}
			if str(s, "agentc.node") != strings.TrimPrefix(s.Name, "node ") || str(s, "agentc.attempt") != "1" {
				t.Errorf("%s attributes: %v", s.Name, s.Attributes)
			}
		case strings.HasPrefix(s.Name, "chat "):
			models++
			if !strings.HasPrefix(p, "node ") || s.SpanKind != trace.SpanKindClient {
				t.Errorf("%s under %q (kind %s)", s.Name, p, s.SpanKind)
			}
			for k, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "scripted", "gen_ai.agent.name": "investigator"} {
				if got := str(s, k); got != want {
					t.Errorf("%s: %s = %q, want %q", s.Name, k, got, want)
				}
			}
			if str(s, "gen_ai.request.model") != strings.TrimPrefix(s.Name, "chat ") {
				t.Errorf("%s: gen_ai.request.model = %q", s.Name, str(s, "gen_ai.request.model"))
			}
			e := events[str(s, "agentc.event.id")]
			if e == nil || e.Kind != runtime.EventModelResponse || e.Node != str(s, "agentc.node") || str(s, "agentc.turn") != itoa(e.Turn) {
				t.Errorf("%s: agentc.event.id %q is not its model_response", s.Name, str(s, "agentc.event.id"))
				continue
			}
			if e.Usage != nil {
				if str(s, "gen_ai.usage.input_tokens") != itoa(e.Usage.PromptTokens) || str(s, "gen_ai.usage.output_tokens") != itoa(e.Usage.CompletionTokens) {
					t.Errorf("%s: usage %v, event %+v", s.Name, s.Attributes, e.Usage)
				}
			}
			if v, _ := attr(s, "gen_ai.response.finish_reasons"); !slices.Equal(v.AsStringSlice(), []string{e.FinishReason}) {
				t.Errorf("%s: finish reasons %v, event %q", s.Name, v.AsStringSlice(), e.FinishReason)
			}
		case strings.HasPrefix(s.Name, "execute_tool "):
			tools++
			if !strings.HasPrefix(p, "node ") {
				t.Errorf("%s under %q", s.Name, p)
			}
			e := events[str(s, "agentc.event.id")]
			if e == nil || e.Kind != runtime.EventToolResult || e.ToolCall.ID != str(s, "gen_ai.tool.call.id") ||
				str(s, "gen_ai.tool.name") != strings.TrimPrefix(s.Name, "execute_tool ") || str(s, "gen_ai.operation.name") != "execute_tool" {
				t.Errorf("%s: attributes %v do not match a tool_result", s.Name, s.Attributes)
			}
		case s.Name == "store.commit":
			if p != "superstep" && p != "invoke_workflow investigate" {
				t.Errorf("store.commit under %q", p)
			}
		case s.Name == "recall.search" || s.Name == "history.compaction":
			// Preload recall before an agent's first turn, compaction of
			// each turn's request: inside the node attempt.
			if !strings.HasPrefix(p, "node ") || str(s, "gen_ai.conversation.id") != "s1" || str(s, "agentc.user") != "u" || str(s, "agentc.app") == "" {
				t.Errorf("%s under %q, attributes %v", s.Name, p, s.Attributes)
			}
			if s.Name == "history.compaction" && (str(s, "agentc.node") != strings.TrimPrefix(p, "node ") || str(s, "agentc.turn") == "") {
				t.Errorf("%s under %q, attributes %v", s.Name, p, s.Attributes)
			}
		case s.Name == "history.summary":
			// A key's first summary is made when its next call opens
			// (under that node attempt); a post-run update runs after the
			// run, coalesced per session: a trace of its own, linked to
			// the run's span, which has ended (TestPostRunSpanLinksToRun).
			if p != "" && !strings.HasPrefix(p, "node ") || str(s, "agentc.history.key") == "" || str(s, "agentc.summary.boundary") != "0" {
				t.Errorf("%s under %q, attributes %v", s.Name, p, s.Attributes)
			}
			if p == "" && (len(s.Links) != 1 || byID[s.Links[0].SpanContext.SpanID()].Name != "invoke_workflow investigate") {
				t.Errorf("post-run %s: links %+v; want the run span", s.Name, s.Links)
			} else if p != "" && len(s.Links) != 0 {
				t.Errorf("%s under %q has links %+v", s.Name, p, s.Links)
			}
		default:
			t.Errorf("unexpected span %q", s.Name)
		}
	}
	// triage (a log_dump round, then the answer), scan (two hosts),
	// write; the run stops at approve's interrupt (no host call: no node
	// attempt span).
	if counts["invoke_workflow investigate"] != 1 || counts["node triage"] != 1 || counts["node scan"] != 2 ||
		counts["node write"] != 1 || counts["node approve"] != 0 || counts["superstep"] != 4 || models != 3 || tools != 3 || counts["store.commit"] < 4 ||
		counts["recall.search"] != 2 || counts["history.compaction"] != 3 || counts["history.summary"] != 2 {
		t.Errorf("span counts %v (models %d, tools %d)", counts, models, tools)
	}
}

func itoa(n int) string { return attribute.IntValue(n).Emit() }

// TestPostRunSpanLinksToRun: the post-run work of a run (its summary
// update, on the post-run workers after the run's span ended) starts a
// trace of its own whose root span links to the run's span; a span under
// that root has its parent and no link.
func TestPostRunSpanLinksToRun(t *testing.T) {
	tp, exp := tracer(t)
	obs := telemetry.New(tp, nil, nil)
	hook := runtime.PostRunFunc(func(ctx context.Context, job runtime.PostRun) error {
		ctx, sp := obs.Start(ctx, &runtime.SpanStart{Kind: runtime.SpanSummary, App: job.Session.App, User: job.Session.User,
			Session: job.Session.Session, Run: job.Run, FilterKey: "triage", MapIndex: -1})
		_, inner := obs.Start(ctx, &runtime.SpanStart{Kind: runtime.SpanRecallLoad, App: job.Session.App, Run: job.Run, MapIndex: -1})
		inner.End(&runtime.SpanEnd{})
		sp.End(&runtime.SpanEnd{})
		return nil
	})
	evs := runSupport(t, context.Background(), obs, hook)
	var run, post, load *tracetest.SpanStub
	spans := exp.GetSpans()
	for i := range spans {
		switch s := &spans[i]; s.Name {
		case "invoke_workflow investigate":
			run = s
		case "history.summary":
			post = s
		case "recall.load":
			load = s
		}
	}
	if run == nil || post == nil || load == nil {
		t.Fatalf("spans %d: run %v, post-run summary %v, its child %v", len(spans), run != nil, post != nil, load != nil)
	}
	if post.Parent.IsValid() || post.SpanContext.TraceID() == run.SpanContext.TraceID() {
		t.Errorf("the post-run span has parent %v in trace %s (the run's: %s), want a root of its own trace",
			post.Parent, post.SpanContext.TraceID(), run.SpanContext.TraceID())
	}
	if len(post.Links) != 1 || post.Links[0].SpanContext.SpanID() != run.SpanContext.SpanID() ||
		post.Links[0].SpanContext.TraceID() != run.SpanContext.TraceID() {
		t.Errorf("the post-run span's links %+v, want the run span %s", post.Links, run.SpanContext.SpanID())
	}
	if str(*post, "agentc.run.id") != evs[0].Run {
		t.Errorf("post-run span: run id %q, want %q", str(*post, "agentc.run.id"), evs[0].Run)
	}
	if load.Parent.SpanID() != post.SpanContext.SpanID() || len(load.Links) != 0 {
		t.Errorf("the span under the post-run root: parent %s, links %+v", load.Parent.SpanID(), load.Links)
	}
}

// TestTraceparentOnHTTPTools: an `http` tool's request carries the
// traceparent of its execute_tool span; with tracing off it carries none.
func TestTraceparentOnHTTPTools(t *testing.T) {
	got := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("traceparent")
		_, _ = io.WriteString(w, `"pong"`)
	}))
	defer srv.Close()
	src := fmt.Sprintf(`workflow w

tool ping "Pings" {
  input  { q: string }
  output string
  run    = http {
    method = "GET"
    url    = "%s/ping"
  }
  effect = read_only
}

state S { q: string, out: string = "" }

graph g(S) input q output out {
  node p = tool ping { q = q } into out
  start -> p
  p -> end
}
`, srv.URL)
	prog := runtimetest.CompileSource(t, "w.agent", src)
	env := func(k string) (string, bool) {
		if k == "AGENTC_ALLOW_HOSTS" {
			return strings.TrimPrefix(srv.URL, "http://"), true
		}
		return "", false
	}
	run := func(obs runtime.Observer) string {
		r, err := assemble.New(memstore.New(), assemble.Options{Program: prog, Verified: true, Env: env, Observer: obs})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close(context.Background())
		ch, err := r.Run(context.Background(), runtime.Invocation{User: "u", Session: "s", Input: "x"})
		if err != nil {
			t.Fatal(err)
		}
		var last *runtime.Event
		for e := range ch {
			last = e
			if e.Error != nil {
				t.Errorf("%s: %s: %s", e.Kind, e.Error.Kind, e.Error.Message)
			}
		}
		if last.Status != runtime.StatusCompleted {
			t.Fatalf("run ended %s", last.Status)
		}
		return <-got
	}
	tp, exp := tracer(t)
	header := run(telemetry.New(tp, nil, nil))
	var tool tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "execute_tool ping" {
			tool = s
		}
	}
	want := fmt.Sprintf("00-%s-%s-01", tool.SpanContext.TraceID(), tool.SpanContext.SpanID())
	if !tool.SpanContext.IsValid() || header != want {
		t.Errorf("traceparent = %q, want the tool span's %q", header, want)
	}
	if header := run(nil); header != "" {
		t.Errorf("tracing off: traceparent = %q, want none", header)
	}
}

// TestServeAcceptsTraceparent: through the server's middleware
// (Config.TraceContext = Extract), a request's traceparent makes the run
// it starts a child of the caller's span.
func TestServeAcceptsTraceparent(t *testing.T) {
	tp, exp := tracer(t)
	prog := runtimetest.CompileSource(t, "w.agent", "workflow w\n\nstate S { q: string }\n\ngraph g(S) input q {\n  node n = set { q = q }\n  start -> n\n  n -> end\n}\n")
	st := memstore.New()
	r, err := assemble.New(st, assemble.Options{Program: prog, Verified: true, Env: func(string) (string, bool) { return "", false },
		Observer: telemetry.New(tp, nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	b := &server.Backend{Runner: r, Docs: st, Sessions: session.New(st), Clock: &runtimetest.Clock{RealTimers: true}, Metrics: server.NewMetrics()}
	start := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		run, err := b.Start(req.Context(), "test", runtime.Invocation{User: server.UserFrom(req.Context()), Session: "s", Input: "x"})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		for range run.Events {
		}
	})
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Backend: b, Tokens: map[string]string{"tok": "u"},
		Mounts: []server.Mount{{Pattern: "/start", Protocol: "test", Handler: start}}, TraceContext: telemetry.Extract})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	for _, tc := range []struct {
		name, traceparent string
		remote            bool
	}{
		{"with traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", true},
		{"without", "", false},
		{"malformed", "00-zz-b7ad6b7169203331-01", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp.Reset()
			req, _ := http.NewRequest("POST", hs.URL+"/start", strings.NewReader("{}"))
			req.Header.Set("Authorization", "Bearer tok")
			if tc.traceparent != "" {
				req.Header.Set("traceparent", tc.traceparent)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			var run *tracetest.SpanStub
			spans := exp.GetSpans()
			for i := range spans {
				if spans[i].Name == "invoke_workflow g" {
					run = &spans[i]
				}
			}
			switch {
			case run == nil:
				t.Fatalf("no run span in %d spans", len(spans))
			case tc.remote && (run.Parent.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || run.Parent.SpanID().String() != "b7ad6b7169203331" || !run.Parent.IsRemote()):
				t.Errorf("run span's parent = %+v, want the request's traceparent", run.Parent)
			case !tc.remote && run.Parent.IsValid():
				t.Errorf("run span has a parent %+v", run.Parent)
			}
		})
	}
}

// TestMetricsOfARun: with a Recorder and no tracer, a run of
// examples/support reports its run, node, model and tool durations and its
// model tokens, as the server's /metrics shows them.
func TestMetricsOfARun(t *testing.T) {
	m := server.NewMetrics()
	in, out, cost := 0, 0, 0.0
	for _, e := range runSupport(t, context.Background(), telemetry.New(nil, m, nil)) {
		if e.Kind == runtime.EventModelResponse && e.Usage != nil {
			in, out = in+e.Usage.PromptTokens, out+e.Usage.CompletionTokens
		}
		if e.Kind == runtime.EventModelResponse && e.Cost != nil {
			cost += *e.Cost
		}
	}
	if cost <= 0 {
		t.Fatalf("the run's model_response events have no cost (examples/common/models.agent prices fast)")
	}
	if in == 0 || out == 0 {
		t.Fatalf("the run's model_response events report no usage (%d, %d)", in, out)
	}
	var b strings.Builder
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`agentc_run_duration_seconds_count{app="support",runnable="investigate"} 1`,
		`agentc_node_duration_seconds_count{app="support",node="scan"} 2`,
		`agentc_node_duration_seconds_count{app="support",node="triage"} 1`,
		`agentc_model_duration_seconds_count{app="support",model="scripted:fast"} 3`,
		`agentc_tool_duration_seconds_count{app="support",tool="cert_scan"} 2`,
		`agentc_tool_duration_seconds_count{app="support",tool="log_dump"} 1`,
		`agentc_model_tokens_total{app="support",model="scripted:fast",user="u",type="input"} ` + itoa(in),
		`agentc_model_tokens_total{app="support",model="scripted:fast",user="u",type="output"} ` + itoa(out),
	} {
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("missing %s in\n%s", want, b.String())
		}
	}
	const series = `agentc_model_cost_usd_total{app="support",model="scripted:fast",user="u"} `
	_, rest, ok := strings.Cut(b.String(), series)
	line, _, _ := strings.Cut(rest, "\n")
	if got, err := strconv.ParseFloat(line, 64); !ok || err != nil || math.Abs(got-cost) > 1e-12 {
		t.Errorf("cost series %q, want %v, in\n%s", line, cost, b.String())
	}
}

// A model span's cost reaches the Recorder as agentc_model_cost_usd_total,
// summed by app and model; a call without a cost (an unpriced model) adds
// no series.
func TestModelCostMetric(t *testing.T) {
	m := server.NewMetrics()
	tp, exp := tracer(t)
	o := telemetry.New(tp, m, nil)
	for _, c := range []struct {
		model string
		cost  *float64
	}{{"gpt-4o-mini", new(0.125)}, {"gpt-4o-mini", new(0.5)}, {"local", nil}} {
		_, sp := o.Start(context.Background(), &runtime.SpanStart{Kind: runtime.SpanModel, App: "shop", User: "ann", Model: runtime.ModelInfo{Model: c.model}})
		sp.End(&runtime.SpanEnd{Usage: runtime.Usage{PromptTokens: 10, CompletionTokens: 1}, Cost: c.cost})
	}
	var b strings.Builder
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if want := `agentc_model_cost_usd_total{app="shop",model="gpt-4o-mini",user="ann"} 0.625` + "\n"; !strings.Contains(b.String(), want) {
		t.Errorf("missing %q in\n%s", want, b.String())
	}
	if strings.Contains(b.String(), `agentc_model_cost_usd_total{app="shop",model="local"`) {
		t.Errorf("an unpriced model has a cost series:\n%s", b.String())
	}
	var costs []string
	for _, s := range exp.GetSpans() {
		if v, ok := attr(s, "agentc.cost.usd"); ok {
			costs = append(costs, v.Emit())
		} else {
			costs = append(costs, "none")
		}
	}
	if want := []string{"0.125", "0.5", "none"}; !slices.Equal(costs, want) {
		t.Errorf("span costs %v, want %v", costs, want)
	}
}
