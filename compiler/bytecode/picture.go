package bytecode

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// PictureFormat selects a graph rendering.
type PictureFormat string

// Picture formats.
const (
	Mermaid PictureFormat = "mermaid"
	DOT     PictureFormat = "dot"
)

// PictureShape is how a node is drawn.
type PictureShape uint8

// Shapes; String names them (box, terminal, join, interrupt, map).
const (
	ShapeBox       PictureShape = iota + 1 // llm, tool, agent, graph and set nodes
	ShapeTerminal                          // start and end
	ShapeJoin                              // join nodes
	ShapeInterrupt                         // interrupt nodes
	ShapeMap                               // map nodes
)

func (s PictureShape) String() string {
	switch s {
	case ShapeTerminal:
		return "terminal"
	case ShapeJoin:
		return "join"
	case ShapeInterrupt:
		return "interrupt"
	case ShapeMap:
		return "map"
	}
	return "box"
}

// PictureNode is one node of a picture.
type PictureNode struct {
	Name    string
	Caption string // first line the name, second what the node does
	Shape   PictureShape
}

// PictureEdge is one arrow of a picture.
type PictureEdge struct {
	From, To int    // PictureGraph.Nodes indexes
	Label    string // condition, "otherwise", "(max N)", "catch", "after N"
	Dashed   bool   // catch routes and loop exits
}

// PictureGraph is a renderer-neutral drawing of one graph. Both the
// compiler (from a checked graph) and Picture (from bytecode) build one, so
// a graph is drawn the same way wherever it comes from.
type PictureGraph struct {
	Name  string
	Nodes []PictureNode
	Edges []PictureEdge
}

// Render draws g in the given format.
func (g *PictureGraph) Render(format PictureFormat) (string, error) {
	switch format {
	case Mermaid:
		return g.mermaid(), nil
	case DOT:
		return g.dot(), nil
	}
	return "", fmt.Errorf("unknown picture format %q (want mermaid or dot)", format)
}

// NodeCaption is the text inside a node's box: its name, what it does, and
// its policies.
func NodeCaption(name, what string, policies []string) string {
	if what == "" {
		return name
	}
	if len(policies) > 0 {
		what += " · " + strings.Join(policies, ", ")
	}
	return name + "\n" + what
}

// Picture renders graph gi of p. It is exact by construction: every node,
// every route-table edge with its condition (decompiled from the code that
// runs), every loop bound and its exit, every catch route, join mode and
// interrupt type comes from the program. Nodes are drawn in program order;
// route edges in source order (by span; each followed by its loop exit),
// then the catch routes in node order, the order in which the compiler
// draws a checked graph (compiler.Picture), so both pictures are equal.
func Picture(p *Program, gi int, format PictureFormat) (string, error) {
	pg, err := PictureOf(p, gi)
	if err != nil {
		return "", err
	}
	return pg.Render(format)
}

// PictureOf builds the drawing Picture renders, for a renderer of its own
// (the browser inspector draws it as SVG).
func PictureOf(p *Program, gi int) (*PictureGraph, error) {
	if gi < 0 || gi >= len(p.Graphs) {
		return nil, fmt.Errorf("graph %d out of range", gi)
	}
	g := &p.Graphs[gi]
	pg := &PictureGraph{Name: g.Name}
	type route struct{ node, edge int }
	var routes []route
	for ni := range g.Nodes {
		n := &g.Nodes[ni]
		pg.Nodes = append(pg.Nodes, PictureNode{Name: n.Name, Caption: nodeCaption(p, n), Shape: shapeOf(n.Kind)})
		for ei := range n.Edges {
			routes = append(routes, route{ni, ei})
		}
	}
	slices.SortStableFunc(routes, func(a, b route) int {
		sa, sb := g.Nodes[a.node].Edges[a.edge].Span, g.Nodes[b.node].Edges[b.edge].Span
		return cmp.Or(cmp.Compare(sa.File, sb.File), cmp.Compare(sa.StartOff, sb.StartOff))
	})
	for _, r := range routes {
		ni, n := r.node, &g.Nodes[r.node]
		e := n.Edges[r.edge]
		if int(e.Target) >= len(g.Nodes) {
			return nil, fmt.Errorf("graph %s: edge %s -> %d: target out of range", g.Name, n.Name, e.Target)
		}
		label := ""
		switch e.Kind {
		case EdgeWhen:
			src, err := ExprSource(p, int(e.Cond))
			if err != nil {
				return nil, fmt.Errorf("graph %s: edge %s -> %s: %w", g.Name, n.Name, g.Nodes[e.Target].Name, err)
			}
			label = src
		case EdgeOtherwise:
			label = "otherwise"
		}
		if e.Max > 0 {
			label = strings.TrimSpace(label + fmt.Sprintf(" (max %d)", e.Max))
		}
		pg.Edges = append(pg.Edges, PictureEdge{From: ni, To: int(e.Target), Label: label})
		if e.Max > 0 && e.Else >= 0 && int(e.Else) < len(g.Nodes) {
			pg.Edges = append(pg.Edges, PictureEdge{From: ni, To: int(e.Else), Label: fmt.Sprintf("after %d", e.Max), Dashed: true})
		}
	}
	for ni := range g.Nodes {
		if c := g.Nodes[ni].Catch; c >= 0 && int(c) < len(g.Nodes) {
			pg.Edges = append(pg.Edges, PictureEdge{From: ni, To: int(c), Label: "catch", Dashed: true})
		}
	}
	return pg, nil
}

func shapeOf(k NodeKind) PictureShape {
	switch k {
	case NodeStart, NodeEnd:
		return ShapeTerminal
	case NodeJoin:
		return ShapeJoin
	case NodeInterrupt:
		return ShapeInterrupt
	case NodeMap:
		return ShapeMap
	}
	return ShapeBox
}

// nodeCaption is the text inside a node's box: its name and what it does.
func nodeCaption(p *Program, n *Node) string {
	callee := func(c Call) string {
		switch c.Kind {
		case CallLLM, CallAgent:
			if int(c.Callee) < len(p.Agents) {
				return p.Agents[c.Callee].Name
			}
		case CallTool:
			if int(c.Callee) < len(p.Tools) {
				return p.Tools[c.Callee].Name
			}
		case CallGraph:
			if int(c.Callee) < len(p.Graphs) {
				return p.Graphs[c.Callee].Name
			}
		}
		return "?"
	}
	kind := map[CallKind]string{CallLLM: "llm", CallTool: "tool", CallAgent: "agent", CallGraph: "graph"}
	var what string
	switch n.Kind {
	case NodeStart, NodeEnd:
		return NodeCaption(n.Name, "", nil)
	case NodeLLM, NodeTool, NodeAgent, NodeGraph:
		what = kind[n.Call.Kind] + " " + callee(n.Call)
	case NodeSet:
		what = "set"
	case NodeMap:
		what = fmt.Sprintf("map %s: %s %s", n.Map.Var, kind[n.Call.Kind], callee(n.Call))
		if n.Map.Concurrency > 0 {
			what += fmt.Sprintf(" ×%d", n.Map.Concurrency)
		}
	case NodeInterrupt:
		what = "interrupt"
		if int(n.Interrupt.Resume) < len(p.Types) {
			what += " → " + p.Types[n.Interrupt.Resume].String()
		}
	case NodeJoin:
		what = "join all"
		if n.Join.Mode == JoinAny {
			what = "join any"
		}
	}
	var policies []string
	if n.Retry.MaxAttempts > 1 { // `retry N` is N attempts after the first
		policies = append(policies, fmt.Sprintf("retry %d", n.Retry.MaxAttempts-1))
	}
	if n.Timeout > 0 {
		policies = append(policies, "timeout "+n.Timeout.String())
	}
	if n.Cache {
		policies = append(policies, "cache")
	}
	return NodeCaption(n.Name, what, policies)
}

func mermaidID(name string) string { return "n_" + name }

func mermaidText(s string) string {
	s = strings.NewReplacer(`"`, "#quot;", "\n", "<br/>", "<", "#lt;", ">", "#gt;").Replace(s)
	return `"` + s + `"`
}

func (g *PictureGraph) mermaid() string {
	var b strings.Builder
	fmt.Fprintf(&b, "flowchart TD\n")
	for _, n := range g.Nodes {
		id, cap := mermaidID(n.Name), mermaidText(n.Caption)
		switch n.Shape {
		case ShapeTerminal:
			fmt.Fprintf(&b, "  %s([%s])\n", id, cap)
		case ShapeJoin:
			fmt.Fprintf(&b, "  %s{{%s}}\n", id, cap)
		case ShapeInterrupt:
			fmt.Fprintf(&b, "  %s[/%s/]\n", id, cap)
		case ShapeMap:
			fmt.Fprintf(&b, "  %s[[%s]]\n", id, cap)
		default:
			fmt.Fprintf(&b, "  %s[%s]\n", id, cap)
		}
	}
	for _, e := range g.Edges {
		arrow := "-->"
		if e.Dashed {
			arrow = "-.->"
		}
		from, to := mermaidID(g.Nodes[e.From].Name), mermaidID(g.Nodes[e.To].Name)
		if e.Label == "" {
			fmt.Fprintf(&b, "  %s %s %s\n", from, arrow, to)
		} else {
			fmt.Fprintf(&b, "  %s %s|%s| %s\n", from, arrow, mermaidText(e.Label), to)
		}
	}
	return b.String()
}

func dotText(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func (g *PictureGraph) dot() string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=11];\n  edge [fontname=\"Helvetica\", fontsize=10];\n", dotText(g.Name))
	shapes := map[PictureShape]string{ShapeBox: "box", ShapeTerminal: "oval", ShapeJoin: "hexagon", ShapeInterrupt: "parallelogram", ShapeMap: "box3d"}
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "  %s [label=%s, shape=%s];\n", dotText(n.Name), dotText(n.Caption), shapes[n.Shape])
	}
	for _, e := range g.Edges {
		var attrs []string
		if e.Label != "" {
			attrs = append(attrs, "label="+dotText(e.Label))
		}
		if e.Dashed {
			attrs = append(attrs, "style=dashed")
		}
		suffix := ""
		if len(attrs) > 0 {
			suffix = " [" + strings.Join(attrs, ", ") + "]"
		}
		fmt.Fprintf(&b, "  %s -> %s%s;\n", dotText(g.Nodes[e.From].Name), dotText(g.Nodes[e.To].Name), suffix)
	}
	b.WriteString("}\n")
	return b.String()
}
