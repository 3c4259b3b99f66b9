package bytecode

import (
	"testing"

	"github.com/agentc/agentc/compiler/types"
)

func TestAttrAccessors(t *testing.T) {
	pb := NewProgramBuilder()
	p := pb.Program()
	str, _ := pb.Const(types.MakeString("gpt"))
	num, _ := pb.Const(types.MakeInt(7))
	flt, _ := pb.Const(types.MakeFloat(0.5))
	strT := pb.Type(types.StringType)
	intT := pb.Type(types.IntType)
	p.Files = []string{"a.agent"}
	p.Tools = []Tool{{Name: "search"}, {Name: "fetch"}}
	p.Models = []Model{{Name: "fast"}}
	attrs := []Attr{
		{Name: "name", Kind: AttrConst, Const: str},
		{Name: "n", Kind: AttrConst, Const: num},
		{Name: "f", Kind: AttrConst, Const: flt},
		{Name: "bad", Kind: AttrConst, Const: 99},
		{Name: "url", Kind: AttrEnv, Env: EnvRef{Var: "URL", HasDefault: true, Default: "http://d", Type: strT}},
		{Name: "key", Kind: AttrEnv, Env: EnvRef{Var: "KEY", Type: strT}},
		{Name: "port", Kind: AttrEnv, Env: EnvRef{Var: "PORT", HasDefault: true, Default: "80", Type: intT}},
		{Name: "model", Kind: AttrRef, Refs: []Ref{{Kind: RefModel, Index: 0}}},
		{Name: "keep", Kind: AttrRefs, Refs: []Ref{{Kind: RefTool, Index: 1}, {Kind: RefModel, Index: 0}, {Kind: RefTool, Index: 9}, {Kind: RefTool, Index: 0}}},
		{Name: "code", Kind: AttrCode, Code: 0},
	}
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	strs := []struct {
		name   string
		lookup func(string) (string, bool)
		want   string
	}{
		{"name", nil, "gpt"},
		{"n", nil, ""},
		{"bad", nil, ""},
		{"missing", nil, ""},
		{"url", nil, "http://d"},
		{"url", env(map[string]string{"URL": "http://e"}), "http://e"},
		{"key", nil, ""},
		{"key", env(map[string]string{"KEY": "k"}), "k"},
		{"model", nil, ""},
	}
	for _, tt := range strs {
		if got := p.AttrString(attrs, tt.name, tt.lookup); got != tt.want {
			t.Errorf("AttrString(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := p.AttrInt(attrs, "n", -1); got != 7 {
		t.Errorf("AttrInt(n) = %d", got)
	}
	if got := p.AttrInt(attrs, "name", -1); got != -1 {
		t.Errorf("AttrInt(name) = %d, want the default", got)
	}
	for name, want := range map[string]float64{"n": 7, "f": 0.5} {
		at, _ := FindAttr(attrs, name)
		if got, ok := p.AttrNumber(at); !ok || got != want {
			t.Errorf("AttrNumber(%s) = %v %v", name, got, ok)
		}
	}
	if at, _ := FindAttr(attrs, "name"); func() bool { _, ok := p.AttrNumber(at); return ok }() {
		t.Error("AttrNumber of a string")
	}
	if _, ok := p.ConstAttr(attrs, "bad"); ok {
		t.Error("a constant index out of range read as set")
	}
	port, _ := FindAttr(attrs, "port")
	if v, ok, err := p.AttrValue(port, nil); err != nil || !ok || v.Int() != 80 {
		t.Errorf("AttrValue(port) = %v %v %v, want the default 80", v, ok, err)
	}
	if _, ok, err := p.AttrValue(port, env(map[string]string{"PORT": "x"})); ok || err == nil {
		t.Error("AttrValue(port=x) did not fail")
	}
	code, _ := FindAttr(attrs, "code")
	if _, ok, err := p.AttrValue(code, nil); ok || err != nil {
		t.Error("AttrValue of code is known")
	}
	model, _ := FindAttr(attrs, "model")
	if r, ok := model.Ref(); !ok || p.RefName(r) != "fast" {
		t.Errorf("model ref %v %v", r, ok)
	}
	keep, _ := FindAttr(attrs, "keep")
	if _, ok := keep.Ref(); ok {
		t.Error("Ref of four references")
	}
	if got := p.RefNames(keep, RefTool); len(got) != 2 || got[0] != "fetch" || got[1] != "search" {
		t.Errorf("RefNames = %v", got)
	}
	if p.RefName(Ref{Kind: RefGraph, Index: 3}) != "" || p.RefName(Ref{}) != "" {
		t.Error("RefName out of range is not empty")
	}
	if p.SpanFile(Span{File: 0}) != "a.agent" || p.SpanFile(Span{File: 4}) != "" {
		t.Error("SpanFile")
	}
}
