package bytecode

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Disasm renders p as stable, readable text (golden tests and `agentc
// disasm`): the header and hash, constants, types, functions, state
// schemas, each graph's nodes with their policies, routes and joins, tools,
// models, agents, skills, policies, serve, tests, and finally every chunk as
// `pc  OPCODE operand  ; comment`, with a `@ file:line:col` line wherever the
// source span changes. Indexes that are out of range print as `?N`, so Disasm
// is safe on unverified programs.
func Disasm(p *Program) string {
	d := &disasm{p: p}
	d.header()
	d.graphs()
	d.tools()
	rows(d, "models", p.Models, func(m *Model) (string, Span, []Attr) {
		return fmt.Sprintf("%s provider %s", m.Name, m.Provider), m.Span, m.Attrs
	})
	d.agents()
	rows(d, "skills", p.Skills, func(s *Skill) (string, Span, []Attr) {
		return fmt.Sprintf("%s from %s", s.Name, strconv.Quote(s.Path)), s.Span, s.Attrs
	})
	rows(d, "policies", p.Policies, func(pl *Policy) (string, Span, []Attr) {
		return fmt.Sprintf("%s %s", pl.Kind, pl.Name), pl.Span, pl.Attrs
	})
	d.serve()
	d.budgets()
	d.tests()
	d.chunks()
	return d.sb.String()
}

type disasm struct {
	p  *Program
	sb strings.Builder
}

func (d *disasm) printf(format string, args ...any) { fmt.Fprintf(&d.sb, format, args...) }

// section prints the table title, then entry for each element of xs;
// nothing when xs is empty.
func section[T any](d *disasm, title string, xs []T, entry func(i int, x *T)) {
	if len(xs) == 0 {
		return
	}
	d.printf("%s\n", title)
	for i := range xs {
		entry(i, &xs[i])
	}
}

// rows is a section of one-line entries: "i text  @ span", then the
// entry's attributes.
func rows[T any](d *disasm, title string, xs []T, row func(*T) (text string, s Span, attrs []Attr)) {
	section(d, title, xs, func(i int, x *T) {
		text, s, attrs := row(x)
		d.printf("  %-3d %s  @ %s\n", i, text, d.spanStr(s))
		d.attrs("      ", attrs)
	})
}

func bad(i any) string { return fmt.Sprintf("?%v", i) }

func (d *disasm) constStr(i uint32) string {
	if int(i) < len(d.p.Consts) {
		return d.p.Consts[i].String()
	}
	return bad(i)
}

func (d *disasm) typeStr(i uint32) string {
	if int(i) < len(d.p.Types) && d.p.Types[i] != nil {
		return d.p.Types[i].String()
	}
	return bad(i)
}

func (d *disasm) stateName(i int64) string {
	if i >= 0 && i < int64(len(d.p.States)) {
		return d.p.States[i].Name
	}
	return bad(i)
}

func (d *disasm) fieldName(state int64, f int64) string {
	if state >= 0 && state < int64(len(d.p.States)) {
		fs := d.p.States[state].Fields
		if f >= 0 && f < int64(len(fs)) {
			return fs[f].Name
		}
	}
	return bad(f)
}

func (d *disasm) nodeName(g *Graph, i int64) string {
	if i >= 0 && i < int64(len(g.Nodes)) {
		return strconv.FormatInt(i, 10) + " " + g.Nodes[i].Name
	}
	return bad(i)
}

// entry is the name of entry i, or ?i when i is out of range (or t the
// zero table of an invalid kind).
func (t table) entry(i uint32) string {
	if int(i) < t.n {
		return t.name(i)
	}
	return bad(i)
}

func named[T any](xs []T, i uint32, name func(*T) string) string {
	if int(i) < len(xs) {
		return name(&xs[i])
	}
	return bad(i)
}

func (d *disasm) refStr(r Ref) string { return r.Kind.String() + " " + d.name(r.Kind, r.Index) }

// name is the name of entry i of the table references of kind k index.
func (d *disasm) name(k RefKind, i uint32) string {
	t, _ := d.p.refTable(k)
	return t.entry(i)
}

func (d *disasm) spanStr(s Span) string {
	if !s.IsValid() {
		return "-"
	}
	file := bad(s.File)
	if int(s.File) < len(d.p.Files) {
		file = d.p.Files[s.File]
	}
	return fmt.Sprintf("%s:%d:%d", file, s.StartLine, s.StartCol)
}

func optStr(i int32, f func(int64) string) string {
	if i == None {
		return "-"
	}
	return f(int64(i))
}

func chunkRef(i uint32) string { return "chunk " + strconv.FormatUint(uint64(i), 10) }

func (d *disasm) header() {
	p := d.p
	d.printf("agentc bytecode v%d\n", FormatVersion)
	d.printf("hash sha256:%s\n", hex.EncodeToString(p.Hash[:]))
	if p.Workflow != "" || p.Doc != "" {
		d.printf("workflow %s %s\n", p.Workflow, strconv.Quote(p.Doc))
	}
	list := func(title string, n int, line func(i int) string) {
		if n == 0 {
			return
		}
		d.printf("%s\n", title)
		for i := 0; i < n; i++ {
			d.printf("  %-3d %s\n", i, line(i))
		}
	}
	list("files", len(p.Files), func(i int) string { return p.Files[i] })
	list("consts", len(p.Consts), func(i int) string { return p.Consts[i].String() })
	list("types", len(p.Types), func(i int) string {
		t := p.Types[i]
		if t == nil {
			return "invalid"
		}
		if t.Name() != "" {
			return t.Name() + " = " + t.Literal()
		}
		return t.String()
	})
	list("funcs", len(p.Funcs), func(i int) string { return p.Funcs[i] })
	for i := range p.States {
		s := &p.States[i]
		d.printf("state %d %s schema sha256:%s\n", i, s.Name, hex.EncodeToString(s.Hash[:]))
		for j, f := range s.Fields {
			d.printf("  %-3d %s %s", j, f.Name, d.typeStr(f.Type))
			if f.MaxLen != 0 {
				d.printf(" max %d", f.MaxLen)
			}
			if f.HasDefault {
				d.printf(" = %s", d.constStr(f.Default))
			}
			if f.Reducer != ReduceReplace {
				d.printf(" reduce %s", f.Reducer)
			}
			d.printf("\n")
		}
	}
}

func (d *disasm) graphs() {
	p := d.p
	for gi := range p.Graphs {
		g := &p.Graphs[gi]
		state := int64(g.State)
		d.printf("graph %d %s(%s)", gi, g.Name, d.stateName(state))
		if g.Input != None {
			d.printf(" input %s", d.fieldName(state, int64(g.Input)))
		}
		if g.Output != None {
			d.printf(" output %s", d.fieldName(state, int64(g.Output)))
		}
		if g.Doc != "" {
			d.printf(" %s", strconv.Quote(g.Doc))
		}
		d.printf("  @ %s\n", d.spanStr(g.Span))
		for ni := range g.Nodes {
			d.node(g, ni, state)
		}
	}
}

func (d *disasm) call(c *Call) string {
	t, _ := d.p.callTable(c.Kind)
	return c.Kind.String() + " " + t.entry(c.Callee)
}

func (d *disasm) node(g *Graph, ni int, state int64) {
	n := &g.Nodes[ni]
	d.printf("  node %d %s %s", ni, n.Name, n.Kind)
	switch n.Kind {
	case NodeLLM, NodeTool, NodeAgent, NodeGraph:
		call := d.call(&n.Call)
		if n.Call.Kind == callKindOf(n.Kind) {
			call = strings.TrimPrefix(call, n.Call.Kind.String()+" ")
		}
		d.printf(" %s", call)
	case NodeMap:
		d.printf(" %s in %s", n.Map.Var, chunkRef(n.Map.List))
		if n.Map.Concurrency > 0 {
			d.printf(" concurrency %d", n.Map.Concurrency)
		}
		d.printf(" { %s }", d.call(&n.Call))
	case NodeInterrupt:
		d.printf(" prompt %s returns %s", chunkRef(n.Interrupt.Prompt), d.typeStr(n.Interrupt.Resume))
	case NodeWait:
		if n.Wait.Until {
			d.printf(" until")
		}
		d.printf(" %s", chunkRef(n.Wait.Code))
	case NodeJoin:
		d.printf(" %s", n.Join.Mode)
		var preds []string
		for _, pr := range n.Join.Preds {
			preds = append(preds, d.nodeName(g, int64(pr)))
		}
		d.printf(" [%s]", strings.Join(preds, ", "))
	}
	if n.Into != None {
		d.printf(" into %s", d.fieldName(state, int64(n.Into)))
	}
	d.printf(" effect %s  @ %s\n", n.Effect, d.spanStr(n.Span))
	for _, a := range n.Call.Args {
		d.printf("    arg %s = %s\n", a.Name, chunkRef(a.Code))
	}
	for _, a := range n.Set {
		d.printf("    set %s = %s\n", d.fieldName(state, int64(a.Field)), chunkRef(a.Code))
	}
	if r := n.Retry; r.MaxAttempts > 0 || r.BackoffMin != 0 || r.BackoffMax != 0 || r.Jitter || len(r.On) > 0 {
		d.printf("    attempts %d backoff %s..%s", r.MaxAttempts, r.BackoffMin, r.BackoffMax)
		if r.Jitter {
			d.printf(" jitter")
		}
		if len(r.On) > 0 {
			d.printf(" on [%s]", strings.Join(r.On, ", "))
		}
		d.printf("\n")
	}
	if n.Timeout != 0 {
		d.printf("    timeout %s\n", n.Timeout)
	}
	if n.Catch != None {
		d.printf("    catch -> %s\n", d.nodeName(g, int64(n.Catch)))
	}
	if n.Cache {
		d.printf("    cache")
		if n.CacheTTL != 0 {
			d.printf(" ttl %s", n.CacheTTL)
		}
		d.printf("\n")
	}
	for _, e := range n.Edges {
		d.printf("    -> %s", d.nodeName(g, int64(e.Target)))
		switch e.Kind {
		case EdgeWhen:
			d.printf(" when %s", optStr(e.Cond, func(i int64) string { return chunkRef(uint32(i)) }))
		case EdgeOtherwise:
			d.printf(" otherwise")
		case EdgeAlways:
		default:
			d.printf(" %s", e.Kind)
		}
		if e.Max > 0 {
			d.printf(" max %d else -> %s", e.Max, optStr(e.Else, func(i int64) string { return d.nodeName(g, i) }))
		}
		d.printf("\n")
	}
}

func (d *disasm) attrs(indent string, as []Attr) {
	for _, a := range as {
		d.printf("%s%s = %s\n", indent, a.Name, d.attrValue(&a))
	}
}

func (d *disasm) attrValue(a *Attr) string {
	switch a.Kind {
	case AttrConst:
		return d.constStr(a.Const)
	case AttrEnv:
		s := "env(" + strconv.Quote(a.Env.Var)
		if a.Env.HasDefault {
			s += ", " + strconv.Quote(a.Env.Default)
		}
		return s + ") " + d.typeStr(a.Env.Type)
	case AttrCode:
		return chunkRef(a.Code)
	case AttrRef, AttrRefs:
		var refs []string
		for _, r := range a.Refs {
			refs = append(refs, d.refStr(r))
		}
		if a.Kind == AttrRef {
			return strings.Join(refs, ", ")
		}
		return "[" + strings.Join(refs, ", ") + "]"
	}
	return a.Kind.String()
}

func (d *disasm) tools() {
	p := d.p
	section(d, "tools", p.Tools, func(i int, t *Tool) {
		d.printf("  %-3d %s %s input %s output %s effect %s  @ %s\n", i, t.Name, strconv.Quote(t.Doc),
			d.typeStr(t.Input), d.typeStr(t.Output), t.Effect, d.spanStr(t.Span))
		im := &t.Impl
		switch im.Kind {
		case ImplBuiltin:
			d.printf("      builtin %s\n", im.Builtin)
		case ImplHTTP:
			d.printf("      http %s url %s\n", im.Method, chunkRef(im.URL))
			d.attrs("        header ", im.Headers)
		case ImplExec:
			var argv []string
			for _, c := range im.Argv {
				argv = append(argv, chunkRef(c))
			}
			d.printf("      exec [%s]", strings.Join(argv, ", "))
			if im.Timeout != 0 {
				d.printf(" timeout %s", im.Timeout)
			}
			d.printf("\n")
		case ImplAgent:
			d.printf("      agent %s\n", d.name(RefAgent, im.Agent))
		case ImplMCP:
			d.printf("      mcp\n")
		default:
			d.printf("      %s\n", im.Kind)
		}
		d.attrs("        option ", im.Options)
		d.attrs("      ", t.Attrs)
	})
}

func (d *disasm) agents() {
	p := d.p
	section(d, "agents", p.Agents, func(i int, a *Agent) {
		d.printf("  %-3d %s %s", i, a.Name, a.Kind)
		if a.Doc != "" {
			d.printf(" %s", strconv.Quote(a.Doc))
		}
		d.printf("  @ %s\n", d.spanStr(a.Span))
		if a.Model != None {
			d.printf("      model %s\n", d.name(RefModel, uint32(a.Model)))
		}
		if a.Instruction != None {
			d.printf("      instruction %s\n", chunkRef(uint32(a.Instruction)))
		}
		names := func(xs []uint32, name func(uint32) string) string {
			var out []string
			for _, x := range xs {
				out = append(out, name(x))
			}
			return strings.Join(out, ", ")
		}
		if len(a.Tools) > 0 {
			d.printf("      tools %s\n", names(a.Tools, func(x uint32) string {
				return d.name(RefTool, x)
			}))
		}
		if len(a.Skills) > 0 {
			var gs []string
			for _, g := range a.Skills {
				gs = append(gs, d.name(RefSkill, g.Skill)+":"+g.Grant.String())
			}
			d.printf("      skills %s\n", strings.Join(gs, ", "))
		}
		if len(a.Policies) > 0 {
			d.printf("      policies %s\n", names(a.Policies, func(x uint32) string {
				return named(p.Policies, x, func(pl *Policy) string { return pl.Kind.String() + " " + pl.Name })
			}))
		}
		if a.MaxTurns > 0 {
			d.printf("      max_turns %d\n", a.MaxTurns)
		}
		if len(a.SubAgents) > 0 {
			d.printf("      agents %s\n", names(a.SubAgents, func(x uint32) string {
				return d.name(RefAgent, x)
			}))
		}
		if a.Until != None {
			d.printf("      until %s\n", chunkRef(uint32(a.Until)))
		}
		if a.Max > 0 {
			d.printf("      max %d\n", a.Max)
		}
		if a.Graph != None {
			d.printf("      lowered to graph %s\n", d.name(RefGraph, uint32(a.Graph)))
		}
		d.attrs("      ", a.Attrs)
	})
}

func (d *disasm) serve() {
	s := d.p.Serve
	if s == nil {
		return
	}
	d.printf("serve  @ %s\n", d.spanStr(s.Span))
	if s.Run.Kind != 0 {
		d.printf("  run %s\n", d.refStr(s.Run))
	}
	for _, pr := range s.Protocols {
		d.printf("  %s %s\n", pr.Kind, strconv.Quote(pr.Path))
		d.attrs("      ", pr.Attrs)
	}
	d.attrs("  ", s.Attrs)
}

func (d *disasm) tests() {
	p := d.p
	section(d, "tests", p.Tests, func(i int, t *Test) {
		d.printf("  %-3d %s run %s", i, strconv.Quote(t.Name), d.refStr(t.Run))
		if t.Input != None {
			d.printf(" input %s", d.constStr(uint32(t.Input)))
		}
		d.printf("  @ %s\n", d.spanStr(t.Span))
		var g *Graph
		if gi := p.RunGraph(t.Run); gi >= 0 && gi < len(p.Graphs) {
			g = &p.Graphs[gi]
		}
		node := func(n uint32) string {
			if g == nil {
				return bad(n)
			}
			return d.nodeName(g, int64(n))
		}
		for _, f := range t.Fixtures {
			d.printf("      %s replay %s\n", d.refStr(f.Target), strconv.Quote(f.Path))
		}
		for _, a := range t.Answers {
			d.printf("      answer %s = %s\n", node(a.Node), d.constStr(a.Value))
		}
		for _, e := range t.Expects {
			switch e.Kind {
			case ExpectCond:
				d.printf("      expect %s\n", optStr(e.Code, func(i int64) string { return chunkRef(uint32(i)) }))
			case ExpectOrder:
				d.printf("      expect visited(%s) before visited(%s)\n", node(e.First), node(e.Then))
			default:
				d.printf("      expect %s\n", e.Kind)
			}
		}
		d.attrs("      ", t.Attrs)
	})
}

func (d *disasm) chunks() {
	p := d.p
	for ci := range p.Chunks {
		c := &p.Chunks[ci]
		d.printf("chunk %d %s", ci, c.Name)
		if c.State != None {
			d.printf(" state %s", d.stateName(int64(c.State)))
		}
		d.printf(" locals %d maxstack %d\n", c.NumLocals, c.MaxStack)
		si := 0
		for pc, in := range c.Code {
			for si < len(c.Spans) && int64(c.Spans[si].PC) <= int64(pc) {
				if int(c.Spans[si].PC) == pc {
					d.printf("    @ %s\n", d.spanStr(c.Spans[si].Span))
				}
				si++
			}
			line := fmt.Sprintf("    %4d  %-11s", pc, in.Op)
			if in.Op.HasArg() {
				line += fmt.Sprintf(" %-6d", in.Arg)
			}
			if comment := d.comment(c, in); comment != "" {
				line += " ; " + comment
			}
			d.sb.WriteString(strings.TrimRight(line, " "))
			d.sb.WriteString("\n")
		}
	}
}

// comment explains an operand.
func (d *disasm) comment(c *Chunk, in Insn) string {
	p := d.p
	switch in.Op {
	case CONST, FIELD:
		return d.constStr(in.Arg)
	case LOAD:
		return d.fieldName(int64(c.State), int64(in.Arg))
	case CALL:
		fn, argc := SplitCallArg(in.Arg)
		name := bad(fn)
		if int(fn) < len(p.Funcs) {
			name = p.Funcs[fn]
		}
		return fmt.Sprintf("%s/%d", name, argc)
	case MAKERECORD, CONV:
		return d.typeStr(in.Arg)
	case JMP, JMPIFFALSE, JMPIFTRUE:
		return "-> " + strconv.FormatUint(uint64(in.Arg), 10)
	}
	return ""
}
