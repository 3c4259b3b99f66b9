package compiler

import (
	"fmt"

	"github.com/agentc/agentc/compiler/bytecode"
)

// Picture draws a checked graph: every node, every declared edge with its
// condition, every loop bound and its exit, every catch route, join mode and
// interrupt type. It uses the same drawing model as bytecode.Picture, so a
// graph looks the same drawn from source or from a compiled program.
func Picture(g *Graph, format bytecode.PictureFormat) (string, error) {
	if g == nil {
		return "", fmt.Errorf("no graph to draw")
	}
	pg := &bytecode.PictureGraph{Name: g.Name()}
	for _, n := range g.Nodes {
		pg.Nodes = append(pg.Nodes, bytecode.PictureNode{Name: n.Name, Caption: caption(n), Shape: shape(n.Kind)})
	}
	for _, e := range g.Edges {
		if e.From == nil || e.To == nil {
			continue
		}
		pe := bytecode.PictureEdge{From: e.From.Index, To: e.To.Index}
		switch e.Kind {
		case EdgeWhen:
			pe.Label = ExprText(e.When)
		case EdgeOtherwise:
			pe.Label = "otherwise"
		case EdgeElse:
			if e.Parent != nil {
				pe.Label = fmt.Sprintf("after %d", e.Parent.Max)
			}
			pe.Dashed = true
		case EdgeCatch:
			pe.Label, pe.Dashed = "catch", true
		}
		if e.Max > 0 {
			if pe.Label != "" {
				pe.Label += " "
			}
			pe.Label += fmt.Sprintf("(max %d)", e.Max)
		}
		pg.Edges = append(pg.Edges, pe)
	}
	return pg.Render(format)
}

func shape(k NodeKind) bytecode.PictureShape {
	switch k {
	case NodeStart, NodeEnd:
		return bytecode.ShapeTerminal
	case NodeJoin:
		return bytecode.ShapeJoin
	case NodeInterrupt, NodeWait:
		return bytecode.ShapeInterrupt
	case NodeMap:
		return bytecode.ShapeMap
	}
	return bytecode.ShapeBox
}

func callText(c *Call) string {
	if c == nil {
		return "?"
	}
	name := c.Callee()
	if name == "" {
		name = "?"
	}
	return c.Kind + " " + name
}

func caption(n *Node) string {
	var what string
	pol := n.Policies
	switch n.Kind {
	case NodeStart, NodeEnd:
		return bytecode.NodeCaption(n.Name, "", nil)
	case NodeCall:
		what = callText(n.Call)
	case NodeSet:
		what = "set"
	case NodeMap:
		if n.Map != nil {
			what = fmt.Sprintf("map %s: %s", n.Map.Var, callText(n.Map.Body))
			if n.Map.Concurrency > 0 {
				what += fmt.Sprintf(" ×%d", n.Map.Concurrency)
			}
			pol = mergePolicies(n.Policies, n.Map.Item)
		}
	case NodeInterrupt:
		what = "interrupt"
		if n.Interrupt != nil && n.Interrupt.Returns != nil {
			what += " → " + n.Interrupt.Returns.String()
		}
	case NodeWait:
		what = "wait"
		if n.Wait != nil && n.Wait.Until {
			what = "wait until"
		}
	case NodeJoin:
		what = "join any"
		if n.JoinAll {
			what = "join all"
		}
	}
	var policies []string
	if pol.Retry != nil && pol.Retry.Attempts > 0 {
		policies = append(policies, fmt.Sprintf("retry %d", pol.Retry.Attempts))
	}
	if pol.Timeout > 0 {
		policies = append(policies, "timeout "+pol.Timeout.String())
	}
	if pol.Cache != nil {
		policies = append(policies, "cache")
	}
	return bytecode.NodeCaption(n.Name, what, policies)
}

// mergePolicies overlays a map node's per-item policies on its own.
func mergePolicies(node, item Policies) Policies {
	if item.Retry != nil {
		node.Retry = item.Retry
	}
	if item.Timeout > 0 {
		node.Timeout = item.Timeout
	}
	if item.Cache != nil {
		node.Cache = item.Cache
	}
	if item.Catch != nil {
		node.Catch = item.Catch
	}
	return node
}
