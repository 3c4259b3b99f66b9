package compiler

import (
	"fmt"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/syntax"
)

// Lowering of the descriptors: models, skills, policies and tools, and of
// the attributes they carry.

func (l *lowerer) model(m *Model) {
	out := bytecode.Model{Name: m.Name(), Span: l.span(m.Span())}
	l.lowerAttrs(&out.Attrs, "model."+m.Name(), modelSchema, m.Attrs, func(a *Attr) bool {
		switch {
		case a.Name == "provider":
			if len(a.Symbols) == 1 {
				out.Provider = a.Symbols[0]
			}
		case a.Name == "price" && a.Block != nil:
			// Flat, as price.input, price.output, price.cached: the model
			// table's attribute list holds them without a format change.
			for _, b := range attrList(a.Block) {
				at := l.appendAttr(nil, "model."+m.Name()+".price", priceSchema, b)
				for i := range at {
					at[i].Name = "price." + at[i].Name
				}
				out.Attrs = append(out.Attrs, at...)
			}
		default:
			return false
		}
		return true
	})
	l.p.Models[l.models[m]] = out
}

func (l *lowerer) skill(s *Skill) {
	out := bytecode.Skill{Name: s.Name(), Path: s.Dir, Span: l.span(s.Span())}
	if s.Dir == "." {
		l.errorf(BadPath, s.Span(), "skill %s: the folder is the module root; put SKILL.md in a folder of its own", s.Name())
	}
	l.lowerAttrs(&out.Attrs, "skill."+s.Name(), skillSchema, s.Attrs, nil)
	l.p.Skills[l.skills[s]] = out
}

var policyKinds = map[DeclKind]bytecode.PolicyKind{
	DeclSummary: bytecode.PolicySummary, DeclCompaction: bytecode.PolicyCompaction, DeclRecall: bytecode.PolicyRecall,
	DeclMemory: bytecode.PolicyMemory, DeclEvolution: bytecode.PolicyEvolution,
}

func (l *lowerer) policy(pl *Policy) {
	out := bytecode.Policy{Kind: policyKinds[pl.Kind()], Name: pl.Name(), Span: l.span(pl.Span())}
	what := pl.Kind().String() + "." + pl.Name()
	l.lowerAttrs(&out.Attrs, what, policySchemas[pl.Kind()], pl.Attrs, func(a *Attr) bool {
		if a.Name != "publish" || !a.HasConst || a.Const.Kind() != types.ValString {
			return false
		}
		// A folder written relative to the declaring file is stored
		// relative to the module root, like every path of a program.
		p, err := resolveRel(pl.file, a.Const.Str())
		if err != nil {
			return false
		}
		out.Attrs = append(out.Attrs, bytecode.Attr{Name: a.Name, Kind: bytecode.AttrConst,
			Const: l.constant(types.MakeString(p)), Span: l.span(a.Span)})
		return true
	})
	l.p.Policies[l.policies[pl]] = out
}

// lowerAttrs appends the attributes of attrs to *out, lowered by schema
// (owner names them), except those own takes (own nil: none): it stores
// them itself and reports true.
func (l *lowerer) lowerAttrs(out *[]bytecode.Attr, owner string, schema *blockSchema, attrs *Attrs, own func(*Attr) bool) {
	for _, a := range attrList(attrs) {
		if own == nil || !own(a) {
			*out = l.appendAttr(*out, owner, schema, a)
		}
	}
}

func attrList(a *Attrs) []*Attr {
	if a == nil {
		return nil
	}
	return a.List
}

// ---- tools ----

// effectOf is e, read_only when unset.
func effectOf(e Effect) bytecode.Effect {
	if e == 0 {
		return bytecode.EffectReadOnly
	}
	return e
}

func (l *lowerer) tool(t *Tool) {
	name := t.Name()
	out := bytecode.Tool{Name: name, Doc: t.Doc, Input: l.typ(t.Input), Output: l.typ(t.Output),
		Effect: effectOf(t.Effect), Span: l.span(t.Span())}
	what := "tool." + name
	im := &out.Impl
	switch t.Impl.Kind {
	case ImplBuiltin:
		im.Kind, im.Builtin = bytecode.ImplBuiltin, t.Impl.Builtin
	case ImplAgent:
		im.Kind = bytecode.ImplAgent
		if i, ok := l.agents[t.Impl.Agent]; ok {
			im.Agent = i
		} else {
			l.internal("tool %s: agent implementation not lowered", name)
		}
	case ImplHTTP:
		im.Kind, im.Method = bytecode.ImplHTTP, "GET"
		l.lowerAttrs(&im.Options, what, httpSchema, t.Impl.Attrs, func(a *Attr) bool {
			switch a.Name {
			case "method":
				if len(a.Symbols) == 1 {
					im.Method = a.Symbols[0]
				}
			case "url":
				im.URL = l.template(what+".url", a.Value, types.StringType)
			case "headers":
				entries, ok := mapEntries(a.Value)
				if !ok {
					return false
				}
				for _, en := range entries {
					im.Headers = append(im.Headers, l.entryAttr(what+".header."+en.key, en, a.Type))
				}
			default:
				return false
			}
			return true
		})
	case ImplExec:
		im.Kind = bytecode.ImplExec
		l.lowerAttrs(&im.Options, what, execSchema, t.Impl.Attrs, func(a *Attr) bool {
			switch {
			case a.Name == "command":
				l.argv(im, what, a)
			case a.Name == "timeout" && a.HasConst && a.Const.Kind() == types.ValDuration:
				im.Timeout = a.Const.Duration()
			default:
				return false
			}
			return true
		})
	case ImplMCP:
		im.Kind = bytecode.ImplMCP
		l.lowerAttrs(&im.Options, what, mcpToolSchema, t.Impl.Attrs, nil)
		// The server's lock key (agentc mcp lock groups tools by it) and
		// the lock file's hash: a changed lock changes the program.
		if key := mcpServerKey(t.Impl.Attrs); key != "" {
			im.Options = append(im.Options, bytecode.Attr{Name: "server", Kind: bytecode.AttrConst, Const: l.constant(types.MakeString(key)), Span: l.span(t.span)})
		}
		if t.MCP != nil && t.MCP.Hash != "" {
			im.Options = append(im.Options, bytecode.Attr{Name: "lock", Kind: bytecode.AttrConst, Const: l.constant(types.MakeString(t.MCP.Hash)), Span: l.span(t.span)})
		}
	default:
		l.internal("tool %s has no implementation", name)
	}
	l.lowerAttrs(&out.Attrs, what, toolSchema, t.Attrs, func(a *Attr) bool {
		return a.Name == "effect" // Tool.Effect
	})
	l.p.Tools[l.tools[t]] = out
}

// argv lowers an exec command: one template per element of the list.
func (l *lowerer) argv(im *bytecode.ToolImpl, what string, a *Attr) {
	list, ok := primaryOf(a.Value).(*syntax.ListLit)
	if !ok || len(list.Elems) == 0 {
		l.errorf(NotConstant, a.Value.Span(), "exec command must be a list literal of at least one argument: [\"prog\", \"{input.arg}\"]")
		return
	}
	for i, el := range list.Elems {
		im.Argv = append(im.Argv, l.template(fmt.Sprintf("%s.argv.%d", what, i), el.X, types.StringType))
	}
}

// template compiles a tool template: no state, `input` is local 0.
func (l *lowerer) template(name string, e *syntax.Expr, want *types.Type) uint32 {
	return l.chunk(name, &exprScope{state: bytecode.None, locals: 1, input: true}, e, want)
}

// entryAttr lowers one `key: value` entry of a header map: an env reference
// when the value is exactly env(...) (a credential: typed secret, resolved
// when the program is loaded), else a template.
func (l *lowerer) entryAttr(name string, en mapEntry, mapType *types.Type) bytecode.Attr {
	out := bytecode.Attr{Name: en.key, Span: l.span(en.span)}
	if env := envRef(en.value); env != nil {
		out.Kind = bytecode.AttrEnv
		out.Env = bytecode.EnvRef{Var: env.Name, HasDefault: env.HasDefault, Default: env.Default, Type: l.typ(types.SecretType)}
		return out
	}
	want := types.StringType
	if mapType != nil && mapType.Kind() == types.KindMap {
		want = mapType.Elem()
	}
	out.Kind, out.Code = bytecode.AttrCode, l.template(name, en.value, want)
	return out
}

// ---- attributes ----

// appendAttr lowers one checked attribute by its schema kind: references
// become refs, words constants, conditions and expressions chunks, literal
// values constants and env() env references (resolved at load time).
func (l *lowerer) appendAttr(out []bytecode.Attr, owner string, schema *blockSchema, a *Attr) []bytecode.Attr {
	spec := schema.spec(a.Name)
	if spec == nil {
		l.internal("%s: attribute %s has no schema", owner, a.Name)
		return out
	}
	at := bytecode.Attr{Name: a.Name, Span: l.span(a.Span)}
	name := owner + "." + a.Name
	switch spec.kind {
	case vRef, vRefs, vGrants:
		at.Kind = bytecode.AttrRefs
		if spec.kind == vRef {
			at.Kind = bytecode.AttrRef
		}
		for _, d := range a.Refs {
			r, ok := l.ref(d)
			if !ok {
				l.internal("%s: reference to %s not lowered", name, d.Name())
				continue
			}
			at.Refs = append(at.Refs, r)
		}
		if at.Kind == bytecode.AttrRef && len(at.Refs) != 1 {
			return out
		}
	case vWord:
		if len(a.Symbols) != 1 {
			return out
		}
		at.Kind, at.Const = bytecode.AttrConst, l.constant(types.MakeString(a.Symbols[0]))
	case vWords:
		words := make([]types.Value, len(a.Symbols))
		for i, w := range a.Symbols {
			words[i] = types.MakeString(w)
		}
		at.Kind, at.Const = bytecode.AttrConst, l.constant(types.MakeList(words))
	case vTypeRef, vBlock:
		return out // structural: the caller lowers them
	case vCond:
		at.Kind, at.Code = bytecode.AttrCode, l.chunk(name, &exprScope{state: bytecode.None}, a.Value, types.BoolType)
	case vExpr:
		at.Kind, at.Code = bytecode.AttrCode, l.template(name, a.Value, spec.typ)
	default: // vConst, vSecret, vPath
		switch {
		case a.Env != nil:
			t := a.Type
			if t == nil {
				t = types.StringType
			}
			at.Kind = bytecode.AttrEnv
			at.Env = bytecode.EnvRef{Var: a.Env.Name, HasDefault: a.Env.HasDefault, Default: a.Env.Default, Type: l.typ(t)}
		case a.HasConst:
			at.Kind, at.Const = bytecode.AttrConst, l.constant(a.Const)
		case a.Value != nil:
			// A typed expression without state (2 * 64000, or a string
			// interpolating env()): evaluated when the program is loaded.
			at.Kind, at.Code = bytecode.AttrCode, l.chunk(name, &exprScope{state: bytecode.None}, a.Value, spec.typ)
		default:
			return out
		}
	}
	return append(out, at)
}

// ref converts a declaration to a table reference.
func (l *lowerer) ref(d Decl) (bytecode.Ref, bool) {
	switch d := d.(type) {
	case *Graph:
		return refIn(l.graphs, bytecode.RefGraph, d)
	case *Agent:
		return refIn(l.agents, bytecode.RefAgent, d)
	case *Tool:
		return refIn(l.tools, bytecode.RefTool, d)
	case *Model:
		return refIn(l.models, bytecode.RefModel, d)
	case *Skill:
		return refIn(l.skills, bytecode.RefSkill, d)
	case *Policy:
		return refIn(l.policies, bytecode.RefPolicy, d)
	}
	return bytecode.Ref{}, false
}

// refIn is the reference of kind to d's entry in the table ix indexes.
func refIn[T any](ix tableIndex[T], kind bytecode.RefKind, d *T) (bytecode.Ref, bool) {
	i, ok := ix[d]
	return bytecode.Ref{Kind: kind, Index: i}, ok
}
