package runtime

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/agentc/agentc/compiler/types"
)

// appendEvent writes e's versioned JSON encoding (EncodeEvent) to dst. It
// mirrors the struct tags of Event and its payload types member by member;
// TestEncodeMatchesEncodingJSON holds it to encoding/json's output.
func appendEvent(b []byte, e *Event) ([]byte, error) {
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, EventCodecVersion, 10)
	b = member(b, "id", e.ID)
	b = member(b, "kind", string(e.Kind))
	b = append(b, `,"time":"`...)
	b = e.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = member(b, "app", e.App)
	b = member(b, "user", e.User)
	b = member(b, "session", e.Session)
	b = optMember(b, "run", e.Run)
	b = optMember(b, "invocation", e.Invocation)
	b = optMember(b, "author", e.Author)
	b = optMember(b, "node", e.Node)
	if e.MapIndex != nil {
		b = append(b, `,"map_index":`...)
		b = strconv.AppendInt(b, int64(*e.MapIndex), 10)
	}
	b = optUint(b, "step", e.Step)
	b = optMember(b, "filter_key", e.FilterKey)
	if e.Persisted {
		b = append(b, `,"persisted":true`...)
	}
	b = optUint(b, "seq", e.Seq)
	b = optMember(b, "text", e.Text)
	var err error
	b = optMarshaled(b, &err, "resume", e.Resume, e.Resume != nil)
	b = optMarshaled(b, &err, "sampling", e.Sampling, e.Sampling != nil)
	b = optMarshaled(b, &err, "files", e.Files, len(e.Files) > 0)
	if err != nil {
		return nil, err
	}
	b = optMember(b, "runnable", e.Runnable)
	b = optMember(b, "model", e.Model)
	b = optMember(b, "finish_reason", e.FinishReason)
	b = optInt(b, "turn", e.Turn)
	if u := e.Usage; u != nil {
		b = append(b, `,"usage":{"prompt_tokens":`...)
		b = strconv.AppendInt(b, int64(u.PromptTokens), 10)
		b = append(b, `,"completion_tokens":`...)
		b = strconv.AppendInt(b, int64(u.CompletionTokens), 10)
		if u.CachedTokens != 0 {
			b = append(b, `,"cached_tokens":`...)
			b = strconv.AppendInt(b, int64(u.CachedTokens), 10)
		}
		b = append(b, '}')
	}
	if e.Cost != nil {
		if math.IsNaN(*e.Cost) || math.IsInf(*e.Cost, 0) {
			return nil, errors.New("cost is not a finite number")
		}
		b = append(b, `,"cost":`...)
		b = appendFloat(b, *e.Cost)
	}
	if len(e.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i := range e.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendToolCall(b, &e.ToolCalls[i]); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	if e.ToolCall != nil {
		b = append(b, `,"tool_call":`...)
		if b, err = appendToolCall(b, e.ToolCall); err != nil {
			return nil, err
		}
	}
	b = optMarshaled(b, &err, "progress", e.Progress, e.Progress != nil)
	b = optRaw(b, &err, "result", e.Result)
	if err != nil {
		return nil, err
	}
	if x := e.Error; x != nil {
		b = append(b, `,"error":{"kind":`...)
		b = appendString(b, x.Kind)
		b = member(b, "message", x.Message)
		b = optMember(b, "node", x.Node)
		b = append(b, '}')
	}
	if len(e.Changes) > 0 {
		b = append(b, `,"changes":[`...)
		for i, c := range e.Changes {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"field":`...)
			b = appendString(b, c.Field)
			b = member(b, "op", c.Op)
			if b, err = rawMember(b, "value", c.Value); err != nil {
				return nil, err
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = optMarshaled(b, &err, "interrupts", e.Interrupts, len(e.Interrupts) > 0)
	b = optMarshaled(b, &err, "decisions", e.Decisions, len(e.Decisions) > 0)
	b = optMarshaled(b, &err, "timers", e.Timers, len(e.Timers) > 0)
	b = optMember(b, "status", string(e.Status))
	b = optRaw(b, &err, "output", e.Output)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// encodedSize is about what appendEvent writes for e, at least its
// strings and payloads plus the member names and the time of any event,
// so that EncodeEvent's buffer is allocated once: text that escaping
// lengthens, or marshaled members (resume, files, interrupts…), may still
// grow it.
func encodedSize(e *Event) int {
	n := 256 + len(e.ID) + len(e.Kind) + len(e.App) + len(e.User) + len(e.Session) + len(e.Run) +
		len(e.Invocation) + len(e.Author) + len(e.Node) + len(e.FilterKey) + len(e.Text) + len(e.Runnable) +
		len(e.Model) + len(e.FinishReason) + len(e.Result) + len(e.Status) + len(e.Output)
	for _, c := range e.Changes {
		n += 32 + len(c.Field) + len(c.Op) + len(c.Value)
	}
	for i := range e.ToolCalls {
		n += 40 + len(e.ToolCalls[i].ID) + len(e.ToolCalls[i].Name) + len(e.ToolCalls[i].Args)
	}
	if tc := e.ToolCall; tc != nil {
		n += 56 + len(tc.ID) + len(tc.Name) + len(tc.Args)
	}
	if x := e.Error; x != nil {
		n += 48 + len(x.Kind) + len(x.Message) + len(x.Node)
	}
	if e.Usage != nil {
		n += 80
	}
	if e.Cost != nil {
		n += 32
	}
	if e.MapIndex != nil {
		n += 24
	}
	return n
}

func appendToolCall(b []byte, tc *ToolCall) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendString(b, tc.ID)
	b = member(b, "name", tc.Name)
	b = append(b, `,"args":`...)
	if tc.Args == nil {
		b = append(b, "null"...)
	} else {
		if !json.Valid(tc.Args) {
			return nil, errors.New("tool call " + tc.ID + ": args are not JSON")
		}
		b = appendCompact(b, tc.Args)
	}
	return append(b, '}'), nil
}

// memberKey appends ,"name": (name needs no escaping).
func memberKey(b []byte, name string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// member appends ,"name":"value".
func member(b []byte, name, v string) []byte {
	return appendString(memberKey(b, name), v)
}

func optMember(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	return member(b, name, v)
}

func optUint(b []byte, name string, v uint64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendUint(memberKey(b, name), v, 10)
}

func optInt(b []byte, name string, v int) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(memberKey(b, name), int64(v), 10)
}

// rawMember appends ,"name":raw after checking raw is JSON.
func rawMember(b []byte, name string, raw json.RawMessage) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, errors.New(name + " is not JSON")
	}
	return appendCompact(memberKey(b, name), raw), nil
}

// optRaw appends ,"name":raw when raw is not empty (rawMember); the first
// failure of a member stays in *err and the members after it are skipped.
func optRaw(b []byte, err *error, name string, raw json.RawMessage) []byte {
	if len(raw) == 0 || *err != nil {
		return b
	}
	b, *err = rawMember(b, name, raw)
	return b
}

// optMarshaled appends ,"name": and v through encoding/json when present
// (the rare, nested payloads: resume requests, interrupts with schemas,
// decisions); the first failure of a member stays in *err and the members
// after it are skipped. v is generic so that an absent slice is not boxed.
func optMarshaled[T any](b []byte, err *error, name string, v T, present bool) []byte {
	if !present || *err != nil {
		return b
	}
	x, e := json.Marshal(v)
	if e != nil {
		*err = e
		return b
	}
	return append(memberKey(b, name), x...)
}

// appendCompact appends valid JSON without insignificant whitespace, as
// encoding/json writes a RawMessage.
func appendCompact(b []byte, raw []byte) []byte {
	clean := true
	for _, c := range raw {
		if c == ' ' || c == '\n' || c == '\t' || c == '\r' {
			clean = false
			break
		}
	}
	if clean {
		return append(b, raw...)
	}
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString:
			b = append(b, c)
			if escaped {
				escaped = false
			} else if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
		default:
			if c == '"' {
				inString = true
			}
			b = append(b, c)
		}
	}
	return b
}

// appendString appends s as a JSON string the way encoding/json does.
func appendString(b []byte, s string) []byte { return types.AppendJSONString(b, s, true) }

// appendFloat writes a finite f as encoding/json does: the shortest
// representation, in exponent form below 1e-6 and from 1e21 on, with a
// two-digit negative exponent shortened (1e-07 → 1e-7).
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
