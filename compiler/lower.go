package compiler

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Lowering: a checked Info becomes a bytecode.Program. Every table is filled
// from Info's slices, which are in a deterministic order (files by path,
// declarations in source order), and nothing is taken from a map without
// sorting, so one source gives one program. Indexes of every table are
// assigned before anything refers to them; then the parts are lowered in a
// fixed order (states, models, skills, policies, tools, agents, graphs, the
// graphs agents are lowered to, serve, tests), which fixes the order in
// which constants, types, functions and chunks are interned.
//
// This file holds the driver, spans, constants and state schemas; models,
// skills, policies, tools and attributes are in lowerdecl.go, expressions
// in lowerexpr.go, graphs in lowergraph.go, agents in loweragent.go, serve
// and tests in lowertest.go. spec/bytecode.md ("Lowering") records the
// decisions.

// Hidden names. `$` keeps them out of the user's namespace.
const (
	errorField     = "$error"     // vm.ErrorField: a catch target's `error`
	iterationField = "$iteration" // a cycle's round, 1-based
)

// Retry defaults (spec/language.md §12.6).
const (
	defaultBackoffMin = 500 * time.Millisecond
	defaultBackoffMax = 8 * time.Second
)

type lowerer struct {
	info  *Info
	pb    *bytecode.ProgramBuilder
	p     *bytecode.Program
	diags diag.List

	states   tableIndex[State]
	errField map[*State]int32 // the $error field of a state, when a graph over it has catch routes
	tools    tableIndex[Tool]
	models   tableIndex[Model]
	skills   tableIndex[Skill]
	policies tableIndex[Policy]
	agents   tableIndex[Agent]
	graphs   tableIndex[Graph]
	lowered  []agentGraph // the graph of each agent, by agent index

	files    map[string]uint32 // span file names → Files index
	lastFile string            // the file of the last span converted, and its index
	lastIdx  uint32

	strConsts map[string]uint32 // interned string and int constants (the common ones),
	intConsts map[int64]uint32  // so that most CONSTs skip the builder's encoding

	x       exprCompiler          // the expression compiler, reused by every chunk
	cb      bytecode.ChunkBuilder // the chunk builder, likewise
	nameBuf []byte                // scratch for chunk names
	names   []byte                // the block chunk names are kept in (keep)

	// typeHint and refHint are where the last lookups in Info.ExprTypes
	// and Info.Refs hit (NodeTable.getNear).
	typeHint, refHint int

	edges   []bytecode.Edge   // shares for nodes' route tables
	assigns []bytecode.Assign // shares for set nodes' assignments
}

// keep returns b as a string stored in the lowerer's name block: a graph's
// chunk names cost one allocation per block instead of one each. Bytes
// handed out are never written again (the block only grows at its end, and
// a full block is replaced, not reused), so the strings stay immutable.
func (l *lowerer) keep(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if cap(l.names)-len(l.names) < len(b) {
		l.names = make([]byte, 0, max(4096, len(b)))
	}
	start := len(l.names)
	l.names = append(l.names, b...)
	return unsafe.String(&l.names[start], len(b))
}

// lower turns a checked Info (without errors) into a Program. It returns
// nil and diagnostics when something cannot be lowered.
func lower(info *Info) (*bytecode.Program, []diag.Diagnostic) {
	l := &lowerer{
		info:     info,
		pb:       bytecode.NewProgramBuilder(),
		states:   make(tableIndex[State], len(info.States)),
		errField: make(map[*State]int32),
		tools:    make(tableIndex[Tool], len(info.Tools)+len(info.BuiltinTools)),
		models:   make(tableIndex[Model], len(info.Models)),
		skills:   make(tableIndex[Skill], len(info.Skills)),
		policies: make(tableIndex[Policy], len(info.Policies)),
		agents:   make(tableIndex[Agent], len(info.Agents)),
		graphs:   make(tableIndex[Graph], len(info.Graphs)+len(info.Agents)),
		files:    make(map[string]uint32),

		strConsts: make(map[string]uint32),
		intConsts: make(map[int64]uint32),
	}
	l.p = l.pb.Program()
	l.p.Workflow, l.p.Doc = workflowHeader(info)
	if info.Package != nil {
		for _, f := range info.Package.Files {
			l.files[f.Name] = l.pb.File(f.Name)
		}
	}
	l.index()
	forEach(info.States, l.state)
	forEach(info.Models, l.model)
	forEach(info.Skills, l.skill)
	forEach(info.Policies, l.policy)
	forEach(info.Tools, l.tool)
	forEach(info.BuiltinTools, l.tool)
	forEach(info.Agents, l.agent)
	forEach(info.Graphs, l.graph)
	for i, a := range info.Agents {
		l.agentGraph(a, &l.lowered[i])
	}
	l.serve()
	l.budgets()
	for i, t := range info.Tests {
		l.test(i, t)
	}
	if l.diags.HasErrors() {
		return nil, l.diags.Sorted()
	}
	return l.p, l.diags.Sorted()
}

// workflowHeader names the program: the workflow header of the root files,
// the first by path that has one. Info.Workflow takes the first root as
// given; the two agree whenever one root has a header (a program and its
// libraries), and this one does not depend on the order of the command line.
// A program without a header is named after its first root file (plain.agent:
// plain), so that it has an app name in the store (spec/language.md §2.2).
func workflowHeader(info *Info) (name, doc string) {
	name, doc = declaredHeader(info)
	if pkg := info.Package; name == "" && pkg != nil && len(pkg.Roots) > 0 {
		name = strings.TrimSuffix(path.Base(slices.Min(pkg.Roots)), ".agent")
	}
	return name, doc
}

// declaredHeader is the workflow header of the root files ("" when none
// has one).
func declaredHeader(info *Info) (name, doc string) {
	pkg := info.Package
	if pkg == nil {
		return info.Workflow, info.Doc
	}
	for _, f := range pkg.Files { // sorted by name
		if !slices.Contains(pkg.Roots, f.Name) {
			continue
		}
		for _, d := range f.Decls {
			if w, ok := d.(*syntax.Workflow); ok && w.Name != nil {
				if w.Doc != nil {
					doc, _ = w.Doc.Literal()
				}
				return w.Name.Name, doc
			}
		}
	}
	return info.Workflow, info.Doc
}

// index assigns the index of every table entry, and the state schemas of
// the graphs agents are lowered to, before anything refers to them.
func (l *lowerer) index() {
	info := l.info
	l.states.add(info.States)
	for _, g := range info.Graphs {
		if g.State != nil && hasCatch(g) {
			l.errField[g.State] = int32(len(g.State.Fields))
		}
	}
	l.tools.add(info.Tools)
	l.tools.add(info.BuiltinTools)
	l.models.add(info.Models)
	l.skills.add(info.Skills)
	l.policies.add(info.Policies)
	l.agents.add(info.Agents)
	l.graphs.add(info.Graphs)
	l.p.States = make([]bytecode.State, len(info.States), len(info.States)+len(info.Agents))
	l.p.Graphs = make([]bytecode.Graph, len(info.Graphs), len(info.Graphs)+len(info.Agents))
	l.lowered = make([]agentGraph, len(info.Agents))
	for i, a := range info.Agents {
		l.lowered[i] = l.planAgentGraph(a)
	}
	// Room for the chunks: growing the slice of chunk headers one doubling
	// at a time would copy it again and again. A graph's chunks are its set
	// values, conditions, call arguments and the like (graphChunks).
	n := 8 * (len(info.Agents) + len(info.Tools) + len(info.Tests))
	for _, g := range info.Graphs {
		n += graphChunks(g)
	}
	l.p.Chunks = make([]bytecode.Chunk, 0, n)
	l.p.Tools = make([]bytecode.Tool, len(l.tools))
	l.p.Models = make([]bytecode.Model, len(info.Models))
	l.p.Skills = make([]bytecode.Skill, len(info.Skills))
	l.p.Policies = make([]bytecode.Policy, len(info.Policies))
	l.p.Agents = make([]bytecode.Agent, len(info.Agents))
}

// graphChunks estimates the chunks graph lowering makes for g: one per set
// item, condition, call argument, map list, wait and prompt.
func graphChunks(g *Graph) int {
	n := 0
	for _, nd := range g.Nodes {
		switch nd.Kind {
		case NodeSet:
			n += len(nd.Set)
		case NodeCall:
			if nd.Call != nil {
				n += len(attrList(nd.Call.Args))
			}
		case NodeMap:
			n++
			if nd.Map != nil && nd.Map.Body != nil {
				n += len(attrList(nd.Map.Body.Args))
			}
		case NodeStart, NodeEnd, NodeJoin:
		default:
			n++
		}
	}
	for _, e := range g.Edges {
		if e.When != nil {
			n++
		}
	}
	return n
}

// tableIndex is the position of each entry of a program table.
type tableIndex[T any] map[*T]uint32

// add gives each of list the next position.
func (ix tableIndex[T]) add(list []*T) {
	for _, x := range list {
		ix[x] = uint32(len(ix))
	}
}

// hasCatch reports whether a graph has a catch route.
func hasCatch(g *Graph) bool {
	for _, e := range g.Edges {
		if e.Kind == EdgeCatch {
			return true
		}
	}
	return false
}

func (l *lowerer) errorf(code diag.Code, at diag.Span, format string, args ...any) {
	l.diags.Errorf(code, at, format, args...)
}

// internal records a lowering bug.
func (l *lowerer) internal(format string, args ...any) {
	l.diags.Add(internalError(fmt.Errorf(format, args...)))
}

// span converts a source span.
func (l *lowerer) span(s diag.Span) bytecode.Span {
	if !s.IsValid() {
		return bytecode.Span{}
	}
	f := l.lastIdx
	if s.File != l.lastFile || l.lastFile == "" {
		var ok bool
		if f, ok = l.files[s.File]; !ok {
			f = l.pb.File(s.File)
			l.files[s.File] = f
		}
		l.lastFile, l.lastIdx = s.File, f
	}
	return bytecode.Span{
		File:      f,
		StartLine: u32(s.Start.Line), StartCol: u32(s.Start.Col),
		EndLine: u32(s.End.Line), EndCol: u32(s.End.Col),
		StartOff: u32(s.Start.Offset), EndOff: u32(s.End.Offset),
	}
}

func u32(n int) uint32 {
	if n < 0 {
		return 0
	}
	return uint32(n)
}

// constant interns a value.
func (l *lowerer) constant(v types.Value) uint32 {
	switch v.Kind() {
	case types.ValString:
		if i, ok := l.strConsts[v.Str()]; ok {
			return i
		}
	case types.ValInt:
		if i, ok := l.intConsts[v.Int()]; ok {
			return i
		}
	}
	i, err := l.pb.Const(v)
	if err != nil {
		l.internal("%v", err)
	}
	switch v.Kind() {
	case types.ValString:
		l.strConsts[v.Str()] = i
	case types.ValInt:
		l.intConsts[v.Int()] = i
	}
	return i
}

// typ interns a type; nil (never after a clean check) becomes json.
func (l *lowerer) typ(t *types.Type) uint32 {
	if t == nil {
		t = types.JSONType
	}
	return l.pb.Type(t)
}

// optIndex is i, or None when !ok.
func optIndex(i uint32, ok bool) int32 {
	if !ok {
		return bytecode.None
	}
	return int32(i)
}

// ---- state schemas ----

var reducers = [...]bytecode.Reducer{
	ReduceReplace: bytecode.ReduceReplace, ReduceAppend: bytecode.ReduceAppend, ReduceMerge: bytecode.ReduceMerge,
	ReduceSum: bytecode.ReduceSum, ReduceMax: bytecode.ReduceMax, ReduceMin: bytecode.ReduceMin,
}

func (l *lowerer) state(s *State) {
	out := bytecode.State{Name: s.Name(), Span: l.span(s.Span()), Fields: make([]bytecode.StateField, 0, len(s.Fields)+1)}
	for _, f := range s.Fields {
		sf := bytecode.StateField{Name: f.Name, Type: l.typ(f.Type), Reducer: reducers[f.Reducer], MaxLen: uint32(f.MaxLen), Span: l.span(f.Span)}
		if f.HasDefault {
			v, err := types.Convert(f.DefaultValue, f.Type)
			if err != nil {
				l.internal("state %s: field %s: default: %v", s.Name(), f.Name, err)
			}
			sf.HasDefault, sf.Default = true, l.constant(v)
		}
		out.Fields = append(out.Fields, sf)
	}
	if _, ok := l.errField[s]; ok {
		out.Fields = append(out.Fields, bytecode.StateField{
			Name: errorField, Type: l.typ(types.OptionalOf(types.ErrorType)), Reducer: bytecode.ReduceReplace,
		})
	}
	l.p.States[l.states[s]] = out
}
