package stdlib

import (
	"fmt"

	"github.com/agentc/agentc/compiler/builtin"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/vm"
)

// funcs is the expression function table (spec/language.md §4.6). The
// functions the language guarantees inside graphs are the VM's own
// (vm.Builtins); the others are bound by a host per run.
func funcs() []*Func {
	core := vm.Builtins()
	str, i, b := types.StringType, types.IntType, types.BoolType
	any1 := []*types.Type{nil}
	return sortFuncs([]*Func{
		{Impl: core["len"], Func: builtin.Func{Name: "len", Params: any1, Where: builtin.Everywhere, Typer: typeLen,
			Doc: "len(x) is the number of elements of a list or map, or of characters of a string."}},
		{Impl: core["contains"], Func: builtin.Func{Name: "contains", Params: []*types.Type{nil, nil}, Where: builtin.Everywhere, Typer: typeContains,
			Doc: "contains(list, x) reports whether x is an element; contains(s, sub) whether s contains sub; contains(map, key) whether key is present."}},
		{Impl: core["lower"], Func: builtin.Func{Name: "lower", Params: []*types.Type{str}, Result: str, Where: builtin.Everywhere,
			Doc: "lower(s) is s in lower case."}},
		{Impl: core["upper"], Func: builtin.Func{Name: "upper", Params: []*types.Type{str}, Result: str, Where: builtin.Everywhere,
			Doc: "upper(s) is s in upper case."}},
		{Impl: core["join"], Func: builtin.Func{Name: "join", Params: []*types.Type{types.ListOf(str), str}, Result: str, Where: builtin.Everywhere, MinArgs: 1,
			Doc: "join(list, sep) concatenates the strings of list, separated by sep (default \", \")."}},
		{Impl: core["keys"], Func: builtin.Func{Name: "keys", Params: any1, Where: builtin.Everywhere, Typer: typeKeys,
			Doc: "keys(m) is the sorted list of the keys of map m."}},
		{Impl: core["json"], Func: builtin.Func{Name: "json", Params: []*types.Type{nil, str}, Result: types.JSONType, Where: builtin.Everywhere,
			Doc: "json(x, path) selects a JSON path such as \"$.items[0].name\" from x, as json (null when absent)."}},
		{Impl: core["any"], Func: builtin.Func{Name: "any", Params: []*types.Type{b}, Variadic: true, MinArgs: 1, Result: b, Where: builtin.Everywhere,
			Doc: "any(a, b, ...) holds when one of its arguments holds."}},
		{Impl: core["all"], Func: builtin.Func{Name: "all", Params: []*types.Type{b}, Variadic: true, MinArgs: 1, Result: b, Where: builtin.Everywhere,
			Doc: "all(a, b, ...) holds when every argument holds."}},

		{Host: "loader", Func: builtin.Func{Name: "env", Params: []*types.Type{str, str}, Result: str, Where: builtin.InConfig, LiteralArgs: true, MinArgs: 1,
			Doc: "env(NAME, default) is the environment variable NAME, resolved when a program is loaded (never at compile time). Only in model, serve and tool blocks."}},
		{Host: "history", Func: builtin.Func{Name: "context_ratio", Params: []*types.Type{types.FloatType}, Result: b, Where: builtin.InTrigger,
			Doc: "context_ratio(r) holds when the projected context uses at least r of the model's window."}},
		{Host: "history", Func: builtin.Func{Name: "event_count", Params: []*types.Type{i}, Result: b, Where: builtin.InTrigger,
			Doc: "event_count(n) holds when more than n events arrived since the last summary."}},
		{Host: "history", Func: builtin.Func{Name: "token_count", Params: []*types.Type{i}, Result: b, Where: builtin.InTrigger,
			Doc: "token_count(n) holds when more than n tokens arrived since the last summary."}},
		{Host: "test", Func: builtin.Func{Name: "visited", Params: any1, Result: b, Where: builtin.InTest, NodeArgs: true,
			Doc: "visited(node) holds when the run executed node; `expect visited(a) before visited(b)` orders two visits."}},
	})
}

func isStringy(t *types.Type) bool {
	k := t.Kind()
	return k == types.KindString || k == types.KindEnum || k == types.KindJSON
}

func typeLen(_ builtin.TypeRules, args []*types.Type) (*types.Type, error) {
	switch args[0].Kind() {
	case types.KindList, types.KindMap, types.KindString, types.KindEnum, types.KindMessages, types.KindJSON:
		return types.IntType, nil
	}
	return nil, fmt.Errorf("len needs a list, map or string, not %s", args[0])
}

func typeContains(rules builtin.TypeRules, args []*types.Type) (*types.Type, error) {
	c, x := args[0], args[1]
	switch c.Kind() {
	case types.KindString, types.KindEnum:
		if isStringy(x) {
			return types.BoolType, nil
		}
		return nil, fmt.Errorf("contains(string, x) needs a string x, not %s", x)
	case types.KindList, types.KindMessages:
		if rules.Comparable(x, c.Elem()) {
			return types.BoolType, nil
		}
		return nil, fmt.Errorf("contains(%s, x) needs x comparable with %s, not %s", c, c.Elem(), x)
	case types.KindMap:
		if isStringy(x) {
			return types.BoolType, nil
		}
		return nil, fmt.Errorf("contains(map, key) needs a string key, not %s", x)
	case types.KindJSON:
		return types.BoolType, nil
	}
	return nil, fmt.Errorf("contains needs a list, map or string, not %s", c)
}

func typeKeys(_ builtin.TypeRules, args []*types.Type) (*types.Type, error) {
	switch args[0].Kind() {
	case types.KindMap, types.KindRecord, types.KindJSON:
		return types.ListOf(types.StringType), nil
	}
	return nil, fmt.Errorf("keys needs a map, not %s", args[0])
}
