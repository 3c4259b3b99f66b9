// Package runtime owns runs: the Runner, the Invocation work order, the one
// Event schema, and the interfaces of models, tools and services that the
// providers in runtime/* implement. It drives the vm for every run.
package runtime

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// Role is a chat message's author kind.
type Role string

// Roles.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one chat message sent to or received from a model.
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content,omitempty"`
	Name       string     `json:"name,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"` // RoleTool: the call this answers
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // RoleAssistant: calls requested
	// Parts, when set, is a user message's content as parts (its text,
	// then images); Content keeps the text alone (files.go).
	Parts []ContentPart `json:"parts,omitempty"`
}

// ToolCall is a model's request to run a tool. Args is the raw JSON the
// model produced; it may be invalid and is validated before the tool runs.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// ToolSpec describes a tool to a model: name, doc and the JSON Schema of its
// input (types.JSONSchema of the declared input type).
type ToolSpec struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	InputSchema map[string]any `json:"input_schema"`
}

// Usage counts tokens of one model call. CachedTokens are the prompt
// tokens the provider read from its prompt cache (counted in PromptTokens
// too), when it reports them.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	CachedTokens     int `json:"cached_tokens,omitempty"`
}

// CallSite identifies where a model call comes from. The scripted model
// matches replies by it (never by global call order); providers may ignore it.
type CallSite struct {
	Node     string `json:"node"`      // graph node path, e.g. "triage" or "team/writer"
	MapIndex int    `json:"map_index"` // item index inside a map node, else -1
	Turn     int    `json:"turn"`      // 1-based model turn within the node's agent loop
}

// ModelRequest is one model call.
type ModelRequest struct {
	Site     CallSite
	Messages []Message
	Tools    []ToolSpec
	// ResponseSchema, when set, asks for structured output conforming to it
	// (JSON Schema of the `into` target's type).
	ResponseSchema map[string]any
	Temperature    *float64
	TopP           *float64
	MaxTokens      int      // 0: the provider's default
	Stop           []string // stop sequences (at most 4)
	Seed           *int64
	// ToolChoice "none" offers Tools without letting the model call them
	// (a summary fork keeps its parent's tools for the cached prefix);
	// "": the model decides.
	ToolChoice string
}

// ModelResponse is a complete model reply. Text and ToolCalls may both be set.
type ModelResponse struct {
	Text         string
	ToolCalls    []ToolCall
	Usage        Usage
	FinishReason string // "stop", "tool_calls", "length", ...
	// Model is the name the provider reports (a scripted model says
	// "scripted:<name>"), recorded in event metadata.
	Model string
}

// ModelInfo describes a model.
type ModelInfo struct {
	Name          string // the declaration's name
	Provider      string // "openai", "scripted"
	Model         string // provider model id, e.g. "gpt-4o-mini" or "scripted:fast"
	ContextWindow int    // tokens; 0 when unknown
	Scripted      bool
}

// Model generates replies. Generate streams text deltas through onDelta (nil
// allowed; called from the calling goroutine only) and returns the complete
// response. Errors are *vm.Error with a kind (rate_limit, unavailable,
// timeout, model_error) so node retry policies can match them.
type Model interface {
	Info() ModelInfo
	Generate(ctx context.Context, req *ModelRequest, onDelta func(text string)) (*ModelResponse, error)
}

// ToolRequest is one tool invocation.
type ToolRequest struct {
	CallID string          // the model's tool call id, or a node-derived id
	Args   json.RawMessage // validated against the tool's input schema before Call
	// IdempotencyKey is set for idempotent and side-effect tools; the same
	// logical attempt always carries the same key.
	IdempotencyKey string
	// Where the call runs: service tools (recall, memory, skills, workspace)
	// act on this session and run only. Agent is the llm agent whose model
	// asked for the call ("" for a tool node); Node is the node path
	// relative to the runnable.
	Session store.SessionKey
	Run     string
	Agent   string
	Node    string
	// Progress reports how far the call has come; the runtime streams each
	// report as a tool_progress event (never persisted). Set by the
	// runtime; call it only while Call runs.
	Progress func(ToolProgress)
}

// Tool runs one kind of tool. Call returns the result as JSON matching the
// tool's declared output type. Errors are *vm.Error (kind tool_error,
// timeout, unavailable, ...); a tool error inside an llm agent loop is
// returned to the model as the tool's result, not raised.
type Tool interface {
	Spec() ToolSpec
	Effect() Effect
	Call(ctx context.Context, req ToolRequest) (json.RawMessage, error)
}

// Effect classifies what re-running a tool can do: the program's own
// effect type (bytecode.Effect), so a declared tool's effect needs no
// conversion.
type Effect = bytecode.Effect

// Effects, weakest first.
const (
	ReadOnly   = bytecode.EffectReadOnly   // reads only
	Idempotent = bytecode.EffectIdempotent // repeating has no further effect
	SideEffect = bytecode.EffectSideEffect // may change the world each time (the default)
)

// Errorf returns a *vm.Error of the given kind; providers use it so that
// retry policies and the model loop can classify failures.
func Errorf(kind vm.ErrorKind, format string, args ...any) error {
	return vm.NewError(kind, format, args...)
}

// DecodeArgs decodes a tool call's JSON arguments into dst (absent
// arguments are {}); a failure is a tool_error naming the tool, which the
// model sees and may correct.
func DecodeArgs(tool string, args json.RawMessage, dst any) error {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, dst); err != nil {
		return badArgs(tool, err)
	}
	return nil
}

// DecodeArgsStrict is DecodeArgs that also refuses a member dst does not
// have, and takes blank arguments as {}.
func DecodeArgsStrict(tool string, args json.RawMessage, dst any) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return badArgs(tool, err)
	}
	return nil
}

func badArgs(tool string, err error) error {
	return Errorf(vm.KindToolError, "%s: bad arguments: %v", tool, err)
}
