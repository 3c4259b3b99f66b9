package runtime

import "encoding/json"

// SchemaExample is a value that fits schema, a JSON Schema as
// types.JSONSchema writes it (an interrupt's resume type): the first enum
// member or const; for an object, every required property (all when none
// are marked); for a list, one element; for a union (anyOf/oneOf, a type
// list), its first non-null member. It is what a resume hint shows as a
// valid --value. A schema it cannot read gives null.
func SchemaExample(schema map[string]any) json.RawMessage {
	b, err := json.Marshal(example(schema, 0))
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

func example(s map[string]any, depth int) any {
	if s == nil || depth > 16 {
		return nil
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok {
			for _, a := range alts {
				if m, ok := a.(map[string]any); ok && m["type"] != "null" {
					return example(m, depth+1)
				}
			}
		}
	}
	typ, _ := s["type"].(string)
	if list, ok := s["type"].([]any); ok {
		for _, t := range list {
			if t, ok := t.(string); ok && t != "null" {
				typ = t
				break
			}
		}
	}
	switch typ {
	case "object":
		props, _ := s["properties"].(map[string]any)
		names := map[string]bool{}
		if req, ok := s["required"].([]any); ok && len(req) > 0 {
			for _, r := range req {
				if r, ok := r.(string); ok {
					names[r] = true
				}
			}
		} else {
			for k := range props {
				names[k] = true
			}
		}
		out := map[string]any{}
		for k := range names {
			p, _ := props[k].(map[string]any)
			out[k] = example(p, depth+1)
		}
		return out
	case "array":
		items, _ := s["items"].(map[string]any)
		return []any{example(items, depth+1)}
	case "string":
		return "text"
	case "integer", "number":
		return 0
	case "boolean":
		return true
	}
	return nil
}
