// Package builtin holds the shapes of what the compiler knows without
// reading any source: the expression functions, the builtin tools, the names
// `run = builtin.NAME` may use and the error kinds. It has no entries of its
// own: the one table lives in package stdlib, which fills a Universe
// (stdlib.Universe); the compiler reads it through compiler.Config. The
// package sits below both so that the compiler does not depend on stdlib.
package builtin

import (
	"sort"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// Universe is the compiler's view of the stdlib. The compiler never modifies
// a Universe.
type Universe struct {
	// Funcs are the expression functions by name.
	Funcs map[string]*Func
	// Tools are the builtin tools an agent may list and a tool node may call
	// (session_search, session_load, ...).
	Tools map[string]*Tool
	// Impls names the implementations `run = builtin.NAME` may use. A nil
	// map disables the check.
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

// TypeRules are the compiler's type relations a Typer may ask about.
type TypeRules interface {
	// Comparable reports whether == may compare values of a and b.
	Comparable(a, b *types.Type) bool
}

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
	Typer func(rules TypeRules, args []*types.Type) (*types.Type, error)
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

// Tool is a builtin tool the runtime provides.
type Tool struct {
	Name   string
	Input  *types.Type // a record
	Output *types.Type
	Effect bytecode.Effect
	Doc    string
}

// Func looks up an expression function.
func (u *Universe) Func(name string) *Func {
	if u == nil {
		return nil
	}
	return u.Funcs[name]
}

// Tool looks up a builtin tool.
func (u *Universe) Tool(name string) *Tool {
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
