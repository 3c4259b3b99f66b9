package bytecode

import (
	"slices"
	"testing"
	"time"
)

// TestEncodeStrayFieldsByKind sets each kind-specific field of a tool
// implementation and of an attribute under every kind: Encode accepts
// exactly the fields the kind uses.
func TestEncodeStrayFieldsByKind(t *testing.T) {
	implKinds := []ImplKind{ImplBuiltin, ImplHTTP, ImplExec, ImplMCP, ImplAgent}
	for _, f := range []struct {
		name string
		uses ImplKind
		set  func(*ToolImpl)
	}{
		{"builtin", ImplBuiltin, func(im *ToolImpl) { im.Builtin = "x" }},
		{"method", ImplHTTP, func(im *ToolImpl) { im.Method = "GET" }},
		{"url", ImplHTTP, func(im *ToolImpl) { im.URL = 1 }},
		{"headers", ImplHTTP, func(im *ToolImpl) { im.Headers = []Attr{{Name: "h", Kind: AttrConst}} }},
		{"argv", ImplExec, func(im *ToolImpl) { im.Argv = []uint32{1} }},
		{"timeout", ImplExec, func(im *ToolImpl) { im.Timeout = time.Second }},
		{"agent", ImplAgent, func(im *ToolImpl) { im.Agent = 1 }},
	} {
		for _, k := range implKinds {
			p := &Program{Tools: []Tool{{Name: "t", Impl: ToolImpl{Kind: k}}}}
			f.set(&p.Tools[0].Impl)
			if _, err := Encode(p); (err == nil) != (k == f.uses) {
				t.Errorf("impl kind %d with %s set: Encode err = %v", k, f.name, err)
			}
		}
	}

	one := []Ref{{Kind: RefTool, Index: 0}}
	attrKinds := []AttrKind{AttrConst, AttrEnv, AttrCode, AttrRef, AttrRefs}
	for _, f := range []struct {
		name string
		uses []AttrKind
		set  func(*Attr)
	}{
		{"const", []AttrKind{AttrConst}, func(a *Attr) { a.Const = 1 }},
		{"env var", []AttrKind{AttrEnv}, func(a *Attr) { a.Env.Var = "X" }},
		{"env type", []AttrKind{AttrEnv}, func(a *Attr) { a.Env.Type = 1 }},
		{"env default", []AttrKind{AttrEnv}, func(a *Attr) { a.Env.HasDefault, a.Env.Default = true, "d" }},
		{"env default without the flag", nil, func(a *Attr) { a.Env.Default = "d" }},
		{"code", []AttrKind{AttrCode}, func(a *Attr) { a.Code = 1 }},
		{"refs", []AttrKind{AttrRef, AttrRefs}, func(a *Attr) { a.Refs = one }},
	} {
		for _, k := range attrKinds {
			a := Attr{Name: "a", Kind: k}
			if k == AttrRef {
				a.Refs = one // a single reference is what the kind needs
			}
			f.set(&a)
			p := &Program{Models: []Model{{Name: "m", Attrs: []Attr{a}}}}
			if _, err := Encode(p); (err == nil) != slices.Contains(f.uses, k) {
				t.Errorf("attr kind %d with %s set: Encode err = %v", k, f.name, err)
			}
		}
	}
}
