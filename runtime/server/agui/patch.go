package agui

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentc/agentc/runtime"
)

// applyChanges applies a state_delta's changes to state (the run's state as
// the client knows it: top-level fields to their JSON) and returns the same
// changes as RFC 6902 JSON Patch operations against the client's copy.
//
// The changes are already per field, so the patch is a direct mapping, not a
// diff of two documents: set → add (absent field) or replace; append → one
// add at "/field/-" per element (or add of the whole list when the field is
// not known yet); merge → one add per key at "/field/key" (or add of the
// whole map). A change whose value is not valid JSON is skipped.
func applyChanges(state map[string]json.RawMessage, changes []runtime.StateChange) []PatchOp {
	var ops []PatchOp
	for _, c := range changes {
		if !json.Valid(c.Value) {
			continue
		}
		path := "/" + escapePointer(c.Field)
		cur, known := state[c.Field]
		switch c.Op {
		case "append":
			var elems []json.RawMessage
			if json.Unmarshal(c.Value, &elems) != nil {
				continue
			}
			if known {
				if list, ok := appendJSON(cur, elems); ok {
					for _, el := range elems {
						ops = append(ops, PatchOp{Op: "add", Path: path + "/-", Value: el})
					}
					state[c.Field] = list
					continue
				}
			}
			ops = append(ops, PatchOp{Op: "add", Path: path, Value: c.Value})
			state[c.Field] = c.Value
		case "merge":
			var add map[string]json.RawMessage
			var obj map[string]json.RawMessage
			if json.Unmarshal(c.Value, &add) != nil || add == nil {
				continue
			}
			if known && json.Unmarshal(cur, &obj) == nil && obj != nil {
				keys := make([]string, 0, len(add))
				for k := range add {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				for _, k := range keys {
					ops = append(ops, PatchOp{Op: "add", Path: path + "/" + escapePointer(k), Value: add[k]})
					obj[k] = add[k]
				}
				state[c.Field] = mustJSON(obj)
				continue
			}
			ops = append(ops, PatchOp{Op: "add", Path: path, Value: c.Value})
			state[c.Field] = c.Value
		default: // "set"
			op := "add"
			if known {
				op = "replace"
			}
			ops = append(ops, PatchOp{Op: op, Path: path, Value: c.Value})
			state[c.Field] = c.Value
		}
	}
	return ops
}

// appendJSON returns the JSON array list with elems added at its end, by
// splicing: the list the client holds is not decoded and encoded again per
// delta (appends are the common delta, and lists the large fields). ok is
// false when list is not an array.
func appendJSON(list json.RawMessage, elems []json.RawMessage) (json.RawMessage, bool) {
	l := bytes.TrimSpace(list)
	if len(l) < 2 || l[0] != '[' || l[len(l)-1] != ']' {
		return nil, false
	}
	inner := bytes.TrimSpace(l[1 : len(l)-1])
	out := make([]byte, 0, len(l)+len(elems)*16)
	out = append(append(out, '['), inner...)
	for i, el := range elems {
		if i > 0 || len(inner) > 0 {
			out = append(out, ',')
		}
		out = append(out, el...)
	}
	return append(out, ']'), true
}

// escapePointer escapes one JSON Pointer reference token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// mustJSON marshals values that came from valid JSON.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}
