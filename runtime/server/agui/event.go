package agui

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/agentc/agentc/compiler/types"
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
	return types.AppendJSONString(make([]byte, 0, len(s)+len(s)/8+8), s, true) // as encoding/json writes it
}

// appendJSON appends e as json.Marshal(e) writes it, byte for byte (the
// members in declaration order, empty optional ones omitted, strings
// HTML-escaped, raw members compacted), without its reflection and
// allocations: a stream encodes every event into one reused buffer. An
// invalid raw member is an error, as it is for json.Marshal.
func (e *Event) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"type":`...)
	b = types.AppendJSONString(b, e.Type, true)
	if e.Timestamp != 0 {
		b = append(b, `,"timestamp":`...)
		b = strconv.AppendInt(b, e.Timestamp, 10)
	}
	str := func(b []byte, name, v string) []byte {
		if v == "" {
			return b
		}
		b = append(append(append(b, ',', '"'), name...), '"', ':')
		return types.AppendJSONString(b, v, true)
	}
	var err error
	raw := func(b []byte, name string, v json.RawMessage) []byte {
		if len(v) == 0 || err != nil {
			return b
		}
		b = append(append(append(b, ',', '"'), name...), '"', ':')
		b, err = appendRaw(b, v)
		return b
	}
	b = str(b, "threadId", e.ThreadID)
	b = str(b, "runId", e.RunID)
	b = str(b, "stepName", e.StepName)
	b = str(b, "messageId", e.MessageID)
	b = str(b, "role", e.Role)
	b = str(b, "toolCallId", e.ToolCallID)
	b = str(b, "toolCallName", e.ToolCallName)
	b = str(b, "parentMessageId", e.ParentMessageID)
	b = raw(b, "delta", e.Delta)
	b = str(b, "content", e.Content)
	b = raw(b, "snapshot", e.Snapshot)
	b = str(b, "name", e.Name)
	b = raw(b, "value", e.Value)
	b = raw(b, "result", e.Result)
	if err != nil {
		return b, err
	}
	if o := e.Outcome; o != nil && len(o.Interrupts) == 0 {
		// Every run's end: {"type":…}, the interrupts omitted.
		b = append(b, `,"outcome":{"type":`...)
		b = append(types.AppendJSONString(b, o.Type, true), '}')
	} else if o != nil {
		j, err := json.Marshal(o) // a pause's: as a member is
		if err != nil {
			return b, err
		}
		b = append(append(b, `,"outcome":`...), j...)
	}
	b = str(b, "message", e.Message)
	b = str(b, "code", e.Code)
	return append(b, '}'), nil
}

// appendRaw appends a raw JSON member as json.Marshal does (compacted,
// with <, >, & and U+2028/U+2029 escaped); an error when it is not valid
// JSON. Raw members are compact and plain almost always: those are checked
// and copied, the others go through encoding/json.
func appendRaw(b []byte, v json.RawMessage) ([]byte, error) {
	if plainString(v) || plainRaw(v) && json.Valid(v) {
		return append(b, v...), nil
	}
	q, err := json.Marshal(v)
	return append(b, q...), err
}

// isNull reports whether raw is empty or the JSON literal null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// plainRaw reports whether v, if it is valid JSON, is as json.Marshal
// writes it: no whitespace outside strings, nothing HTML-escaped.
func plainRaw(v []byte) bool {
	in := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '<' || c == '>' || c == '&' || c == 0xE2: // 0xE2: U+2028, U+2029 start with it
			return false
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			return false
		}
	}
	return true
}

// plainString reports whether v is one valid JSON string as json.Marshal
// writes it (a text delta's), checked without encoding/json's scanner.
func plainString(v []byte) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	for i := 1; i < len(v)-1; i++ {
		switch c := v[i]; {
		case c < 0x20 || c == '"' || c == '<' || c == '>' || c == '&' || c == 0xE2:
			return false
		case c == '\\':
			i++
			if i == len(v)-1 {
				return false
			}
			switch v[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(v)-1 {
					return false
				}
				for _, h := range v[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				i += 4
			default:
				return false
			}
		}
	}
	return true
}
