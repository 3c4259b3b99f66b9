package vm

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// This file builds small graphs by hand through the builder API the
// compiler uses, as the compiler's lowering would: a program with one state
// schema, one graph "g" with start (node 0) and end (node 1), tools "t0"...,
// and chunks made with helpers.

type fieldSpec struct {
	name string
	typ  *types.Type
	def  *types.Value
	red  bytecode.Reducer
}

func fld(name string, t *types.Type, def *types.Value, red bytecode.Reducer) fieldSpec {
	return fieldSpec{name: name, typ: t, def: def, red: red}
}

func ptr(v types.Value) *types.Value { return &v }

type gbuild struct {
	t  testing.TB
	pb *bytecode.ProgramBuilder
	p  *bytecode.Program
}

func newGraph(t testing.TB, fields ...fieldSpec) *gbuild {
	t.Helper()
	pb := bytecode.NewProgramBuilder()
	p := pb.Program()
	p.Workflow = "test"
	pb.File("test.agent")
	st := bytecode.State{Name: "S"}
	for _, f := range fields {
		red := f.red
		if red == 0 {
			red = bytecode.ReduceReplace
		}
		sf := bytecode.StateField{Name: f.name, Type: pb.Type(f.typ), Reducer: red}
		if f.def != nil {
			c, err := pb.Const(*f.def)
			if err != nil {
				t.Fatal(err)
			}
			sf.HasDefault, sf.Default = true, c
		}
		st.Fields = append(st.Fields, sf)
	}
	p.States = append(p.States, st)
	p.Graphs = append(p.Graphs, bytecode.Graph{Name: "g", State: 0, Input: bytecode.None, Output: bytecode.None})
	b := &gbuild{t: t, pb: pb, p: p}
	b.add(bytecode.Node{Name: "start", Kind: bytecode.NodeStart})
	b.add(bytecode.Node{Name: "end", Kind: bytecode.NodeEnd})
	return b
}

func (b *gbuild) graph() *bytecode.Graph { return &b.p.Graphs[0] }

func (b *gbuild) field(name string) uint32 {
	for i, f := range b.p.States[0].Fields {
		if f.Name == name {
			return uint32(i)
		}
	}
	b.t.Fatalf("no field %s", name)
	return 0
}

func (b *gbuild) node(name string) uint32 {
	for i, n := range b.graph().Nodes {
		if n.Name == name {
			return uint32(i)
		}
	}
	b.t.Fatalf("no node %s", name)
	return 0
}

func (b *gbuild) add(n bytecode.Node) uint32 {
	if n.Effect == 0 {
		n.Effect = bytecode.EffectReadOnly
	}
	if n.Into == 0 && n.Kind != bytecode.NodeLLM && n.Kind != bytecode.NodeTool && n.Kind != bytecode.NodeMap && n.Kind != bytecode.NodeInterrupt {
		n.Into = bytecode.None
	}
	if n.Catch == 0 {
		n.Catch = bytecode.None
	}
	g := b.graph()
	g.Nodes = append(g.Nodes, n)
	return uint32(len(g.Nodes) - 1)
}

// chunk builds a chunk over the state with emit; line gives it a span.
func (b *gbuild) chunk(name string, locals uint32, line uint32, emit func(c *bytecode.ChunkBuilder)) uint32 {
	b.t.Helper()
	c := b.pb.NewChunk(name, 0, locals)
	c.SetSpan(bytecode.Span{File: 0, StartLine: line, StartCol: 3, EndLine: line, EndCol: 20})
	emit(c)
	i, err := c.Finish()
	if err != nil {
		b.t.Fatal(err)
	}
	return i
}

func (b *gbuild) constChunk(v types.Value) uint32 {
	return b.chunk("const", 0, 1, func(c *bytecode.ChunkBuilder) { c.Const(v); c.Emit(bytecode.RETURN, 0) })
}

func (b *gbuild) loadChunk(field string) uint32 {
	f := b.field(field)
	return b.chunk("load."+field, 0, 1, func(c *bytecode.ChunkBuilder) { c.Emit(bytecode.LOAD, f); c.Emit(bytecode.RETURN, 0) })
}

func (b *gbuild) localChunk() uint32 {
	return b.chunk("item", 1, 1, func(c *bytecode.ChunkBuilder) { c.Emit(bytecode.LOADLOCAL, 0); c.Emit(bytecode.RETURN, 0) })
}

// cmpChunk builds `field OP const`.
func (b *gbuild) cmpChunk(field string, op bytecode.Opcode, v types.Value) uint32 {
	f := b.field(field)
	return b.chunk("cond."+field, 0, 7, func(c *bytecode.ChunkBuilder) {
		c.Emit(bytecode.LOAD, f)
		c.Const(v)
		c.Emit(op, 0)
		c.Emit(bytecode.RETURN, 0)
	})
}

// set adds a set node assigning chunks to fields (field, chunk, ...).
func (b *gbuild) set(name string, pairs ...any) uint32 {
	var as []bytecode.Assign
	for i := 0; i < len(pairs); i += 2 {
		as = append(as, bytecode.Assign{Field: b.field(pairs[i].(string)), Code: pairs[i+1].(uint32)})
	}
	return b.add(bytecode.Node{Name: name, Kind: bytecode.NodeSet, Set: as})
}

// tool declares a tool (once) and returns its index.
func (b *gbuild) tool(name string, effect bytecode.Effect) uint32 {
	for i, t := range b.p.Tools {
		if t.Name == name {
			return uint32(i)
		}
	}
	in := b.pb.Type(types.JSONType)
	b.p.Tools = append(b.p.Tools, bytecode.Tool{Name: name, Input: in, Output: in, Effect: effect,
		Impl: bytecode.ToolImpl{Kind: bytecode.ImplBuiltin, Builtin: name}})
	return uint32(len(b.p.Tools) - 1)
}

// call adds a tool node calling tool with args (name, chunk, ...) into
// field ("" for none).
func (b *gbuild) call(name, tool, into string, args ...any) uint32 {
	n := bytecode.Node{Name: name, Kind: bytecode.NodeTool, Into: bytecode.None,
		Call: bytecode.Call{Kind: bytecode.CallTool, Callee: b.tool(tool, bytecode.EffectReadOnly)}}
	if into != "" {
		n.Into = int32(b.field(into))
	}
	for i := 0; i < len(args); i += 2 {
		n.Call.Args = append(n.Call.Args, bytecode.Arg{Name: args[i].(string), Code: args[i+1].(uint32)})
	}
	return b.add(n)
}

// mapNode adds a map over the list chunk calling tool with the item as
// argument "x".
func (b *gbuild) mapNode(name, tool, into string, list uint32, concurrency uint32) uint32 {
	n := bytecode.Node{Name: name, Kind: bytecode.NodeMap, Into: bytecode.None,
		Map:  bytecode.MapSpec{Var: "x", List: list, Concurrency: concurrency},
		Call: bytecode.Call{Kind: bytecode.CallTool, Callee: b.tool(tool, bytecode.EffectReadOnly), Args: []bytecode.Arg{{Name: "x", Code: b.localChunk()}}}}
	if into != "" {
		n.Into = int32(b.field(into))
	}
	return b.add(n)
}

func (b *gbuild) interrupt(name string, prompt uint32, resume *types.Type, into string) uint32 {
	n := bytecode.Node{Name: name, Kind: bytecode.NodeInterrupt, Into: bytecode.None,
		Interrupt: bytecode.InterruptSpec{Prompt: prompt, Resume: b.pb.Type(resume)}}
	if into != "" {
		n.Into = int32(b.field(into))
	}
	return b.add(n)
}

func (b *gbuild) join(name string, mode bytecode.JoinMode, preds ...string) uint32 {
	j := bytecode.JoinSpec{Mode: mode}
	for _, p := range preds {
		j.Preds = append(j.Preds, b.node(p))
	}
	return b.add(bytecode.Node{Name: name, Kind: bytecode.NodeJoin, Join: j})
}

func (b *gbuild) nd(name string) *bytecode.Node { return &b.graph().Nodes[b.node(name)] }

func (b *gbuild) edge(from, to string) {
	n := b.nd(from)
	n.Edges = append(n.Edges, bytecode.Edge{Kind: bytecode.EdgeAlways, Cond: bytecode.None, Target: b.node(to), Else: bytecode.None})
}

func (b *gbuild) when(from, to string, cond uint32) {
	n := b.nd(from)
	n.Edges = append(n.Edges, bytecode.Edge{Kind: bytecode.EdgeWhen, Cond: int32(cond), Target: b.node(to), Else: bytecode.None})
}

func (b *gbuild) otherwise(from, to string) {
	n := b.nd(from)
	n.Edges = append(n.Edges, bytecode.Edge{Kind: bytecode.EdgeOtherwise, Cond: bytecode.None, Target: b.node(to), Else: bytecode.None})
}

// bounded marks the last edge of from as `max n else -> els`.
func (b *gbuild) bounded(from string, n uint32, els string) {
	nd := b.nd(from)
	e := &nd.Edges[len(nd.Edges)-1]
	e.Max, e.Else = n, int32(b.node(els))
}

// chain links start -> names... -> end.
func (b *gbuild) chain(names ...string) {
	prev := "start"
	for _, n := range names {
		b.edge(prev, n)
		prev = n
	}
	b.edge(prev, "end")
}

func (b *gbuild) machine() *Machine {
	b.t.Helper()
	if _, err := bytecode.Encode(b.p); err != nil {
		b.t.Fatal(err)
	}
	m, err := New(b.p, nil)
	if err != nil {
		b.t.Fatalf("%v\n%s", err, bytecode.Disasm(b.p))
	}
	return m
}

// Values.

func vi(i int64) types.Value  { return types.MakeInt(i) }
func vs(s string) types.Value { return types.MakeString(s) }
func vb(b bool) types.Value   { return types.MakeBool(b) }
func vl(xs ...types.Value) types.Value {
	return types.MakeList(xs)
}

var (
	intT      = types.IntType
	strT      = types.StringType
	listInt   = types.ListOf(types.IntType)
	listStr   = types.ListOf(types.StringType)
	boolT     = types.BoolType
	errFieldT = types.OptionalOf(types.ErrorType)
)

func stateOf(t testing.TB, m *Machine, res *Result) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i, f := range m.graphs[0].fields {
		out[f.Name] = res.State[i].String()
	}
	return out
}

func fieldOf(t testing.TB, m *Machine, res *Result, name string) types.Value {
	t.Helper()
	i := m.graphs[0].fieldIndex(name)
	if i < 0 {
		t.Fatalf("no field %s", name)
	}
	return res.State[i]
}

// toolHost dispatches calls by tool name.
type toolHost struct {
	m  *Machine
	fs map[string]func(ctx context.Context, req CallRequest) (types.Value, error)
}

func (h *toolHost) Call(ctx context.Context, req CallRequest) (types.Value, error) {
	name := h.m.prog.Tools[req.Callee].Name
	f := h.fs[name]
	if f == nil {
		return types.Value{}, fmt.Errorf("no tool %s", name)
	}
	return f(ctx, req)
}

func arg(req CallRequest, name string) types.Value {
	for _, a := range req.Args {
		if a.Name == name {
			return a.Value
		}
	}
	return types.Value{}
}

// fakeClock is a deterministic Clock. Timers fire when Advance passes them;
// with auto, every timer fires at once (and its duration is recorded).
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	auto   bool
	timers []*fakeTimer
	waits  []time.Duration
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
	fired   bool
}

func newFakeClock(auto bool) *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), auto: auto}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	t := &fakeTimer{at: c.now.Add(d), f: f}
	if c.auto {
		t.fired = true
		go f()
	} else {
		c.timers = append(c.timers, t)
	}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.fired || t.stopped {
			return false
		}
		t.stopped = true
		return true
	}
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	for _, t := range c.timers {
		if !t.fired && !t.stopped && !t.at.After(c.now) {
			t.fired = true
			due = append(due, t.f)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		go f()
	}
}

func (c *fakeClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// seqEntropy yields 0, 1, 2, ... scaled.
type seqEntropy struct {
	mu sync.Mutex
	n  uint64
}

func (e *seqEntropy) Uint64() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	return e.n * 0x9E3779B97F4A7C15
}
