// Package stdlib is the one table of builtins: every expression function
// (name, signature, where it may be called, doc, VM implementation) and
// every builtin tool (name, input and output types, effect, doc, and the
// package that implements it). Its users all read it: the compiler's
// universe (Universe), the VM's function table (Funcs), the stdlib/tools
// implementations of `run = builtin.NAME` and the runtime services' tool
// specs (recall, memory, skill, workspace read their names, docs, effects and
// input schemas from Tool). Adding a builtin is one entry here plus its
// implementation.
package stdlib

import (
	"sort"

	"github.com/agentc/agentc/compiler/builtin"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/vm"
)

// Func is one expression function: the signature the compiler checks and
// the implementation the VM calls.
type Func struct {
	builtin.Func
	// Impl evaluates a call. Nil for the functions a host binds per run;
	// Host then names it.
	Impl vm.Func
	// Host names who binds a function without Impl: "loader" (env reads the
	// process environment when a program is loaded), "test" (visited reads
	// the run under test), "history" (the summary triggers read the context
	// being governed).
	Host string
}

// ToolKind says how a builtin tool is reached.
type ToolKind uint8

// Tool kinds.
const (
	// Service tools are listed by name in an agent's tools (or added by the
	// compiler, skill_load and skill_run) and are bound by a runtime service
	// that needs the store or the run.
	Service ToolKind = iota + 1
	// Impl tools are behaviours a program's own tool declares with
	// `run = builtin.NAME`; stdlib/tools implements them.
	Impl
)

// Tool is one builtin tool.
type Tool struct {
	builtin.Tool
	Kind ToolKind
	// Binding is the package that implements the tool: runtime/recall,
	// runtime/memory, runtime/skill, runtime/workspace or stdlib/tools.
	Binding string
}

// InputSchema is the JSON Schema of the tool's input, as a model sees it in
// a function declaration.
func (t *Tool) InputSchema() map[string]any { return types.JSONSchema(t.Input) }

// ErrorKinds are the error kinds `retry ... on [...]` may name: the
// catchable kinds of vm.ErrorKind.
var errorKinds = []vm.ErrorKind{vm.KindEval, vm.KindInvalidOutput, vm.KindModelError, vm.KindRateLimit,
	vm.KindTimeout, vm.KindToolError, vm.KindUnavailable}

var (
	funcTable = funcs()
	toolTable = tools()
	toolIndex = func() map[string]*Tool {
		m := map[string]*Tool{}
		for _, t := range toolTable {
			m[t.Name] = t
		}
		return m
	}()
)

// Functions returns the expression function entries, sorted by name. The
// entries are shared: callers must not modify them.
func Functions() []*Func { return funcTable }

// Tools returns the builtin tool entries, sorted by name. The entries are
// shared: callers must not modify them.
func Tools() []*Tool { return toolTable }

// LookupTool returns the builtin tool name, or nil.
func LookupTool(name string) *Tool { return toolIndex[name] }

// Funcs returns the VM's function table: every function with an
// implementation. The map is fresh on every call, so a host may add the
// functions it binds (env, visited, the summary triggers) before vm.New.
func Funcs() map[string]vm.Func {
	m := map[string]vm.Func{}
	for _, f := range funcTable {
		if f.Impl != nil {
			m[f.Name] = f.Impl
		}
	}
	return m
}

// Universe returns the compiler's universe: every function and service
// tool, the names of the Impl tools and the error kinds. Each call returns a
// fresh Universe (its maps may be changed; the entries are shared).
func Universe() *builtin.Universe {
	u := &builtin.Universe{Funcs: map[string]*builtin.Func{}, Tools: map[string]*builtin.Tool{}, Impls: map[string]bool{}}
	for _, f := range funcTable {
		u.Funcs[f.Name] = &f.Func
	}
	for _, t := range toolTable {
		switch t.Kind {
		case Service:
			u.Tools[t.Name] = &t.Tool
		case Impl:
			u.Impls[t.Name] = true
		}
	}
	for _, k := range errorKinds {
		u.ErrorKinds = append(u.ErrorKinds, string(k))
	}
	sort.Strings(u.ErrorKinds)
	return u
}

func sortFuncs(fs []*Func) []*Func {
	sort.Slice(fs, func(a, b int) bool { return fs[a].Name < fs[b].Name })
	return fs
}

func sortTools(ts []*Tool) []*Tool {
	sort.Slice(ts, func(a, b int) bool { return ts[a].Name < ts[b].Name })
	return ts
}

// ToolNames returns the names of the tools binding implements, sorted.
func ToolNames(binding string) []string {
	var out []string
	for _, t := range toolTable {
		if t.Binding == binding {
			out = append(out, t.Name)
		}
	}
	return out
}
