package lsp

import (
	"fmt"
	"strings"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/types"
)

// describe renders the hover text of a target: a code line with its
// declaration as the checker resolved it, then its documentation and what
// the analysis knows (a field's writers and readers, a node's reads and
// writes).
func describe(info *compiler.Info, t *target) string {
	var b strings.Builder
	code := func(format string, args ...any) {
		fmt.Fprintf(&b, "```agent\n"+format+"\n```\n", args...)
	}
	para := func(format string, args ...any) {
		fmt.Fprintf(&b, "\n"+format+"\n", args...)
	}
	switch t.ref.Kind {
	case compiler.RefField:
		f := t.ref.Field
		line := fmt.Sprintf("%s: %s", f.Name, typeString(f.Type))
		if f.MaxLen > 0 {
			line += fmt.Sprintf(" max %d", f.MaxLen)
		}
		if f.Default != nil {
			line += " = " + compiler.ExprText(f.Default)
		}
		if f.Reducer != compiler.ReduceReplace {
			line += " reduce " + f.Reducer.String()
		}
		code("%s", line)
		if st := stateOf(info, f); st != nil {
			para("field of state `%s`", st.Name())
			var writers, readers []string
			for _, g := range info.Graphs {
				if g.State != st {
					continue
				}
				for _, n := range g.Nodes {
					for _, w := range n.Writes {
						if w == f {
							writers = append(writers, "`"+n.Name+"`")
						}
					}
					for _, r := range reads(info, n) {
						if r == f {
							readers = append(readers, "`"+n.Name+"`")
						}
					}
				}
			}
			if len(writers) > 0 {
				para("written by %s", strings.Join(writers, ", "))
			}
			if len(readers) > 0 {
				para("read by %s", strings.Join(readers, ", "))
			}
		}
	case compiler.RefNode:
		describeNode(info, t.ref.Node, code, para)
	case compiler.RefLoopVar:
		code("%s: %s", t.name, typeString(t.typ))
		para("the loop variable of a map node")
	case compiler.RefVar:
		code("%s: %s", t.name, typeString(t.typ))
	case compiler.RefSymbol:
		code("%s", t.name)
	case compiler.RefFunc:
		fn := t.ref.Func
		params := make([]string, len(fn.Params))
		for i, p := range fn.Params {
			if p == nil {
				params[i] = "any"
			} else {
				params[i] = p.String()
			}
		}
		if fn.Variadic && len(params) > 0 {
			params[len(params)-1] += "..."
		}
		res := typeString(fn.Result)
		if fn.Typer != nil {
			if t.typ != nil {
				res = t.typ.String()
			} else {
				res = "depends on the arguments"
			}
		}
		code("%s(%s) -> %s", fn.Name, strings.Join(params, ", "), res)
		if fn.Doc != "" {
			para("%s", fn.Doc)
		}
	case compiler.RefDecl:
		describeDecl(t.ref.Decl, code, para)
	}
	return strings.TrimSpace(b.String())
}

func typeString(t *types.Type) string {
	if t == nil {
		return "unknown"
	}
	return t.String()
}

func describeDecl(d compiler.Decl, code, para func(string, ...any)) {
	switch x := d.(type) {
	case *compiler.Model:
		var attrs []string
		for _, a := range x.Attrs.List {
			if a.HasConst {
				attrs = append(attrs, fmt.Sprintf("%s = %s", a.Name, a.Const))
			} else if a.Env != nil {
				attrs = append(attrs, fmt.Sprintf("%s = env(%q)", a.Name, a.Env.Name))
			}
		}
		code("model %s { %s }", x.Name(), strings.Join(attrs, ", "))
	case *compiler.TypeDecl:
		lit := "unknown"
		if x.Type != nil {
			lit = x.Type.Literal()
		}
		code("type %s = %s", x.Name(), lit)
	case *compiler.Tool:
		in := "{}"
		if x.Input != nil {
			in = x.Input.Literal()
		}
		code("tool %s(%s) -> %s", x.Name(), in, typeString(x.Output))
		if x.Doc != "" {
			para("%s", x.Doc)
		}
		impl := "builtin tool"
		switch x.Impl.Kind {
		case compiler.ImplHTTP:
			impl = "run = http"
		case compiler.ImplExec:
			impl = "run = exec"
		case compiler.ImplMCP:
			impl = "run = mcp"
		case compiler.ImplAgent:
			if x.Impl.Agent != nil {
				impl = "run = agent " + x.Impl.Agent.Name()
			}
		case compiler.ImplBuiltin:
			if x.Impl.Builtin != "" {
				impl = "run = builtin." + x.Impl.Builtin
			}
		}
		para("effect `%s`, %s", x.Effect, impl)
	case *compiler.Skill:
		code("skill %s from %q", x.Name(), x.Path)
		if x.Front != nil && x.Front.Description != "" {
			para("%s", x.Front.Description)
		}
	case *compiler.State:
		var fs []string
		for _, f := range x.Fields {
			fs = append(fs, fmt.Sprintf("  %s: %s", f.Name, typeString(f.Type)))
		}
		code("state %s {\n%s\n}", x.Name(), strings.Join(fs, "\n"))
	case *compiler.Policy:
		code("%s %s", x.Kind(), x.Name())
	case *compiler.Agent:
		code("agent %s %s -> %s", x.Name(), x.Form, typeString(x.Output))
		if x.Doc != "" {
			para("%s", x.Doc)
		}
		var facts []string
		if x.Model != nil {
			facts = append(facts, "model `"+x.Model.Name()+"`")
		}
		if len(x.Tools) > 0 {
			names := make([]string, len(x.Tools))
			for i, t := range x.Tools {
				names[i] = "`" + t.Name() + "`"
			}
			facts = append(facts, "tools "+strings.Join(names, ", "))
		}
		if len(x.Agents) > 0 {
			names := make([]string, len(x.Agents))
			for i, a := range x.Agents {
				names[i] = "`" + a.Name() + "`"
			}
			facts = append(facts, "agents "+strings.Join(names, ", "))
		}
		facts = append(facts, "effect `"+x.Effect.String()+"`")
		para("%s", strings.Join(facts, "; "))
	case *compiler.Graph:
		state := "?"
		if x.State != nil {
			state = x.State.Name()
		}
		line := fmt.Sprintf("graph %s(%s)", x.Name(), state)
		if x.Input != nil {
			line += " input " + x.Input.Name
		}
		if x.Output != nil {
			line += " output " + x.Output.Name
		}
		code("%s", line)
		if x.Doc != "" {
			para("%s", x.Doc)
		}
		para("%d nodes, %d edges; effect `%s`", max(0, len(x.Nodes)-2), len(x.Edges), x.Effect)
	default:
		code("%s %s", d.Kind(), d.Name())
	}
}

func describeNode(info *compiler.Info, n *compiler.Node, code, para func(string, ...any)) {
	line := "node " + n.Name
	switch n.Kind {
	case compiler.NodeStart, compiler.NodeEnd:
		code("%s", n.Name)
		return
	case compiler.NodeCall:
		if c := n.Call; c != nil {
			line += " = " + c.Kind + " " + c.Callee()
		}
	case compiler.NodeJoin:
		if n.JoinAll {
			line += " = join all"
		} else {
			line += " = join any"
		}
	default:
		line += " = " + n.Kind.String()
	}
	if n.Output != nil {
		line += " -> " + n.Output.String()
	}
	if n.Into != nil {
		line += " into " + n.Into.Name
	}
	code("%s", line)
	if g := graphOf(info, n); g != nil {
		para("node of graph `%s`", g.Name())
	}
	if r := reads(info, n); len(r) > 0 {
		para("reads %s", fieldNames(r))
	}
	if len(n.Writes) > 0 {
		para("writes %s", fieldNames(n.Writes))
	}
	var pol []string
	if r := n.Policies.Retry; r != nil {
		pol = append(pol, fmt.Sprintf("retry %d", r.Attempts))
	}
	if n.Policies.Timeout > 0 {
		pol = append(pol, "timeout "+n.Policies.Timeout.String())
	}
	if n.Policies.Catch != nil {
		pol = append(pol, "catch -> "+n.Policies.Catch.Name)
	}
	if n.Policies.Cache != nil {
		pol = append(pol, "cache")
	}
	if n.Effect != 0 {
		pol = append(pol, "effect `"+n.Effect.String()+"`")
	}
	if len(pol) > 0 {
		para("%s", strings.Join(pol, "; "))
	}
}
