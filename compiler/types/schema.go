package types

// The JSON Schema mapping (a draft 2020-12 subset that OpenAI structured
// outputs and tool parameters accept). Schemas are plain map[string]any
// trees; encoding/json marshals map keys sorted, so the bytes are
// deterministic. "required" lists fields in schema order.
//
//	string, secret   {"type": "string"}
//	int              {"type": "integer"}
//	float            {"type": "number"}
//	bool             {"type": "boolean"}
//	duration         {"type": "string", "pattern": DurationPattern}
//	"a" | "b"        {"type": "string", "enum": ["a", "b"]}
//	T?               {"anyOf": [S(T), {"type": "null"}]}
//	list<T>          {"type": "array", "items": S(T)}      (messages: items = Message)
//	map<T>           {"type": "object", "additionalProperties": S(T)}
//	record           {"type": "object", "properties": {...}, "required": [...],
//	                  "additionalProperties": false}
//	json             {}
//	null             {"type": "null"}
//
// JSONSchema marks a record field required unless it is optional or has a
// default, and writes defaults as "default". StrictJSONSchema follows
// OpenAI's strict mode instead: every field is required, a defaulted field
// is made nullable (FromJSON reads null as "use the default"), and there are
// no "default" keywords.

// DurationPattern is the JSON Schema pattern for a duration string: a Go
// duration such as "200ms", "1m30s" or "0s".
const DurationPattern = `^-?(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`

// JSONSchema returns the JSON Schema of t (see the table above).
func JSONSchema(t *Type) map[string]any { return schema(t, false, 0) }

// StrictJSONSchema returns the JSON Schema of t for OpenAI strict mode.
func StrictJSONSchema(t *Type) map[string]any { return schema(t, true, 0) }

func nullable(s map[string]any) map[string]any {
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

func schema(t *Type, strict bool, depth int) map[string]any {
	if t == nil || depth > MaxDepth {
		return map[string]any{}
	}
	switch t.kind {
	case KindNull:
		return map[string]any{"type": "null"}
	case KindString, KindSecret:
		return map[string]any{"type": "string"}
	case KindInt:
		return map[string]any{"type": "integer"}
	case KindFloat:
		return map[string]any{"type": "number"}
	case KindBool:
		return map[string]any{"type": "boolean"}
	case KindDuration:
		return map[string]any{"type": "string", "pattern": DurationPattern}
	case KindEnum:
		lits := make([]any, len(t.lits))
		for i, l := range t.lits {
			lits[i] = l
		}
		return map[string]any{"type": "string", "enum": lits}
	case KindOptional:
		return nullable(schema(t.elem, strict, depth+1))
	case KindList, KindMessages:
		return map[string]any{"type": "array", "items": schema(t.elem, strict, depth+1)}
	case KindMap:
		return map[string]any{"type": "object", "additionalProperties": schema(t.elem, strict, depth+1)}
	case KindRecord:
		props := make(map[string]any, len(t.fields))
		required := []any{}
		for _, f := range t.fields {
			s := schema(f.Type, strict, depth+1)
			switch {
			case strict:
				if f.HasDefault && !f.Type.Nullable() {
					s = nullable(s)
				}
				required = append(required, f.Name)
			default:
				if f.HasDefault {
					if d, ok := jsonAny(f.Default, 0); ok {
						s["default"] = d
					}
				} else if !f.Type.Nullable() {
					required = append(required, f.Name)
				}
			}
			props[f.Name] = s
		}
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 || strict {
			s["required"] = required
		}
		return s
	}
	return map[string]any{} // json
}

// jsonAny converts v to the Go value encoding/json would decode its canonical
// JSON into (with int64 for ints).
func jsonAny(v Value, depth int) (any, bool) {
	if depth > MaxDepth {
		return nil, false
	}
	switch v.kind {
	case ValNull:
		return nil, true
	case ValBool:
		return v.Bool(), true
	case ValInt:
		return v.Int(), true
	case ValFloat:
		return v.Float(), true
	case ValString:
		return v.str(), true
	case ValDuration:
		return v.Duration().String(), true
	case ValList:
		out := make([]any, 0, v.n)
		for _, x := range v.elems() {
			a, ok := jsonAny(x, depth+1)
			if !ok {
				return nil, false
			}
			out = append(out, a)
		}
		return out, true
	case ValMap, ValRecord:
		out := make(map[string]any, v.n)
		for i := 0; i < int(v.n); i++ {
			var k string
			var x Value
			if v.kind == ValMap {
				k, x = v.MapEntry(i)
			} else {
				k, x = v.Shape().Name(i), v.FieldAt(i)
			}
			a, ok := jsonAny(x, depth+1)
			if !ok {
				return nil, false
			}
			out[k] = a
		}
		return out, true
	}
	return nil, false
}
