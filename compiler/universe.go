package compiler

import (
	"fmt"
	"sort"

	"github.com/agentc/agentc/compiler/types"
)

// Universe is what the compiler knows without reading any source: the
// expression functions, the builtin tools and their implementations, and the
// error kinds the runtime raises. The stdlib tables fill it in cmd/agentc;
// DefaultUniverse serves tests and the CLI until then. The compiler never
// modifies a Universe.
type Universe struct {
	// Funcs are the expression functions by name.
	Funcs map[string]*Func
	// Tools are the builtin tools an agent may list and a tool node may call
	// (session_search, session_load, ...).
	Tools map[string]*BuiltinTool
	// Impls names the implementations `run = builtin.NAME` may use. A nil
	// map disables the check (the table is not known yet).
	Impls map[string]bool
	// ErrorKinds are the error kinds `retry ... on [...]` may name.
	ErrorKinds []string
}

// Where is a set of places an expression function may be called.
type Where uint8

// Places an expression can appear.
const (
	InGraph   Where = 1 << iota // node arguments, set values, edge conditions, map lists, interrupt prompts
	InTest                      // expect, input and answer values of tests
	InConfig                    // model, serve and tool blocks (the only places env() may appear)
	InTrigger                   // summary triggers
	InConst                     // other constant attributes (agents, policies), defaults
	InCycle                     // the until condition of a cycle agent

	Everywhere = InGraph | InTest | InConfig | InTrigger | InConst | InCycle
)

// Func is the signature of an expression function.
type Func struct {
	Name string
	// Params are the parameter types; a nil entry accepts any type except
	// secret. With Variadic, the last parameter repeats (zero or more times).
	Params   []*types.Type
	Variadic bool
	// Result is the result type (ignored when Typer is set).
	Result *types.Type
	// Typer, when set, types a call from its argument types (for polymorphic
	// functions such as len or contains); Params still fix the arity, and
	// their non-nil entries are still checked.
	Typer func(args []*types.Type) (*types.Type, error)
	// Where lists the places the function may be called.
	Where Where
	// LiteralArgs requires every argument to be a string literal (env).
	LiteralArgs bool
	// NodeArgs makes every argument a node name of the test's graph (visited).
	NodeArgs bool
	// MinArgs is the least number of arguments when Variadic (0 by default);
	// without Variadic, trailing parameters from MinArgs on are optional when
	// MinArgs > 0.
	MinArgs int
	Doc     string
}

// BuiltinTool is a tool the runtime provides.
type BuiltinTool struct {
	Name   string
	Input  *types.Type // a record
	Output *types.Type
	Effect Effect
	Doc    string
}

// Effect is a tool's or node's effect class, ordered from weakest to strongest.
type Effect uint8

// Effect classes.
const (
	ReadOnly   Effect = iota + 1 // no observable effect; may be re-run freely
	Idempotent                   // re-running has the same effect as running once
	SideEffect                   // must run at most once; journaled with an idempotency key
)

func (e Effect) String() string {
	switch e {
	case ReadOnly:
		return "read_only"
	case Idempotent:
		return "idempotent"
	case SideEffect:
		return "side_effect"
	}
	return "none"
}

// Func looks up an expression function.
func (u *Universe) Func(name string) *Func {
	if u == nil {
		return nil
	}
	return u.Funcs[name]
}

// Tool looks up a builtin tool.
func (u *Universe) Tool(name string) *BuiltinTool {
	if u == nil {
		return nil
	}
	return u.Tools[name]
}

// ToolNames returns the builtin tool names, sorted.
func (u *Universe) ToolNames() []string {
	var out []string
	if u != nil {
		for n := range u.Tools {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func mustRec(fields ...types.Field) *types.Type {
	t, err := types.NewRecord("", fields)
	if err != nil {
		panic(err) // static tables only
	}
	return t
}

func opt(t *types.Type) *types.Type { return types.OptionalOf(t) }

// DefaultUniverse returns the expression functions and builtin tools the
// examples need, until the stdlib tables are wired in by cmd/agentc. Each call
// returns a fresh Universe.
func DefaultUniverse() *Universe {
	u := &Universe{Funcs: map[string]*Func{}, Tools: map[string]*BuiltinTool{}}
	add := func(f *Func) { u.Funcs[f.Name] = f }
	str, i, b := types.StringType, types.IntType, types.BoolType

	add(&Func{Name: "len", Params: []*types.Type{nil}, Where: Everywhere, Typer: typeLen,
		Doc: "len(x) is the number of elements of a list or map, or of characters of a string."})
	add(&Func{Name: "contains", Params: []*types.Type{nil, nil}, Where: Everywhere, Typer: typeContains,
		Doc: "contains(list, x) reports whether x is an element; contains(s, sub) whether s contains sub; contains(map, key) whether key is present."})
	add(&Func{Name: "lower", Params: []*types.Type{str}, Result: str, Where: Everywhere, Doc: "lower(s) is s in lower case."})
	add(&Func{Name: "upper", Params: []*types.Type{str}, Result: str, Where: Everywhere, Doc: "upper(s) is s in upper case."})
	add(&Func{Name: "join", Params: []*types.Type{types.ListOf(str), str}, Result: str, Where: Everywhere, MinArgs: 1,
		Doc: "join(list, sep) concatenates the strings of list, separated by sep (default \", \")."})
	add(&Func{Name: "keys", Params: []*types.Type{nil}, Where: Everywhere, Typer: typeKeys,
		Doc: "keys(m) is the sorted list of the keys of map m."})
	add(&Func{Name: "json", Params: []*types.Type{nil, str}, Result: types.JSONType, Where: Everywhere,
		Doc: "json(x, path) selects a JSON path such as \"$.items[0].name\" from x, as json (null when absent)."})
	add(&Func{Name: "env", Params: []*types.Type{str, str}, Result: str, Where: InConfig, LiteralArgs: true, MinArgs: 1,
		Doc: "env(NAME, default) is the environment variable NAME, resolved when a program is loaded (never at compile time). Only in model, serve and tool blocks."})
	add(&Func{Name: "context_ratio", Params: []*types.Type{types.FloatType}, Result: b, Where: InTrigger,
		Doc: "context_ratio(r) holds when the projected context uses at least r of the model's window."})
	add(&Func{Name: "event_count", Params: []*types.Type{i}, Result: b, Where: InTrigger,
		Doc: "event_count(n) holds when more than n events arrived since the last summary."})
	add(&Func{Name: "token_count", Params: []*types.Type{i}, Result: b, Where: InTrigger,
		Doc: "token_count(n) holds when more than n tokens arrived since the last summary."})
	add(&Func{Name: "any", Params: []*types.Type{b}, Variadic: true, MinArgs: 1, Result: b, Where: Everywhere,
		Doc: "any(a, b, ...) holds when one of its arguments holds."})
	add(&Func{Name: "all", Params: []*types.Type{b}, Variadic: true, MinArgs: 1, Result: b, Where: Everywhere,
		Doc: "all(a, b, ...) holds when every argument holds."})
	add(&Func{Name: "visited", Params: []*types.Type{nil}, Result: b, Where: InTest, NodeArgs: true,
		Doc: "visited(node) holds when the run executed node; `expect visited(a) before visited(b)` orders two visits."})

	tool := func(name string, eff Effect, in, out *types.Type, doc string) {
		u.Tools[name] = &BuiltinTool{Name: name, Input: in, Output: out, Effect: eff, Doc: doc}
	}
	tool("session_search", ReadOnly, mustRec(
		types.Field{Name: "query", Type: str},
		types.Field{Name: "scope", Type: opt(str)},
		types.Field{Name: "top_k", Type: opt(i)},
		types.Field{Name: "min_score", Type: opt(types.FloatType)},
	), types.JSONType, "Searches the session history (index cards).")
	tool("session_load", ReadOnly, mustRec(
		types.Field{Name: "session_id", Type: opt(str)},
		types.Field{Name: "event_id", Type: opt(str)},
		types.Field{Name: "tool_call_id", Type: opt(str)},
		types.Field{Name: "before", Type: opt(i)},
		types.Field{Name: "after", Type: opt(i)},
		types.Field{Name: "content_offset", Type: opt(i)},
		types.Field{Name: "content_limit", Type: opt(i)},
	), types.JSONType, "Loads a window of session events around an event or tool call.")
	tool("memory_search", ReadOnly, mustRec(
		types.Field{Name: "query", Type: str},
		types.Field{Name: "limit", Type: opt(i)},
	), types.JSONType, "Searches the user's memories.")
	tool("memory_add", Idempotent, mustRec(
		types.Field{Name: "memory", Type: str},
		types.Field{Name: "topics", Type: opt(types.ListOf(str))},
	), str, "Stores a memory about the user (agentic memory).")
	tool("skill_load", Idempotent, mustRec(
		types.Field{Name: "skill", Type: str},
		types.Field{Name: "docs", Type: opt(types.ListOf(str))},
		types.Field{Name: "include_all_docs", Type: opt(b)},
		types.Field{Name: "reload", Type: opt(b)},
	), str, "Loads a granted skill's instructions into the next request.")
	tool("skill_run", SideEffect, mustRec(
		types.Field{Name: "skill", Type: str},
		types.Field{Name: "command", Type: str},
		types.Field{Name: "cwd", Type: opt(str)},
		types.Field{Name: "stdin", Type: opt(str)},
		types.Field{Name: "timeout", Type: opt(types.DurationType)},
	), mustRec(
		types.Field{Name: "exit_code", Type: i},
		types.Field{Name: "stdout", Type: str},
		types.Field{Name: "stderr", Type: str},
	), "Runs a command of a skill granted with exec.")
	// The run's workspace (spec/skills.md): a private directory per run.
	tool("workspace_write", Idempotent, mustRec(
		types.Field{Name: "path", Type: str},
		types.Field{Name: "content", Type: str},
	), str, "Writes a text file of the run's workspace (relative path; parent folders are created).")
	tool("workspace_read", ReadOnly, mustRec(
		types.Field{Name: "path", Type: str},
		types.Field{Name: "limit", Type: opt(i)},
	), str, "Reads a text file of the run's workspace (relative path, size capped).")
	tool("workspace_list", ReadOnly, mustRec(
		types.Field{Name: "path", Type: opt(str)},
	), types.JSONType, "Lists a folder of the run's workspace (relative path, default the root).")
	tool("workspace_exec", SideEffect, mustRec(
		types.Field{Name: "command", Type: types.ListOf(str)},
		types.Field{Name: "cwd", Type: opt(str)},
		types.Field{Name: "stdin", Type: opt(str)},
		types.Field{Name: "timeout", Type: opt(types.DurationType)},
	), mustRec(
		types.Field{Name: "exit_code", Type: i},
		types.Field{Name: "stdout", Type: str},
		types.Field{Name: "stderr", Type: str},
		types.Field{Name: "timed_out", Type: b},
	), "Runs a command (argv, no shell) in the run's workspace with a timeout and capped output.")
	tool("workspace_save_artifact", SideEffect, mustRec(
		types.Field{Name: "path", Type: str},
		types.Field{Name: "name", Type: opt(str)},
		types.Field{Name: "mime_type", Type: opt(str)},
	), mustRec(
		types.Field{Name: "name", Type: str},
		types.Field{Name: "revision", Type: i},
		types.Field{Name: "size", Type: i},
	), "Saves a workspace file as the next revision of a session artifact.")

	u.ErrorKinds = []string{"eval", "invalid_output", "model_error", "rate_limit", "timeout", "tool_error", "unavailable"}
	return u
}

func typeLen(args []*types.Type) (*types.Type, error) {
	switch args[0].Kind() {
	case types.KindList, types.KindMap, types.KindString, types.KindEnum, types.KindMessages, types.KindJSON:
		return types.IntType, nil
	}
	return nil, fmt.Errorf("len needs a list, map or string, not %s", args[0])
}

func typeContains(args []*types.Type) (*types.Type, error) {
	c, x := args[0], args[1]
	switch c.Kind() {
	case types.KindString, types.KindEnum:
		if isStringy(x) {
			return types.BoolType, nil
		}
		return nil, fmt.Errorf("contains(string, x) needs a string x, not %s", x)
	case types.KindList, types.KindMessages:
		if comparable(x, c.Elem()) {
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

func typeKeys(args []*types.Type) (*types.Type, error) {
	switch args[0].Kind() {
	case types.KindMap, types.KindRecord:
		return types.ListOf(types.StringType), nil
	case types.KindJSON:
		return types.ListOf(types.StringType), nil
	}
	return nil, fmt.Errorf("keys needs a map, not %s", args[0])
}
