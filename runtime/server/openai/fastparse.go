package openai

import (
	"encoding/json"

	"github.com/agentc/agentc/internal/jsonscan"
)

// decode reads a request body into req: in one pass of a scanner when the
// body has the usual shape (decodeFast), else with encoding/json, which
// defines what a body means and words its errors.
func decode(body []byte, req *chatRequest) error {
	if decodeFast(body, req) {
		return nil
	}
	*req = chatRequest{}
	return json.Unmarshal(body, req)
}

// Members of a request body: what encoding/json would match to a field of
// chatRequest (case-insensitively), and the bit of each decodeFast reads.
var (
	requestKeys = []string{"model", "messages", "stream", "stream_options", "n", "tools", "tool_choice", "user",
		"temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed", "response_format"}
	messageKeys = []string{"role", "content", "tool_call_id"}
	optionKeys  = []string{"include_usage"}
)

// decodeFast reads a body of the usual shape — model, messages of plain
// string contents, stream, stream_options, user, and members no field
// takes — as encoding/json would, into req, which it may leave partly set
// when it returns false: for a body that is not valid JSON, a member of
// another kind or shape (null, a number, the sampling parameters, tools,
// content parts, a string with escapes or invalid UTF-8), a key
// encoding/json would fold or unescape to a field's name, or a member
// given twice (encoding/json merges some of those). The fuzz test holds it
// to encoding/json.
func decodeFast(body []byte, req *chatRequest) bool {
	if !json.Valid(body) {
		return false
	}
	s := jsonscan.New(body)
	if !s.Object() {
		return false
	}
	var seen uint8
	once := func(bit uint8) bool {
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		return true
	}
	for {
		key, val, ok := s.Member()
		if !ok {
			return true
		}
		switch string(key) { // no allocation: compared in place
		case "model":
			v, ok := jsonscan.String(val)
			if !ok || !once(1) {
				return false
			}
			req.model = v
			req.Model = &req.model
		case "messages":
			if !once(2) || !req.decodeMessages(val) {
				return false
			}
		case "stream":
			if !once(4) {
				return false
			}
			switch string(val) {
			case "true":
				req.Stream = true
			case "false":
				req.Stream = false
			default:
				return false
			}
		case "stream_options":
			if !once(8) || !req.opts.decode(val) {
				return false
			}
			req.StreamOptions = &req.opts
		case "user":
			v, ok := jsonscan.String(val)
			if !ok || !once(16) {
				return false
			}
			req.User = v
		default:
			if !jsonscan.PlainKey(key, requestKeys) {
				return false
			}
		}
	}
}

// decodeMessages reads the messages array, each a role, a plain string
// content and a tool_call_id (decodeFast).
func (req *chatRequest) decodeMessages(val []byte) bool {
	a := jsonscan.New(val)
	if !a.Array() {
		return false
	}
	if n := jsonscan.CountElems(val); n <= len(req.msgs) {
		req.Messages = req.msgs[:0:n]
	} else {
		req.Messages = make([]chatMessage, 0, n)
	}
	for {
		raw, ok := a.Elem()
		if !ok {
			return true
		}
		var m chatMessage
		if !m.decode(raw) {
			return false
		}
		req.Messages = append(req.Messages, m)
	}
}

func (m *chatMessage) decode(raw []byte) bool {
	s := jsonscan.New(raw)
	if !s.Object() {
		return false
	}
	var seen uint8
	for {
		key, val, ok := s.Member()
		if !ok {
			return true
		}
		var bit uint8
		switch string(key) {
		case "role":
			bit = 1
			role, ok := knownRole(val)
			if !ok {
				if role, ok = jsonscan.String(val); !ok {
					return false
				}
			}
			m.Role = role
		case "content":
			bit = 2
			v, ok := jsonscan.String(val)
			if !ok {
				return false
			}
			m.Content = content{str: v, plain: true}
		case "tool_call_id":
			bit = 4
			v, ok := jsonscan.String(val)
			if !ok {
				return false
			}
			m.ToolCallID = v
		default:
			if !jsonscan.PlainKey(key, messageKeys) {
				return false
			}
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
	}
}

// knownRole is a role literal the protocol names, without a string of its
// own per request.
func knownRole(lit []byte) (string, bool) {
	for _, r := range [...]string{"user", "assistant", "system", "tool", "developer"} {
		if len(lit) == len(r)+2 && string(lit[1:len(lit)-1]) == r && lit[0] == '"' && lit[len(lit)-1] == '"' {
			return r, true
		}
	}
	return "", false
}

// decode reads stream_options, {"include_usage": true|false} (decodeFast).
func (o *streamOptions) decode(val []byte) bool {
	s := jsonscan.New(val)
	if !s.Object() {
		return false
	}
	seen := false
	for {
		key, v, ok := s.Member()
		if !ok {
			return true
		}
		if string(key) != "include_usage" {
			if !jsonscan.PlainKey(key, optionKeys) {
				return false
			}
			continue
		}
		if seen {
			return false
		}
		seen = true
		switch string(v) {
		case "true":
			o.IncludeUsage = true
		case "false":
			o.IncludeUsage = false
		default:
			return false
		}
	}
}
