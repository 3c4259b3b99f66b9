package vm

import (
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

func TestBuiltins(t *testing.T) {
	rec, _ := types.MakeRecord(recT.Shape(), []types.Value{vi(1), vs("why")})
	doc, _ := types.ParseJSON([]byte(`{"items":[{"name":"a","tags":["x"]},{"name":"b"}],"n":3,"odd key":true}`))
	m, _ := types.MakeMap([]string{"b", "a"}, []types.Value{vi(2), vi(1)})
	f := Builtins()
	for _, tc := range []struct {
		fn   string
		args []types.Value
		want string
		err  string
	}{
		{"len", []types.Value{vl(vi(1), vi(2))}, "2", ""},
		{"len", []types.Value{vs("héllo")}, "5", ""},
		{"len", []types.Value{m}, "2", ""},
		{"len", []types.Value{rec}, "2", ""},
		{"len", []types.Value{vi(1)}, "", "len of int"},
		{"len", nil, "", "takes 1 arguments, got 0"},
		{"contains", []types.Value{vl(vi(1), vi(2)), vf(2)}, "true", ""},
		{"contains", []types.Value{vs("hello"), vs("ell")}, "true", ""},
		{"contains", []types.Value{m, vs("c")}, "false", ""},
		{"contains", []types.Value{vs("x"), vi(1)}, "", "cannot look for int in string"},
		{"lower", []types.Value{vs("ÀB")}, `"àb"`, ""},
		{"upper", []types.Value{vs("ab")}, `"AB"`, ""},
		{"upper", []types.Value{vi(1)}, "", "argument is int, want string"},
		{"join", []types.Value{vl(vs("a"), vs("b"))}, `"a, b"`, ""},
		{"join", []types.Value{vl(vs("a"), vi(2), rec), vs("|")}, `"a|2|{\"x\":1,\"y\":\"why\"}"`, ""},
		{"join", []types.Value{vl(), vs("|")}, `""`, ""},
		{"join", []types.Value{vs("a")}, "", "want list"},
		{"keys", []types.Value{m}, `["a", "b"]`, ""},
		{"keys", []types.Value{rec}, `["x", "y"]`, ""},
		{"keys", []types.Value{vl()}, "", "keys of list"},
		{"json", []types.Value{doc, vs("$.items[0].name")}, `"a"`, ""},
		{"json", []types.Value{doc, vs("$.items[1].tags")}, "null", ""},
		{"json", []types.Value{doc, vs("$.items[5]")}, "null", ""},
		{"json", []types.Value{doc, vs(`$["odd key"]`)}, "true", ""},
		{"json", []types.Value{doc, vs("$")}, doc.String(), ""},
		{"json", []types.Value{rec, vs("$.y")}, `"why"`, ""},
		{"json", []types.Value{doc, vs("items")}, "", "malformed JSON path"},
		{"json", []types.Value{doc, vs("$.items[x]")}, "", "malformed JSON path"},
		{"json", []types.Value{doc, vs("$.")}, "", "malformed JSON path"},
		{"any", []types.Value{vb(false), vb(true)}, "true", ""},
		{"any", []types.Value{vb(false)}, "false", ""},
		{"all", []types.Value{vb(true), vb(true)}, "true", ""},
		{"all", []types.Value{vb(true), vb(false)}, "false", ""},
		{"all", []types.Value{vb(true), vi(1)}, "", "argument 2 is int, want bool"},
		{"all", nil, "", "at least 1"},
	} {
		v, err := f[tc.fn](tc.args)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s%v: got %v, %v; want error %q", tc.fn, tc.args, v, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s%v: %v", tc.fn, tc.args, err)
		case tc.err == "" && v.String() != tc.want:
			t.Errorf("%s%v = %s, want %s", tc.fn, tc.args, v, tc.want)
		}
	}
}

func TestFunctionTable(t *testing.T) {
	b := evalFixture(t)
	ci := b.chunk("f", 0, 1, func(c *bytecode.ChunkBuilder) {
		c.Emit(bytecode.LOAD, b.field("i"))
		c.Call("double", 1)
		c.Emit(bytecode.RETURN, 0)
	})
	if _, err := bytecode.Encode(b.p); err != nil {
		t.Fatal(err)
	}
	if _, err := New(b.p, nil); err == nil || !strings.Contains(err.Error(), `unknown builtin function "double"`) {
		t.Errorf("New with an unknown function: %v", err)
	}
	table := Builtins()
	table["double"] = func(args []types.Value) (types.Value, error) { return types.MakeInt(2 * args[0].Int()), nil }
	m, err := New(b.p, table)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := m.Eval(bg, int(ci), m.graphs[0].defaults); err != nil || v.Int() != 14 {
		t.Errorf("double(7) = %v, %v", v, err)
	}
}
