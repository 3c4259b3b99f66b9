package bytecode

import "github.com/agentc/agentc/compiler/types"

// Reading a program's attributes, references and spans. Every reader of
// block attributes (models, tools, policies, skills, serve) goes through
// these, so that an out-of-range index reads as "not set" everywhere and an
// env() reference is resolved the same way everywhere (ResolveEnv: the
// variable, else the reference's default).

// FindAttr returns the attribute named name among attrs (the first, as the
// compiler allows one).
func FindAttr(attrs []Attr, name string) (Attr, bool) {
	for _, at := range attrs {
		if at.Name == name {
			return at, true
		}
	}
	return Attr{}, false
}

// AttrConst returns the constant value of at; ok is false when at is not a
// constant (or its constant index is out of range).
func (p *Program) AttrConst(at Attr) (types.Value, bool) {
	if at.Kind != AttrConst || int(at.Const) >= len(p.Consts) {
		return types.Value{}, false
	}
	return p.Consts[at.Const], true
}

// ConstAttr returns the constant value of the attribute named name among
// attrs; ok is false when there is none or it is not a constant.
func (p *Program) ConstAttr(attrs []Attr, name string) (types.Value, bool) {
	at, ok := FindAttr(attrs, name)
	if !ok {
		return types.Value{}, false
	}
	return p.AttrConst(at)
}

// AttrValue returns the value of at that is known without running code: a
// constant, or an env() reference resolved with lookup (ResolveEnv; nil
// lookup: no variable is set, so the default applies). ok is false for a
// template (code) or a reference, and for an env() reference that does not
// resolve (err says why).
func (p *Program) AttrValue(at Attr, lookup func(string) (string, bool)) (v types.Value, ok bool, err error) {
	switch at.Kind {
	case AttrConst:
		v, ok = p.AttrConst(at)
		return v, ok, nil
	case AttrEnv:
		if lookup == nil {
			lookup = func(string) (string, bool) { return "", false }
		}
		if v, err = p.ResolveEnv(at.Env, lookup); err != nil {
			return types.Value{}, false, err
		}
		return v, true, nil
	}
	return types.Value{}, false, nil
}

// AttrString returns the string value of the attribute named name among
// attrs: a string constant, or an env() reference read with lookup, else
// its default (the raw text, whatever the reference's type). "" when there
// is none, or it is neither.
func (p *Program) AttrString(attrs []Attr, name string, lookup func(string) (string, bool)) string {
	at, ok := FindAttr(attrs, name)
	if !ok {
		return ""
	}
	switch at.Kind {
	case AttrConst:
		if v, ok := p.AttrConst(at); ok && v.Kind() == types.ValString {
			return v.Str()
		}
	case AttrEnv:
		if lookup != nil {
			if v, ok := lookup(at.Env.Var); ok {
				return v
			}
		}
		if at.Env.HasDefault {
			return at.Env.Default
		}
	}
	return ""
}

// AttrInt returns the int constant of the attribute named name among attrs,
// else def.
func (p *Program) AttrInt(attrs []Attr, name string, def int) int {
	if v, ok := p.ConstAttr(attrs, name); ok && v.Kind() == types.ValInt {
		return int(v.Int())
	}
	return def
}

// AttrNumber returns the int or float constant of at as a float; ok is
// false when it is neither.
func (p *Program) AttrNumber(at Attr) (float64, bool) {
	v, ok := p.AttrConst(at)
	switch {
	case !ok:
	case v.Kind() == types.ValFloat:
		return v.Float(), true
	case v.Kind() == types.ValInt:
		return float64(v.Int()), true
	}
	return 0, false
}

// Ref returns the reference of at: its only one (AttrRef, or AttrRefs
// holding exactly one); ok is false otherwise.
func (at Attr) Ref() (Ref, bool) {
	if (at.Kind == AttrRef || at.Kind == AttrRefs) && len(at.Refs) == 1 {
		return at.Refs[0], true
	}
	return Ref{}, false
}

// RefName returns the declared name of the element r names; "" when r is
// out of range or of no kind.
func (p *Program) RefName(r Ref) string {
	t, ok := p.refTable(r.Kind)
	if !ok || int(r.Index) >= t.n {
		return ""
	}
	return t.name(r.Index)
}

// RefNames returns the names of at's references of kind k, in order
// (references of other kinds, or out of range, are skipped).
func (p *Program) RefNames(at Attr, k RefKind) []string {
	var out []string
	for _, r := range at.Refs {
		if r.Kind == k {
			if n := p.RefName(r); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}

// SpanFile returns the file a span is in, as the program records it
// (relative, slash-separated); "" when its file index is out of range.
func (p *Program) SpanFile(s Span) string {
	if int(s.File) < len(p.Files) {
		return p.Files[s.File]
	}
	return ""
}
