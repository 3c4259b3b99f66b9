package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// EventKind says what an Event reports. The set is closed for codec version
// 1 (spec/events.md): DecodeEvent refuses a kind it does not know.
type EventKind string

// Event kinds. Persisted ones are recorded in the session ledger; the
// others are streamed only.
const (
	EventInput         EventKind = "input"          // persisted before anything runs
	EventRunStarted    EventKind = "run_started"    // persisted
	EventNodeStarted   EventKind = "node_started"   // streamed
	EventNodeFinished  EventKind = "node_finished"  // persisted
	EventNodeFailed    EventKind = "node_failed"    // persisted
	EventModelDelta    EventKind = "model_delta"    // streamed, never persisted
	EventModelResponse EventKind = "model_response" // persisted
	EventToolCall      EventKind = "tool_call"      // streamed
	EventToolProgress  EventKind = "tool_progress"  // streamed, never persisted
	EventToolResult    EventKind = "tool_result"    // persisted
	EventStateDelta    EventKind = "state_delta"    // persisted
	EventInterrupt     EventKind = "interrupt"      // persisted
	EventRunError      EventKind = "run_error"      // persisted
	EventRunFinished   EventKind = "run_finished"   // persisted; the last event of an invocation
	EventSummary       EventKind = "summary"        // persisted (summary service)
)

// kindPersisted is the persistence predicate, one entry per kind.
var kindPersisted = map[EventKind]bool{
	EventInput: true, EventRunStarted: true, EventNodeStarted: false, EventNodeFinished: true,
	EventNodeFailed: true, EventModelDelta: false, EventModelResponse: true, EventToolCall: false,
	EventToolResult: true, EventStateDelta: true, EventInterrupt: true, EventRunError: true,
	EventRunFinished: true, EventSummary: true, EventToolProgress: false,
}

// Valid reports whether k is one of the kinds of codec version 1.
func (k EventKind) Valid() bool {
	_, ok := kindPersisted[k]
	return ok
}

// Persisted reports whether events of kind k are recorded in the ledger.
func (k EventKind) Persisted() bool { return kindPersisted[k] }

// RunStatus is where a run stands. The strings are the VM's and the store's.
type RunStatus string

// Run statuses.
const (
	StatusRunning       RunStatus = "running"
	StatusCompleted     RunStatus = "completed"
	StatusInterrupted   RunStatus = "interrupted"    // resumable with answers
	StatusNeedsDecision RunStatus = "needs_decision" // resumable with decisions
	StatusFailed        RunStatus = "failed"
	StatusCanceled      RunStatus = "canceled"
)

// Event is one observation of a session (spec/events.md). Events are
// immutable once emitted: neither the Runner nor a consumer may modify one
// (a consumer that needs a changed event copies it).
type Event struct {
	ID         string    `json:"id"`
	Kind       EventKind `json:"kind"`
	Time       time.Time `json:"time"`
	App        string    `json:"app"`
	User       string    `json:"user"`
	Session    string    `json:"session"`
	Run        string    `json:"run,omitempty"`
	Invocation string    `json:"invocation,omitempty"`
	Author     string    `json:"author,omitempty"`
	Node       string    `json:"node,omitempty"`      // node path relative to the runnable
	MapIndex   *int      `json:"map_index,omitempty"` // the item of a map node
	Step       uint64    `json:"step,omitempty"`
	FilterKey  string    `json:"filter_key,omitempty"`
	Persisted  bool      `json:"persisted,omitempty"`
	// Seq is the ledger sequence number, set on events read back from the
	// ledger (never stored inside the event).
	Seq uint64 `json:"seq,omitempty"`

	// Payload, by kind (spec/events.md, "Payload fields").
	Text         string          `json:"text,omitempty"`
	Resume       *ResumeRequest  `json:"resume,omitempty"`
	Sampling     *Sampling       `json:"sampling,omitempty"` // input: the request's sampling parameters
	Files        []FileRef       `json:"files,omitempty"`    // input: the files the request carried (files.go)
	Runnable     string          `json:"runnable,omitempty"`
	Model        string          `json:"model,omitempty"`
	FinishReason string          `json:"finish_reason,omitempty"`
	Turn         int             `json:"turn,omitempty"`
	Usage        *Usage          `json:"usage,omitempty"`
	Cost         *float64        `json:"cost,omitempty"` // USD: model_response (priced models), run_finished (the invocation's total)
	ToolCalls    []ToolCall      `json:"tool_calls,omitempty"`
	ToolCall     *ToolCall       `json:"tool_call,omitempty"`
	Progress     *ToolProgress   `json:"progress,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	Error        *ErrorInfo      `json:"error,omitempty"`
	Changes      []StateChange   `json:"changes,omitempty"`
	Interrupts   []InterruptInfo `json:"interrupts,omitempty"`
	Decisions    []DecisionInfo  `json:"decisions,omitempty"`
	Timers       []TimerInfo     `json:"timers,omitempty"`
	Status       RunStatus       `json:"status,omitempty"`
	Output       json.RawMessage `json:"output,omitempty"`
}

// ToolProgress is a tool's report of how far a call has come (an MCP
// server's progress notification): Progress increases with each report;
// Total, when known, is its value at the end.
type ToolProgress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// ErrorInfo is a failure as events carry it: the `error` record of the
// language {kind, message, node}.
type ErrorInfo struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Node    string `json:"node,omitempty"`
}

// StateChange is one field changed by a superstep. Op is "set" (Value is
// the new value), "append" (the elements appended) or "merge" (the map
// merged into the field): the VM's decoded delta (vm.DeltaOp), so that a
// reader maps it onto its own format without reducer semantics (AG-UI: one
// JSON Patch operation per value, element or key).
type StateChange struct {
	Field string          `json:"field"`
	Op    string          `json:"op"`
	Value json.RawMessage `json:"value"`
}

// StateChange ops: the names of vm.DeltaOp.
const (
	ChangeSet    = "set"
	ChangeAppend = "append"
	ChangeMerge  = "merge"
)

// InterruptInfo is a pending interrupt. ID ("graph/node") is what a resume
// answers; Schema is the JSON Schema of the value it takes.
type InterruptInfo struct {
	ID     string         `json:"id"`
	Node   string         `json:"node"`
	Prompt string         `json:"prompt"`
	Schema map[string]any `json:"schema,omitempty"`
	Due    *time.Time     `json:"due,omitempty"` // with a timeout: when it routes to its else target
	// ToolCalls are the client tool calls a paused llm call waits on
	// (Invocation.ClientTools); the answer maps each call id to its result.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// TimerInfo is a deadline a waiting run has (a run_finished with status
// interrupted): a wait node's, or an interrupt's timeout. The run resumes
// by itself then under agentc serve; agentc run --resume fires due ones.
type TimerInfo struct {
	ID   string    `json:"id"`
	Node string    `json:"node"`
	Due  time.Time `json:"due"`
	Wait bool      `json:"wait,omitempty"` // a wait node (else an interrupt's timeout)
}

// DecisionInfo is a side effect that needs a decision before the run can
// resume (a run_finished with status needs_decision). ID is the key of
// ResumeRequest.Decisions.
type DecisionInfo struct {
	ID       string `json:"id"`
	Node     string `json:"node"`
	MapIndex int    `json:"map_index"`
	Attempt  uint32 `json:"attempt"`
	Key      string `json:"key"`
	// Prompt says what is asked; Schema is the JSON Schema of the answer
	// (DecisionSchema: {"decision": "done"|"retry"|"fail", "result"?}, the
	// result typed as the side effect's output).
	Prompt string         `json:"prompt,omitempty"`
	Schema map[string]any `json:"schema,omitempty"`
}

// EventCodecVersion is the version EncodeEvent writes and DecodeEvent reads.
const EventCodecVersion = 1

// ErrEventVersion is returned by DecodeEvent for an event written with
// another codec version (usually by a newer agentc).
var ErrEventVersion = errors.New("runtime: unsupported event codec version")

type versionedEvent struct {
	V int `json:"v"`
	*Event
}

// EncodeEvent returns the versioned JSON encoding of e: {"v":1,...} with
// the members in the order of the Event struct, empty ones omitted (the
// same bytes encoding/json would write for versionedEvent, without
// reflection). Raw JSON members must be valid JSON.
func EncodeEvent(e *Event) ([]byte, error) {
	if !e.Kind.Valid() {
		return nil, fmt.Errorf("runtime: encode event %s: unknown kind %q", e.ID, e.Kind)
	}
	b, err := appendEvent(make([]byte, 0, encodedSize(e)), e)
	if err != nil {
		return nil, fmt.Errorf("runtime: encode %s event %s: %w", e.Kind, e.ID, err)
	}
	return b, nil
}

// DecodeEvent decodes an event written by EncodeEvent. Unknown members are
// ignored; an unknown kind, a missing id or another version is an error.
func DecodeEvent(b []byte) (*Event, error) {
	e := &Event{}
	ve := versionedEvent{Event: e}
	if err := json.Unmarshal(b, &ve); err != nil {
		return nil, fmt.Errorf("runtime: decode event: %w", err)
	}
	switch {
	case ve.V != EventCodecVersion:
		return nil, fmt.Errorf("runtime: decode event %s: version %d, this build reads %d: %w", e.ID, ve.V, EventCodecVersion, ErrEventVersion)
	case e.ID == "":
		return nil, errors.New("runtime: decode event: no id")
	case !e.Kind.Valid():
		return nil, fmt.Errorf("runtime: decode event %s: unknown kind %q", e.ID, e.Kind)
	}
	return e, nil
}
