package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/runtime/store/pebble"
)

// The programs of these tests are built by hand with the builder API the
// compiler uses. The main one is
//
//	state S { question: string, host: string = "", scan: Scan?, report: R, approved: bool = false }
//	graph g(S) input question output report {
//	  node prep    = set { host = question }
//	  node lookup  = tool lookup { host = host } into scan
//	  node write   = llm writer { prompt = question } into report
//	  node approve = interrupt "Publish?" returns bool into approved
//	  start -> prep -> lookup -> write -> approve -> end
//	}
//
// where R is string (or a record, for structured output) and the agent
// writer { model = fast, tools = [lookup], instruction = "You write reports." }.
// Options drop nodes to make smaller graphs.

type progOpts struct {
	noPrep, noLookup, noInterrupt bool
	report                        *types.Type // the report field's type (default string)
	maxTurns                      uint32
	lookupEffect                  bytecode.Effect
}

var scanType = mustRecord("Scan", []types.Field{{Name: "host", Type: types.StringType}, {Name: "ok", Type: types.BoolType}})
var lookupIn = mustRecord("lookup_input", []types.Field{{Name: "host", Type: types.StringType}})
var verdictType = mustRecord("Verdict", []types.Field{{Name: "title", Type: types.StringType}, {Name: "score", Type: types.IntType}})

func mustRecord(name string, fs []types.Field) *types.Type {
	t, err := types.NewRecord(name, fs)
	if err != nil {
		panic(err)
	}
	return t
}

func buildProgram(t testing.TB, o progOpts) *bytecode.Program {
	t.Helper()
	if o.report == nil {
		o.report = types.StringType
	}
	if o.lookupEffect == 0 {
		o.lookupEffect = bytecode.EffectReadOnly
	}
	pb := bytecode.NewProgramBuilder()
	p := pb.Program()
	p.Workflow = "support"
	pb.File("test.agent")
	cnst := func(v types.Value) uint32 {
		i, err := pb.Const(v)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	fields := []bytecode.StateField{
		{Name: "question", Type: pb.Type(types.StringType), Reducer: bytecode.ReduceReplace},
		{Name: "host", Type: pb.Type(types.StringType), Reducer: bytecode.ReduceReplace, HasDefault: true, Default: cnst(types.MakeString(""))},
		{Name: "scan", Type: pb.Type(types.OptionalOf(scanType)), Reducer: bytecode.ReduceReplace},
		{Name: "report", Type: pb.Type(types.OptionalOf(o.report)), Reducer: bytecode.ReduceReplace},
		{Name: "approved", Type: pb.Type(types.BoolType), Reducer: bytecode.ReduceReplace, HasDefault: true, Default: cnst(types.MakeBool(false))},
	}
	p.States = append(p.States, bytecode.State{Name: "S", Fields: fields})
	chunk := func(name string, state int32, emit func(c *bytecode.ChunkBuilder)) uint32 {
		c := pb.NewChunk(name, state, 0)
		c.SetSpan(bytecode.Span{StartLine: 1, StartCol: 1, EndLine: 1, EndCol: 2})
		emit(c)
		i, err := c.Finish()
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	load := func(f uint32) uint32 {
		return chunk(fmt.Sprintf("load.%d", f), 0, func(c *bytecode.ChunkBuilder) { c.Emit(bytecode.LOAD, f); c.Emit(bytecode.RETURN, 0) })
	}
	constChunk := func(v types.Value) uint32 {
		return chunk("const", bytecode.None, func(c *bytecode.ChunkBuilder) { c.Const(v); c.Emit(bytecode.RETURN, 0) })
	}

	p.Tools = append(p.Tools, bytecode.Tool{Name: "lookup", Doc: "Looks a host up", Input: pb.Type(lookupIn), Output: pb.Type(scanType),
		Effect: o.lookupEffect, Impl: bytecode.ToolImpl{Kind: bytecode.ImplBuiltin, Builtin: "lookup"}})
	p.Models = append(p.Models, bytecode.Model{Name: "fast", Provider: "openai"})
	maxTurns := o.maxTurns
	if maxTurns == 0 {
		maxTurns = 4
	}
	p.Agents = append(p.Agents, bytecode.Agent{Name: "writer", Kind: bytecode.AgentLLM, Model: 0,
		Instruction: int32(constChunk(types.MakeString("You write reports."))), Tools: []uint32{0},
		MaxTurns: maxTurns, Until: bytecode.None, Graph: bytecode.None})

	g := bytecode.Graph{Name: "g", State: 0, Input: 0, Output: 3}
	node := func(n bytecode.Node) uint32 {
		if n.Catch == 0 {
			n.Catch = bytecode.None
		}
		if n.Effect == 0 {
			n.Effect = bytecode.EffectReadOnly
		}
		g.Nodes = append(g.Nodes, n)
		return uint32(len(g.Nodes) - 1)
	}
	node(bytecode.Node{Name: "start", Kind: bytecode.NodeStart, Into: bytecode.None})
	end := node(bytecode.Node{Name: "end", Kind: bytecode.NodeEnd, Into: bytecode.None})
	var chain []uint32
	if !o.noPrep {
		chain = append(chain, node(bytecode.Node{Name: "prep", Kind: bytecode.NodeSet, Into: bytecode.None,
			Set: []bytecode.Assign{{Field: 1, Code: load(0)}}}))
	}
	if !o.noLookup {
		chain = append(chain, node(bytecode.Node{Name: "lookup", Kind: bytecode.NodeTool, Into: 2, Effect: o.lookupEffect,
			Call: bytecode.Call{Kind: bytecode.CallTool, Callee: 0, Args: []bytecode.Arg{{Name: "host", Code: load(1)}}}}))
	}
	chain = append(chain, node(bytecode.Node{Name: "write", Kind: bytecode.NodeLLM, Into: 3, Effect: o.lookupEffect,
		Call: bytecode.Call{Kind: bytecode.CallLLM, Callee: 0, Args: []bytecode.Arg{{Name: "prompt", Code: load(0)}}}}))
	if !o.noInterrupt {
		chain = append(chain, node(bytecode.Node{Name: "approve", Kind: bytecode.NodeInterrupt, Into: 4,
			Interrupt: bytecode.InterruptSpec{Prompt: constChunk(types.MakeString("Publish?")), Resume: pb.Type(types.BoolType)}}))
	}
	prev := uint32(0)
	for _, n := range append(chain, end) {
		g.Nodes[prev].Edges = append(g.Nodes[prev].Edges, bytecode.Edge{Kind: bytecode.EdgeAlways, Cond: bytecode.None, Target: n, Else: bytecode.None})
		prev = n
	}
	p.Graphs = append(p.Graphs, g)
	if _, err := bytecode.Encode(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// testClock advances a microsecond on every reading. Timers never fire
// (the test programs have no timeouts).
type testClock struct{ n atomic.Int64 }

var clockBase = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func (c *testClock) Now() time.Time {
	return clockBase.Add(time.Duration(c.n.Add(1)) * time.Microsecond)
}
func (c *testClock) AfterFunc(d time.Duration, f func()) func() bool {
	return func() bool { return true }
}

type testEntropy struct{ n atomic.Uint64 }

func (e *testEntropy) Uint64() uint64 { return e.n.Add(1) * 0x9E3779B97F4A7C15 }

// fakeModel answers with a function of the request.
type fakeModel struct {
	name  string
	reply func(ctx context.Context, req *ModelRequest, onDelta func(string)) (*ModelResponse, error)
	calls atomic.Int64
	mu    sync.Mutex
	seen  []*ModelRequest // copies of the requests, when record is set
	rec   bool
}

func (m *fakeModel) Info() ModelInfo {
	return ModelInfo{Name: m.name, Provider: "fake", Model: "fake:" + m.name}
}

func (m *fakeModel) Generate(ctx context.Context, req *ModelRequest, onDelta func(string)) (*ModelResponse, error) {
	m.calls.Add(1)
	if m.rec {
		c := *req
		c.Messages = slices.Clone(req.Messages)
		m.mu.Lock()
		m.seen = append(m.seen, &c)
		m.mu.Unlock()
	}
	return m.reply(ctx, req, onDelta)
}

func (m *fakeModel) requests() []*ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.seen)
}

// textReply streams text in pieces and returns it.
func textReply(text string, pieces int) func(context.Context, *ModelRequest, func(string)) (*ModelResponse, error) {
	return func(ctx context.Context, req *ModelRequest, onDelta func(string)) (*ModelResponse, error) {
		if onDelta != nil && pieces > 0 {
			step := max(1, len(text)/pieces)
			for i := 0; i < len(text); i += step {
				onDelta(text[i:min(len(text), i+step)])
			}
		}
		return &ModelResponse{Text: text, FinishReason: "stop", Model: "fake:fast", Usage: Usage{PromptTokens: 10, CompletionTokens: 5}}, nil
	}
}

// funcTool is a Tool backed by a function.
type funcTool struct {
	name   string
	effect Effect
	fn     func(ctx context.Context, req ToolRequest) (json.RawMessage, error)
	calls  atomic.Int64
}

func (t *funcTool) Spec() ToolSpec { return ToolSpec{Name: t.name} }
func (t *funcTool) Effect() Effect { return t.effect }
func (t *funcTool) Call(ctx context.Context, req ToolRequest) (json.RawMessage, error) {
	t.calls.Add(1)
	return t.fn(ctx, req)
}

func lookupTool() *funcTool {
	return &funcTool{name: "lookup", effect: ReadOnly, fn: func(ctx context.Context, req ToolRequest) (json.RawMessage, error) {
		var in struct{ Host string }
		if err := json.Unmarshal(req.Args, &in); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"host": in.Host, "ok": true})
	}}
}

// backends are the stores every behavioural test runs against.
var backends = []struct {
	name string
	open func(t testing.TB) store.Store
}{
	{"memory", func(t testing.TB) store.Store { return memory.New() }},
	{"pebble", func(t testing.TB) store.Store {
		st, err := pebble.Open(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
}

type fixture struct {
	t     testing.TB
	st    store.Store
	r     *Runner
	model *fakeModel
	tool  *funcTool
}

func newFixture(t testing.TB, st store.Store, p *bytecode.Program, model *fakeModel, tool *funcTool, tweak func(*RunnerConfig)) *fixture {
	t.Helper()
	if model == nil {
		model = &fakeModel{name: "fast", reply: textReply("The report.", 3)}
	}
	if tool == nil {
		tool = lookupTool()
	}
	cfg := RunnerConfig{
		Store: st, Program: p, Models: map[string]Model{"fast": model}, Tools: map[string]Tool{"lookup": tool},
		Clock: &testClock{}, Entropy: &testEntropy{},
	}
	if tweak != nil {
		tweak(&cfg)
	}
	r, err := NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("close runner: %v", err)
		}
		st.Close()
	})
	return &fixture{t: t, st: st, r: r, model: model, tool: tool}
}

// collect runs inv and returns every event until the channel closes.
func (f *fixture) collect(ctx context.Context, inv Invocation) []*Event {
	f.t.Helper()
	ch, err := f.r.Run(ctx, inv)
	if err != nil {
		f.t.Fatalf("run: %v", err)
	}
	return drain(f.t, ch)
}

func drain(t testing.TB, ch <-chan *Event) []*Event {
	t.Helper()
	var out []*Event
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, e)
		case <-timeout:
			t.Fatalf("events did not end; got %d: %v", len(out), kinds(out))
			return out
		}
	}
}

func kinds(es []*Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = string(e.Kind)
		if e.Node != "" {
			out[i] += "(" + e.Node + ")"
		}
	}
	return out
}

// ledger returns the session's stored events, decoded, with their seqs.
func (f *fixture) ledger(user, session string) []*Event {
	f.t.Helper()
	key := store.SessionKey{App: f.r.App(), User: user, Session: session}
	entries, err := f.st.ListEvents(context.Background(), key, 0, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	out := make([]*Event, len(entries))
	for i, en := range entries {
		e, err := DecodeEvent(en.Data)
		if err != nil {
			f.t.Fatalf("event %d: %v", en.Seq, err)
		}
		e.Seq = en.Seq
		out[i] = e
	}
	return out
}

func (f *fixture) runStatus(id string) store.RunStatus {
	f.t.Helper()
	r, err := f.st.GetRun(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return r.Status
}

func last(es []*Event) *Event {
	if len(es) == 0 {
		return nil
	}
	return es[len(es)-1]
}

func find(es []*Event, kind EventKind) *Event {
	for _, e := range es {
		if e.Kind == kind {
			return e
		}
	}
	return nil
}

func count(es []*Event, kind EventKind) int {
	n := 0
	for _, e := range es {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

func runIDOf(t testing.TB, es []*Event) string {
	t.Helper()
	if e := find(es, EventRunStarted); e != nil {
		return e.Run
	}
	t.Fatalf("no run_started in %v", kinds(es))
	return ""
}

var errBoom = errors.New("boom")
