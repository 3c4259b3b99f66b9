package runtime

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// buildMapProgram builds
//
//	state S2 { q: string, r: string? }
//	graph sub(S2) output r { node ask = llm writer { prompt = q } into r; start -> ask -> end }
//	state M { items: list<string> = ["a", "b", "c"], out: list<string> = [] reduce append }
//	graph outer(M) output out {
//	  node fan = map x in items { graph sub { q = x } } into out    (viaGraph)
//	  node fan = map x in items { llm writer { prompt = x } } into out (otherwise)
//	  start -> fan -> end
//	}
func buildMapProgram(t testing.TB, viaGraph bool) *bytecode.Program {
	t.Helper()
	pb := bytecode.NewProgramBuilder()
	p := pb.Program()
	p.Workflow = "maps"
	pb.File("maps.agent")
	cnst := func(v types.Value) uint32 {
		i, err := pb.Const(v)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	chunk := func(state int32, locals uint32, emit func(c *bytecode.ChunkBuilder)) uint32 {
		c := pb.NewChunk("c", state, locals)
		emit(c)
		i, err := c.Finish()
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	strList := types.ListOf(types.StringType)
	p.States = append(p.States,
		bytecode.State{Name: "S2", Fields: []bytecode.StateField{
			{Name: "q", Type: pb.Type(types.StringType), Reducer: bytecode.ReduceReplace},
			{Name: "r", Type: pb.Type(types.OptionalOf(types.StringType)), Reducer: bytecode.ReduceReplace},
		}},
		bytecode.State{Name: "M", Fields: []bytecode.StateField{
			{Name: "items", Type: pb.Type(strList), Reducer: bytecode.ReduceReplace, HasDefault: true,
				Default: cnst(types.MakeList([]types.Value{types.MakeString("a"), types.MakeString("b"), types.MakeString("c")}))},
			{Name: "out", Type: pb.Type(strList), Reducer: bytecode.ReduceAppend, HasDefault: true, Default: cnst(types.MakeList(nil))},
		}})
	p.Models = append(p.Models, bytecode.Model{Name: "fast", Provider: "openai"})
	p.Agents = append(p.Agents, bytecode.Agent{Name: "writer", Kind: bytecode.AgentLLM, Model: 0, Instruction: bytecode.None,
		Until: bytecode.None, Graph: bytecode.None})
	base := func(name string, kind bytecode.NodeKind) bytecode.Node {
		return bytecode.Node{Name: name, Kind: kind, Into: bytecode.None, Catch: bytecode.None, Effect: bytecode.EffectReadOnly}
	}
	edge := func(to uint32) []bytecode.Edge {
		return []bytecode.Edge{{Kind: bytecode.EdgeAlways, Cond: bytecode.None, Target: to, Else: bytecode.None}}
	}
	// sub
	ask := base("ask", bytecode.NodeLLM)
	ask.Into = 1
	ask.Call = bytecode.Call{Kind: bytecode.CallLLM, Callee: 0, Args: []bytecode.Arg{{Name: "prompt",
		Code: chunk(0, 0, func(c *bytecode.ChunkBuilder) { c.Emit(bytecode.LOAD, 0); c.Emit(bytecode.RETURN, 0) })}}}
	start, end := base("start", bytecode.NodeStart), base("end", bytecode.NodeEnd)
	start.Edges, ask.Edges = edge(2), edge(1)
	p.Graphs = append(p.Graphs, bytecode.Graph{Name: "sub", State: 0, Input: bytecode.None, Output: 1, Nodes: []bytecode.Node{start, end, ask}})
	// outer
	fan := base("fan", bytecode.NodeMap)
	fan.Into = 1
	fan.Map = bytecode.MapSpec{Var: "x", List: chunk(1, 0, func(c *bytecode.ChunkBuilder) { c.Emit(bytecode.LOAD, 0); c.Emit(bytecode.RETURN, 0) })}
	local := chunk(1, 1, func(c *bytecode.ChunkBuilder) { c.Emit(bytecode.LOADLOCAL, 0); c.Emit(bytecode.RETURN, 0) })
	if viaGraph {
		fan.Call = bytecode.Call{Kind: bytecode.CallGraph, Callee: 0, Args: []bytecode.Arg{{Name: "q", Code: local}}}
	} else {
		fan.Call = bytecode.Call{Kind: bytecode.CallLLM, Callee: 0, Args: []bytecode.Arg{{Name: "prompt", Code: local}}}
	}
	start2, end2 := base("start", bytecode.NodeStart), base("end", bytecode.NodeEnd)
	start2.Edges, fan.Edges = edge(2), edge(1)
	p.Graphs = append(p.Graphs, bytecode.Graph{Name: "outer", State: 1, Input: bytecode.None, Output: 1, Nodes: []bytecode.Node{start2, end2, fan}})
	p.Serve = &bytecode.Serve{Run: bytecode.Ref{Kind: bytecode.RefGraph, Index: 1}}
	if _, err := bytecode.Encode(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// orderedModel answers with the prompt in upper case; "a" answers only
// after the response to "b" was streamed, and "b" after the one to "c"
// (seen reports that, from the test's reader): completion order is the
// reverse of item order, whatever the scheduling.
func orderedModel() (m *fakeModel, seen func(text string)) {
	var mu sync.Mutex
	streamed := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{}), "c": make(chan struct{})}
	closed := map[chan struct{}]bool{}
	after := map[string]string{"a": "b", "b": "c"}
	m = &fakeModel{name: "fast", rec: true}
	m.reply = func(ctx context.Context, req *ModelRequest, onDelta func(string)) (*ModelResponse, error) {
		q := req.Messages[len(req.Messages)-1].Content
		if prev, ok := after[q]; ok {
			mu.Lock()
			wait := streamed[prev]
			mu.Unlock()
			select {
			case <-wait:
			case <-time.After(10 * time.Second):
			}
		}
		return textReply(strings.ToUpper(q), 1)(ctx, req, onDelta)
	}
	seen = func(text string) {
		mu.Lock()
		defer mu.Unlock()
		if c, ok := streamed[strings.ToLower(text)]; ok && !closed[c] {
			close(c)
			closed[c] = true
		}
	}
	return m, seen
}

func TestMapItemsAndSubGraphs(t *testing.T) {
	for _, viaGraph := range []bool{false, true} {
		name := "llm"
		wantNode := "fan"
		if viaGraph {
			name, wantNode = "graph", "fan/ask"
		}
		t.Run(name, func(t *testing.T) {
			for _, b := range backends {
				t.Run(b.name, func(t *testing.T) {
					model, seen := orderedModel()
					f := newFixture(t, b.open(t), buildMapProgram(t, viaGraph), model, nil, func(c *RunnerConfig) { c.Tools = nil })
					ch, err := f.r.Run(context.Background(), Invocation{User: "u", Session: "s"})
					if err != nil {
						t.Fatal(err)
					}
					var evs []*Event
					for e := range ch {
						evs = append(evs, e)
						if e.Kind == EventModelResponse {
							seen(e.Text)
						}
					}
					fin := last(evs)
					if fin.Status != StatusCompleted || string(fin.Output) != `["A","B","C"]` {
						t.Fatalf("ended %s %s; %v", fin.Status, fin.Output, kinds(evs))
					}
					// The stream has the completion order, the ledger program order.
					var streamed, stored []string
					for _, e := range evs {
						if e.Kind == EventModelResponse {
							streamed = append(streamed, e.Text)
						}
					}
					ledger := f.ledger("u", "s")
					checkLedger(t, ledger)
					for _, e := range ledger {
						if e.Kind == EventModelResponse {
							stored = append(stored, e.Text)
							if e.Node != wantNode || e.MapIndex == nil || *e.MapIndex != int(e.Text[0]-'A') {
								t.Errorf("model_response node %q index %v", e.Node, e.MapIndex)
							}
						}
					}
					if strings.Join(streamed, "") != "CBA" || strings.Join(stored, "") != "ABC" {
						t.Errorf("streamed %v, stored %v", streamed, stored)
					}
					for _, req := range model.requests() {
						q := req.Messages[len(req.Messages)-1].Content
						if req.Site.Node != wantNode || req.Site.MapIndex != int(q[0]-'a') || req.Site.Turn != 1 {
							t.Errorf("call site %+v for %q", req.Site, q)
						}
					}
				})
			}
		})
	}
}
