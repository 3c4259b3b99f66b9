package vm

import (
	"context"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// The VM does no I/O. Everything outside the expression machine and the
// scheduler reaches it through the interfaces in this file (models, tools,
// agents and sub-graphs through Host; time through Clock; randomness through
// Entropy; memoization through Cache) and in checkpoint.go (durability).

// Host performs a node's call: an llm agent turn loop, a tool, an agent or a
// sub-graph (which the host may run with the same Machine recursively).
// Call is invoked concurrently from the VM's workers. An error that is (or
// wraps) an *Error chooses its kind; any other error is a model_error for
// llm and agent calls and a tool_error otherwise. A panic in Call is
// recovered at the worker boundary and becomes an `internal` node error.
type Host interface {
	Call(ctx context.Context, req CallRequest) (types.Value, error)
}

// HostFunc adapts a function to Host.
type HostFunc func(ctx context.Context, req CallRequest) (types.Value, error)

// Call calls f.
func (f HostFunc) Call(ctx context.Context, req CallRequest) (types.Value, error) { return f(ctx, req) }

// NamedValue is a named argument or field value.
type NamedValue struct {
	Name  string
	Value types.Value
}

// CallRequest describes one attempt of one call.
type CallRequest struct {
	Run       string
	Step      uint64
	Node      string // node path: "graph/node" (Options.PathPrefix + "/" in front for sub-runs)
	NodeIndex int    // index in the graph's node table
	MapIndex  int    // the item's index in a map node, else -1

	Kind   bytecode.CallKind
	Callee uint32       // index into Program.Agents (llm, agent), Tools or Graphs
	Args   []NamedValue // evaluated on the step's snapshot, in the node's argument order

	Attempt uint32 // 1 for the first attempt
	// IdempotencyKey is set for idempotent and side_effect nodes: the same
	// (run, node, map index, step, attempt) always gets the same key, so a
	// re-executed attempt can be de-duplicated by the provider.
	IdempotencyKey string
	Effect         bytecode.Effect

	// Result is the type the VM converts the result to (the `into` field's
	// type, or its element type under `append`); nil when the result is
	// discarded.
	Result *types.Type

	// Resume is set when the call paused (the host returned a *Pause) and
	// its interrupt was answered: the call continues from Data with Value.
	Resume *CallResume

	// SubRun is set when the call's sub-run waited (the host returned a
	// *Suspension) and an answer or a due timer woke it: the host
	// continues the sub-run from SubRun.From (or its own SubRun.Host
	// state) with SubRun.Answers instead of starting it (spec/vm.md,
	// "Suspended calls").
	SubRun *SubResume
}

// CallResume is an answered pause of a call: Data as the pause recorded
// it, Value the answer (as given; its type is JSON).
type CallResume struct {
	Value types.Value
	Data  []byte
}

// Pause is returned (or wrapped) by Host.Call to stop the call until an
// answer comes from outside the run, e.g. a client's results for tool calls
// its model made: the task becomes a pending interrupt of its node (id
// "graph/node", type json) with Prompt, and the run stops interrupted once
// the step is committed. Data, opaque to the VM, is kept in the checkpoint
// and handed back in CallRequest.Resume with the answer. Only a call node
// outside a map can pause; in a map item the pause is the item's error.
type Pause struct {
	Prompt string
	Data   []byte
}

func (p *Pause) Error() string { return "the call paused: " + p.Prompt }

// Clock is the VM's only source of time: per-attempt timeouts, retry
// backoff and cache expiry. Inject a real clock in production and a fake one
// in tests; a program that needs timers refuses to run without one.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed, unless stop
	// is called first; stop reports whether it prevented the call.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Sleeper is a Clock that waits by itself. The backoff before a retry
// calls Sleep when the Clock implements it, else it waits on AfterFunc: a
// test clock skips the wait (advancing its time) while it never fires an
// attempt's timeout, so a test's outcome does not depend on which of a
// timer and a replayed result comes first. Sleep reports false when ctx
// ended first.
type Sleeper interface {
	Sleep(ctx context.Context, d time.Duration) bool
}

// Entropy is the VM's only source of randomness (retry jitter). Values drawn
// are journaled so that a replay draws the same ones.
type Entropy interface {
	Uint64() uint64
}

// Cache memoizes node results by key (see spec/vm.md, "Cache"). It must be
// safe for concurrent use.
type Cache interface {
	Get(ctx context.Context, key [32]byte) (CacheEntry, bool)
	Put(ctx context.Context, key [32]byte, e CacheEntry)
}

// CacheEntry is a memoized result. Expires is zero when it never expires.
type CacheEntry struct {
	Value   types.Value
	Expires time.Time
}

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds.
const (
	EventNodeStarted  EventKind = iota + 1 // a node begins in Step
	EventNodeFinished                      // a node completed (its writes are merged)
	EventNodeFailed                        // a node failed after its retries (Err); it may be caught
	EventStateDelta                        // the fields Step changed (Changes), after the merge
	EventInterrupted                       // the run waits on Interrupts
	EventRunFinished                       // the run completed, or stopped (Status)
	EventRunFailed                         // the run failed (Err)
)

var eventKindNames = [...]string{"", "node_started", "node_finished", "node_failed", "state_delta", "interrupted", "run_finished", "run_failed"}

func (k EventKind) String() string { return types.EnumName(k, eventKindNames[:], "event") }

// Event is one observation of a run, emitted synchronously from the
// scheduler goroutine in a deterministic order (nodes in program order). The
// Runner defines the public event schema; this is the minimum it needs.
type Event struct {
	Kind       EventKind
	Run        string
	Step       uint64
	Node       string // node path (node events)
	Changes    []FieldChange
	Interrupts []Interrupt
	Status     Status
	Err        *Error
}

// FieldChange is a state field's new value after a step.
type FieldChange struct {
	Field int
	Name  string
	Value types.Value
}
