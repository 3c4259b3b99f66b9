// Package telemetry implements runtime.Observer over the OpenTelemetry Go
// SDK (spec/telemetry.md): one span per run, superstep, node attempt,
// model call, tool call and store commit, with the GenAI semantic
// conventions on model and tool spans and the ledger's ids on all of them;
// and, optionally, the same spans' latencies and token counts in a
// Recorder (the server's /metrics). Configure builds the tracer provider
// from the standard OTEL_* environment variables.
package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentc/agentc/runtime"
)

// Scope is the instrumentation scope of agentc's spans.
const Scope = "github.com/agentc/agentc/runtime"

// Recorder receives the duration of every observed span and the token
// usage and cost of model calls (server.Metrics implements it). name is the
// runnable (run), node path (node), provider model id (model) or tool
// name (tool); kind is "run", "node", "model" or "tool"; user is the
// session's user.
type Recorder interface {
	Duration(kind, app, name string, d time.Duration)
	Tokens(app, model, user string, u runtime.Usage)
	// Cost adds a priced model call's cost in USD (spec/events.md, cost).
	Cost(app, model, user string, usd float64)
}

// Observer is a runtime.Observer. The zero value observes nothing; set
// Tracer for spans and Recorder for metrics.
type Observer struct {
	Tracer   trace.Tracer // nil: no spans
	Recorder Recorder     // nil: no metrics
	// Now is the clock of durations given to Recorder (nil: time.Now).
	Now func() time.Time
}

// New returns an observer tracing through tp (nil: no spans) and
// recording into rec (nil: no metrics).
func New(tp trace.TracerProvider, rec Recorder, now func() time.Time) *Observer {
	o := &Observer{Recorder: rec, Now: now}
	if tp != nil {
		o.Tracer = tp.Tracer(Scope)
	}
	return o
}

func (o *Observer) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// span is one observed span.
type span struct {
	o       *Observer
	kind    runtime.SpanKind
	app     string
	user    string
	name    string // the Recorder's name
	start   time.Time
	stopped time.Time
	ot      trace.Span // nil without a Tracer
}

// Start implements runtime.Observer.
func (o *Observer) Start(ctx context.Context, s *runtime.SpanStart) (context.Context, runtime.Span) {
	if o.Tracer == nil && (o.Recorder == nil || !recorded(s.Kind)) {
		return ctx, nopSpan{} // nothing to record
	}
	sp := &span{o: o, kind: s.Kind, app: s.App, user: s.User}
	switch s.Kind {
	case runtime.SpanRun:
		sp.name = s.Runnable
	case runtime.SpanNode:
		sp.name = s.Node
	case runtime.SpanModel:
		sp.name = s.Model.Model
	case runtime.SpanTool:
		sp.name = s.Tool
	}
	if o.Recorder != nil {
		sp.start = o.now()
	}
	if o.Tracer == nil {
		return ctx, sp
	}
	parent := ctx
	if s.Parent != nil {
		parent = trace.ContextWithSpan(ctx, trace.SpanFromContext(s.Parent))
	}
	name, kind, attrs := describe(s)
	opts := []trace.SpanStartOption{trace.WithSpanKind(kind), trace.WithAttributes(attrs...)}
	if !trace.SpanContextFromContext(parent).IsValid() {
		to := runtime.SpanLink(parent)
		// Work that follows a span that has ended (a run's post-run
		// work): a trace of its own, linked to that span.
		if sc := trace.SpanContextFromContext(to); to != nil && sc.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
		}
	}
	ctx, sp.ot = o.Tracer.Start(parent, name, opts...)
	return ctx, sp
}

// recorded reports whether a Recorder gets the durations of kind's spans:
// runs, node attempts, model and tool calls.
func recorded(k runtime.SpanKind) bool {
	return k == runtime.SpanRun || k == runtime.SpanNode || k == runtime.SpanModel || k == runtime.SpanTool
}

// nopSpan is a span nothing records.
type nopSpan struct{}

func (nopSpan) Stop()                {}
func (nopSpan) End(*runtime.SpanEnd) {}

// Stop implements runtime.Span.
func (sp *span) Stop() { sp.stopped = time.Now() }

// End implements runtime.Span.
func (sp *span) End(e *runtime.SpanEnd) {
	if rec := sp.o.Recorder; rec != nil && recorded(sp.kind) {
		rec.Duration(sp.kind.String(), sp.app, sp.name, sp.o.now().Sub(sp.start))
		if sp.kind == runtime.SpanModel && e.Usage != (runtime.Usage{}) {
			rec.Tokens(sp.app, sp.name, sp.user, e.Usage)
		}
		if sp.kind == runtime.SpanModel && e.Cost != nil {
			rec.Cost(sp.app, sp.name, sp.user, *e.Cost)
		}
	}
	if sp.ot == nil {
		return
	}
	var attrs []attribute.KeyValue
	if e.EventID != "" {
		attrs = append(attrs, attribute.String("agentc.event.id", e.EventID))
	}
	switch sp.kind {
	case runtime.SpanRun:
		attrs = append(attrs, attribute.String("agentc.run.status", string(e.Status)), attribute.Int64("agentc.step", int64(e.Step)))
	case runtime.SpanSummary, runtime.SpanRelief:
		attrs = append(attrs, attribute.Int64("agentc.summary.boundary", int64(e.Boundary)))
	case runtime.SpanCompaction:
		attrs = append(attrs, attribute.Int("agentc.compaction.replaced", e.Count))
	case runtime.SpanRecallSearch, runtime.SpanRecallLoad:
		attrs = append(attrs, attribute.Int("agentc.recall.results", e.Count))
	case runtime.SpanModel:
		if e.Err == nil {
			attrs = append(attrs,
				attribute.Int("gen_ai.usage.input_tokens", e.Usage.PromptTokens),
				attribute.Int("gen_ai.usage.output_tokens", e.Usage.CompletionTokens))
			if e.Usage.CachedTokens > 0 {
				attrs = append(attrs, attribute.Int("gen_ai.usage.cache_read.input_tokens", e.Usage.CachedTokens))
			}
			if e.Cost != nil {
				attrs = append(attrs, attribute.Float64("agentc.cost.usd", *e.Cost))
			}
			if e.ResponseModel != "" {
				attrs = append(attrs, attribute.String("gen_ai.response.model", e.ResponseModel))
			}
			if e.FinishReason != "" {
				attrs = append(attrs, attribute.StringSlice("gen_ai.response.finish_reasons", []string{e.FinishReason}))
			}
		}
	}
	if e.Err != nil {
		attrs = append(attrs, attribute.String("error.type", e.Err.Kind))
		sp.ot.SetStatus(codes.Error, e.Err.Message)
	}
	sp.ot.SetAttributes(attrs...)
	if !sp.stopped.IsZero() {
		sp.ot.End(trace.WithTimestamp(sp.stopped))
		return
	}
	sp.ot.End()
}

// describe returns a span's name, kind and start attributes.
func describe(s *runtime.SpanStart) (string, trace.SpanKind, []attribute.KeyValue) {
	attrs := make([]attribute.KeyValue, 0, 12)
	attrs = append(attrs, attribute.String("agentc.run.id", s.Run))
	if s.Kind >= runtime.SpanSummary {
		return describeContext(s, attrs)
	}
	if s.Kind != runtime.SpanRun {
		attrs = append(attrs, attribute.Int64("agentc.step", int64(s.Step)))
	}
	node := func() {
		attrs = append(attrs, attribute.String("agentc.node", s.Node), attribute.Int64("agentc.attempt", int64(s.Attempt)))
		if s.MapIndex >= 0 {
			attrs = append(attrs, attribute.Int("agentc.map_index", s.MapIndex))
		}
		if s.Turn > 0 {
			attrs = append(attrs, attribute.Int("agentc.turn", s.Turn))
		}
	}
	switch s.Kind {
	case runtime.SpanRun:
		attrs = append(attrs,
			attribute.String("gen_ai.operation.name", "invoke_workflow"),
			attribute.String("gen_ai.workflow.name", s.Runnable),
			attribute.String("gen_ai.conversation.id", s.Session),
			attribute.String("agentc.app", s.App),
			attribute.String("agentc.invocation.id", s.Invocation))
		return "invoke_workflow " + s.Runnable, trace.SpanKindInternal, attrs
	case runtime.SpanStep:
		return "superstep", trace.SpanKindInternal, attrs
	case runtime.SpanNode:
		node()
		if s.Call != "" {
			attrs = append(attrs, attribute.String("agentc.call", s.Call))
		}
		return "node " + s.Node, trace.SpanKindInternal, attrs
	case runtime.SpanModel:
		node()
		attrs = append(attrs,
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.provider.name", s.Model.Provider),
			attribute.String("gen_ai.request.model", s.Model.Model),
			attribute.String("gen_ai.agent.name", s.Agent))
		if s.MaxTokens > 0 {
			attrs = append(attrs, attribute.Int("gen_ai.request.max_tokens", s.MaxTokens))
		}
		if s.Temperature != nil {
			attrs = append(attrs, attribute.Float64("gen_ai.request.temperature", *s.Temperature))
		}
		if s.TopP != nil {
			attrs = append(attrs, attribute.Float64("gen_ai.request.top_p", *s.TopP))
		}
		if s.Seed != nil {
			attrs = append(attrs, attribute.Int64("gen_ai.request.seed", *s.Seed))
		}
		return "chat " + s.Model.Model, trace.SpanKindClient, attrs
	case runtime.SpanTool:
		node()
		attrs = append(attrs,
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", s.Tool),
			attribute.String("gen_ai.tool.call.id", s.CallID),
			attribute.String("gen_ai.tool.type", "function"))
		return "execute_tool " + s.Tool, trace.SpanKindInternal, attrs
	case runtime.SpanCommit:
		attrs = append(attrs, attribute.Int("agentc.store.events", s.Events))
		return "store.commit", trace.SpanKindInternal, attrs
	}
	return "agentc " + strconv.Itoa(int(s.Kind)), trace.SpanKindInternal, attrs
}

// contextSpanNames are the names of the context services' spans.
var contextSpanNames = map[runtime.SpanKind]string{
	runtime.SpanSummary: "history.summary", runtime.SpanCompaction: "history.compaction", runtime.SpanRelief: "history.relief",
	runtime.SpanRecallSearch: "recall.search", runtime.SpanRecallLoad: "recall.load",
}

// describeContext describes a span of runtime/history or runtime/recall:
// the session, user, node and history key it works on.
func describeContext(s *runtime.SpanStart, attrs []attribute.KeyValue) (string, trace.SpanKind, []attribute.KeyValue) {
	attrs = append(attrs,
		attribute.String("agentc.app", s.App),
		attribute.String("gen_ai.conversation.id", s.Session),
		attribute.String("agentc.user", s.User),
		attribute.String("agentc.history.key", s.FilterKey))
	if s.Node != "" {
		attrs = append(attrs, attribute.String("agentc.node", s.Node))
	}
	if s.Turn > 0 {
		attrs = append(attrs, attribute.Int("agentc.turn", s.Turn))
	}
	name, ok := contextSpanNames[s.Kind]
	if !ok {
		name = "agentc " + s.Kind.String()
	}
	return name, trace.SpanKindInternal, attrs
}

// Propagator is the W3C trace context (traceparent, tracestate).
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Inject writes the W3C trace context of ctx's span into h (nothing when
// ctx carries no span).
func Inject(ctx context.Context, h http.Header) {
	Propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// Extract returns ctx with the remote span context of h's traceparent
// (ctx itself when h has none or it is malformed).
func Extract(ctx context.Context, h http.Header) context.Context {
	return Propagator.Extract(ctx, propagation.HeaderCarrier(h))
}
