package compiler

import (
	"github.com/agentc/agentc/compiler/builtin"
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// Universe is what the compiler knows without reading any source (see
// package builtin); stdlib.Universe fills one from the stdlib table, and
// Config.Universe hands it to the compiler. A nil Universe is the empty one:
// no functions, builtin tools or error kinds.
type Universe = builtin.Universe

// Func is the signature of an expression function.
type Func = builtin.Func

// BuiltinTool is a tool the runtime provides.
type BuiltinTool = builtin.Tool

// Where is a set of places an expression function may be called.
type Where = builtin.Where

// Places an expression can appear.
const (
	InGraph    = builtin.InGraph
	InTest     = builtin.InTest
	InConfig   = builtin.InConfig
	InTrigger  = builtin.InTrigger
	InConst    = builtin.InConst
	InCycle    = builtin.InCycle
	Everywhere = builtin.Everywhere
)

// Effect is a tool's or node's effect class, ordered from weakest to
// strongest: the bytecode's own type.
type Effect = bytecode.Effect

// Effect classes.
const (
	ReadOnly   = bytecode.EffectReadOnly   // no observable effect; may be re-run freely
	Idempotent = bytecode.EffectIdempotent // re-running has the same effect as running once
	SideEffect = bytecode.EffectSideEffect // must run at most once; journaled with an idempotency key
)

// typeRules answers a Typer's questions with the checker's relations.
type typeRules struct{}

func (typeRules) Comparable(a, b *types.Type) bool { return comparable(a, b) }
