package compiler

import (
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
)

// Agents. Every agent gets a descriptor and is also lowered to a graph
// named after it (Agent.Graph), so that an agent served, tested or run on
// its own is one journaled run of the VM like any graph:
//
//	state NAME { input: string, output: T, ... }    T: the agent's answer type
//	graph NAME(NAME) input input output output
//
//   - llm:      start -> A -> end; A is an llm node (prompt = input, into output);
//   - chain:    start -> m1 -> ... -> mk -> end; m1's prompt is input, each
//     later member's the previous member's answer (as text), kept in a
//     hidden field `$m`; mk writes output;
//   - parallel: start -> m1..mk (fan-out, each prompted with input, each into
//     `$m`) -> `$join` (join all) -> `$output` (set output = {m: answer as
//     text, ...}) -> end;
//   - cycle:    start -> `$next` (set $iteration = $iteration + 1) -> m1 ->
//     ... -> mk, then mk -> end when until, mk -> `$next` otherwise max
//     (max - 1) else -> end: at most `max` rounds. m1's prompt is input in
//     the first round and the last member's answer after that; `until`
//     reads input, output (as text) and iteration from the state.
//
// Members are llm nodes for llm agents and agent nodes (the host runs the
// member's own lowered graph) for compositions; node names are the member
// names, so node paths read `draft/polish/editor`. Hidden names start with
// `$`. Expectations of a test that runs an agent read fields 0 (input) and
// 1 (output).

// agentGraph is the layout of the graph an agent is lowered to, fixed by
// index() before anything refers to it.
type agentGraph struct {
	state, graph uint32
	fields       []agentField
	members      []uint32 // field of each member's answer (by member position)
	iter         int32    // the $iteration field of a cycle, or None
	nodes        []string // node names in node order
}

type agentField struct {
	name string
	typ  *types.Type
	def  bool // int 0 (the iteration counter)
}

const (
	agentInput  = 0
	agentOutput = 1
)

// planAgentGraph reserves a's state and graph and lays out its fields and
// nodes.
func (l *lowerer) planAgentGraph(a *Agent) agentGraph {
	ag := agentGraph{state: uint32(len(l.p.States)), graph: uint32(len(l.p.Graphs)), iter: bytecode.None}
	l.p.States = append(l.p.States, bytecode.State{})
	l.p.Graphs = append(l.p.Graphs, bytecode.Graph{})
	out := a.Output
	if out == nil {
		out = types.JSONType
	}
	ag.fields = []agentField{{name: "input", typ: types.StringType}, {name: "output", typ: out}}
	ag.nodes = []string{"start", "end"}
	if a.Form == AgentLLM {
		ag.nodes = append(ag.nodes, a.Name())
		return ag
	}
	if a.Form == AgentCycle {
		ag.iter = int32(len(ag.fields))
		ag.fields = append(ag.fields, agentField{name: iterationField, typ: types.IntType, def: true})
		ag.nodes = append(ag.nodes, "$next")
	}
	for i, m := range a.Agents {
		ag.nodes = append(ag.nodes, m.Name())
		if i == a.Answer && a.Form != AgentParallel {
			ag.members = append(ag.members, agentOutput)
			continue
		}
		t := m.Output
		if t == nil {
			t = types.JSONType
		}
		ag.members = append(ag.members, uint32(len(ag.fields)))
		ag.fields = append(ag.fields, agentField{name: "$" + m.Name(), typ: t})
	}
	if a.Form == AgentParallel {
		ag.nodes = append(ag.nodes, "$join", "$output")
	}
	return ag
}

var agentKinds = [...]bytecode.AgentKind{
	AgentLLM: bytecode.AgentLLM, AgentChain: bytecode.AgentChain, AgentParallel: bytecode.AgentParallel, AgentCycle: bytecode.AgentCycle,
}

// agentStructural are the attributes an Agent descriptor holds in fields of
// its own.
var agentStructural = map[string]bool{
	"model": true, "instruction": true, "tools": true, "skills": true, "summary": true, "compaction": true,
	"recall": true, "memory": true, "evolution": true, "max_turns": true, "output": true,
	"agents": true, "until": true, "max": true, "answer": true, "budget": true,
}

// agent lowers an agent's descriptor.
func (l *lowerer) agent(a *Agent) {
	ai := l.agents[a]
	if n := a.Name(); n == "start" || n == "end" {
		l.errorf(diag.ReservedName, a.Span(), "an agent cannot be named %s: it becomes a node of the graph it is lowered to, where %s is the implicit %s node", n, n, n)
	}
	out := bytecode.Agent{
		Name: a.Name(), Doc: a.Doc, Model: bytecode.None, Instruction: bytecode.None,
		MaxTurns: u32(a.MaxTurns), Until: bytecode.None, Max: u32(a.Max),
		Graph: int32(l.lowered[ai].graph), Span: l.span(a.Span()),
	}
	if int(a.Form) < len(agentKinds) {
		out.Kind = agentKinds[a.Form]
	}
	if a.Model != nil {
		i, ok := l.models[a.Model]
		out.Model = optIndex(i, ok)
	}
	if at := a.Attrs.Get("instruction"); at != nil && at.Value != nil {
		out.Instruction = int32(l.chunk("agent."+a.Name()+".instruction", &exprScope{state: bytecode.None}, at.Value, types.StringType))
	}
	for _, t := range a.Tools {
		if i, ok := l.tools[t]; ok {
			out.Tools = append(out.Tools, i)
		}
	}
	for _, g := range a.Skills {
		grant := bytecode.GrantRead
		if g.Exec {
			grant = bytecode.GrantExec
		}
		out.Skills = append(out.Skills, bytecode.SkillGrant{Skill: l.skills[g.Skill], Grant: grant})
	}
	for _, pl := range []*Policy{a.Summary, a.Compaction, a.Recall, a.Memory, a.Evolution} {
		if pl != nil {
			out.Policies = append(out.Policies, l.policies[pl])
		}
	}
	for _, m := range a.Agents {
		out.SubAgents = append(out.SubAgents, l.agents[m])
	}
	for _, at := range attrList(a.Attrs) {
		if !agentStructural[at.Name] {
			out.Attrs = l.appendAttr(out.Attrs, "agent."+a.Name(), agentSchemas[a.Form], at)
		}
	}
	l.p.Agents[ai] = out
}

// agentGraph lowers the graph an agent was planned to become.
func (l *lowerer) agentGraph(a *Agent, ag *agentGraph) {
	name := a.Name()
	at := l.span(a.Span())
	st := bytecode.State{Name: name, Span: at}
	for _, f := range ag.fields {
		sf := bytecode.StateField{Name: f.name, Type: l.typ(f.typ), Reducer: bytecode.ReduceReplace, Span: at}
		if f.def {
			sf.HasDefault, sf.Default = true, l.constant(types.MakeInt(0))
		}
		st.Fields = append(st.Fields, sf)
	}
	l.p.States[ag.state] = st

	g := bytecode.Graph{Name: name, Doc: a.Doc, State: ag.state, Input: agentInput, Output: agentOutput, Span: at}
	sc := &exprScope{state: int32(ag.state)}
	node := func(n string, kind bytecode.NodeKind) bytecode.Node {
		return bytecode.Node{Name: n, Kind: kind, Span: at, Into: bytecode.None, Catch: bytecode.None, Effect: bytecode.EffectReadOnly}
	}
	edge := func(to int) bytecode.Edge {
		return bytecode.Edge{Kind: bytecode.EdgeAlways, Cond: bytecode.None, Target: uint32(to), Else: bytecode.None, Span: at}
	}
	const start, end = 0, 1
	g.Nodes = []bytecode.Node{node("start", bytecode.NodeStart), node("end", bytecode.NodeEnd)}

	// member returns the node calling agent m with the given prompt,
	// writing its answer into field `into`.
	member := func(m *Agent, into uint32, prompt func(x *exprCompiler)) bytecode.Node {
		kind, call := bytecode.NodeAgent, bytecode.CallAgent
		if m.Form == AgentLLM {
			kind, call = bytecode.NodeLLM, bytecode.CallLLM
		}
		n := node(m.Name(), kind)
		n.Into, n.Effect = int32(into), effectOf(m.Effect)
		code := l.chunkFunc(name+"."+m.Name()+".arg.prompt", sc, prompt)
		n.Call = bytecode.Call{Kind: call, Callee: l.agents[m], Args: []bytecode.Arg{{Name: "prompt", Code: code}}}
		return n
	}
	load := func(field uint32) func(x *exprCompiler) {
		return func(x *exprCompiler) {
			x.c.SetSpan(at)
			x.c.Emit(bytecode.LOAD, field)
			if t := ag.fields[field].typ; t.Kind() != types.KindString {
				x.c.Emit(bytecode.INTERP, 1)
			}
		}
	}

	switch a.Form {
	case AgentLLM:
		n := member(a, agentOutput, load(agentInput))
		n.Effect = effectOf(a.Effect)
		g.Nodes = append(g.Nodes, n)
		g.Nodes[start].Edges = []bytecode.Edge{edge(2)}
		g.Nodes[2].Edges = []bytecode.Edge{edge(end)}

	case AgentChain:
		first := len(g.Nodes)
		for i, m := range a.Agents {
			prompt := load(agentInput)
			if i > 0 {
				prompt = load(ag.members[i-1])
			}
			g.Nodes = append(g.Nodes, member(m, ag.members[i], prompt))
		}
		g.Nodes[start].Edges = []bytecode.Edge{edge(first)}
		for i := first; i < len(g.Nodes); i++ {
			next := i + 1
			if next == len(g.Nodes) {
				next = end
			}
			g.Nodes[i].Edges = []bytecode.Edge{edge(next)}
		}

	case AgentParallel:
		first := len(g.Nodes)
		for i, m := range a.Agents {
			g.Nodes = append(g.Nodes, member(m, ag.members[i], load(agentInput)))
		}
		join, set := len(g.Nodes), len(g.Nodes)+1
		jn := node("$join", bytecode.NodeJoin)
		jn.Join.Mode = bytecode.JoinAll
		for i := first; i < join; i++ {
			g.Nodes[start].Edges = append(g.Nodes[start].Edges, edge(i))
			g.Nodes[i].Edges = []bytecode.Edge{edge(join)}
			jn.Join.Preds = append(jn.Join.Preds, uint32(i))
		}
		jn.Edges = []bytecode.Edge{edge(set)}
		sn := node("$output", bytecode.NodeSet)
		sn.Set = []bytecode.Assign{{Field: agentOutput, Code: l.chunkFunc(name+".$output.set.output", sc, func(x *exprCompiler) {
			x.c.SetSpan(at)
			for i, m := range a.Agents {
				x.c.Const(types.MakeString(m.Name()))
				x.c.Emit(bytecode.LOAD, ag.members[i])
				x.c.Emit(bytecode.INTERP, 1) // an answer of another type as canonical JSON
			}
			x.c.Emit(bytecode.MAKEMAP, uint32(len(a.Agents)))
		})}}
		sn.Edges = []bytecode.Edge{edge(end)}
		g.Nodes = append(g.Nodes, jn, sn)

	case AgentCycle:
		iter := uint32(ag.iter)
		next := node("$next", bytecode.NodeSet)
		next.Set = []bytecode.Assign{{Field: iter, Code: l.chunkFunc(name+".$next.set."+iterationField, sc, func(x *exprCompiler) {
			x.c.SetSpan(at)
			x.c.Emit(bytecode.LOAD, iter)
			x.c.Const(types.MakeInt(1))
			x.c.Emit(bytecode.ADD, 0)
		})}}
		g.Nodes = append(g.Nodes, next)
		first := len(g.Nodes)
		lastAnswer := ag.members[len(a.Agents)-1]
		for i, m := range a.Agents {
			prompt := load(ag.members[max(i-1, 0)])
			if i == 0 {
				// Round 1: the cycle's prompt; later rounds: the last
				// member's answer of the previous round.
				prompt = func(x *exprCompiler) {
					later := x.c.NewLabel()
					x.c.SetSpan(at)
					x.c.Emit(bytecode.LOAD, iter)
					x.c.Const(types.MakeInt(1))
					x.c.Emit(bytecode.GT, 0)
					x.c.Jump(bytecode.JMPIFTRUE, later)
					x.c.Emit(bytecode.LOAD, agentInput)
					x.c.Emit(bytecode.RETURN, 0)
					x.c.Bind(later)
					load(lastAnswer)(x)
				}
			}
			g.Nodes = append(g.Nodes, member(m, ag.members[i], prompt))
		}
		last := len(g.Nodes) - 1
		g.Nodes[start].Edges = []bytecode.Edge{edge(first - 1)}
		g.Nodes[first-1].Edges = []bytecode.Edge{edge(first)}
		for i := first; i < last; i++ {
			g.Nodes[i].Edges = []bytecode.Edge{edge(i + 1)}
		}
		switch {
		case a.Max <= 1:
			g.Nodes[last].Edges = []bytecode.Edge{edge(end)}
		default:
			again := edge(first - 1)
			again.Max, again.Else = u32(a.Max-1), end
			if a.Until != nil {
				vars := map[string]varSlot{
					"input":     {field: agentInput},
					"output":    {field: lastAnswer, text: ag.fields[lastAnswer].typ.Kind() != types.KindString},
					"iteration": {field: iter},
				}
				cond := l.chunk(name+".until", &exprScope{state: int32(ag.state), vars: vars}, a.Until, types.BoolType)
				done := edge(end)
				done.Kind, done.Cond = bytecode.EdgeWhen, int32(cond)
				again.Kind = bytecode.EdgeOtherwise
				g.Nodes[last].Edges = []bytecode.Edge{done, again}
			} else {
				g.Nodes[last].Edges = []bytecode.Edge{again}
			}
		}
	}
	for i := range g.Nodes {
		if g.Nodes[i].Name != ag.nodes[i] {
			l.internal("agent %s: node %d is %s, planned %s", name, i, g.Nodes[i].Name, ag.nodes[i])
		}
	}
	l.p.Graphs[ag.graph] = g
}
