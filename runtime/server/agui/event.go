package agui

import (
	"bytes"
	"encoding/json"
)

// Event types of AG-UI 1.0 that this adapter emits.
const (
	RunStarted         = "RUN_STARTED"
	RunFinished        = "RUN_FINISHED"
	RunError           = "RUN_ERROR"
	StepStarted        = "STEP_STARTED"
	StepFinished       = "STEP_FINISHED"
	TextMessageStart   = "TEXT_MESSAGE_START"
	TextMessageContent = "TEXT_MESSAGE_CONTENT"
	TextMessageEnd     = "TEXT_MESSAGE_END"
	ToolCallStart      = "TOOL_CALL_START"
	ToolCallArgs       = "TOOL_CALL_ARGS"
	ToolCallEnd        = "TOOL_CALL_END"
	ToolCallResult     = "TOOL_CALL_RESULT"
	StateSnapshot      = "STATE_SNAPSHOT"
	StateDelta         = "STATE_DELTA"
	Custom             = "CUSTOM"
)

// Event is one AG-UI event as it goes on the wire. Every optional member is
// omitted when empty: AG-UI clients reject a JSON null in an optional field.
// Delta holds a JSON string (text and tool-call argument fragments) or a
// JSON Patch array (STATE_DELTA); Snapshot, Value and Result hold any JSON
// but null.
type Event struct {
	Type            string          `json:"type"`
	Timestamp       int64           `json:"timestamp,omitempty"` // Unix milliseconds
	ThreadID        string          `json:"threadId,omitempty"`
	RunID           string          `json:"runId,omitempty"`
	StepName        string          `json:"stepName,omitempty"`
	MessageID       string          `json:"messageId,omitempty"`
	Role            string          `json:"role,omitempty"`
	ToolCallID      string          `json:"toolCallId,omitempty"`
	ToolCallName    string          `json:"toolCallName,omitempty"`
	ParentMessageID string          `json:"parentMessageId,omitempty"`
	Delta           json.RawMessage `json:"delta,omitempty"`
	Content         string          `json:"content,omitempty"`
	Snapshot        json.RawMessage `json:"snapshot,omitempty"`
	Name            string          `json:"name,omitempty"`
	Value           json.RawMessage `json:"value,omitempty"`
	Result          json.RawMessage `json:"result,omitempty"`
	Outcome         *Outcome        `json:"outcome,omitempty"`
	Message         string          `json:"message,omitempty"`
	Code            string          `json:"code,omitempty"`
}

// Outcome is RUN_FINISHED's outcome: "success", "interrupt" (with at least
// one interrupt) or "cancelled".
type Outcome struct {
	Type       string      `json:"type"`
	Interrupts []Interrupt `json:"interrupts,omitempty"`
}

// Interrupt is one thing a paused run waits for. ID is what the next
// request's resume entry names.
type Interrupt struct {
	ID             string         `json:"id"`
	Reason         string         `json:"reason"`
	Message        string         `json:"message,omitempty"`
	ToolCallID     string         `json:"toolCallId,omitempty"`
	ResponseSchema map[string]any `json:"responseSchema,omitempty"`
	Metadata       map[string]any `json:"metadata,omitempty"`
}

// jsonString returns s as a JSON string.
func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}

// isNull reports whether raw is empty or the JSON literal null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}
