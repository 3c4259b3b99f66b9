package vm

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// ErrorKind classifies a failure. The kinds a catch route and a retry's `on`
// list name are the language's (spec/language.md §12.6); the VM adds the
// kinds that end a run without being catchable.
type ErrorKind string

// Error kinds.
const (
	KindTimeout       ErrorKind = "timeout"         // an attempt exceeded its timeout
	KindRateLimit     ErrorKind = "rate_limit"      // the provider asked to slow down
	KindUnavailable   ErrorKind = "unavailable"     // the model or tool could not be reached
	KindInvalidOutput ErrorKind = "invalid_output"  // a result did not convert to the expected type
	KindModelError    ErrorKind = "model_error"     // a model call failed otherwise
	KindToolError     ErrorKind = "tool_error"      // a tool (or sub-graph) reported a failure
	KindEval          ErrorKind = "eval"            // an expression failed at run time
	KindLoopLimit     ErrorKind = "loop_limit"      // a `max N` edge without else was exhausted (not catchable)
	KindBudget        ErrorKind = "budget_exceeded" // the run's budget ran out (catchable, never retried)
	KindMaxSteps      ErrorKind = "max_steps"       // the run reached Options.MaxSteps (not catchable)
	KindCanceled      ErrorKind = "canceled"        // the run's context was canceled (not catchable)
	KindInternal      ErrorKind = "internal"        // a host or builtin panicked, or a storage call failed
	KindInvalidResume ErrorKind = "invalid_resume"  // a resume value or decision does not fit (returned by Resume)
)

// retryableByDefault are the kinds a retry policy without `on` retries: every
// kind of §12.6 except eval and loop_limit.
func retryableByDefault(k ErrorKind) bool {
	switch k {
	case KindTimeout, KindRateLimit, KindUnavailable, KindInvalidOutput, KindModelError, KindToolError:
		return true
	}
	return false
}

// catchable reports whether a catch route may receive an error of kind k.
func catchable(k ErrorKind) bool {
	switch k {
	case KindLoopLimit, KindMaxSteps, KindCanceled:
		return false
	}
	return true
}

// Error is a node or run failure: a kind, a message and the node path it
// happened at ("graph/node", "graph/node/3" for a map item). Hosts return an
// *Error (or wrap one) to choose the kind; any other host error is classified
// by the call kind (model_error for llm and agent calls, tool_error for tools
// and sub-graphs).
type Error struct {
	Kind    ErrorKind
	Message string
	Node    string
	Err     error // the cause, if any
}

// NewError returns an *Error of the given kind.
func NewError(kind ErrorKind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	s := string(e.Kind) + ": " + e.Message
	if e.Node != "" {
		s = e.Node + ": " + s
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Record returns the error as the language's `error` record {kind, message,
// node} (types.ErrorType), the value a catch target reads.
func (e *Error) Record() types.Value {
	v, _ := types.MakeRecord(types.ErrorType.Shape(), []types.Value{
		types.MakeString(string(e.Kind)),
		types.MakeString(e.Message),
		types.MakeString(e.Node),
	})
	return v
}

// errorFromRecord rebuilds an *Error from an `error` record value.
func errorFromRecord(v types.Value) *Error {
	k, _ := v.Field("kind")
	m, _ := v.Field("message")
	n, _ := v.Field("node")
	return &Error{Kind: ErrorKind(k.Str()), Message: m.Str(), Node: n.Str()}
}

// classify turns whatever a host call returned into an *Error for node.
func classify(err error, call bytecode.CallKind, node string) *Error {
	return AsError(err, defaultKind(call), node)
}

// AsError is a failure of node as an *Error: a copy of the *Error in err's
// chain, its node and kind filled in (node, def) when empty; else a new
// one of kind timeout for a passed deadline, canceled for a cancellation
// and def otherwise, wrapping err.
func AsError(err error, def ErrorKind, node string) *Error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		if c.Node == "" {
			c.Node = node
		}
		if c.Kind == "" {
			c.Kind = def
		}
		return &c
	}
	kind := def
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		kind = KindTimeout
	case errors.Is(err, context.Canceled):
		kind = KindCanceled
	}
	return &Error{Kind: kind, Message: err.Error(), Node: node, Err: err}
}

func defaultKind(call bytecode.CallKind) ErrorKind {
	if call == bytecode.CallLLM || call == bytecode.CallAgent {
		return KindModelError
	}
	return KindToolError
}

// EvalError is a run-time failure of the expression machine. Span is the
// source range of the failing instruction (bytecode.Chunk.SpanAt); File is
// Span.File resolved against the program's file table.
type EvalError struct {
	Span  bytecode.Span
	File  string
	Chunk string // the chunk's name, e.g. "investigate.triage.arg.prompt"
	PC    int
	Msg   string
}

func (e *EvalError) Error() string {
	if e.Span.IsValid() {
		return e.File + ":" + strconv.Itoa(int(e.Span.StartLine)) + ":" + strconv.Itoa(int(e.Span.StartCol)) + ": " + e.Msg
	}
	return e.Chunk + ": pc " + strconv.Itoa(e.PC) + ": " + e.Msg
}

// ErrProgramMismatch is wrapped by the error Resume returns when a checkpoint
// was written by other bytecode (or another state schema).
var ErrProgramMismatch = errors.New("checkpoint written by a different program")

// storageError wraps a Checkpointer failure with the operation that failed.
// It ends the run: the durable state is whatever was committed.
func storageError(op string, err error) error {
	return fmt.Errorf("vm: %s: %w", op, err)
}
