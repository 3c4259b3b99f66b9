package lsp

import (
	"fmt"
	"strings"

	"github.com/agentc/agentc/compiler"
)

// Hover on an attribute's key: its checked value and what the block's
// schema says about it.

// blockAttrs is one checked block and the schema kind it was checked
// against ("" when it has none, as a tool node's arguments).
type blockAttrs struct {
	kind  string
	attrs *compiler.Attrs
}

func checkedBlocks(info *compiler.Info) []blockAttrs {
	var out []blockAttrs
	var add func(kind string, a *compiler.Attrs)
	add = func(kind string, a *compiler.Attrs) {
		if a == nil {
			return
		}
		out = append(out, blockAttrs{kind, a})
		for _, x := range a.List {
			if x.Block != nil {
				add(x.Name, x.Block) // a2a { ... }, openai { ... }
			}
		}
	}
	for _, m := range info.Models {
		add("model", m.Attrs)
	}
	for _, p := range info.Policies {
		add(p.Kind().String(), p.Attrs)
	}
	for _, a := range info.Agents {
		add(a.Form.String()+" agent", a.Attrs)
	}
	for _, t := range info.Tools {
		add("tool", t.Attrs)
		switch t.Impl.Kind {
		case compiler.ImplHTTP:
			add("http", t.Impl.Attrs)
		case compiler.ImplExec:
			add("exec", t.Impl.Attrs)
		case compiler.ImplMCP:
			add("mcp tool", t.Impl.Attrs)
		}
	}
	for _, s := range info.Skills {
		add("skill", s.Attrs)
	}
	if info.Serve != nil {
		add("serve", info.Serve.Attrs)
	}
	for _, t := range info.Tests {
		add("test", t.Attrs)
	}
	for _, g := range info.Graphs {
		for _, n := range g.Nodes {
			if n.Call != nil {
				kind := ""
				if n.Call.Kind == "llm" || n.Call.Kind == "agent" {
					kind = n.Call.Kind + " node"
				}
				add(kind, n.Call.Args)
			}
		}
	}
	return out
}

// attrAt returns the checked attribute whose key holds off.
func attrAt(info *compiler.Info, file string, off int) (*compiler.Attr, string) {
	if info == nil {
		return nil, ""
	}
	for _, b := range checkedBlocks(info) {
		for _, a := range b.attrs.List {
			if a.Syn != nil && a.Syn.Key != nil && contains(a.Syn.Key.Span(), file, off) {
				return a, b.kind
			}
		}
	}
	return nil, ""
}

// attrValue renders what the checker resolved an attribute to.
func attrValue(a *compiler.Attr) string {
	switch {
	case a.Env != nil && a.Env.HasDefault:
		return fmt.Sprintf("env(%q, %q)", a.Env.Name, a.Env.Default)
	case a.Env != nil:
		return fmt.Sprintf("env(%q)", a.Env.Name)
	case len(a.Refs) > 0:
		names := make([]string, len(a.Refs))
		for i, r := range a.Refs {
			names[i] = r.Name()
			if i < len(a.Tags) && a.Tags[i] != "" {
				names[i] += ": " + a.Tags[i]
			}
		}
		if len(names) == 1 && a.Value != nil && !strings.HasPrefix(strings.TrimSpace(compiler.ExprText(a.Value)), "[") {
			return names[0]
		}
		return "[" + strings.Join(names, ", ") + "]"
	case len(a.Symbols) == 1:
		return a.Symbols[0]
	case len(a.Symbols) > 1:
		return "[" + strings.Join(a.Symbols, ", ") + "]"
	case a.HasConst:
		return a.Const.String()
	case a.Block != nil:
		return "{ ... }"
	case a.Value != nil:
		return compiler.ExprText(a.Value)
	}
	return ""
}

// maxValue bounds the value shown in a hover (long instructions).
const maxValue = 160

func describeAttr(a *compiler.Attr, kind string) string {
	var b strings.Builder
	v := attrValue(a)
	if r := []rune(v); len(r) > maxValue {
		v = string(r[:maxValue]) + "…"
	}
	line := a.Name + " = " + v
	if a.Type != nil {
		line += "  // " + a.Type.String()
	}
	fmt.Fprintf(&b, "```agent\n%s\n```\n", line)
	for _, d := range compiler.BlockAttrs(kind) {
		if d.Name != a.Name {
			continue
		}
		req := ""
		if d.Required {
			req = " (required)"
		}
		fmt.Fprintf(&b, "\n%s attribute%s: %s\n", kind, req, d.Doc)
		if len(d.Words) > 0 {
			fmt.Fprintf(&b, "\none of %s\n", strings.Join(d.Words, ", "))
		}
	}
	return strings.TrimSpace(b.String())
}
