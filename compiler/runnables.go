package compiler

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Checks of what runs: node effects, the serve block and test blocks.

// graphEffects computes the effect of every node and graph, and warns about
// cached side effects.
func (c *checker) graphEffects() {
	busy := map[*Graph]bool{}
	var graphEffect func(g *Graph) Effect
	callEffect := func(call *Call) Effect {
		switch {
		case call == nil:
			return ReadOnly
		case call.Tool != nil:
			return call.Tool.Effect
		case call.Agent != nil:
			return call.Agent.Effect
		case call.Graph != nil:
			return graphEffect(call.Graph)
		}
		return ReadOnly
	}
	graphEffect = func(g *Graph) Effect {
		if g.Effect != 0 || busy[g] {
			return max(g.Effect, ReadOnly)
		}
		busy[g] = true
		e := ReadOnly
		for _, n := range g.Nodes[min(2, len(g.Nodes)):] {
			switch n.Kind {
			case NodeCall:
				n.Effect = callEffect(n.Call)
			case NodeMap:
				if n.Map != nil {
					n.Effect = callEffect(n.Map.Body)
				}
			default:
				n.Effect = ReadOnly
			}
			n.Effect = max(n.Effect, ReadOnly)
			e = max(e, n.Effect)
		}
		delete(busy, g)
		g.Effect = e
		return e
	}
	for _, g := range c.info.Graphs {
		graphEffect(g)
	}
	for _, g := range c.info.Graphs {
		for _, n := range g.Nodes {
			if n.Effect != SideEffect || n.Syntax == nil {
				continue
			}
			cls := n.Syntax.Clauses
			if m, ok := n.Syntax.Body.(*syntax.MapNode); ok {
				cls = append(append([]*syntax.Clause(nil), cls...), m.Clauses...)
			}
			for _, cl := range cls {
				if cl.Cache != nil {
					c.warnf(CacheSideEffect, cl.Span(), "node %s has side effects; a cache hit skips them", n.Name)
				}
			}
		}
	}
}

func (c *checker) checkServe() {
	s := c.info.Serve
	if s == nil || s.Syntax == nil || s.Syntax.Body == nil {
		return
	}
	file := c.fileOf[s.Syntax]
	at := diag.Span{File: s.Span.File, Start: s.Span.Start, End: s.Span.Start}
	at.End.Offset += len("serve")
	at.End.Col += len("serve")
	s.Attrs = c.checkBlock(serveSchema, s.Syntax.Body.Attrs, at, &scope{where: InConfig, file: file})
	if r := s.Attrs.Get("run"); r != nil && len(r.Refs) == 1 {
		s.Run = r.Refs[0]
	}
	if b := s.Attrs.Get("budget"); b != nil && b.Syn != nil && b.Syn.Key != nil {
		s.Budget = limitsOf(b.Block, b.Syn.Key.Span())
	}
	paths := map[string]diag.Span{}
	checkPath := func(a *Attr) {
		if a == nil || !a.HasConst {
			return
		}
		p := a.Const.Str()
		if !strings.HasPrefix(p, "/") {
			c.errorf(InvalidValue, a.Value.Span(), "%s must be an absolute URL path such as \"/%s\"", a.Name, strings.TrimLeft(p, "/"))
			return
		}
		if prev, dup := paths[p]; dup {
			related(c.errorf(InvalidValue, a.Value.Span(), "path %s is already used by another endpoint", p), "first used here", prev)
			return
		}
		paths[p] = a.Value.Span()
	}
	checkPath(s.Attrs.Get("agui"))
	for _, name := range []string{"a2a", "openai", "mcp"} {
		if a := s.Attrs.Get(name); a != nil {
			checkPath(a.Block.Get("path"))
		}
	}
}

func (c *checker) checkTests() {
	seen := map[string]diag.Span{}
	for _, f := range c.pkg.Files {
		for _, d := range f.Decls {
			syn, ok := d.(*syntax.Test)
			if !ok {
				continue
			}
			t := c.checkTest(syn, f.Name)
			if t == nil {
				continue
			}
			if prev, dup := seen[t.Name]; dup {
				related(c.errorf(diag.DuplicateName, t.Span, "test %q is declared twice", t.Name), "first declared here", prev)
			}
			seen[t.Name] = t.Span
			c.info.Tests = append(c.info.Tests, t)
		}
	}
}

func (c *checker) checkTest(syn *syntax.Test, file string) *Test {
	if syn.Name == nil {
		return nil
	}
	t := &Test{Span: syn.Name.Span(), Syntax: syn}
	name, ok := syn.Name.Literal()
	if !ok {
		c.errorf(NotConstant, syn.Name.Span(), "a test name cannot interpolate")
	}
	t.Name = name
	var attrs []*syntax.Attr
	for _, it := range syn.Items {
		if it.Attr != nil {
			attrs = append(attrs, it.Attr)
		}
	}
	t.Attrs = c.checkBlock(testSchema, attrs, syn.Name.Span(), &scope{where: InTest, file: file})
	if r := t.Attrs.Get("run"); r != nil && len(r.Refs) == 1 {
		t.Run = r.Refs[0]
	}
	sc := &scope{where: InTest, file: file, lenient: true, quiet: t.Run == nil}
	var g *Graph
	var inputType *types.Type
	switch run := t.Run.(type) {
	case *Graph:
		g = run
		sc.state, sc.graph = run.State, run
		if run.State != nil {
			t.State = run.State.Type
		}
		if run.Input != nil {
			inputType = run.Input.Type
		}
	case *Agent:
		st := &State{}
		st.name = run.name
		st.Fields = []*Field{{Name: "input", Type: types.StringType}, {Name: "output", Type: run.Output, Index: 1}}
		if rec, err := types.NewRecord("", []types.Field{{Name: "input", Type: types.StringType}, {Name: "output", Type: max1(run.Output)}}); err == nil {
			st.Type = rec
			t.State = rec
		}
		sc.state = st
		inputType = types.StringType
	}
	if in := t.Attrs.Get("input"); in != nil && in.Value != nil {
		t.Input = in.Value
		switch {
		case t.Run == nil:
			c.expr(in.Value, &scope{where: InTest, file: file}, nil)
		case g != nil && g.Input == nil && g.State != nil:
			c.errorf(NoInputBinding, in.Value.Span(), "graph %s has no input binding; declare `graph %s(%s) input FIELD`", g.name, g.name, g.State.name)
		default:
			in.Type = inputType
			c.expect(in.Value, &scope{where: InTest, file: file}, inputType, "test input")
			if g != nil && g.Input != nil {
				c.checkLiteralSize(g.Input, in.Value, "the test input for "+g.Input.Name)
			}
		}
	}
	for _, it := range syn.Items {
		switch {
		case it.Replay != nil:
			c.replay(t, it.Replay, file)
		case it.Answer != nil:
			c.answer(t, g, it.Answer, sc)
		case it.Expect != nil:
			c.expectation(t, it.Expect, sc)
		}
	}
	return t
}

func max1(t *types.Type) *types.Type {
	if t == nil {
		return types.JSONType
	}
	return t
}

func (c *checker) replay(t *Test, r *syntax.Replay, file string) {
	rep := Replay{Span: r.Span()}
	switch r.Kind {
	case "model":
		rep.Target = c.lookup(r.Name, file, "model", DeclModel)
	case "tool":
		rep.Target = c.lookup(r.Name, file, "tool", DeclTool)
	}
	if r.Fixture == nil {
		return
	}
	p, ok := r.Fixture.Literal()
	if !ok {
		c.errorf(NotConstant, r.Fixture.Span(), "a fixture path must be a literal")
		return
	}
	full, err := resolveRel(file, p)
	if dir := path.Dir(file); err == nil && dir != "." && !strings.HasPrefix(full, dir+"/") {
		err = fmt.Errorf("path leaves the folder of %s", file)
	}
	if err != nil {
		c.errorf(BadPath, r.Fixture.Span(), "fixture %q: %v", p, err)
		return
	}
	rep.Path = full
	if c.cfg.FS != nil {
		if st, err := fs.Stat(c.cfg.FS, c.cfg.fsPath(full)); err != nil || st.IsDir() {
			c.errorf(FileMissing, r.Fixture.Span(), "fixture %s not found", full)
		}
	}
	t.Replays = append(t.Replays, rep)
}

func (c *checker) answer(t *Test, g *Graph, a *syntax.Answer, sc *scope) {
	if a.Node == nil {
		return
	}
	if g == nil {
		if t.Run != nil {
			c.errorf(diag.WrongKind, a.Node.Span(), "answers script interrupt nodes; %s is not a graph", t.Run.Name())
		}
		c.expr(a.Value, sc, nil)
		return
	}
	n := g.Node(a.Node.Name)
	if n == nil || n.Kind == NodeStart || n.Kind == NodeEnd {
		var names []string
		for _, x := range g.Nodes[2:] {
			if x.Kind == NodeInterrupt {
				names = append(names, x.Name)
			}
		}
		c.errorf(diag.UnknownName, a.Node.Span(), "graph %s has no node %s", g.name, a.Node.Name).Detail = suggest(a.Node.Name, names)
		c.expr(a.Value, sc, nil)
		return
	}
	c.info.Refs.set(a.Node, Ref{Kind: RefNode, Node: n})
	if n.Kind != NodeInterrupt {
		kind := n.Kind.String()
		if n.Call != nil {
			kind = n.Call.Kind
		}
		c.errorf(diag.WrongKind, a.Node.Span(), "node %s is %s node, not an interrupt", n.Name, withArticle(kind))
		c.expr(a.Value, sc, nil)
		return
	}
	var want *types.Type
	if n.Interrupt != nil {
		want = n.Interrupt.Returns
	}
	c.expect(a.Value, &scope{where: InTest, file: sc.file}, want, "answer to "+n.Name)
	t.Answers = append(t.Answers, Answer{Node: n, Value: a.Value, Span: a.Span()})
}

func (c *checker) expectation(t *Test, e *syntax.Expect, sc *scope) {
	ex := Expect{Cond: e.Cond, Before: e.Before, Span: e.Span()}
	if e.Before == nil {
		c.expect(e.Cond, sc, types.BoolType, "expectation")
		t.Expects = append(t.Expects, ex)
		return
	}
	first, ok1 := c.visitedArg(e.Cond, sc)
	then, ok2 := c.visitedArg(e.Before, sc)
	if !ok1 || !ok2 {
		return
	}
	ex.First, ex.Then = first, then
	t.Expects = append(t.Expects, ex)
}

// visitedArg checks one side of `expect visited(a) before visited(b)`.
func (c *checker) visitedArg(e *syntax.Expr, sc *scope) (*Node, bool) {
	call, ok := primaryOf(e).(*syntax.Call)
	if !ok || call.Func == nil || call.Func.Name != "visited" || len(call.Args) != 1 {
		c.errorf(InvalidExpect, e.Span(), "`expect A before B` needs visited(node) on both sides")
		return nil, false
	}
	c.expr(e, sc, nil)
	n, ok := bareName(call.Args[0])
	if !ok {
		return nil, false
	}
	r, ok := c.info.Refs.Get(n)
	if !ok || r.Node == nil {
		return nil, sc.graph == nil
	}
	return r.Node, true
}
