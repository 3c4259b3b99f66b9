// Package decidetest holds what the tests of pending decisions share: a
// program whose side effect can be cut off mid-call, and a tool that
// blocks its first call until it is canceled. It is imported by tests
// only.
package decidetest

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
)

// Source is a program (app "dec") whose graph g calls the side-effect tool
// poke once, into its output r.
const Source = `workflow dec "A side effect cut off mid-call"

tool poke "Pokes something once" {
  input  {}
  output string
  run    = http { url = "http://127.0.0.1:9/poke" }
  effect = side_effect
}

state S { q: string, r: string = "" }

graph g(S) input q output r {
  node p = tool poke {} into r
  start -> p
  p     -> end
}
`

// PokeTool implements poke: its first call signals Entered and blocks
// until canceled; later calls answer "poked". Calls counts them.
type PokeTool struct {
	Entered chan struct{}
	Calls   atomic.Int32
}

// NewPokeTool returns a PokeTool ready for one cut-off call.
func NewPokeTool() *PokeTool { return &PokeTool{Entered: make(chan struct{}, 1)} }

// Spec implements runtime.Tool.
func (p *PokeTool) Spec() runtime.ToolSpec { return runtime.ToolSpec{Name: "poke"} }

// Effect implements runtime.Tool.
func (p *PokeTool) Effect() runtime.Effect { return runtime.Effect(bytecode.EffectSideEffect) }

// Call implements runtime.Tool.
func (p *PokeTool) Call(ctx context.Context, _ runtime.ToolRequest) (json.RawMessage, error) {
	if p.Calls.Add(1) == 1 {
		p.Entered <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return json.RawMessage(`"poked"`), nil
}
