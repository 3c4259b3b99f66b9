// Package upgrade proves that runs of one program can continue on another
// (spec/upgrade.md): Check over two programs for every run that waits at
// an interrupt, Plan over one run's checkpoint for that run, which also
// writes the checkpoint the new program resumes from. It reads bytecode
// only — the runtime moves runs without the compiler front end — and
// reports each incompatibility with its positions in both versions, taken
// from the bytecode's spans.
package upgrade

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/vm"
)

// Codes of the findings (spec/upgrade.md lists each rule and why it is
// sound). They are the upgrade check's own: U is not a compiler family.
const (
	GraphGone       diag.Code = "U701" // the run's graph is not in the new program
	FieldChanged    diag.Code = "U702" // a kept state field changed its type or reducer
	FieldNoDefault  diag.Code = "U703" // a new state field has no default and is not optional
	FieldDropped    diag.Code = "U704" // a removed state field is read or written by the frontier
	NodeGone        diag.Code = "U705" // a frontier node or pending interrupt is not in the new graph
	NodeChanged     diag.Code = "U706" // a frontier node changed kind, callee, resume type or into field
	CounterGone     diag.Code = "U707" // a loop or join counter has no counterpart
	StepUnfinished  diag.Code = "U708" // the run stopped inside a step with finished tasks recorded
	FieldDiscarded  diag.Code = "U709" // warning: a removed field's value is dropped
	RunBroken       diag.Code = "U710" // the run's checkpoint does not decode against its program
	FieldUnassigned diag.Code = "U711" // a field the run never assigned is read where the run can still go
	WaitsInside     diag.Code = "U712" // the run waits inside a sub-run or on a tool confirmation
	TimerChanged    diag.Code = "U713" // an interrupt where a run can wait gains or loses its timeout
	FieldTooLong    diag.Code = "U714" // a moved list holds more elements than its field's new list size
)

// Issue is one finding: what it is, and where it is in each version (a
// zero span: absent from that version).
type Issue struct {
	Code     diag.Code
	Severity diag.Severity
	Message  string
	Old, New diag.Span
}

// Report is the outcome of a check: every finding, errors first by
// position. The upgrade is allowed when it holds no error.
type Report struct {
	Old, New string // the programs' hashes (hex)
	Run      string // the run checked; "" for Check over every waiting run
	Graphs   []string
	Issues   []Issue
}

// Compatible reports whether the report holds no error.
func (r *Report) Compatible() bool {
	return !slices.ContainsFunc(r.Issues, func(i Issue) bool { return i.Severity == diag.Error })
}

// Verdict is the check's conclusion for a person, the program versions
// named old and new (agentc upgrade-check OLD NEW).
func (r *Report) Verdict(old, new string) string {
	if !r.Compatible() {
		return fmt.Sprintf("incompatible: runs waiting on %s keep their program; %s cannot take them", old, new)
	}
	return fmt.Sprintf("compatible: runs waiting on %s can move to %s", old, new)
}

// Error renders the errors on one line each (the refusal's message).
func (r *Report) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "upgrade from program %.12s to %.12s refused:", r.Old, r.New)
	for _, i := range r.Issues {
		if i.Severity == diag.Error {
			fmt.Fprintf(&b, "\n  %s", i)
		}
	}
	return b.String()
}

// String renders "CODE: message (old FILE:L:C, new FILE:L:C)".
func (i Issue) String() string {
	var where []string
	if i.Old.IsValid() {
		where = append(where, "old "+i.Old.String())
	}
	if i.New.IsValid() {
		where = append(where, "new "+i.New.String())
	}
	s := string(i.Code) + ": " + i.Message
	if len(where) > 0 {
		s += " (" + strings.Join(where, ", ") + ")"
	}
	return s
}

// Diagnostics returns the findings as diagnostics: the subject is the new
// version's position (the old one's when the thing is gone), and the other
// version's position is a related location. oldName and newName rename the
// files of each version (nil: as the bytecode has them), so that a report
// over two copies of one file names both.
func (r *Report) Diagnostics(oldName, newName func(string) string) []diag.Diagnostic {
	rename := func(s diag.Span, f func(string) string) diag.Span {
		if f != nil && s.File != "" {
			s.File = f(s.File)
		}
		return s
	}
	out := make([]diag.Diagnostic, 0, len(r.Issues))
	for _, i := range r.Issues {
		d := diag.Diagnostic{Severity: i.Severity, Code: i.Code, Summary: i.Message}
		o, n := rename(i.Old, oldName), rename(i.New, newName)
		switch {
		case n.IsValid() || n.File != "":
			d.Subject = n
			if o.IsValid() {
				d.Related = append(d.Related, diag.Related{Message: "in the old version", Span: o})
			}
		default:
			d.Subject = o
		}
		out = append(out, d)
	}
	return out
}

// checker holds one comparison of a graph in two programs.
type checker struct {
	rep      *Report
	old, new *bytecode.Program
	og, ng   *bytecode.Graph
	os, ns   *bytecode.State
}

func (c *checker) add(sev diag.Severity, code diag.Code, old, new bytecode.Span, format string, args ...any) {
	c.rep.Issues = append(c.rep.Issues, Issue{Code: code, Severity: sev, Message: fmt.Sprintf(format, args...),
		Old: span(c.old, old), New: span(c.new, new)})
}

func (c *checker) errorf(code diag.Code, old, new bytecode.Span, format string, args ...any) {
	c.add(diag.Error, code, old, new, format, args...)
}

// span converts a bytecode span of p into a diagnostic span.
func span(p *bytecode.Program, s bytecode.Span) diag.Span {
	if p == nil || !s.IsValid() {
		return diag.Span{}
	}
	out := diag.Span{
		Start: diag.Pos{Offset: int(s.StartOff), Line: int(s.StartLine), Col: int(s.StartCol)},
		End:   diag.Pos{Offset: int(s.EndOff), Line: int(s.EndLine), Col: int(s.EndCol)},
	}
	if int(s.File) < len(p.Files) {
		out.File = p.Files[s.File]
	}
	return out
}

func newReport(old, new *bytecode.Program) *Report {
	return &Report{Old: hex.EncodeToString(old.Hash[:]), New: hex.EncodeToString(new.Hash[:])}
}

// pair finds graph name in both programs; a graph gone is a finding.
func pair(rep *Report, old, new *bytecode.Program, name string) *checker {
	c := &checker{rep: rep, old: old, new: new}
	oi := slices.IndexFunc(old.Graphs, func(g bytecode.Graph) bool { return g.Name == name })
	if oi < 0 {
		return nil
	}
	c.og = &old.Graphs[oi]
	c.os = &old.States[c.og.State]
	rep.Graphs = append(rep.Graphs, name)
	ni := slices.IndexFunc(new.Graphs, func(g bytecode.Graph) bool { return g.Name == name })
	if ni < 0 {
		c.errorf(GraphGone, c.og.Span, bytecode.Span{}, "graph %s is not in the new program: its runs have nowhere to continue", name)
		return nil
	}
	c.ng = &new.Graphs[ni]
	c.ns = &new.States[c.ng.State]
	return c
}

// Check proves that every run of old that waits at an interrupt or a wait
// node can continue on new: for each graph of old with such a node, its
// state fields (all of them: any may hold a value), its interrupt and wait
// nodes (any may be the one a run waits at), and its loop and join
// counters (any may be non-zero while it waits). Plan decides for one run by its checkpoint:
// the same rules over what the run holds, and U711, which only a run's
// state decides.
func Check(old, new *bytecode.Program) *Report {
	rep := newReport(old, new)
	for gi := range old.Graphs {
		g := &old.Graphs[gi]
		var frontier []int
		for ni := range g.Nodes {
			if k := g.Nodes[ni].Kind; k == bytecode.NodeInterrupt || k == bytecode.NodeWait {
				frontier = append(frontier, ni)
			}
		}
		if len(frontier) == 0 {
			continue // its runs never wait
		}
		c := pair(rep, old, new, g.Name)
		if c == nil {
			continue
		}
		c.fields(frontier)
		c.nodes(frontier)
		c.allCounters()
	}
	sortIssues(rep.Issues)
	return rep
}

func sortIssues(is []Issue) {
	slices.SortStableFunc(is, func(a, b Issue) int {
		if a.Severity != b.Severity {
			return int(a.Severity) - int(b.Severity)
		}
		if a.Old.Start.Offset != b.Old.Start.Offset {
			return a.Old.Start.Offset - b.Old.Start.Offset
		}
		return a.New.Start.Offset - b.New.Start.Offset
	})
}

// fields checks the state schema: kept fields keep type and reducer, new
// fields have a value to start from, removed ones are not used by the
// frontier (old node indices).
func (c *checker) fields(frontier []int) {
	p, q := c.old, c.new
	for _, f := range c.os.Fields {
		j := slices.IndexFunc(c.ns.Fields, func(g bytecode.StateField) bool { return g.Name == f.Name })
		if j < 0 {
			if n, ok := c.uses(frontier, f.Name); ok {
				c.errorf(FieldDropped, f.Span, c.ng.Span, "state field %s is removed, but node %s, where the run stands, uses it", f.Name, n)
			} else {
				c.add(diag.Warning, FieldDiscarded, f.Span, c.ns.Span, "state field %s is removed: its value is dropped", f.Name)
			}
			continue
		}
		g := c.ns.Fields[j]
		ot, nt := p.Types[f.Type], q.Types[g.Type]
		if !types.Identical(ot, nt) {
			c.errorf(FieldChanged, f.Span, g.Span, "state field %s changes type from %s to %s: the value the run holds was made for the old type", f.Name, ot, nt)
		} else if f.Reducer != g.Reducer {
			c.errorf(FieldChanged, f.Span, g.Span, "state field %s changes its reducer from %s to %s", f.Name, f.Reducer, g.Reducer)
		}
	}
	for _, g := range c.ns.Fields {
		if slices.ContainsFunc(c.os.Fields, func(f bytecode.StateField) bool { return f.Name == g.Name }) {
			continue
		}
		if !g.HasDefault && q.Types[g.Type].Kind() != types.KindOptional {
			c.errorf(FieldNoDefault, bytecode.Span{}, g.Span, "new state field %s has no default and is not optional: a moved run would hold null in it", g.Name)
		}
	}
}

// uses reports a frontier node (old indices) that reads or writes the old
// field name: its into field, a set target, or a LOAD in one of its chunks
// (arguments, prompt, map list, set values, route conditions).
func (c *checker) uses(frontier []int, name string) (string, bool) {
	fi := slices.IndexFunc(c.os.Fields, func(f bytecode.StateField) bool { return f.Name == name })
	for _, ni := range frontier {
		n := &c.og.Nodes[ni]
		if n.Into == int32(fi) || slices.ContainsFunc(n.Set, func(a bytecode.Assign) bool { return int(a.Field) == fi }) ||
			reads(c.old, n, fi) {
			return n.Name, true
		}
	}
	return "", false
}

// reads reports whether a chunk of node n of p (its arguments, prompt, map
// list, set values or route conditions) loads state field fi.
func reads(p *bytecode.Program, n *bytecode.Node, fi int) bool {
	var chunks []int32
	for _, a := range n.Call.Args {
		chunks = append(chunks, int32(a.Code))
	}
	switch n.Kind {
	case bytecode.NodeInterrupt:
		chunks = append(chunks, int32(n.Interrupt.Prompt))
	case bytecode.NodeMap:
		chunks = append(chunks, int32(n.Map.List))
	}
	for _, s := range n.Set {
		chunks = append(chunks, int32(s.Code))
	}
	for _, e := range n.Edges {
		chunks = append(chunks, e.Cond)
	}
	for _, ci := range chunks {
		if ci >= 0 && int(ci) < len(p.Chunks) &&
			slices.ContainsFunc(p.Chunks[ci].Code, func(in bytecode.Insn) bool { return in.Op == bytecode.LOAD && int(in.Arg) == fi }) {
			return true
		}
	}
	return false
}

// unassigned checks a moved state (new's layout) from the run's new
// frontier: a field that holds null but whose type does not admit it
// (neither optional nor defaulted) must not be read by a node the run can
// still reach — the new program's definite-assignment proof (T306) was made
// for its own runs, and this run did not take its paths.
func (c *checker) unassigned(state []types.Value, frontier []int) {
	reach := make([]bool, len(c.ng.Nodes))
	todo := slices.Clone(frontier)
	for len(todo) > 0 {
		n := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if n < 0 || reach[n] {
			continue
		}
		reach[n] = true
		nd := &c.ng.Nodes[n]
		for _, e := range nd.Edges {
			todo = append(todo, int(e.Target))
			if e.Else >= 0 {
				todo = append(todo, int(e.Else))
			}
		}
		if nd.Catch >= 0 {
			todo = append(todo, int(nd.Catch))
		}
	}
	for fi, f := range c.ns.Fields {
		if !state[fi].IsNull() || f.HasDefault || c.new.Types[f.Type].Kind() == types.KindOptional {
			continue
		}
		for ni := range c.ng.Nodes {
			if reach[ni] && reads(c.new, &c.ng.Nodes[ni], fi) {
				c.errorf(FieldUnassigned, c.oldField(f.Name), c.ng.Nodes[ni].Span, "state field %s is unassigned in the run, and node %s, which the run can still reach, reads it", f.Name, c.ng.Nodes[ni].Name)
				break
			}
		}
	}
}

// oldField is the span of the old state's field name (zero when it has none).
func (c *checker) oldField(name string) bytecode.Span {
	if j := slices.IndexFunc(c.os.Fields, func(g bytecode.StateField) bool { return g.Name == name }); j >= 0 {
		return c.os.Fields[j].Span
	}
	return bytecode.Span{}
}

// sizes checks a moved state (new's layout) against the new program's list
// sizes (spec/language.md §9.1): the VM holds them on every input and write
// and the compiler's bounds count on them, so a run may not bring a longer
// list along.
func (c *checker) sizes(state []types.Value) {
	for fi := range c.ns.Fields {
		f := &c.ns.Fields[fi]
		var se *bytecode.SizeError
		if errors.As(f.CheckSize(state[fi]), &se) {
			c.errorf(FieldTooLong, c.oldField(f.Name), f.Span, "state field %s holds %d elements in the run, past its list size of %d in the new program", f.Name, se.Len, se.Max)
		}
	}
}

// nodes checks that every frontier node (old indices) has a counterpart of
// the same name doing the same thing, and returns the counterparts' indices
// (-1 where there is none).
func (c *checker) nodes(frontier []int) []int {
	out := make([]int, len(frontier))
	for k, ni := range frontier {
		n := &c.og.Nodes[ni]
		j := nodeIndex(c.ng, n.Name)
		out[k] = j
		if j < 0 {
			what := "node"
			if n.Kind == bytecode.NodeInterrupt {
				what = "interrupt"
			}
			c.errorf(NodeGone, n.Span, c.ng.Span, "%s %s, where a run of %s can wait, is not in the new graph", what, n.Name, c.og.Name)
			continue
		}
		m := &c.ng.Nodes[j]
		if n.Kind != m.Kind {
			c.errorf(NodeChanged, n.Span, m.Span, "node %s changes from %s to %s", n.Name, n.Kind, m.Kind)
			continue
		}
		if of, nf := c.fieldName(c.old, c.os, n.Into), c.fieldName(c.new, c.ns, m.Into); of != nf {
			c.errorf(NodeChanged, n.Span, m.Span, "node %s writes into %s instead of %s", n.Name, orNone(nf), orNone(of))
		}
		switch n.Kind {
		case bytecode.NodeInterrupt:
			ot, nt := c.old.Types[n.Interrupt.Resume], c.new.Types[m.Interrupt.Resume]
			if !types.Identical(ot, nt) {
				c.errorf(NodeChanged, n.Span, m.Span, "interrupt %s changes its resume type from %s to %s: the answer a waiting run is given was asked for as %s", n.Name, ot, nt, ot)
			}
			if (n.Timeout > 0) != (m.Timeout > 0) {
				c.errorf(TimerChanged, n.Span, m.Span, "interrupt %s %s a timeout: a run waiting there armed its deadline (or none) when it arrived, as the old program says", n.Name, map[bool]string{true: "gains", false: "loses"}[m.Timeout > 0])
			}
		case bytecode.NodeLLM, bytecode.NodeTool, bytecode.NodeAgent, bytecode.NodeGraph, bytecode.NodeMap:
			if oc, nc := calleeName(c.old, n.Call), calleeName(c.new, m.Call); oc != nc {
				c.errorf(NodeChanged, n.Span, m.Span, "node %s calls %s instead of %s: a recorded side effect or pending decision of the run belongs to %s", n.Name, nc, oc, oc)
			}
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

func nodeIndex(g *bytecode.Graph, name string) int {
	return slices.IndexFunc(g.Nodes, func(n bytecode.Node) bool { return n.Name == name })
}

func (c *checker) fieldName(p *bytecode.Program, s *bytecode.State, f int32) string {
	if f < 0 || int(f) >= len(s.Fields) {
		return ""
	}
	return s.Fields[f].Name
}

// calleeName names what a call invokes: "tool cert_scan", "agent writer".
func calleeName(p *bytecode.Program, call bytecode.Call) string {
	i := int(call.Callee)
	switch call.Kind {
	case bytecode.CallTool:
		if i < len(p.Tools) {
			return "tool " + p.Tools[i].Name
		}
	case bytecode.CallLLM, bytecode.CallAgent:
		if i < len(p.Agents) {
			return "agent " + p.Agents[i].Name
		}
	case bytecode.CallGraph:
		if i < len(p.Graphs) {
			return "graph " + p.Graphs[i].Name
		}
	}
	return fmt.Sprintf("callee %d", i)
}

// edgeRef names a bounded edge: its source node, its position among the
// bounded edges of that source to the same target, and the target.
type edgeRef struct {
	src, dst string
	nth      int
}

// boundedEdge returns the loop slot of edge ref in graph g (-1: none) and
// the edge.
func boundedEdge(g *bytecode.Graph, ref edgeRef) (int, *bytecode.Edge) {
	l := vm.Layout(g)
	ni := nodeIndex(g, ref.src)
	if ni < 0 {
		return -1, nil
	}
	k := 0
	for ei := range g.Nodes[ni].Edges {
		e := &g.Nodes[ni].Edges[ei]
		if e.Max == 0 || g.Nodes[e.Target].Name != ref.dst {
			continue
		}
		if k == ref.nth {
			return int(l.EdgeBase[ni]) + ei, e
		}
		k++
	}
	return -1, nil
}

// refOfSlot names the edge of loop slot s in g.
func refOfSlot(g *bytecode.Graph, l vm.CounterLayout, s int) (edgeRef, *bytecode.Edge, bool) {
	for ni := range g.Nodes {
		base := int(l.EdgeBase[ni])
		if s < base || s >= base+len(g.Nodes[ni].Edges) {
			continue
		}
		e := &g.Nodes[ni].Edges[s-base]
		ref := edgeRef{src: g.Nodes[ni].Name, dst: g.Nodes[e.Target].Name}
		for _, f := range g.Nodes[ni].Edges[:s-base] {
			if f.Max > 0 && g.Nodes[f.Target].Name == ref.dst {
				ref.nth++
			}
		}
		return ref, e, true
	}
	return edgeRef{}, nil, false
}

// mapLoop maps old loop slot s to the new graph's slot (-1 and a finding
// when there is none).
func (c *checker) mapLoop(lo vm.CounterLayout, s int) int {
	ref, e, ok := refOfSlot(c.og, lo, s)
	if !ok {
		return -1
	}
	ns, _ := boundedEdge(c.ng, ref)
	if ns < 0 {
		c.errorf(CounterGone, e.Span, c.ng.Span, "the bounded edge %s -> %s counts its traversals, and the new graph has no bounded edge %s -> %s to carry the count", ref.src, ref.dst, ref.src, ref.dst)
	}
	return ns
}

// joinRef names an arrival slot: the join and the predecessor.
func arrivalRef(g *bytecode.Graph, l vm.CounterLayout, s int) (join, pred int, ok bool) {
	for ni := range g.Nodes {
		b := int(l.JoinBase[ni])
		if b >= 0 && s >= b && s < b+len(g.Nodes[ni].Join.Preds) {
			return ni, int(g.Nodes[ni].Join.Preds[s-b]), true
		}
	}
	return 0, 0, false
}

// mapArrival maps old arrival slot s to the new graph's slot.
func (c *checker) mapArrival(lo, ln vm.CounterLayout, s int) int {
	ji, pi, ok := arrivalRef(c.og, lo, s)
	if !ok {
		return -1
	}
	j := &c.og.Nodes[ji]
	pred := c.og.Nodes[pi].Name
	nj := nodeIndex(c.ng, j.Name)
	if nj >= 0 && c.ng.Nodes[nj].Kind == bytecode.NodeJoin {
		for k, p := range c.ng.Nodes[nj].Join.Preds {
			if c.ng.Nodes[p].Name == pred {
				return int(ln.JoinBase[nj]) + k
			}
		}
	}
	var at bytecode.Span
	if nj >= 0 {
		at = c.ng.Nodes[nj].Span
	}
	c.errorf(CounterGone, j.Span, at, "join %s counts the arrival of %s, and the new graph has no join %s waiting for %s", j.Name, pred, j.Name, pred)
	return -1
}

// mapFired maps old fired slot s to the new graph's.
func (c *checker) mapFired(lo, ln vm.CounterLayout, s int) int {
	ji := slices.Index(lo.JoinIndex, int32(s))
	if ji < 0 {
		return -1
	}
	j := &c.og.Nodes[ji]
	nj := nodeIndex(c.ng, j.Name)
	if nj >= 0 && c.ng.Nodes[nj].Kind == bytecode.NodeJoin && c.ng.Nodes[nj].Join.Mode == j.Join.Mode {
		return int(ln.JoinIndex[nj])
	}
	var at bytecode.Span
	if nj >= 0 {
		at = c.ng.Nodes[nj].Span
	}
	c.errorf(CounterGone, j.Span, at, "join %s has fired in the current wave, and the new graph has no join %s of the same mode", j.Name, j.Name)
	return -1
}

// allCounters maps every counter of the old graph (Check: any may be
// non-zero while a run waits).
func (c *checker) allCounters() {
	lo, ln := vm.Layout(c.og), vm.Layout(c.ng)
	for _, s := range lo.Bounded {
		c.mapLoop(lo, int(s))
	}
	for s := 0; s < lo.Arrivals; s++ {
		c.mapArrival(lo, ln, s)
	}
	for s := 0; s < lo.Joins; s++ {
		c.mapFired(lo, ln, s)
	}
}
