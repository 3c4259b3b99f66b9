package openai

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
)

// The sampling parameters of a request (spec/serve.md, "Sampling
// parameters"): checked against OpenAI's ranges here, carried to the run's
// model calls in runtime.Invocation.Sampling. response_format is checked
// against the served runnable's output type; the answer's form is the
// runnable's own (its llm nodes already ask for their `into` type's schema).

// maxStop is how many stop sequences a request may give.
const maxStop = 4

// checkSampling checks req's sampling parameters and returns them (nil when the
// request sets none).
func (req *chatRequest) checkSampling() (*runtime.Sampling, *badRequest) {
	var s runtime.Sampling // on the stack: most requests set none
	set := false
	if t := req.Temperature; t != nil {
		if bad := inRange("temperature", *t, 0, 2); bad != nil {
			return nil, bad
		}
		s.Temperature, set = t, true
	}
	if p := req.TopP; p != nil {
		if bad := inRange("top_p", *p, 0, 1); bad != nil {
			return nil, bad
		}
		s.TopP, set = p, true
	}
	for _, mt := range []struct {
		name string
		v    *int64
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if mt.v == nil {
			continue
		}
		if *mt.v < 1 {
			return nil, &badRequest{param: mt.name, code: "integer_below_min_value",
				msg: fmt.Sprintf("Invalid '%s': integer below minimum value. Expected a value >= 1, but got %d instead.", mt.name, *mt.v)}
		}
		if *mt.v > 1<<31-1 {
			return nil, &badRequest{param: mt.name, code: "integer_above_max_value",
				msg: fmt.Sprintf("Invalid '%s': integer above maximum value. Expected a value <= %d, but got %d instead.", mt.name, 1<<31-1, *mt.v)}
		}
		if s.MaxTokens > 0 && int64(s.MaxTokens) != *mt.v {
			return nil, invalid("max_completion_tokens", "Invalid 'max_completion_tokens': 'max_tokens' is %d; set one of them, or both to the same value", s.MaxTokens)
		}
		s.MaxTokens, set = int(*mt.v), true
	}
	stop, bad := parseStop(req.Stop)
	if bad != nil {
		return nil, bad
	}
	if len(stop) > 0 {
		s.Stop, set = stop, true
	}
	if req.Seed != nil {
		s.Seed, set = req.Seed, true
	}
	if !set {
		return nil, nil
	}
	out := s
	return &out, nil
}

// inRange checks a decimal parameter against [lo, hi].
func inRange(name string, v, lo, hi float64) *badRequest {
	num := strconv.FormatFloat(v, 'g', -1, 64)
	switch {
	case v < lo:
		return &badRequest{param: name, code: "decimal_below_min_value",
			msg: fmt.Sprintf("Invalid '%s': decimal below minimum value. Expected a value >= %g, but got %s instead.", name, lo, num)}
	case v > hi:
		return &badRequest{param: name, code: "decimal_above_max_value",
			msg: fmt.Sprintf("Invalid '%s': decimal above maximum value. Expected a value <= %g, but got %s instead.", name, hi, num)}
	}
	return nil
}

// parseStop reads `stop`: null, a string, or an array of up to four
// strings.
func parseStop(raw json.RawMessage) ([]string, *badRequest) {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, &badRequest{param: "stop", code: "invalid_type", msg: "Invalid type for 'stop': expected a string or an array of strings"}
	}
	if len(many) > maxStop {
		return nil, &badRequest{param: "stop", code: "array_above_max_length",
			msg: fmt.Sprintf("Invalid 'stop': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", maxStop, len(many))}
	}
	for i, s := range many {
		if s == "" {
			return nil, invalid(fmt.Sprintf("stop[%d]", i), "Invalid 'stop[%d]': empty string", i)
		}
	}
	return many, nil
}

// responseFormat is the request's response_format.
type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

// checkResponseFormat checks response_format against the answer the
// runnable gives: out is its output type (nil: it has no output field, its
// answer is text). A text answer (a string output) takes "text"; any other
// output is sent as JSON and takes "json_object", or "json_schema" with a
// schema its values fit; a json output takes all three.
func checkResponseFormat(raw json.RawMessage, out *types.Type) *badRequest {
	if t := strings.TrimSpace(string(raw)); t == "" || t == "null" {
		return nil
	}
	var rf responseFormat
	if err := json.Unmarshal(raw, &rf); err != nil {
		return &badRequest{param: "response_format", code: "invalid_type", msg: "Invalid 'response_format': expected an object with a 'type': " + err.Error()}
	}
	base := out
	if base != nil && base.Kind() == types.KindOptional {
		base = base.Elem()
	}
	anyJSON := base != nil && base.Kind() == types.KindJSON
	text := base == nil || base.Kind() == types.KindString
	what := "text"
	if base != nil {
		what = base.String()
	}
	switch rf.Type {
	case "":
		return &badRequest{param: "response_format.type", code: "missing_required_parameter", msg: "Missing required parameter: 'response_format.type'"}
	case "text":
		if text || anyJSON {
			return nil
		}
		return &badRequest{param: "response_format", code: "unsupported_value",
			msg: fmt.Sprintf("Invalid 'response_format': the served workflow answers %s as JSON; send type 'json_object' or 'json_schema', or omit response_format", what)}
	case "json_object", "json_schema":
		if text {
			return &badRequest{param: "response_format", code: "unsupported_value",
				msg: fmt.Sprintf("Invalid 'response_format': the served workflow answers text (%s); send type 'text' or omit response_format", what)}
		}
		if rf.Type == "json_object" || anyJSON {
			return nil
		}
		if rf.JSONSchema == nil {
			return &badRequest{param: "response_format.json_schema", code: "missing_required_parameter", msg: "Missing required parameter: 'response_format.json_schema'"}
		}
		if s := strings.TrimSpace(string(rf.JSONSchema.Schema)); s == "" || s == "null" {
			return nil // no schema: any JSON
		}
		var schema any
		if err := json.Unmarshal(rf.JSONSchema.Schema, &schema); err != nil {
			return &badRequest{param: "response_format.json_schema.schema", code: "invalid_type", msg: "Invalid 'response_format.json_schema.schema': " + err.Error()}
		}
		if err := fits(out, schema, "schema"); err != "" {
			return &badRequest{param: "response_format", code: "unsupported_value",
				msg: fmt.Sprintf("Invalid 'response_format': the served workflow's answer (%s) does not fit the given schema: %s", what, err)}
		}
		return nil
	}
	return invalid("response_format.type", "Invalid value for 'response_format.type': %q; supported: text, json_object, json_schema", rf.Type)
}

// fits reports, as a message (empty: it fits), whether every value of t
// satisfies schema, by a structural check: the JSON type, an object's
// required properties and additionalProperties false, array items, enum
// members. Keywords it does not know (anyOf, pattern, minimum, …) are not
// checked.
func fits(t *types.Type, schema any, at string) string {
	s, ok := schema.(map[string]any)
	if !ok {
		if b, isBool := schema.(bool); isBool && !b {
			return at + " accepts no value"
		}
		return ""
	}
	if t.Kind() == types.KindOptional {
		if r := fits(t.Elem(), s, at); r != "" {
			return r
		}
		if !allowsType(s["type"], "null") {
			return at + " does not allow null, and the value may be null"
		}
		return ""
	}
	if t.Kind() == types.KindJSON {
		return ""
	}
	jt := jsonType(t)
	if !allowsType(s["type"], jt) {
		return fmt.Sprintf("%s has type %v, the value is %s (%s)", at, s["type"], jt, t)
	}
	switch t.Kind() {
	case types.KindEnum:
		if e, ok := s["enum"].([]any); ok {
			for _, l := range t.Literals() {
				if !slices.Contains(e, any(l)) {
					return fmt.Sprintf("%s.enum lacks %q", at, l)
				}
			}
		}
	case types.KindList, types.KindMessages:
		if items, ok := s["items"]; ok {
			return fits(t.Elem(), items, at+".items")
		}
	case types.KindMap:
		if req, _ := s["required"].([]any); len(req) > 0 {
			return fmt.Sprintf("%s requires %v, and a map may lack them", at, req)
		}
		if ap, ok := s["additionalProperties"]; ok {
			return fits(t.Elem(), ap, at+".additionalProperties")
		}
	case types.KindRecord:
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			name, _ := r.(string)
			if t.FieldIndex(name) < 0 {
				return fmt.Sprintf("%s requires property %q, which %s does not have", at, name, t)
			}
		}
		closed := s["additionalProperties"] == false
		for i := range t.NumFields() {
			f := t.Field(i)
			ps, ok := props[f.Name]
			if !ok {
				if closed {
					return fmt.Sprintf("%s does not allow property %q (additionalProperties is false)", at, f.Name)
				}
				if ap, ok := s["additionalProperties"]; ok {
					ps = ap
				} else {
					continue
				}
			}
			if r := fits(f.Type, ps, at+".properties."+f.Name); r != "" {
				return r
			}
		}
	}
	return ""
}

// jsonType is the JSON Schema type of t's values (t is not optional nor
// json).
func jsonType(t *types.Type) string {
	switch t.Kind() {
	case types.KindNull:
		return "null"
	case types.KindInt:
		return "integer"
	case types.KindFloat:
		return "number"
	case types.KindBool:
		return "boolean"
	case types.KindList, types.KindMessages:
		return "array"
	case types.KindMap, types.KindRecord:
		return "object"
	}
	return "string"
}

// allowsType reports whether a schema's "type" (absent, a name or a list of
// names) allows values of JSON type jt; an integer is a number.
func allowsType(st any, jt string) bool {
	ok := func(name any) bool { return name == jt || jt == "integer" && name == "number" }
	switch v := st.(type) {
	case nil:
		return true
	case string:
		return ok(v)
	case []any:
		return slices.ContainsFunc(v, ok)
	}
	return true
}
