package agui

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentc/agentc/runtime"
)

// The client's document is never copied here: a state_delta already says
// per field what the step did (set, the elements appended, the map merged:
// the VM's decoded delta, spec/events.md), so its patch is a direct mapping.
// All the translator keeps is which top-level members the client's document
// has and what kind of JSON each holds (members: field → the first byte of
// its value, '[' a list, '{' a map, 'n' null), which decides between add and
// replace, and between adding elements or keys and adding the whole value.

// kindOf is the first byte of a JSON value (0 for none).
func kindOf(v json.RawMessage) byte {
	if v = bytes.TrimLeft(v, " \t\r\n"); len(v) > 0 {
		return v[0]
	}
	return 0
}

// appendPatch appends a state_delta's changes to dst as an RFC 6902 JSON
// Patch array against the client's document, whose member kinds it
// updates; nothing when nothing changes:
//
//	set     add (a member the client does not have) or replace
//	append  one add at "/field/-" per element of a list member; else one
//	        add of the whole list
//	merge   one add at "/field/key" per key, sorted, of a map member; else
//	        one add of the whole map
//
// A change whose value is not valid JSON (or, for append and merge, not a
// list or a map) is skipped. The values are copied into the patch as they
// are: no client state is decoded or encoded again.
func appendPatch(dst []byte, members map[string]byte, changes []runtime.StateChange) []byte {
	out := dst
	n := 0
	op := func(name string, value json.RawMessage, tokens ...string) {
		if n == 0 {
			out = append(out, '[')
		} else {
			out = append(out, ',')
		}
		n++
		out = append(out, `{"op":"`...)
		out = append(out, name...)
		out = append(out, `","path":"`...)
		for _, t := range tokens {
			out = append(out, '/')
			out = appendPointerToken(out, t)
		}
		out = append(out, `","value":`...)
		out = append(out, value...)
		out = append(out, '}')
	}
	for _, c := range changes {
		kind, known := members[c.Field]
		switch c.Op {
		case runtime.ChangeAppend:
			var elems []json.RawMessage
			if json.Unmarshal(c.Value, &elems) != nil {
				continue
			}
			if kind == '[' {
				for _, el := range elems {
					op("add", el, c.Field, "-")
				}
				continue
			}
			op("add", c.Value, c.Field)
		case runtime.ChangeMerge:
			var add map[string]json.RawMessage
			if json.Unmarshal(c.Value, &add) != nil || add == nil {
				continue
			}
			if kind == '{' {
				keys := make([]string, 0, len(add))
				for k := range add {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				for _, k := range keys {
					op("add", add[k], c.Field, k)
				}
				continue
			}
			op("add", c.Value, c.Field)
		default: // runtime.ChangeSet
			if !json.Valid(c.Value) {
				continue
			}
			if known {
				op("replace", c.Value, c.Field)
			} else {
				op("add", c.Value, c.Field)
			}
		}
		members[c.Field] = kindOf(c.Value)
	}
	if n == 0 {
		return dst
	}
	return append(out, ']')
}

// appendPointerToken appends one JSON Pointer reference token (RFC 6901:
// "~" → "~0", "/" → "~1") as the inside of a JSON string.
func appendPointerToken(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			// Rare: encoding/json's escaping, without the quotes.
			b, _ := json.Marshal(escapePointer(s)) // a string always marshals
			return append(dst, b[1:len(b)-1]...)
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '~':
			dst = append(dst, '~', '0')
		case '/':
			dst = append(dst, '~', '1')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// escapePointer escapes one JSON Pointer reference token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
