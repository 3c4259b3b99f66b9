// Package types is agentc's type model and its one canonical value
// representation.
//
// A *Type describes what a state field, tool input or expression may hold; a
// Value is what the VM actually holds. Both are immutable once built. Values
// have one binary codec (codec.go: state, deltas, checkpoints, the bytecode
// constant pool), one JSON mapping (json.go) and one JSON Schema mapping
// (schema.go). spec/values.md records the decisions.
package types

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind is the kind of a Type.
type Kind uint8

// The type kinds. Zero is invalid.
const (
	KindInvalid  Kind = iota
	KindNull          // the type of the null literal: assignable to every optional and to json
	KindString        // string
	KindInt           // int (int64)
	KindFloat         // float (float64)
	KindBool          // bool
	KindDuration      // duration (int64 nanoseconds)
	KindEnum          // "a" | "b": an ordered set of string literals; values are strings
	KindRecord        // { name: T, ... }: ordered fields, named or anonymous
	KindOptional      // T?: null or a T
	KindList          // list<T>
	KindMap           // map<T>: string keys
	KindJSON          // json: any JSON value (null, bool, int, float, string, list, map)
	KindMessages      // messages: a chat transcript, list<Message> under its own name
	KindSecret        // secret: a string that is never serialized, interpolated or logged
	kindCount
)

var kindNames = [kindCount]string{
	KindInvalid:  "invalid",
	KindNull:     "null",
	KindString:   "string",
	KindInt:      "int",
	KindFloat:    "float",
	KindBool:     "bool",
	KindDuration: "duration",
	KindEnum:     "enum",
	KindRecord:   "record",
	KindOptional: "optional",
	KindList:     "list",
	KindMap:      "map",
	KindJSON:     "json",
	KindMessages: "messages",
	KindSecret:   "secret",
}

func (k Kind) String() string { return EnumName(k, kindNames[:], "kind") }

// EnumName is the name of k in names (indexed by k; "" names no value),
// else what(k): the String method of a small enum.
func EnumName[K ~uint8](k K, names []string, what string) string {
	if int(k) < len(names) && names[k] != "" {
		return names[k]
	}
	return what + "(" + strconv.Itoa(int(k)) + ")"
}

// Type is an immutable type. Build types with the constructors and the
// predeclared variables below; the zero Type is invalid.
//
// Invariants: optional, list and map types have a non-nil elem; an optional's
// elem is never itself optional; enum literals are unique and there is at
// least one; record field names are unique and non-empty, and a field's
// default (when HasDefault) conforms to the field's type.
type Type struct {
	kind   Kind
	name   string   // named record or enum ("Triage"); "" for anonymous types
	elem   *Type    // optional, list, map, messages
	fields []Field  // record
	lits   []string // enum
	shape  *Shape   // record: the field names, shared by every value of the type
}

// Field is one field of a record type.
type Field struct {
	Name       string
	Type       *Type
	HasDefault bool  // an absent field takes Default (JSON input, record conversion)
	Default    Value // meaningful only when HasDefault
}

// Predeclared types. They are shared; never modify them.
var (
	NullType     = &Type{kind: KindNull}
	StringType   = &Type{kind: KindString}
	IntType      = &Type{kind: KindInt}
	FloatType    = &Type{kind: KindFloat}
	BoolType     = &Type{kind: KindBool}
	DurationType = &Type{kind: KindDuration}
	JSONType     = &Type{kind: KindJSON}
	SecretType   = &Type{kind: KindSecret}

	// MessageType is the builtin record Message {role: string, content:
	// string, name: string?, tool_call_id: string?}: one chat message.
	MessageType = mustRecord("Message", []Field{
		{Name: "role", Type: StringType},
		{Name: "content", Type: StringType},
		{Name: "name", Type: OptionalOf(StringType)},
		{Name: "tool_call_id", Type: OptionalOf(StringType)},
	})

	// MessagesType is `messages`: a list of MessageType records. It is its
	// own kind so that it prints as "messages"; it is mutually assignable
	// with list<Message>.
	MessagesType = &Type{kind: KindMessages, elem: MessageType}

	// ErrorType is the builtin record error {kind: string, message: string,
	// node: string} that a catch route receives.
	ErrorType = mustRecord("error", []Field{
		{Name: "kind", Type: StringType},
		{Name: "message", Type: StringType},
		{Name: "node", Type: StringType},
	})
)

func mustRecord(name string, fields []Field) *Type {
	t, err := NewRecord(name, fields)
	if err != nil {
		panic(err) // predeclared types only; unreachable
	}
	return t
}

// ListOf returns list<elem>. elem must not be nil.
func ListOf(elem *Type) *Type { return &Type{kind: KindList, elem: elem} }

// MapOf returns map<elem> (string keys). elem must not be nil.
func MapOf(elem *Type) *Type { return &Type{kind: KindMap, elem: elem} }

// OptionalOf returns elem?. Optional types do not nest: OptionalOf(T?) is T?.
// elem must not be nil.
func OptionalOf(elem *Type) *Type {
	if elem != nil && elem.kind == KindOptional {
		return elem
	}
	return &Type{kind: KindOptional, elem: elem}
}

// NewEnum returns the enum type whose values are the given string literals,
// in order. name is "" for an anonymous enum (`"a" | "b"`).
func NewEnum(name string, literals []string) (*Type, error) {
	if len(literals) == 0 {
		return nil, errors.New("enum has no literals")
	}
	seen := make(map[string]bool, len(literals))
	for _, l := range literals {
		if seen[l] {
			return nil, fmt.Errorf("enum literal %q repeated", l)
		}
		seen[l] = true
	}
	return &Type{kind: KindEnum, name: name, lits: append([]string(nil), literals...)}, nil
}

// NewRecord returns the record type with the given fields, in order. name is
// "" for an anonymous record. A field's default is converted to the field's
// type (Convert) and rejected if it does not conform.
func NewRecord(name string, fields []Field) (*Type, error) {
	fs := append([]Field(nil), fields...)
	names := make([]string, len(fs))
	for i := range fs {
		f := &fs[i]
		if f.Name == "" {
			return nil, fmt.Errorf("record field %d has no name", i)
		}
		if f.Type == nil || f.Type.kind == KindInvalid || f.Type.kind >= kindCount {
			return nil, fmt.Errorf("record field %q has no type", f.Name)
		}
		if f.HasDefault {
			d, err := Convert(f.Default, f.Type)
			if err != nil {
				return nil, fmt.Errorf("default of field %q: %w", f.Name, err)
			}
			f.Default = d
		} else {
			f.Default = Value{}
		}
		names[i] = f.Name
	}
	shape, err := NewShape(names...)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	return &Type{kind: KindRecord, name: name, fields: fs, shape: shape}, nil
}

// Kind returns t's kind; a nil Type has KindInvalid.
func (t *Type) Kind() Kind {
	if t == nil {
		return KindInvalid
	}
	return t.kind
}

// Name returns the declared name of a named record or enum, else "".
func (t *Type) Name() string {
	if t == nil {
		return ""
	}
	return t.name
}

// Elem returns the element type of an optional, list, map or messages type,
// else nil.
func (t *Type) Elem() *Type {
	if t == nil {
		return nil
	}
	return t.elem
}

// NumFields returns the number of fields of a record type, else 0.
func (t *Type) NumFields() int { return t.Shape().Len() }

// Field returns the i'th field of a record type. i must be in range.
func (t *Type) Field(i int) Field { return t.fields[i] }

// FieldIndex returns the index of the named field of a record type, or -1.
func (t *Type) FieldIndex(name string) int { return t.Shape().Index(name) }

// Shape returns the field-name shape shared by all values of a record type,
// or nil for other kinds.
func (t *Type) Shape() *Shape {
	if t == nil {
		return nil
	}
	return t.shape
}

// Literals returns a copy of an enum type's literals in declaration order.
func (t *Type) Literals() []string {
	if t == nil {
		return nil
	}
	return append([]string(nil), t.lits...)
}

// HasLiteral reports whether s is one of an enum type's literals.
func (t *Type) HasLiteral(s string) bool {
	if t == nil {
		return false
	}
	for _, l := range t.lits {
		if l == s {
			return true
		}
	}
	return false
}

// Nullable reports whether null is a value of t (null, optional, json).
func (t *Type) Nullable() bool {
	k := t.Kind()
	return k == KindNull || k == KindOptional || k == KindJSON
}

// String renders t in source syntax: `string`, `list<Triage>`, `Triage?`,
// `"a" | "b"`, `{ host: string, port: int = 443 }`. Named types render as
// their name; see Literal for their structure.
func (t *Type) String() string {
	var sb strings.Builder
	t.write(&sb, false)
	return sb.String()
}

// Literal renders t like String, except that a named record or enum is
// written out structurally (its fields or literals) instead of by name.
// Nested named types still render by name.
func (t *Type) Literal() string {
	var sb strings.Builder
	t.write(&sb, true)
	return sb.String()
}

func (t *Type) write(sb *strings.Builder, expand bool) {
	if t == nil {
		sb.WriteString("invalid")
		return
	}
	if t.name != "" && !expand {
		sb.WriteString(t.name)
		return
	}
	switch t.kind {
	case KindEnum:
		for i, l := range t.lits {
			if i > 0 {
				sb.WriteString(" | ")
			}
			sb.WriteString(strconv.Quote(l))
		}
	case KindRecord:
		if len(t.fields) == 0 {
			sb.WriteString("{}")
			return
		}
		sb.WriteString("{ ")
		for i, f := range t.fields {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(f.Name)
			sb.WriteString(": ")
			f.Type.write(sb, false)
			if f.HasDefault {
				sb.WriteString(" = ")
				sb.WriteString(f.Default.String())
			}
		}
		sb.WriteString(" }")
	case KindOptional:
		if e := t.elem; e != nil && e.name == "" && e.kind == KindEnum {
			sb.WriteByte('(')
			e.write(sb, false)
			sb.WriteString(")?")
			return
		}
		t.elem.write(sb, false)
		sb.WriteByte('?')
	case KindList:
		sb.WriteString("list<")
		t.elem.write(sb, false)
		sb.WriteByte('>')
	case KindMap:
		sb.WriteString("map<")
		t.elem.write(sb, false)
		sb.WriteByte('>')
	default:
		sb.WriteString(t.kind.String())
	}
}

// Identical reports whether a and b are the same type: same kind, same name,
// and the same structure (enum literals in the same order; record fields with
// the same names, identical types, default presence and equal defaults, in the
// same order). Two named types with different names are never identical.
func Identical(a, b *Type) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil || a.kind != b.kind || a.name != b.name {
		return false
	}
	switch a.kind {
	case KindEnum:
		if len(a.lits) != len(b.lits) {
			return false
		}
		for i := range a.lits {
			if a.lits[i] != b.lits[i] {
				return false
			}
		}
	case KindRecord:
		if len(a.fields) != len(b.fields) {
			return false
		}
		for i := range a.fields {
			fa, fb := a.fields[i], b.fields[i]
			if fa.Name != fb.Name || fa.HasDefault != fb.HasDefault || !Identical(fa.Type, fb.Type) {
				return false
			}
			if fa.HasDefault && !Equal(fa.Default, fb.Default) {
				return false
			}
		}
	case KindOptional, KindList, KindMap, KindMessages:
		return Identical(a.elem, b.elem)
	}
	return true
}

// AssignableTo reports whether a value of type src may be stored where dst is
// expected. Convert(v, dst) performs the matching value conversion (the
// compiler emits CONV where the types are not identical). The rules:
//
//   - identical types are assignable;
//   - null is assignable to every optional type and to json;
//   - T is assignable to U? when T (or, for an optional T, its elem) is
//     assignable to U;
//   - every type except secret (and a type containing it) is assignable to json;
//   - an enum is assignable to string, and to an enum holding all its literals;
//   - int is assignable to float (widening; Convert makes a float);
//   - list<T> to list<U> and map<T> to map<U> when T is assignable to U;
//     messages and list<Message> are mutually assignable;
//   - a record S is assignable to a record D (names ignored: structural) when
//     every field of S exists in D with an assignable type, and every field of
//     D missing from S is optional or has a default;
//   - secret is assignable only to secret; nothing else becomes a secret.
func AssignableTo(src, dst *Type) bool {
	if src == nil || dst == nil || src.kind == KindInvalid || dst.kind == KindInvalid {
		return false
	}
	if Identical(src, dst) {
		return true
	}
	switch dst.kind {
	case KindSecret:
		return false
	case KindJSON:
		return !containsSecret(src)
	case KindOptional:
		if src.kind == KindNull {
			return true
		}
		if src.kind == KindOptional {
			return AssignableTo(src.elem, dst.elem)
		}
		return AssignableTo(src, dst.elem)
	case KindString:
		return src.kind == KindEnum
	case KindFloat:
		return src.kind == KindInt
	case KindEnum:
		if src.kind != KindEnum {
			return false
		}
		for _, l := range src.lits {
			if !dst.HasLiteral(l) {
				return false
			}
		}
		return true
	case KindList:
		if src.kind == KindList || src.kind == KindMessages {
			return AssignableTo(src.elem, dst.elem)
		}
	case KindMessages:
		if src.kind == KindList || src.kind == KindMessages {
			return AssignableTo(src.elem, dst.elem)
		}
	case KindMap:
		if src.kind == KindMap {
			return AssignableTo(src.elem, dst.elem)
		}
	case KindRecord:
		if src.kind != KindRecord {
			return false
		}
		for _, f := range src.fields {
			i := dst.shape.Index(f.Name)
			if i < 0 || !AssignableTo(f.Type, dst.fields[i].Type) {
				return false
			}
		}
		for _, f := range dst.fields {
			if src.shape.Index(f.Name) < 0 && !f.HasDefault && !f.Type.Nullable() {
				return false
			}
		}
		return true
	}
	return false
}

func containsSecret(t *Type) bool {
	if t == nil {
		return false
	}
	switch t.kind {
	case KindSecret:
		return true
	case KindOptional, KindList, KindMap, KindMessages:
		return containsSecret(t.elem)
	case KindRecord:
		for _, f := range t.fields {
			if containsSecret(f.Type) {
				return true
			}
		}
	}
	return false
}

// Hash returns a stable SHA-256 of t: the hash of its canonical encoding
// (AppendType). Identical types, and only they, have equal hashes.
func Hash(t *Type) [32]byte {
	b, err := AppendType(nil, t)
	if err != nil {
		// Only a malformed Type (nil, too deep) fails to encode; hash its
		// error text so the result is still stable and distinct.
		return sha256.Sum256([]byte("invalid type: " + err.Error()))
	}
	return sha256.Sum256(b)
}
