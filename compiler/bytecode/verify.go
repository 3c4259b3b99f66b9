package bytecode

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
)

// maxProblems bounds how many problems Verify reports.
const maxProblems = 20

// Verify checks that p is safe to execute: every index is in range, every
// enum is valid, every chunk is well formed, and the graph tables are
// consistent. The VM may rely on all of the following once Verify returns nil:
//
//   - chunks: every opcode is valid and its operand in range (constants,
//     types, state fields, locals, functions, record types, FIELD names are
//     string constants); jumps go forward and land inside the chunk (so
//     every chunk terminates); along every path the
//     stack never underflows, agrees where paths meet, stays within MaxStack
//     (≤ len(Code)), and every path ends in RETURN with exactly one value;
//     the last instruction is RETURN; spans are in pc order and name files;
//   - chunks are used in a matching context: a chunk's State is None or the
//     state of the graph that uses it, and its NumLocals does not exceed
//     what that context provides (1 in a map body or a tool template, else 0);
//   - graphs: exactly one start and one end node; unique node names; node
//     parts match the node kind; call kinds match callees (llm nodes call llm
//     agents); the route table of each node is an all-unconditional fan-out,
//     or `when` edges with at most one trailing `otherwise`; only the end node
//     has no edges; no edge targets the start node; an else target needs
//     `max N` (a `max N` edge without one fails the run with loop_limit when
//     exhausted); joins name unique predecessors that each have an edge or a
//     catch route to the join; catch targets exist;
//   - state schemas: unique field names, defaults that conform to the field
//     type, reducers that fit the type;
//   - tools, models, agents, skills, policies, serve and tests reference
//     existing entries; paths are relative and slash-separated; env
//     references have a name and a loadable type; answers name interrupt
//     nodes of the test's run graph.
//
// Verify never panics on a decoded program. The error lists up to 20
// problems, one per line.
func Verify(p *Program) error {
	v := verifier{p: p}
	for id := range sections {
		if s := sectionOf(id); s != nil && !s.empty(p) {
			v = s.verify(v)
		}
	}
	if len(v.errs) == 0 {
		return nil
	}
	if v.more > 0 {
		v.errs = append(v.errs, fmt.Errorf("and %d more problems", v.more))
	}
	return errors.Join(v.errs...)
}

type verifier struct {
	p    *Program
	errs []error
	more int
}

func (v *verifier) errorf(format string, args ...any) {
	if len(v.errs) >= maxProblems {
		v.more++
		return
	}
	v.errs = append(v.errs, fmt.Errorf(format, args...))
}

// validPath reports whether s is a clean, relative, slash-separated path.
func validPath(s string) bool {
	if s == "" || s == "." || strings.ContainsAny(s, "\\\x00") || strings.HasPrefix(s, "/") {
		return false
	}
	if len(s) >= 2 && s[1] == ':' { // a Windows drive
		return false
	}
	return path.Clean(s) == s && s != ".." && !strings.HasPrefix(s, "../")
}

// The checks of whole sections, by value for the sections table (see
// sectionDef.verify).

func (v verifier) files() verifier {
	for i, f := range v.p.Files {
		if !validPath(f) {
			v.errorf("file %d: %q is not a relative slash-separated path", i, f)
		}
	}
	return v
}

func (v verifier) consts() verifier {
	for i, c := range v.p.Consts {
		if c.Kind() == types.ValSecret {
			v.errorf("const %d: a secret cannot be a constant", i)
		}
	}
	return v
}

func (v verifier) types() verifier {
	for i, t := range v.p.Types {
		if t.Kind() == types.KindInvalid {
			v.errorf("type %d: invalid type", i)
		}
	}
	return v
}

func (v verifier) funcs() verifier {
	p := v.p
	v.unique("function", len(p.Funcs), func(i int) string { return p.Funcs[i] })
	return v
}

func (v verifier) states() verifier {
	for i := range v.p.States {
		v.state(i)
	}
	return v
}

func (v verifier) chunks() verifier {
	p := v.p
	for i := range p.Chunks {
		c := &p.Chunks[i]
		max, err := p.checkChunk(c)
		switch {
		case err != nil:
			v.errorf("chunk %d (%s): %v", i, c.Name, err)
		case max > int(c.MaxStack):
			v.errorf("chunk %d (%s): stack reaches depth %d, MaxStack is %d", i, c.Name, max, c.MaxStack)
		case int64(c.MaxStack) > int64(len(c.Code)):
			v.errorf("chunk %d (%s): MaxStack %d exceeds the code length %d", i, c.Name, c.MaxStack, len(c.Code))
		}
	}
	return v
}

// checkNamed checks a table of named entries: every name set and unique, then
// entry i by check (the verifier goes by value, as through the section
// table: through a func value a pointer to it would move it to the heap).
func checkNamed[T any](v verifier, what string, xs []T, name func(*T) string, check func(v verifier, i int) verifier) verifier {
	v.unique(what, len(xs), func(i int) string { return name(&xs[i]) })
	for i := range xs {
		v = check(v, i)
	}
	return v
}

func (v verifier) graphs() verifier {
	return checkNamed(v, "graph", v.p.Graphs, func(g *Graph) string { return g.Name }, func(v verifier, i int) verifier {
		v.graph(i)
		return v
	})
}

func (v verifier) tools() verifier {
	return checkNamed(v, "tool", v.p.Tools, func(t *Tool) string { return t.Name }, func(v verifier, i int) verifier {
		v.tool(&v.p.Tools[i])
		return v
	})
}

func (v verifier) models() verifier {
	return checkNamed(v, "model", v.p.Models, func(m *Model) string { return m.Name }, func(v verifier, i int) verifier {
		m := &v.p.Models[i]
		v.attrs("model "+m.Name, m.Attrs, 0)
		return v
	})
}

func (v verifier) agents() verifier {
	return checkNamed(v, "agent", v.p.Agents, func(a *Agent) string { return a.Name }, func(v verifier, i int) verifier {
		v.agent(i)
		return v
	})
}

func (v verifier) skills() verifier {
	return checkNamed(v, "skill", v.p.Skills, func(s *Skill) string { return s.Name }, func(v verifier, i int) verifier {
		s := &v.p.Skills[i]
		if !validPath(s.Path) {
			v.errorf("skill %s: path %q is not relative and slash-separated", s.Name, s.Path)
		}
		v.attrs("skill "+s.Name, s.Attrs, 0)
		return v
	})
}

func (v verifier) policies() verifier {
	return checkNamed(v, "policy", v.p.Policies, func(pl *Policy) string { return pl.Name }, func(v verifier, i int) verifier {
		pl := &v.p.Policies[i]
		if pl.Kind == 0 || pl.Kind >= policyKindEnd {
			v.errorf("policy %s: invalid kind %d", pl.Name, pl.Kind)
		}
		v.attrs("policy "+pl.Name, pl.Attrs, 0)
		return v
	})
}

func (v verifier) tests() verifier {
	return checkNamed(v, "test", v.p.Tests, func(t *Test) string { return t.Name }, func(v verifier, i int) verifier {
		v.test(&v.p.Tests[i])
		return v
	})
}

func (v *verifier) unique(what string, n int, name func(int) string) {
	if n <= 16 { // small tables: no map
		for i := 0; i < n; i++ {
			s := name(i)
			if s == "" {
				v.errorf("%s %d has no name", what, i)
				continue
			}
			for j := 0; j < i; j++ {
				if name(j) == s {
					v.errorf("%s %s defined twice", what, s)
					break
				}
			}
		}
		return
	}
	seen := make(map[string]bool, n)
	for i := 0; i < n; i++ {
		s := name(i)
		switch {
		case s == "":
			v.errorf("%s %d has no name", what, i)
		case seen[s]:
			v.errorf("%s %s defined twice", what, s)
		}
		seen[s] = true
	}
}

func (v *verifier) typeAt(what string, i uint32) *types.Type {
	if int(i) >= len(v.p.Types) {
		v.errorf("%s: type %d out of range", what, i)
		return nil
	}
	return v.p.Types[i]
}

func (v *verifier) constAt(what string, i uint32) bool {
	if int(i) >= len(v.p.Consts) {
		v.errorf("%s: const %d out of range", what, i)
		return false
	}
	return true
}

func (v *verifier) state(i int) {
	s := &v.p.States[i]
	what := "state " + s.Name
	v.unique(what+": field", len(s.Fields), func(j int) string { return s.Fields[j].Name })
	for _, f := range s.Fields {
		fw := what + ": field " + f.Name
		t := v.typeAt(fw, f.Type)
		if f.HasDefault && v.constAt(fw+": default", f.Default) && t != nil {
			d := v.p.Consts[f.Default]
			if c, err := types.Convert(d, t); err != nil {
				v.errorf("%s: default %v: %v", fw, d, err)
			} else if !types.Equal(c, d) || c.Kind() != d.Kind() {
				v.errorf("%s: default %v is not of type %s", fw, d, t)
			}
		}
		if t != nil && !reducerFits(f.Reducer, t) {
			v.errorf("%s: reducer %s does not apply to %s", fw, f.Reducer, t)
		}
	}
}

// reducerFits reports whether reducer r can merge values of type t.
func reducerFits(r Reducer, t *types.Type) bool {
	k := t.Kind()
	if k == types.KindOptional {
		k = t.Elem().Kind()
	}
	switch r {
	case ReduceReplace:
		return true
	case ReduceAppend:
		return k == types.KindList || k == types.KindMessages
	case ReduceMerge:
		return k == types.KindMap || k == types.KindRecord || k == types.KindJSON
	case ReduceSum:
		return k == types.KindInt || k == types.KindFloat || k == types.KindDuration
	case ReduceMax, ReduceMin:
		return k == types.KindInt || k == types.KindFloat || k == types.KindDuration || k == types.KindString
	}
	return false
}

// useChunk is chunk with a fixed context string.
func (v *verifier) useChunk(what string, i uint32, state int32, locals uint32) {
	v.chunk(i, state, locals, func() string { return what })
}

func (v *verifier) optChunk(what string, i int32, state int32, locals uint32) {
	if i == None {
		return
	}
	if i < 0 {
		v.errorf("%s: chunk index %d invalid", what, i)
		return
	}
	v.useChunk(what, uint32(i), state, locals)
}

func (v *verifier) optIndex(what string, i int32, n int) bool {
	if i == None {
		return false
	}
	if i < 0 || int(i) >= n {
		v.errorf("%s: index %d out of range", what, i)
		return false
	}
	return true
}

// The graph checks run once per node and edge of programs with thousands of
// nodes, so they build no strings unless they report: contexts are passed as
// funcs (`at`) that render the location on demand.

func (v *verifier) graph(gi int) {
	p := v.p
	g := &p.Graphs[gi]
	gw := func() string { return "graph " + g.Name }
	nfields := -1
	if int(g.State) >= len(p.States) {
		v.errorf("%s: state %d out of range", gw(), g.State)
	} else {
		nfields = len(p.States[g.State].Fields)
	}
	state := int32(g.State)
	field := func(f int64, at func() string) {
		if nfields >= 0 && (f < 0 || f >= int64(nfields)) {
			v.errorf("%s: state field %d out of range", at(), f)
		}
	}
	if g.Input != None {
		field(int64(g.Input), func() string { return gw() + ": input" })
	}
	if g.Output != None {
		field(int64(g.Output), func() string { return gw() + ": output" })
	}
	n := len(g.Nodes)
	v.unique("graph "+g.Name+": node", n, func(i int) string { return g.Nodes[i].Name })
	starts, ends := 0, 0
	for i := range g.Nodes {
		switch g.Nodes[i].Kind {
		case NodeStart:
			starts++
		case NodeEnd:
			ends++
		}
	}
	if starts != 1 || ends != 1 {
		v.errorf("%s: has %d start and %d end nodes, want one of each", gw(), starts, ends)
	}
	for ni := range g.Nodes {
		nd := &g.Nodes[ni]
		nw := func() string { return gw() + ": node " + nd.Name }
		if nd.Kind == 0 || nd.Kind >= nodeKindEnd {
			v.errorf("%s: invalid kind %d", nw(), nd.Kind)
			continue
		}
		if nd.Effect == 0 || nd.Effect >= effectEnd {
			v.errorf("%s: invalid effect %d", nw(), nd.Effect)
		}
		if nd.Into != None {
			switch nd.Kind {
			case NodeLLM, NodeTool, NodeAgent, NodeGraph, NodeMap, NodeInterrupt:
				field(int64(nd.Into), func() string { return nw() + ": into" })
			default:
				v.errorf("%s: %s node cannot write into a field", nw(), diag.WithArticle(nd.Kind.String()))
			}
		}
		locals := uint32(0)
		switch nd.Kind {
		case NodeLLM, NodeTool, NodeAgent, NodeGraph:
			if want := callKindOf(nd.Kind); nd.Call.Kind != want {
				v.errorf("%s: call kind %s, want %s", nw(), nd.Call.Kind, want)
			}
		case NodeMap:
			locals = 1
			v.chunk(nd.Map.List, state, 0, func() string { return nw() + ": list" })
		case NodeInterrupt:
			v.chunk(nd.Interrupt.Prompt, state, 0, func() string { return nw() + ": prompt" })
			if int(nd.Interrupt.Resume) >= len(p.Types) {
				v.errorf("%s: resume type %d out of range", nw(), nd.Interrupt.Resume)
			}
		case NodeSet:
			if len(nd.Set) == 0 {
				v.errorf("%s: set node assigns nothing", nw())
			}
			for _, a := range nd.Set {
				field(int64(a.Field), func() string { return nw() + ": set" })
				v.chunk(a.Code, state, 0, func() string { return nw() + ": set" })
			}
		case NodeJoin:
			v.join(g, ni, nw)
		case NodeWait:
			v.chunk(nd.Wait.Code, state, 0, func() string { return nw() + ": wait" })
		}
		switch nd.Kind {
		case NodeLLM, NodeTool, NodeAgent, NodeGraph, NodeMap:
			v.call(&nd.Call, gi, state, locals, nw)
		}
		if r := nd.Retry; r.BackoffMin < 0 || r.BackoffMax < 0 || (r.BackoffMax != 0 && r.BackoffMax < r.BackoffMin) {
			v.errorf("%s: invalid retry backoff %v..%v", nw(), r.BackoffMin, r.BackoffMax)
		}
		for _, k := range nd.Retry.On {
			if k == "" {
				v.errorf("%s: empty retry error kind", nw())
			}
		}
		if nd.Timeout < 0 || nd.CacheTTL < 0 {
			v.errorf("%s: negative timeout or cache ttl", nw())
		}
		if nd.Catch != None {
			switch c := nd.Catch; {
			case c < 0 || int(c) >= n:
				v.errorf("%s: catch: index %d out of range", nw(), c)
			case int(c) == ni || g.Nodes[c].Kind == NodeStart:
				v.errorf("%s: invalid catch target %s", nw(), g.Nodes[c].Name)
			}
		}
		v.edges(g, ni, state, nw)
	}
}

// chunk checks a reference to a chunk from a context that evaluates it with
// state schema `state` (or None) and `locals` local slots.
func (v *verifier) chunk(i uint32, state int32, locals uint32, at func() string) {
	if int(i) >= len(v.p.Chunks) {
		v.errorf("%s: chunk %d out of range", at(), i)
		return
	}
	c := &v.p.Chunks[i]
	if c.State != None && c.State != state {
		v.errorf("%s: chunk %d (%s) reads state %d where state %d is available", at(), i, c.Name, c.State, state)
	}
	if c.NumLocals > locals {
		v.errorf("%s: chunk %d (%s) needs %d locals where %d are provided", at(), i, c.Name, c.NumLocals, locals)
	}
}

func callKindOf(k NodeKind) CallKind {
	switch k {
	case NodeLLM:
		return CallLLM
	case NodeTool:
		return CallTool
	case NodeAgent:
		return CallAgent
	case NodeGraph:
		return CallGraph
	}
	return 0
}

func (v *verifier) call(c *Call, gi int, state int32, locals uint32, at func() string) {
	p := v.p
	t, ok := p.callTable(c.Kind)
	if !ok {
		v.errorf("%s: invalid call kind %d", at(), c.Kind)
		return
	}
	if int(c.Callee) >= t.n {
		v.errorf("%s: %s callee %d out of range", at(), c.Kind, c.Callee)
		return
	}
	switch {
	case c.Kind == CallLLM && p.Agents[c.Callee].Kind != AgentLLM:
		v.errorf("%s: llm call of %s agent %s", at(), p.Agents[c.Callee].Kind, p.Agents[c.Callee].Name)
	case c.Kind == CallGraph && int(c.Callee) == gi:
		v.errorf("%s: graph calls itself", at())
	}
	for i := range c.Args {
		a := &c.Args[i]
		if a.Name == "" {
			v.errorf("%s: argument %d has no name", at(), i)
		}
		for _, b := range c.Args[:i] {
			if b.Name == a.Name {
				v.errorf("%s: argument %s given twice", at(), a.Name)
			}
		}
		v.chunk(a.Code, state, locals, func() string { return at() + ": argument " + a.Name })
	}
}

func (v *verifier) join(g *Graph, ji int, at func() string) {
	j := &g.Nodes[ji].Join
	if j.Mode == 0 || j.Mode >= joinModeEnd {
		v.errorf("%s: invalid join mode %d", at(), j.Mode)
	}
	if len(j.Preds) == 0 {
		v.errorf("%s: join has no predecessors", at())
	}
	for i, pr := range j.Preds {
		if int(pr) >= len(g.Nodes) || int(pr) == ji {
			v.errorf("%s: invalid predecessor %d", at(), pr)
			continue
		}
		for _, q := range j.Preds[:i] {
			if q == pr {
				v.errorf("%s: predecessor %s listed twice", at(), g.Nodes[pr].Name)
			}
		}
		linked := int(g.Nodes[pr].Catch) == ji // a catch route arrives like an edge
		for _, e := range g.Nodes[pr].Edges {
			if int(e.Target) == ji || (e.Max > 0 && int(e.Else) == ji) {
				linked = true
				break
			}
		}
		if !linked {
			v.errorf("%s: predecessor %s has no edge to the join", at(), g.Nodes[pr].Name)
		}
	}
}

func (v *verifier) edges(g *Graph, ni int, state int32, at func() string) {
	nd := &g.Nodes[ni]
	if nd.Kind == NodeEnd {
		if len(nd.Edges) > 0 {
			v.errorf("%s: the end node has edges", at())
		}
		return
	}
	if len(nd.Edges) == 0 {
		v.errorf("%s: no outgoing edge", at())
		return
	}
	n := len(g.Nodes)
	target := func(t uint32, what func() string) {
		switch {
		case int(t) >= n:
			v.errorf("%s: target node %d out of range", what(), t)
		case g.Nodes[t].Kind == NodeStart:
			v.errorf("%s: targets the start node", what())
		}
	}
	always, when, otherwise := 0, 0, 0
	for i, e := range nd.Edges {
		ew := func() string { return fmt.Sprintf("%s: edge %d", at(), i) }
		switch e.Kind {
		case EdgeAlways:
			always++
			if e.Cond != None {
				v.errorf("%s: unconditional edge has a condition", ew())
			}
			for _, f := range nd.Edges[:i] {
				if f.Kind == EdgeAlways && f.Target == e.Target {
					v.errorf("%s: duplicate edge to node %d", ew(), e.Target)
				}
			}
		case EdgeWhen:
			when++
			switch {
			case e.Cond == None:
				v.errorf("%s: when edge has no condition", ew())
			case e.Cond < 0:
				v.errorf("%s: invalid condition %d", ew(), e.Cond)
			default:
				v.chunk(uint32(e.Cond), state, 0, func() string { return ew() + ": condition" })
			}
		case EdgeOtherwise:
			otherwise++
			if e.Cond != None {
				v.errorf("%s: otherwise edge has a condition", ew())
			}
			if i != len(nd.Edges)-1 {
				v.errorf("%s: otherwise is not the last edge", ew())
			}
		default:
			v.errorf("%s: invalid edge kind %d", ew(), e.Kind)
		}
		target(e.Target, ew)
		switch {
		case e.Max > 0 && e.Else == None:
			// No exit: the (Max+1)th traversal fails the run with loop_limit.
		case e.Max > 0 && e.Else < 0:
			v.errorf("%s: invalid else target %d", ew(), e.Else)
		case e.Max > 0:
			target(uint32(e.Else), func() string { return ew() + ": else" })
		case e.Else != None:
			v.errorf("%s: else target without max", ew())
		}
	}
	if always > 0 && when+otherwise > 0 {
		v.errorf("%s: mixes unconditional and conditional edges", at())
	}
	if otherwise > 0 && when == 0 {
		v.errorf("%s: otherwise without a when edge", at())
	}
}

func (v *verifier) attrs(what string, as []Attr, locals uint32) {
	v.unique(what+": attribute", len(as), func(i int) string { return as[i].Name })
	for _, a := range as {
		aw := what + ": attribute " + a.Name
		switch a.Kind {
		case AttrConst:
			v.constAt(aw, a.Const)
		case AttrEnv:
			if a.Env.Var == "" {
				v.errorf("%s: env reference without a variable name", aw)
			}
			if t := v.typeAt(aw, a.Env.Type); t != nil && !envType(t) {
				v.errorf("%s: type %s cannot come from the environment", aw, t)
			}
		case AttrCode:
			v.useChunk(aw, a.Code, None, locals)
		case AttrRef, AttrRefs:
			if a.Kind == AttrRef && len(a.Refs) != 1 {
				v.errorf("%s: %d references, want 1", aw, len(a.Refs))
			}
			for _, r := range a.Refs {
				v.ref(aw, r)
			}
		default:
			v.errorf("%s: invalid kind %d", aw, a.Kind)
		}
	}
}

func envType(t *types.Type) bool {
	if t.Kind() == types.KindOptional {
		t = t.Elem()
	}
	switch t.Kind() {
	case types.KindString, types.KindSecret, types.KindInt, types.KindFloat, types.KindBool, types.KindDuration, types.KindEnum:
		return true
	}
	return false
}

// ref checks a reference into a program table.
// table is a descriptor table as a reference or a call names it: its
// length and the name of entry i (i < n).
type table struct {
	n    int
	name func(i uint32) string
}

func tableOf[T any](xs []T, name func(*T) string) table {
	return table{len(xs), func(i uint32) string { return name(&xs[i]) }}
}

// refTables maps each reference kind to the table it indexes.
var refTables = map[RefKind]func(p *Program) table{
	RefGraph:  func(p *Program) table { return tableOf(p.Graphs, func(g *Graph) string { return g.Name }) },
	RefAgent:  func(p *Program) table { return tableOf(p.Agents, func(a *Agent) string { return a.Name }) },
	RefTool:   func(p *Program) table { return tableOf(p.Tools, func(t *Tool) string { return t.Name }) },
	RefModel:  func(p *Program) table { return tableOf(p.Models, func(m *Model) string { return m.Name }) },
	RefSkill:  func(p *Program) table { return tableOf(p.Skills, func(s *Skill) string { return s.Name }) },
	RefPolicy: func(p *Program) table { return tableOf(p.Policies, func(pl *Policy) string { return pl.Name }) },
}

// callRefs maps each call kind to the kind of reference its callee is.
var callRefs = map[CallKind]RefKind{CallLLM: RefAgent, CallAgent: RefAgent, CallTool: RefTool, CallGraph: RefGraph}

// refTable returns the table a reference of kind k indexes; ok is false
// for an invalid kind.
func (p *Program) refTable(k RefKind) (t table, ok bool) {
	f, ok := refTables[k]
	if !ok {
		return table{}, false
	}
	return f(p), true
}

// callTable returns the table a call of kind k indexes.
func (p *Program) callTable(k CallKind) (table, bool) {
	rk, ok := callRefs[k]
	if !ok {
		return table{}, false
	}
	return p.refTable(rk)
}

func (v *verifier) ref(what string, r Ref) bool {
	t, ok := v.p.refTable(r.Kind)
	if !ok {
		v.errorf("%s: invalid reference kind %d", what, r.Kind)
		return false
	}
	if int(r.Index) >= t.n {
		v.errorf("%s: %s %d out of range", what, r.Kind, r.Index)
		return false
	}
	return true
}

func (v *verifier) tool(t *Tool) {
	what := "tool " + t.Name
	v.typeAt(what+": input", t.Input)
	v.typeAt(what+": output", t.Output)
	if t.Effect == 0 || t.Effect >= effectEnd {
		v.errorf("%s: invalid effect %d", what, t.Effect)
	}
	im := &t.Impl
	switch im.Kind {
	case ImplBuiltin:
		if im.Builtin == "" {
			v.errorf("%s: builtin without a name", what)
		}
	case ImplHTTP:
		if im.Method == "" {
			v.errorf("%s: http without a method", what)
		}
		v.useChunk(what+": url", im.URL, None, 1)
		v.attrs(what+": header", im.Headers, 1)
	case ImplExec:
		if len(im.Argv) == 0 {
			v.errorf("%s: exec without argv", what)
		}
		for _, c := range im.Argv {
			v.useChunk(what+": argv", c, None, 1)
		}
		if im.Timeout < 0 {
			v.errorf("%s: negative timeout", what)
		}
	case ImplMCP:
		if _, ok := FindAttr(im.Options, "tool"); !ok {
			v.errorf("%s: mcp without a tool name", what)
		}
	case ImplAgent:
		if int(im.Agent) >= len(v.p.Agents) {
			v.errorf("%s: agent %d out of range", what, im.Agent)
		}
	default:
		v.errorf("%s: invalid implementation kind %d", what, im.Kind)
	}
	v.attrs(what+": option", im.Options, 1)
	v.attrs(what, t.Attrs, 0)
}

func (v *verifier) agent(ai int) {
	p := v.p
	a := &p.Agents[ai]
	what := "agent " + a.Name
	if a.Kind == 0 || a.Kind >= agentKindEnd {
		v.errorf("%s: invalid kind %d", what, a.Kind)
	}
	v.optIndex(what+": model", a.Model, len(p.Models))
	v.optChunk(what+": instruction", a.Instruction, None, 0)
	for _, t := range a.Tools {
		if int(t) >= len(p.Tools) {
			v.errorf("%s: tool %d out of range", what, t)
		}
	}
	for _, g := range a.Skills {
		if int(g.Skill) >= len(p.Skills) {
			v.errorf("%s: skill %d out of range", what, g.Skill)
		}
		if g.Grant == 0 || g.Grant >= grantEnd {
			v.errorf("%s: invalid skill grant %d", what, g.Grant)
		}
	}
	var kinds [policyKindEnd]bool
	for _, pi := range a.Policies {
		if int(pi) >= len(p.Policies) {
			v.errorf("%s: policy %d out of range", what, pi)
			continue
		}
		k := p.Policies[pi].Kind
		if k > 0 && k < policyKindEnd {
			if kinds[k] {
				v.errorf("%s: two %s policies", what, k)
			}
			kinds[k] = true
		}
	}
	for _, s := range a.SubAgents {
		if int(s) >= len(p.Agents) || int(s) == ai {
			v.errorf("%s: invalid sub-agent %d", what, s)
		}
	}
	v.optChunk(what+": until", a.Until, None, 0)
	v.optIndex(what+": graph", a.Graph, len(p.Graphs))
	v.attrs(what, a.Attrs, 0)
}

func (v *verifier) serve(s *Serve) {
	if s.Run.Kind != 0 {
		if s.Run.Kind != RefGraph && s.Run.Kind != RefAgent {
			v.errorf("serve: run must name a graph or an agent")
		} else {
			v.ref("serve: run", s.Run)
		}
	}
	for _, pr := range s.Protocols {
		if pr.Kind == 0 || pr.Kind >= protocolKindEnd {
			v.errorf("serve: invalid protocol kind %d", pr.Kind)
			continue
		}
		if !strings.HasPrefix(pr.Path, "/") {
			v.errorf("serve: %s path %q must start with /", pr.Kind, pr.Path)
		}
		v.attrs("serve "+pr.Kind.String(), pr.Attrs, 0)
	}
	v.attrs("serve", s.Attrs, 0)
}

func (v *verifier) test(t *Test) {
	p := v.p
	what := "test " + strings.TrimSpace(t.Name)
	gi := -1
	if t.Run.Kind != RefGraph && t.Run.Kind != RefAgent {
		v.errorf("%s: run must name a graph or an agent", what)
	} else if v.ref(what+": run", t.Run) {
		gi = p.RunGraph(t.Run)
		if gi >= len(p.Graphs) {
			gi = -1
		}
	}
	if t.Input != None {
		if t.Input < 0 {
			v.errorf("%s: invalid input %d", what, t.Input)
		} else {
			v.constAt(what+": input", uint32(t.Input))
		}
	}
	for _, f := range t.Fixtures {
		if f.Target.Kind != RefModel && f.Target.Kind != RefTool {
			v.errorf("%s: a fixture scripts a model or a tool", what)
		} else {
			v.ref(what+": fixture", f.Target)
		}
		if !validPath(f.Path) {
			v.errorf("%s: fixture path %q is not relative and slash-separated", what, f.Path)
		}
	}
	if gi < 0 && (len(t.Answers) > 0 || len(t.Expects) > 0) {
		v.errorf("%s: answers and expectations need a run graph", what)
		return
	}
	var g *Graph
	if gi >= 0 {
		g = &p.Graphs[gi]
	}
	node := func(w string, n uint32) bool {
		if int(n) >= len(g.Nodes) {
			v.errorf("%s: node %d out of range", w, n)
			return false
		}
		return true
	}
	for _, a := range t.Answers {
		if node(what+": answer", a.Node) && g.Nodes[a.Node].Kind != NodeInterrupt {
			v.errorf("%s: answer for %s, which is not an interrupt node", what, g.Nodes[a.Node].Name)
		}
		v.constAt(what+": answer", a.Value)
	}
	for i, e := range t.Expects {
		ew := fmt.Sprintf("%s: expect %d", what, i)
		switch e.Kind {
		case ExpectCond:
			if e.Code == None {
				v.errorf("%s: no condition", ew)
			}
			v.optChunk(ew, e.Code, int32(g.State), 0)
		case ExpectOrder:
			if e.Code != None {
				v.errorf("%s: order expectation with a condition", ew)
			}
			node(ew, e.First)
			node(ew, e.Then)
		default:
			v.errorf("%s: invalid kind %d", ew, e.Kind)
		}
	}
	v.attrs(what, t.Attrs, 0)
}

// checkChunk verifies one chunk's code (everything but MaxStack) and returns
// the deepest stack it reaches, which the builder records as MaxStack.
func (p *Program) checkChunk(c *Chunk) (int, error) {
	n := len(c.Code)
	if n == 0 {
		return 0, errors.New("empty code")
	}
	if c.Code[n-1].Op != RETURN {
		return 0, fmt.Errorf("pc %d: last instruction is %s, want RETURN", n-1, c.Code[n-1].Op)
	}
	nfields := -1
	if c.State != None {
		if c.State < 0 || int(c.State) >= len(p.States) {
			return 0, fmt.Errorf("state %d out of range", c.State)
		}
		nfields = len(p.States[c.State].Fields)
	}
	// Operands, for every instruction (reachable or not).
	for pc, in := range c.Code {
		if err := p.checkOperand(c, pc, in, nfields); err != nil {
			return 0, fmt.Errorf("pc %d: %s %d: %v", pc, in.Op, in.Arg, err)
		}
	}
	// Stack depths along every path. Jumps go forward only (so every chunk
	// terminates), hence one pass in pc order sees each instruction after
	// all of its predecessors; a depth must agree on every path into a pc.
	depth := make([]int32, n)
	for i := range depth {
		depth[i] = -1
	}
	depth[0] = 0
	max := 0
	reach := func(from, to, d int) error {
		switch {
		case depth[to] < 0:
			depth[to] = int32(d)
		case int(depth[to]) != d:
			return fmt.Errorf("pc %d: reaches pc %d with stack depth %d, where another path has %d", from, to, d, depth[to])
		}
		return nil
	}
	for pc, in := range c.Code {
		if depth[pc] < 0 {
			continue // unreachable
		}
		d := int(depth[pc])
		pops, pushes := p.effect(in)
		if d < pops {
			return 0, fmt.Errorf("pc %d: %s needs %d operands, stack holds %d", pc, in.Op, pops, d)
		}
		d += pushes - pops
		if d > max {
			max = d
		}
		switch {
		case in.Op == RETURN:
			if d != 0 {
				return 0, fmt.Errorf("pc %d: RETURN with %d values left below the result, want exactly one value", pc, d)
			}
			continue
		case in.Op.IsJump():
			if err := reach(pc, int(in.Arg), d); err != nil {
				return 0, err
			}
			if in.Op == JMP {
				continue
			}
		}
		// pc+1 < n: the last instruction is RETURN, which never falls through.
		if err := reach(pc, pc+1, d); err != nil {
			return 0, err
		}
	}
	// Span table.
	for i, s := range c.Spans {
		if i > 0 && s.PC <= c.Spans[i-1].PC {
			return 0, fmt.Errorf("span table entry %d out of pc order", i)
		}
		if int64(s.PC) >= int64(n) {
			return 0, fmt.Errorf("span table entry %d: pc %d out of range", i, s.PC)
		}
		if int(s.Span.File) >= len(p.Files) {
			return 0, fmt.Errorf("span table entry %d: file %d out of range", i, s.Span.File)
		}
	}
	return max, nil
}

// checkOperand checks one instruction's operand against the program tables.
func (p *Program) checkOperand(c *Chunk, pc int, in Insn, nfields int) error {
	if in.Op > OpcodeMax {
		return errors.New("illegal opcode")
	}
	if !in.Op.HasArg() {
		if in.Arg != 0 {
			return errors.New("operand given to an opcode without one")
		}
		return nil
	}
	a := in.Arg
	switch in.Op {
	case JMP, JMPIFFALSE, JMPIFTRUE:
		if int64(a) >= int64(len(c.Code)) {
			return errors.New("jump target outside the chunk")
		}
		if int(a) <= pc {
			return errors.New("jump is not forward")
		}
	case CONST:
		if int64(a) >= int64(len(p.Consts)) {
			return errors.New("const out of range")
		}
	case LOAD:
		if nfields < 0 {
			return errors.New("LOAD in a chunk without a state")
		}
		if int64(a) >= int64(nfields) {
			return errors.New("state field out of range")
		}
	case LOADLOCAL:
		if a >= c.NumLocals {
			return errors.New("local slot out of range")
		}
	case FIELD:
		if int64(a) >= int64(len(p.Consts)) || p.Consts[a].Kind() != types.ValString {
			return errors.New("field name is not a string constant")
		}
	case CALL:
		if fn, _ := SplitCallArg(a); int64(fn) >= int64(len(p.Funcs)) {
			return errors.New("function out of range")
		}
	case MAKERECORD:
		if int64(a) >= int64(len(p.Types)) || p.Types[a].Kind() != types.KindRecord {
			return errors.New("not a record type")
		}
	case CONV:
		if int64(a) >= int64(len(p.Types)) || p.Types[a].Kind() == types.KindInvalid {
			return errors.New("type out of range")
		}
	}
	return nil
}

// effect returns how many values in pops and how many it pushes. Operands
// must have been checked.
func (p *Program) effect(in Insn) (pops, pushes int) {
	switch in.Op {
	case CALL:
		_, argc := SplitCallArg(in.Arg)
		return argc, 1
	case MAKELIST, INTERP:
		return int(in.Arg), 1
	case MAKEMAP:
		return 2 * int(in.Arg), 1
	case MAKERECORD:
		return p.Types[in.Arg].NumFields(), 1
	}
	pops = int(stackPops[in.Op])
	return pops, pops + int(stackEffect[in.Op])
}
