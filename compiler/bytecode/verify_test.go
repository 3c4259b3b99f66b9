package bytecode

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/types"
)

// chunkNamed returns the support program's chunk with that name.
func chunkNamed(t *testing.T, p *Program, name string) *Chunk {
	t.Helper()
	for i := range p.Chunks {
		if p.Chunks[i].Name == name {
			return &p.Chunks[i]
		}
	}
	t.Fatalf("no chunk %s", name)
	return nil
}

func TestVerifyRejects(t *testing.T) {
	const (
		nStart = iota
		nEnd
		nTriage
		nScan
		nWrite
		nApprove
		nFallback
	)
	for _, tc := range []struct {
		name   string
		mutate func(t *testing.T, p *Program)
		want   string
	}{
		// Chunks.
		{"illegal opcode", func(t *testing.T, p *Program) { p.Chunks[0].Code[0].Op = 200 }, "pc 0: illegal op (200) 3: illegal opcode"},
		{"operand on NOP", func(t *testing.T, p *Program) { p.Chunks[0].Code[0] = Insn{Op: NOP, Arg: 1} }, "operand given to an opcode without one"},
		{"const out of range", func(t *testing.T, p *Program) { p.Chunks[0].Code[0].Arg = 999 }, "pc 0: CONST 999: const out of range"},
		{"load without state", func(t *testing.T, p *Program) { p.Chunks[0].Code[0] = Insn{Op: LOAD} }, "LOAD in a chunk without a state"},
		{"load out of range", func(t *testing.T, p *Program) {
			chunkNamed(t, p, "investigate.scan.list").Code[0].Arg = 5
		}, "LOAD 5: state field out of range"},
		{"local out of range", func(t *testing.T, p *Program) { p.Chunks[0].Code[1].Arg = 1 }, "LOADLOCAL 1: local slot out of range"},
		{"field name not a string", func(t *testing.T, p *Program) { p.Chunks[0].Code[2].Arg = 2 }, "FIELD 2: field name is not a string constant"},
		{"function out of range", func(t *testing.T, p *Program) {
			chunkNamed(t, p, "summary.rolling.trigger").Code[1].Arg = CallArg(9, 1)
		}, "function out of range"},
		{"record type", func(t *testing.T, p *Program) {
			chunkNamed(t, p, "agent.investigator.metadata").Code[9].Arg = 0
		}, "MAKERECORD 0: not a record type"},
		{"jump outside", func(t *testing.T, p *Program) { chunkNamed(t, p, "test.0.expect.2").Code[5].Arg = 40 }, "jump target outside the chunk"},
		{"jump backward", func(t *testing.T, p *Program) { chunkNamed(t, p, "test.0.expect.2").Code[5].Arg = 2 }, "jump is not forward"},
		{"underflow", func(t *testing.T, p *Program) { p.Chunks[1].Code = []Insn{{Op: EQ}, {Op: RETURN}} }, "pc 0: EQ needs 2 operands, stack holds 0"},
		{"depth mismatch at a join", func(t *testing.T, p *Program) {
			c := chunkNamed(t, p, "test.0.expect.2")
			c.Code[6] = Insn{Op: NOP} // keep the DUP'd value on the fall-through path
		}, "reaches pc 11 with stack depth 2, where another path has 1"},
		{"return with two values", func(t *testing.T, p *Program) {
			p.Chunks[1].Code = []Insn{{Op: TRUE}, {Op: TRUE}, {Op: RETURN}}
			p.Chunks[1].MaxStack = 2
		}, "RETURN with 1 values left below the result"},
		{"no return at end", func(t *testing.T, p *Program) { p.Chunks[1].Code = p.Chunks[1].Code[:1] }, "last instruction is CONST, want RETURN"},
		{"empty chunk", func(t *testing.T, p *Program) { p.Chunks[1].Code = nil }, "empty code"},
		{"MaxStack too small", func(t *testing.T, p *Program) { p.Chunks[0].MaxStack = 1 }, "stack reaches depth 2, MaxStack is 1"},
		{"MaxStack too large", func(t *testing.T, p *Program) { p.Chunks[0].MaxStack = 1 << 30 }, "MaxStack 1073741824 exceeds the code length 5"},
		{"span file", func(t *testing.T, p *Program) { p.Chunks[0].Spans[0].Span.File = 3 }, "span table entry 0: file 3 out of range"},
		{"span order", func(t *testing.T, p *Program) {
			p.Chunks[0].Spans = []PCSpan{{PC: 2}, {PC: 1}}
		}, "span table entry 1 out of pc order"},
		{"chunk state out of range", func(t *testing.T, p *Program) { p.Chunks[0].State = 4 }, "state 4 out of range"},
		// Chunk contexts.
		{"locals not provided", func(t *testing.T, p *Program) {
			p.Graphs[0].Nodes[nTriage].Call.Args[0].Code = p.Graphs[0].Nodes[nScan].Call.Args[0].Code
		}, "needs 1 locals where 0 are provided"},
		{"stateful chunk in a tool", func(t *testing.T, p *Program) {
			p.Tools[1].Impl.URL = p.Graphs[0].Nodes[nScan].Map.List
		}, "reads state 0 where state -1 is available"},
		{"chunk out of range", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nFallback].Set[0].Code = 99 }, "set: chunk 99 out of range"},
		// Graphs.
		{"no start", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nStart].Kind = NodeEnd }, "has 0 start and 2 end nodes"},
		{"duplicate node", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nWrite].Name = "scan" }, "node scan defined twice"},
		{"invalid node kind", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nWrite].Kind = 0 }, "node write: invalid kind 0"},
		{"invalid effect", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nWrite].Effect = 9 }, "node write: invalid effect 9"},
		{"target out of range", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nWrite].Edges[0].Target = 70 }, "target node 70 out of range"},
		{"edge to start", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nWrite].Edges[0].Target = nStart }, "targets the start node"},
		{"mixed edges", func(t *testing.T, p *Program) {
			n := &p.Graphs[0].Nodes[nTriage]
			n.Edges[1].Kind = EdgeAlways
		}, "mixes unconditional and conditional edges"},
		{"otherwise first", func(t *testing.T, p *Program) {
			e := p.Graphs[0].Nodes[nApprove].Edges
			e[0], e[1] = e[1], e[0]
		}, "otherwise is not the last edge"},
		{"when without condition", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nApprove].Edges[0].Cond = None }, "when edge has no condition"},
		{"invalid else", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nApprove].Edges[1].Else = -5 }, "invalid else target -5"},
		{"else without max", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nWrite].Edges[0].Else = nEnd }, "else target without max"},
		{"end with edges", func(t *testing.T, p *Program) {
			p.Graphs[0].Nodes[nEnd].Edges = []Edge{{Kind: EdgeAlways, Cond: None, Target: nWrite, Else: None}}
		}, "the end node has edges"},
		{"dead end", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nFallback].Edges = nil }, "node fallback: no outgoing edge"},
		{"duplicate fan-out", func(t *testing.T, p *Program) {
			n := &p.Graphs[0].Nodes[nWrite]
			n.Edges = append(n.Edges, n.Edges[0])
		}, "duplicate edge to node 5"},
		{"into on a set node", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nFallback].Into = 3 }, "a set node cannot write into a field"},
		{"into out of range", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nWrite].Into = 11 }, "into: state field 11 out of range"},
		{"call kind", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nWrite].Call.Kind = CallTool }, "call kind tool, want llm"},
		{"llm call of a chain", func(t *testing.T, p *Program) { p.Agents[0].Kind = AgentChain }, "llm call of chain agent investigator"},
		{"callee out of range", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nScan].Call.Callee = 42 }, "tool callee 42 out of range"},
		{"graph calls itself", func(t *testing.T, p *Program) {
			n := &p.Graphs[0].Nodes[nWrite]
			n.Kind, n.Call.Kind = NodeGraph, CallGraph
		}, "graph calls itself"},
		{"catch self", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nScan].Catch = nScan }, "invalid catch target scan"},
		{"catch out of range", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nScan].Catch = 50 }, "catch: index 50 out of range"},
		{"backoff", func(t *testing.T, p *Program) { p.Graphs[0].Nodes[nScan].Retry.BackoffMax = 1 }, "invalid retry backoff"},
		{"join without edge", func(t *testing.T, p *Program) {
			g := &p.Graphs[0]
			g.Nodes = append(g.Nodes, Node{Name: "both", Kind: NodeJoin, Into: None, Catch: None, Effect: EffectReadOnly,
				Join:  JoinSpec{Mode: JoinAll, Preds: []uint32{nWrite, nWrite}},
				Edges: []Edge{{Kind: EdgeAlways, Cond: None, Target: nEnd, Else: None}}})
		}, "predecessor write has no edge to the join"},
		{"join predecessor twice", func(t *testing.T, p *Program) {
			g := &p.Graphs[0]
			g.Nodes = append(g.Nodes, Node{Name: "both", Kind: NodeJoin, Into: None, Catch: None, Effect: EffectReadOnly,
				Join:  JoinSpec{Mode: JoinAny, Preds: []uint32{nWrite, nWrite}},
				Edges: []Edge{{Kind: EdgeAlways, Cond: None, Target: nEnd, Else: None}}})
		}, "predecessor write listed twice"},
		{"join mode", func(t *testing.T, p *Program) {
			g := &p.Graphs[0]
			g.Nodes = append(g.Nodes, Node{Name: "j", Kind: NodeJoin, Into: None, Catch: None, Effect: EffectReadOnly,
				Edges: []Edge{{Kind: EdgeAlways, Cond: None, Target: nEnd, Else: None}}})
		}, "invalid join mode 0"},
		{"graph state", func(t *testing.T, p *Program) { p.Graphs[0].State = 3 }, "graph investigate: state 3 out of range"},
		{"graph output", func(t *testing.T, p *Program) { p.Graphs[0].Output = 9 }, "output: state field 9 out of range"},
		// State schemas.
		{"default type", func(t *testing.T, p *Program) { p.States[0].Fields[3].Default = 2 }, "field report: default 128000: $: want string, got int"},
		{"reducer", func(t *testing.T, p *Program) { p.States[0].Fields[0].Reducer = ReduceAppend }, "reducer append does not apply to string"},
		{"duplicate field", func(t *testing.T, p *Program) { p.States[0].Fields[1].Name = "question" }, "field question defined twice"},
		{"field type", func(t *testing.T, p *Program) { p.States[0].Fields[1].Type = 77 }, "type 77 out of range"},
		// Declarations.
		{"file path", func(t *testing.T, p *Program) { p.Files[0] = "../support.agent" }, `"../support.agent" is not a relative slash-separated path`},
		{"absolute skill", func(t *testing.T, p *Program) { p.Skills[0].Path = "/etc/skills" }, "skill diagnostics: path \"/etc/skills\""},
		{"windows fixture", func(t *testing.T, p *Program) { p.Tests[0].Fixtures[0].Path = `testdata\x.yaml` }, "fixture path"},
		{"tool type", func(t *testing.T, p *Program) { p.Tools[0].Output = 99 }, "tool cert_scan: output: type 99 out of range"},
		{"tool effect", func(t *testing.T, p *Program) { p.Tools[0].Effect = 0 }, "tool cert_scan: invalid effect 0"},
		{"duplicate tool", func(t *testing.T, p *Program) { p.Tools[1].Name = "cert_scan" }, "tool cert_scan defined twice"},
		{"exec argv", func(t *testing.T, p *Program) { p.Tools[3].Impl.Argv = nil }, "exec without argv"},
		{"env var", func(t *testing.T, p *Program) { p.Models[0].Attrs[1].Env.Var = "" }, "env reference without a variable name"},
		{"env type", func(t *testing.T, p *Program) { p.Models[0].Attrs[1].Env.Type = 2 }, "type list<string> cannot come from the environment"},
		{"attribute ref", func(t *testing.T, p *Program) { p.Policies[0].Attrs[2].Refs[0].Index = 5 }, "attribute model: model 5 out of range"},
		{"attribute refs kind", func(t *testing.T, p *Program) { p.Policies[1].Attrs[0].Refs[0].Kind = 0 }, "invalid reference kind 0"},
		{"two summaries", func(t *testing.T, p *Program) { p.Policies[1].Kind = PolicySummary }, "two summary policies"},
		{"skill grant", func(t *testing.T, p *Program) { p.Agents[0].Skills[0].Grant = 3 }, "invalid skill grant 3"},
		{"agent tool", func(t *testing.T, p *Program) { p.Agents[0].Tools[0] = 40 }, "agent investigator: tool 40 out of range"},
		{"serve run", func(t *testing.T, p *Program) { p.Serve.Run = Ref{Kind: RefTool} }, "serve: run must name a graph or an agent"},
		{"serve path", func(t *testing.T, p *Program) { p.Serve.Protocols[0].Path = "agui" }, `serve: agui path "agui" must start with /`},
		{"answer to a non-interrupt", func(t *testing.T, p *Program) { p.Tests[0].Answers[0].Node = nWrite }, "answer for write, which is not an interrupt node"},
		{"expect order node", func(t *testing.T, p *Program) { p.Tests[0].Expects[3].Then = 30 }, "expect 3: node 30 out of range"},
		{"test run", func(t *testing.T, p *Program) { p.Tests[0].Run = Ref{Kind: RefAgent} }, "answers and expectations need a run graph"},
		{"secret const", func(t *testing.T, p *Program) { p.Consts[0] = types.MakeSecret("x") }, "const 0: a secret cannot be a constant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := supportProgram(t)
			tc.mutate(t, p)
			err := Verify(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Verify = %v\nwant %q", err, tc.want)
			}
			_ = Disasm(p) // must not panic on an invalid program
		})
	}
}

// TestVerifyMaxWithoutElse: a `max N` edge may have no else target; the VM
// fails the run with loop_limit when it is exhausted.
func TestVerifyMaxWithoutElse(t *testing.T) {
	p := supportProgram(t)
	const approve = 5
	p.Graphs[0].Nodes[approve].Edges[1].Else = None
	if err := Verify(p); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyReportsMany(t *testing.T) {
	p := supportProgram(t)
	for i := range p.Graphs[0].Nodes {
		p.Graphs[0].Nodes[i].Effect = 0
	}
	for i := range p.Tools {
		p.Tools[i].Effect = 0
	}
	for i := range p.Chunks {
		p.Chunks[i].MaxStack = 0
	}
	err := Verify(p)
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxProblems+1 || !strings.HasPrefix(lines[maxProblems], "and ") {
		t.Errorf("got %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestEncodeRejectsStrayParts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(p *Program)
		want   string
	}{
		{"call on set", func(p *Program) { p.Graphs[0].Nodes[6].Call.Callee = 1 }, "Call set on a node kind without a call"},
		{"map on llm", func(p *Program) { p.Graphs[0].Nodes[2].Map.Concurrency = 2 }, "Map set on a non-map node"},
		{"join on set", func(p *Program) { p.Graphs[0].Nodes[6].Join.Mode = JoinAll }, "Join set on a non-join node"},
		{"bad opt", func(p *Program) { p.Graphs[0].Nodes[2].Into = -5 }, "into: index -5 is neither an index nor None"},
		{"impl fields", func(p *Program) { p.Tools[0].Impl.Method = "GET" }, "implementation fields set that its kind does not use"},
		{"attr fields", func(p *Program) { p.Models[0].Attrs[0].Code = 3 }, "attribute name: fields set that its kind does not use"},
		{"operand", func(p *Program) { p.Chunks[0].Code[4].Arg = 1 }, "RETURN takes no operand"},
		{"secret", func(p *Program) { p.Consts[0] = types.MakeSecret("x") }, "const 0: secret value cannot be serialized"},
	} {
		p := supportProgram(t)
		tc.mutate(p)
		if _, err := Encode(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Encode err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(mustEncode(f, supportProgram(f)))
	f.Add(mustEncode(f, &Program{}))
	f.Add(mustEncode(f, genProgram(f, 20)))
	f.Add(mustEncode(f, sizedProgram(f)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, err := Decode(b); err == nil {
			check(t, p, b)
		}
		// The fuzzer cannot forge the hash; decode without it to reach
		// the sections.
		p, err := decode(b, false)
		if err != nil {
			return
		}
		check(t, p, b)
	})
}

// check asserts what a decoded program must satisfy: Verify and Disasm do
// not panic, and a verified program re-encodes to the same bytes.
func check(t *testing.T, p *Program, b []byte) {
	err := Verify(p)
	_ = Disasm(p)
	if err != nil {
		return
	}
	out, err := Encode(p)
	if err != nil {
		t.Fatalf("verified program does not encode: %v", err)
	}
	n := len(b) - 32
	if !bytes.Equal(out[:len(out)-32], b[:n]) {
		t.Fatalf("re-encoding differs:\n in  %x\n out %x", b[:n], out[:len(out)-32])
	}
}

// genProgram generates a valid graph of n nodes: a start, an end, n/10
// joins, and work nodes with three out-edges each (a when switch with an
// otherwise, or a fan-out), for the decode and verify benchmarks.
func genProgram(tb testing.TB, n int) *Program {
	t := &tb2{TB: tb}
	pb := NewProgramBuilder()
	p := pb.Program()
	pb.File("bench.agent")
	tInt := pb.Type(types.IntType)
	p.States = []State{{Name: "S", Fields: []StateField{
		{Name: "count", Type: tInt, Reducer: ReduceSum},
		{Name: "log", Type: pb.Type(types.ListOf(types.StringType)), Reducer: ReduceAppend},
	}}}
	p.Tools = []Tool{{Name: "work", Input: pb.Type(types.IntType), Output: pb.Type(types.StringType), Effect: EffectIdempotent,
		Impl: ToolImpl{Kind: ImplBuiltin, Builtin: "work"}}}
	nodes := make([]Node, n)
	nodes[0] = Node{Name: "start", Kind: NodeStart, Into: None, Catch: None, Effect: EffectReadOnly}
	nodes[1] = Node{Name: "end", Kind: NodeEnd, Into: None, Catch: None, Effect: EffectReadOnly}
	joins := n / 10
	first := 2
	// Work nodes 2..n-joins-1; joins n-joins..n-1.
	cond := func(i, k int) int32 {
		c := pb.NewChunk(fmt.Sprintf("n%d.edge%d", i, k), 0, 0)
		c.SetSpan(Span{File: 0, StartLine: uint32(i + 1), StartCol: 3, EndLine: uint32(i + 1), EndCol: 30})
		c.Emit(LOAD, 0)
		c.Const(types.MakeInt(int64(k)))
		c.Emit(GT, 0)
		c.Emit(RETURN, 0)
		idx, err := c.Finish()
		t.must(err)
		return int32(idx)
	}
	arg := func(i int) uint32 {
		c := pb.NewChunk(fmt.Sprintf("n%d.arg", i), 0, 0)
		c.Emit(LOAD, 0)
		c.Const(types.MakeInt(int64(i)))
		c.Emit(ADD, 0)
		c.Emit(RETURN, 0)
		idx, err := c.Finish()
		t.must(err)
		return idx
	}
	work := n - joins
	next := func(i, k int) uint32 { // a forward target among work nodes, else end
		if j := i + 1 + k; j < work {
			return uint32(j)
		}
		return 1
	}
	for i := first; i < work; i++ {
		nd := Node{Name: fmt.Sprintf("w%d", i), Kind: NodeTool, Into: 1, Catch: None, Effect: EffectIdempotent,
			Span:  Span{File: 0, StartLine: uint32(i + 1), StartCol: 3},
			Call:  Call{Kind: CallTool, Callee: 0, Args: []Arg{{Name: "n", Code: arg(i)}}},
			Retry: Retry{MaxAttempts: 3}}
		if i%2 == 0 {
			nd.Edges = []Edge{
				{Kind: EdgeWhen, Cond: cond(i, 1), Target: next(i, 0), Else: None},
				{Kind: EdgeWhen, Cond: cond(i, 2), Target: next(i, 1), Else: None},
				{Kind: EdgeOtherwise, Cond: None, Target: next(i, 2), Else: None},
			}
		} else {
			for k := 0; k < 3; k++ {
				to := next(i, k)
				if k > 0 && to == nd.Edges[len(nd.Edges)-1].Target {
					continue
				}
				nd.Edges = append(nd.Edges, Edge{Kind: EdgeAlways, Cond: None, Target: to, Else: None})
			}
		}
		nodes[i] = nd
	}
	nodes[0].Edges = []Edge{{Kind: EdgeAlways, Cond: None, Target: uint32(first), Else: None}}
	// Each join waits for two fan-out (odd) work nodes, which get an extra
	// edge to it.
	for j := 0; j < joins; j++ {
		ji := work + j
		var preds []uint32
		for _, pr := range []int{first + 1 + 4*j, first + 3 + 4*j} {
			if pr < work {
				preds = append(preds, uint32(pr))
				nodes[pr].Edges = append(nodes[pr].Edges, Edge{Kind: EdgeAlways, Cond: None, Target: uint32(ji), Else: None})
			}
		}
		if len(preds) == 0 {
			preds = []uint32{uint32(first + 1)}
			nodes[first+1].Edges = append(nodes[first+1].Edges, Edge{Kind: EdgeAlways, Cond: None, Target: uint32(ji), Else: None})
		}
		nodes[ji] = Node{Name: fmt.Sprintf("j%d", j), Kind: NodeJoin, Into: None, Catch: None, Effect: EffectReadOnly,
			Join:  JoinSpec{Mode: JoinAll, Preds: preds},
			Edges: []Edge{{Kind: EdgeAlways, Cond: None, Target: 1, Else: None}}}
	}
	p.Graphs = []Graph{{Name: "bench", State: 0, Input: None, Output: 0, Nodes: nodes}}
	if err := Verify(p); err != nil {
		tb.Fatalf("generated program does not verify: %v", err)
	}
	return p
}

type tb2 struct{ testing.TB }

func (t *tb2) must(err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
