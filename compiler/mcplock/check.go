package mcplock

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentc/agentc/compiler/types"
)

// ProblemKind classifies a disagreement between a declared type and a
// pinned schema.
type ProblemKind uint8

// Problem kinds.
const (
	// Required: the schema requires an argument the declaration (or a
	// call) does not always give.
	Required ProblemKind = iota + 1
	// Mismatch: a value's type does not fit the schema (a type changed, an
	// argument the server no longer has).
	Mismatch
)

// Problem is one disagreement. Arg is the top-level argument (or output
// member) it concerns; Path the dotted path below the top (Arg when the
// problem is at the top).
type Problem struct {
	Kind ProblemKind
	Arg  string
	Path string
	Msg  string
}

// maxCheckDepth bounds the walk over nested types and schemas.
const maxCheckDepth = 32

// RequiredArgs are the names a schema lists as required, sorted.
func RequiredArgs(schema map[string]any) []string {
	var out []string
	if rs, ok := schema["required"].([]any); ok {
		for _, r := range rs {
			if s, ok := r.(string); ok {
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return out
}

// CheckInput compares a declared input record with a pinned input schema:
// every argument the schema requires must be a field that is always sent
// (not optional, or with a default), and every field must fit its
// property (a field the schema does not have is a mismatch when the schema
// forbids additional properties). Top-level fields whose value is null are
// not sent, so an optional field may be a property the schema does not
// require.
func CheckInput(rec *types.Type, schema map[string]any) []Problem {
	var out []Problem
	if rec == nil || rec.Kind() != types.KindRecord {
		return nil
	}
	for i := range rec.NumFields() {
		f := rec.Field(i)
		if p := CheckArg(f.Name, f.Type, schema); p != nil {
			out = append(out, *p)
		}
	}
	for _, r := range RequiredArgs(schema) {
		i := rec.FieldIndex(r)
		switch {
		case i < 0:
			out = append(out, Problem{Kind: Required, Arg: r, Path: r, Msg: fmt.Sprintf("the server requires argument %s%s, which the declared input does not have", r, describe(property(schema, r)))})
		case rec.Field(i).Type.Nullable() && !rec.Field(i).HasDefault:
			out = append(out, Problem{Kind: Required, Arg: r, Path: r, Msg: fmt.Sprintf("the server requires argument %s, which is optional in the declared input", r)})
		}
	}
	return out
}

// CheckArg checks one top-level argument of type t against the schema's
// property of that name; nil when it fits.
func CheckArg(name string, t *types.Type, schema map[string]any) *Problem {
	prop, ok := properties(schema)[name]
	if !ok {
		if closed(schema) {
			return &Problem{Kind: Mismatch, Arg: name, Path: name, Msg: fmt.Sprintf("the server has no argument %s", name)}
		}
		return nil
	}
	if t != nil && t.Kind() == types.KindOptional {
		t = t.Elem() // a null argument is not sent
	}
	if path, msg := fits(t, prop, name, 0); msg != "" {
		return &Problem{Kind: Mismatch, Arg: name, Path: path, Msg: msg}
	}
	return nil
}

// CheckOutput compares a declared output type with a pinned output schema
// (what the server returns as structured content): every value the schema
// allows must decode as t, as far as the schema says. A string output
// takes the result's text and is not checked.
func CheckOutput(t *types.Type, schema map[string]any) []Problem {
	if schema == nil || t == nil {
		return nil
	}
	if t.Kind() == types.KindOptional {
		t = t.Elem()
	}
	if t.Kind() == types.KindString {
		return nil
	}
	if path, msg := produces(schema, t, "", 0); msg != "" {
		arg, _, _ := strings.Cut(path, ".")
		return []Problem{{Kind: Mismatch, Arg: arg, Path: path, Msg: msg}}
	}
	return nil
}

func properties(schema map[string]any) map[string]any {
	p, _ := schema["properties"].(map[string]any)
	return p
}

func property(schema map[string]any, name string) any { return properties(schema)[name] }

// closed reports whether the schema forbids properties it does not list.
func closed(schema map[string]any) bool {
	ap, ok := schema["additionalProperties"]
	if !ok {
		return false
	}
	b, isBool := ap.(bool)
	return isBool && !b
}

// describe is " (TYPE)" for a property schema with a type, else "".
func describe(s any) string {
	if ts := jsonTypes(s); len(ts) > 0 {
		return " (" + strings.Join(ts, " | ") + ")"
	}
	return ""
}

// jsonTypes is the schema's "type" as a sorted list (nil: any).
func jsonTypes(s any) []string {
	m, ok := s.(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	switch t := m["type"].(type) {
	case string:
		out = []string{t}
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return out
}

// kindTypes are the JSON types a value of t is encoded as.
func kindTypes(t *types.Type) []string {
	switch t.Kind() {
	case types.KindString, types.KindSecret, types.KindDuration, types.KindEnum:
		return []string{"string"}
	case types.KindInt:
		return []string{"integer", "number"}
	case types.KindFloat:
		return []string{"number"}
	case types.KindBool:
		return []string{"boolean"}
	case types.KindNull:
		return []string{"null"}
	case types.KindList, types.KindMessages:
		return []string{"array"}
	case types.KindMap, types.KindRecord:
		return []string{"object"}
	}
	return nil // json, optional: handled by the caller
}

// overlaps reports whether a value of t is encoded as one of the JSON
// types jsonTypes.
func overlaps(t *types.Type, jsonTypes []string) bool {
	for _, k := range kindTypes(t) {
		if slices.Contains(jsonTypes, k) {
			return true
		}
	}
	return false
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// fits reports where and how a value of t would not validate against s
// (msg "" when it fits). Constructs the check does not model ($ref, not,
// if/then, formats, bounds) are taken to fit: a pinned schema narrows what
// the compiler can prove, never what a program may do.
func fits(t *types.Type, s any, path string, depth int) (string, string) {
	if t == nil || depth > maxCheckDepth {
		return "", ""
	}
	switch s := s.(type) {
	case bool:
		if !s {
			return path, fmt.Sprintf("the server accepts no value for %s", path)
		}
		return "", ""
	case map[string]any:
		if _, ok := s["$ref"]; ok {
			return "", ""
		}
		if t.Kind() == types.KindOptional {
			if !acceptsNull(s, depth) {
				return path, fmt.Sprintf("%s is %s and may be null, which the server does not accept", path, t)
			}
			return fits(t.Elem(), s, path, depth+1)
		}
		if br, ok := s["anyOf"].([]any); ok && !fitsAny(t, br, path, depth) {
			return path, fmt.Sprintf("%s is %s, which matches none of the server's alternatives", path, t)
		}
		if br, ok := s["oneOf"].([]any); ok && !fitsAny(t, br, path, depth) {
			return path, fmt.Sprintf("%s is %s, which matches none of the server's alternatives", path, t)
		}
		if br, ok := s["allOf"].([]any); ok {
			for _, b := range br {
				if p, msg := fits(t, b, path, depth+1); msg != "" {
					return p, msg
				}
			}
		}
		return fitsObject(t, s, path, depth)
	}
	return "", ""
}

func fitsAny(t *types.Type, branches []any, path string, depth int) bool {
	for _, b := range branches {
		if _, msg := fits(t, b, path, depth+1); msg == "" {
			return true
		}
	}
	return len(branches) == 0
}

func fitsObject(t *types.Type, s map[string]any, path string, depth int) (string, string) {
	if t.Kind() == types.KindJSON {
		return "", "" // any value: nothing to prove
	}
	if want := jsonTypes(s); len(want) > 0 && !overlaps(t, want) {
		return path, fmt.Sprintf("%s is %s, the server wants %s", path, t, strings.Join(want, " | "))
	}
	if enum, ok := s["enum"].([]any); ok {
		if lits := t.Literals(); t.Kind() == types.KindEnum {
			for _, l := range lits {
				if !slices.Contains(enum, any(l)) {
					return path, fmt.Sprintf("%s may be %q, which the server does not accept (one of %s)", path, l, enumText(enum))
				}
			}
		} else if t.Kind() == types.KindString {
			return path, fmt.Sprintf("%s is any string, the server accepts only %s", path, enumText(enum))
		}
	}
	if at, msg := descend(t, s, path, func(t *types.Type, s any, path string) (string, string) {
		return fits(t, s, path, depth+1)
	}, func(_ types.Field, at string) (string, string) {
		if closed(s) {
			return at, fmt.Sprintf("the server has no member %s", at)
		}
		return "", ""
	}); msg != "" {
		return at, msg
	}
	if t.Kind() == types.KindRecord {
		for _, r := range RequiredArgs(s) {
			if t.FieldIndex(r) < 0 {
				return join(path, r), fmt.Sprintf("the server requires %s, which %s does not have", join(path, r), t)
			}
		}
	}
	return "", ""
}

// produces reports where a value the schema allows would not decode as t
// (msg "" when every value that the schema describes does).
func produces(s any, t *types.Type, path string, depth int) (string, string) {
	m, ok := s.(map[string]any)
	if !ok || t == nil || depth > maxCheckDepth || t.Kind() == types.KindJSON {
		return "", ""
	}
	if _, ok := m["$ref"]; ok {
		return "", ""
	}
	if t.Kind() == types.KindOptional {
		return produces(m, t.Elem(), path, depth+1)
	}
	where := path
	if where == "" {
		where = "the output"
	}
	if have := nonNull(jsonTypes(m)); len(have) > 0 && !overlaps(t, have) {
		return path, fmt.Sprintf("%s is %s, the server returns %s", where, t, strings.Join(have, " | "))
	}
	props := properties(m)
	return descend(t, m, path, func(t *types.Type, s any, path string) (string, string) {
		return produces(s, t, path, depth+1)
	}, func(f types.Field, at string) (string, string) {
		if props != nil && !f.HasDefault && !f.Type.Nullable() {
			return at, fmt.Sprintf("%s needs member %s, which the server's output does not have", where, at)
		}
		return "", ""
	})
}

// descend pairs t's parts with the subschemas of s that describe them (a
// list's or messages' items, a map's additionalProperties, a record's
// properties) and checks each with check, stopping at the first problem;
// missing decides a record field that s has no property for.
func descend(t *types.Type, s map[string]any, path string,
	check func(t *types.Type, s any, path string) (string, string),
	missing func(f types.Field, path string) (string, string)) (string, string) {
	switch t.Kind() {
	case types.KindList, types.KindMessages:
		if items, ok := s["items"]; ok {
			return check(t.Elem(), items, path+"[]")
		}
	case types.KindMap:
		if ap, ok := s["additionalProperties"]; ok {
			return check(t.Elem(), ap, path+"{}")
		}
	case types.KindRecord:
		props := properties(s)
		for i := range t.NumFields() {
			f := t.Field(i)
			var at, msg string
			if p, ok := props[f.Name]; ok {
				at, msg = check(f.Type, p, join(path, f.Name))
			} else {
				at, msg = missing(f, join(path, f.Name))
			}
			if msg != "" {
				return at, msg
			}
		}
	}
	return "", ""
}

// nonNull drops "null" from a type list: a null member or result is
// absent, which decoding handles (optional or defaulted fields) or reports
// at run time.
func nonNull(ts []string) []string {
	var out []string
	for _, t := range ts {
		if t != "null" {
			out = append(out, t)
		}
	}
	return out
}

// acceptsNull reports whether null validates against s as far as the
// check models it: no type, a type list with null, or an anyOf/oneOf
// branch that accepts it.
func acceptsNull(s any, depth int) bool {
	m, ok := s.(map[string]any)
	if !ok {
		b, isBool := s.(bool)
		return !isBool || b
	}
	if depth > maxCheckDepth {
		return true
	}
	if _, ok := m["$ref"]; ok {
		return true
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if br, ok := m[k].([]any); ok {
			any := false
			for _, b := range br {
				if acceptsNull(b, depth+1) {
					any = true
				}
			}
			if !any {
				return false
			}
		}
	}
	ts := jsonTypes(m)
	return len(ts) == 0 || slices.Contains(ts, "null")
}

func enumText(enum []any) string {
	b, _ := json.Marshal(enum)
	return string(b)
}
