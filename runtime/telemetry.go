package runtime

import (
	"context"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/vm"
)

// Telemetry hooks (spec/telemetry.md). The Runner opens a span around each
// run, superstep, node attempt, model call, tool call and store commit and
// ends it with its outcome; runtime/telemetry turns them into OpenTelemetry
// spans and metrics. With RunnerConfig.Observer nil (the default) no site
// builds a SpanStart or calls anything.

// Observer observes the work of runs. Start is called from the goroutine
// doing the work (VM workers, concurrently); the returned context carries
// the span to the work's callees (model and tool calls see it in their
// ctx). Implementations must be safe for concurrent use.
type Observer interface {
	Start(ctx context.Context, s *SpanStart) (context.Context, Span)
}

// Span is one observed piece of work. Stop marks its end time without
// recording its outcome (a tool call of a model reply ends before its
// result event exists); End records the outcome and ends it, at the Stop
// time when Stop was called. Each is called at most once, Stop before End.
type Span interface {
	Stop()
	End(e *SpanEnd)
}

// SpanKind says what a span covers.
type SpanKind uint8

// Span kinds.
const (
	SpanRun          SpanKind = iota + 1 // one invocation's execution of a run
	SpanStep                             // one superstep of the run's graph
	SpanNode                             // one attempt of one node (or map item)
	SpanModel                            // one model call (one turn of an llm loop)
	SpanTool                             // one tool call (a tool node's, or a model's request)
	SpanCommit                           // one synced store batch (a step's commit, or a run's end)
	SpanSummary                          // one summary update of a history key (runtime/history)
	SpanCompaction                       // the compaction of one request's tool results (runtime/history)
	SpanRelief                           // one synchronous pressure relief before a model call (runtime/history)
	SpanRecallSearch                     // one search of the session ledger (runtime/recall)
	SpanRecallLoad                       // one load of a ledger window (runtime/recall)
)

var spanKindNames = [...]string{"", "run", "step", "node", "model", "tool", "commit", "summary", "compaction", "relief", "recall_search", "recall_load"}

func (k SpanKind) String() string { return types.EnumName(k, spanKindNames[:], "span") }

// spanLinkKey keys the context WithSpanLink attaches.
type spanLinkKey struct{}

// WithSpanLink returns ctx carrying to, the context of a span that work
// under ctx follows from but does not belong to (a run's post-run work
// starts when the run's span has ended): an Observer links the root spans
// it starts under ctx (those with no parent span) to to's span.
func WithSpanLink(ctx, to context.Context) context.Context {
	return context.WithValue(ctx, spanLinkKey{}, to)
}

// SpanLink returns the context WithSpanLink attached to ctx, or nil.
func SpanLink(ctx context.Context) context.Context {
	to, _ := ctx.Value(spanLinkKey{}).(context.Context)
	return to
}

// SpanStart describes a span as it starts. Parent, when set, is the
// context of the parent span (a superstep's, which no callee context
// carries); else the parent is ctx's span.
type SpanStart struct {
	Kind   SpanKind
	Parent context.Context

	App, Session, Run, Invocation string
	Runnable                      string // SpanRun
	Step                          uint64
	Node                          string // relative to the runnable
	MapIndex                      int    // -1 outside a map
	Attempt                       uint32
	Call                          string // SpanNode: "tool", "llm", "agent", "graph"

	// SpanModel: the agent, the declared model and what the provider
	// calls it, the turn and the request's sampling parameters.
	Agent       string
	Model       ModelInfo
	Turn        int
	MaxTokens   int
	Temperature *float64
	TopP        *float64
	Seed        *int64

	// SpanTool.
	Tool, CallID string

	// SpanCommit: the events in the batch.
	Events int

	// SpanSummary, SpanCompaction, SpanRelief, SpanRecallSearch,
	// SpanRecallLoad (runtime/history, runtime/recall): the user and the
	// history filter key (Node is the calling node when known).
	User, FilterKey string
}

// SpanEnd is a span's outcome. Err, when set, failed it.
type SpanEnd struct {
	EventID string // the ledger event that records the work, if any
	Err     *ErrorInfo

	Status RunStatus // SpanRun
	Step   uint64    // SpanRun: the last step

	// SpanModel.
	Usage         Usage
	Cost          *float64 // USD, when the model declares a price
	FinishReason  string
	ResponseModel string

	// SpanSummary, SpanRelief: the ledger sequence the summary now covers
	// up to (0: it did not advance). SpanCompaction: the messages
	// replaced. SpanRecallSearch: the cards found; SpanRecallLoad: the
	// events loaded.
	Boundary uint64
	Count    int
}

// stepSpan is the open superstep's span.
type stepSpan struct {
	step uint64
	ctx  context.Context
	span Span
}

// openStep opens the span of superstep s at its first node_started (on the
// scheduler goroutine, before the step's tasks reach the workers).
func (a *activeRun) openStep(s uint64) {
	if cur := a.stepObs.Load(); cur != nil {
		if cur.step == s {
			return
		}
		a.endStep(nil) // not reached: a step ends with its commit or the run
	}
	ctx, sp := a.r.obs.Start(a.runCtx, &SpanStart{Kind: SpanStep, App: a.key.App, Session: a.key.Session, Run: a.id,
		Invocation: a.inv, Step: s, MapIndex: -1})
	a.stepObs.Store(&stepSpan{step: s, ctx: ctx, span: sp})
}

// endStep ends the open superstep's span, if any.
func (a *activeRun) endStep(err *ErrorInfo) {
	if cur := a.stepObs.Swap(nil); cur != nil {
		cur.span.End(&SpanEnd{Err: err})
	}
}

// startCommit opens the span of a store batch of n events under parent.
func (a *activeRun) startCommit(parent context.Context, n int) Span {
	var step uint64
	if st := a.stepObs.Load(); st != nil {
		step = st.step
	}
	_, sp := a.r.obs.Start(parent, &SpanStart{Kind: SpanCommit, App: a.key.App, Session: a.key.Session, Run: a.id,
		Invocation: a.inv, Step: step, MapIndex: -1, Events: n})
	return sp
}

// storeErrorInfo describes a store failure for a span (nil: none).
func storeErrorInfo(err error) *ErrorInfo {
	if err == nil {
		return nil
	}
	return &ErrorInfo{Kind: string(vm.KindInternal), Message: err.Error()}
}

// errorInfo describes a call's failure for a span or a tool_result event
// (nil: none): its kind when it is a *vm.Error, timeout or canceled when
// it is the context's, else def.
func errorInfo(err error, node string, def vm.ErrorKind) *ErrorInfo {
	if err == nil {
		return nil
	}
	e := vm.AsError(err, def, node)
	return &ErrorInfo{Kind: string(e.Kind), Message: e.Message, Node: node}
}

// observeCall runs one node attempt inside its span: under the open
// superstep's span for a node of the run's graph, under ctx's (the calling
// node attempt's) inside a sub-run.
func (h *host) observeCall(ctx context.Context, obs Observer, c *callCtx, req vm.CallRequest) (types.Value, error) {
	a := h.a
	var parent context.Context
	if h.scope == nil {
		if st := a.stepObs.Load(); st != nil && st.step == req.Step {
			parent = st.ctx
		}
	}
	ctx, sp := obs.Start(ctx, &SpanStart{Kind: SpanNode, Parent: parent, App: a.key.App, Session: a.key.Session,
		Run: a.id, Invocation: a.inv, Step: c.step, Node: c.node, MapIndex: c.item, Attempt: req.Attempt, Call: req.Kind.String()})
	v, err := h.dispatch(ctx, c, req)
	def := vm.KindToolError
	if req.Kind == bytecode.CallLLM || req.Kind == bytecode.CallAgent {
		def = vm.KindModelError
	}
	sp.End(&SpanEnd{Err: errorInfo(err, c.node, def)})
	return v, err
}

// startTool opens the span of a tool call of c.
func (h *host) startTool(ctx context.Context, obs Observer, c *callCtx, tool, callID string, turn int) (context.Context, Span) {
	a := h.a
	return obs.Start(ctx, &SpanStart{Kind: SpanTool, App: a.key.App, Session: a.key.Session, Run: a.id, Invocation: a.inv,
		Step: c.step, Node: c.node, MapIndex: c.item, Attempt: c.attempt, Turn: turn, Tool: tool, CallID: callID})
}
