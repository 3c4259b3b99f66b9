package runtime

import (
	"context"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/store"
)

// Preloader contributes context to an llm agent's call before its first
// model turn: recall hits from the user's other sessions, memories. The llm
// loop calls every configured Preloader (RunnerConfig.Preloaders) once per
// agent call and places the messages it returns after the agent's
// instruction, as evidence rather than instructions. A Preloader that has
// nothing to add returns nil; an error is logged and the call goes on
// without its messages (preloading never fails a run).
type Preloader interface {
	Preload(ctx context.Context, req PreloadRequest) ([]Message, error)
}

// PreloadRequest says where an agent call runs and what it is about.
type PreloadRequest struct {
	Session store.SessionKey
	Run     string
	Node    string // node path relative to the runnable
	// Program and Agent (an index into Program.Agents) let a preloader read
	// the agent's policies (recall.preload, memory.preload).
	Program *bytecode.Program
	Agent   int
	// Query is the agent call's prompt (the user's input for a top-level
	// agent).
	Query string
}
