package types

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"
)

// ValueKind is the dynamic kind of a Value.
type ValueKind uint8

// The value kinds. The zero Value is null. Enum values are strings; json
// values are made of null, bool, int, float, string, list and map.
const (
	ValNull     ValueKind = iota
	ValBool               // n: 0 or 1
	ValInt                // n: int64 bits
	ValFloat              // n: float64 bits (never -0; NaN has one bit pattern)
	ValString             // p, n: string data and length
	ValDuration           // n: int64 nanoseconds
	ValList               // p, n: first element and length of an immutable []Value
	ValMap                // p, n: [k0 v0 k1 v1 ...] with keys strictly ascending; n entries
	ValRecord             // p, n: [shape-header f0 f1 ...]; n fields in shape order
	ValSecret             // like ValString, but never serialized, interpolated or printed
	valShape              // internal: the header element of a record's backing array
	valKindCount
)

var valueKindNames = [valKindCount]string{
	ValNull:     "null",
	ValBool:     "bool",
	ValInt:      "int",
	ValFloat:    "float",
	ValString:   "string",
	ValDuration: "duration",
	ValList:     "list",
	ValMap:      "map",
	ValRecord:   "record",
	ValSecret:   "secret",
	valShape:    "shape",
}

func (k ValueKind) String() string { return EnumName(k, valueKindNames[:], "valuekind") }

// Value is an immutable tagged value, 24 bytes, passed by value.
//
// Scalars live inline (no allocation); strings point at their bytes; lists,
// maps and records point at one backing array each, which is never modified
// after construction. Every operation that "changes" a list, map or record
// (ListAppend, MapSet, MapMerge, WithField) builds a new value and leaves the
// old one intact, so values may be shared freely between goroutines,
// snapshots and checkpoints. Comparisons (Equal, Compare) never allocate.
type Value struct {
	kind ValueKind
	n    uint64
	p    unsafe.Pointer
}

// Shape is the ordered list of field names shared by record values of one
// record type. A Shape is immutable.
type Shape struct {
	names []string
}

// NewShape returns the shape with the given field names, which must be unique.
func NewShape(names ...string) (*Shape, error) {
	for i, n := range names {
		for _, m := range names[:i] {
			if n == m {
				return nil, fmt.Errorf("field %q repeated", n)
			}
		}
	}
	return &Shape{names: append([]string(nil), names...)}, nil
}

// Len returns the number of fields.
func (s *Shape) Len() int {
	if s == nil {
		return 0
	}
	return len(s.names)
}

// Name returns the i'th field name.
func (s *Shape) Name(i int) string { return s.names[i] }

// Index returns the position of the named field, or -1.
func (s *Shape) Index(name string) int {
	if s == nil {
		return -1
	}
	for i, n := range s.names {
		if n == name {
			return i
		}
	}
	return -1
}

func sameShape(a, b *Shape) bool {
	return a == b || slices.Equal(a.names, b.names)
}

// Constructors.

// MakeBool returns a bool value.
func MakeBool(b bool) Value {
	if b {
		return Value{kind: ValBool, n: 1}
	}
	return Value{kind: ValBool}
}

// MakeInt returns an int value.
func MakeInt(i int64) Value { return Value{kind: ValInt, n: uint64(i)} }

// canonicalNaN is the only NaN bit pattern a Value holds.
const canonicalNaN = 0x7ff8000000000001

// MakeFloat returns a float value. -0 becomes +0 and every NaN becomes one
// canonical NaN, so that equal floats have equal encodings.
func MakeFloat(f float64) Value {
	switch {
	case f == 0:
		return Value{kind: ValFloat}
	case f != f:
		return Value{kind: ValFloat, n: canonicalNaN}
	}
	return Value{kind: ValFloat, n: math.Float64bits(f)}
}

// MakeString returns a string value. The string's bytes need not be UTF-8.
func MakeString(s string) Value {
	return Value{kind: ValString, n: uint64(len(s)), p: unsafe.Pointer(unsafe.StringData(s))}
}

// MakeDuration returns a duration value.
func MakeDuration(d time.Duration) Value { return Value{kind: ValDuration, n: uint64(d)} }

// MakeSecret returns a secret value. Secrets cannot be encoded (AppendValue),
// rendered as JSON or interpolated; String prints them as <secret>.
func MakeSecret(s string) Value {
	return Value{kind: ValSecret, n: uint64(len(s)), p: unsafe.Pointer(unsafe.StringData(s))}
}

// MakeList returns a list value holding elems. MakeList takes ownership of
// elems: the caller must not modify the slice afterwards.
func MakeList(elems []Value) Value {
	if len(elems) == 0 {
		return Value{kind: ValList}
	}
	return Value{kind: ValList, n: uint64(len(elems)), p: unsafe.Pointer(unsafe.SliceData(elems))}
}

// MakeMap returns a map value with the given entries (keys[i] → vals[i]), in
// ascending key order whatever the argument order. Keys must be unique. The
// arguments are copied.
func MakeMap(keys []string, vals []Value) (Value, error) {
	if len(keys) != len(vals) {
		return Value{}, fmt.Errorf("map: %d keys for %d values", len(keys), len(vals))
	}
	if len(keys) == 0 {
		return Value{kind: ValMap}, nil
	}
	kv := make([]Value, 2*len(keys))
	for i, k := range keys {
		kv[2*i] = MakeString(k)
		kv[2*i+1] = vals[i]
	}
	if !sortedKeys(kv) {
		idx := make([]int, len(keys))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
		for j, i := range idx {
			kv[2*j] = MakeString(keys[i])
			kv[2*j+1] = vals[i]
		}
		for j := 1; j < len(idx); j++ {
			if kv[2*j].str() == kv[2*j-2].str() {
				return Value{}, fmt.Errorf("key %q repeated", kv[2*j].str())
			}
		}
	}
	return Value{kind: ValMap, n: uint64(len(keys)), p: unsafe.Pointer(unsafe.SliceData(kv))}, nil
}

// sortedKeys reports whether the keys of kv are strictly ascending.
func sortedKeys(kv []Value) bool {
	for i := 2; i < len(kv); i += 2 {
		if kv[i-2].str() >= kv[i].str() {
			return false
		}
	}
	return true
}

// MakeRecord returns a record value with the given shape and field values (in
// shape order). vals is copied.
func MakeRecord(shape *Shape, vals []Value) (Value, error) {
	if shape == nil {
		return Value{}, errors.New("record: nil shape")
	}
	if len(vals) != len(shape.names) {
		return Value{}, fmt.Errorf("record: %d values for %d fields", len(vals), len(shape.names))
	}
	rv := make([]Value, len(vals)+1)
	rv[0] = Value{kind: valShape, p: unsafe.Pointer(shape)}
	copy(rv[1:], vals)
	return Value{kind: ValRecord, n: uint64(len(vals)), p: unsafe.Pointer(unsafe.SliceData(rv))}, nil
}

// Accessors. Each returns the zero of its result type when v has another kind.

// Kind returns v's dynamic kind.
func (v Value) Kind() ValueKind { return v.kind }

// IsNull reports whether v is null.
func (v Value) IsNull() bool { return v.kind == ValNull }

// Bool returns a bool value's bool.
func (v Value) Bool() bool { return v.kind == ValBool && v.n != 0 }

// Int returns an int value's int64.
func (v Value) Int() int64 {
	if v.kind != ValInt {
		return 0
	}
	return int64(v.n)
}

// Float returns a float value's float64.
func (v Value) Float() float64 {
	if v.kind != ValFloat {
		return 0
	}
	return math.Float64frombits(v.n)
}

// Duration returns a duration value's duration.
func (v Value) Duration() time.Duration {
	if v.kind != ValDuration {
		return 0
	}
	return time.Duration(v.n)
}

// Str returns a string value's string (never a secret's: see SecretText).
func (v Value) Str() string {
	if v.kind != ValString {
		return ""
	}
	return v.str()
}

func (v Value) str() string { return unsafe.String((*byte)(v.p), int(v.n)) }

// SecretText returns a secret value's plain text. Call it only where the
// secret is handed to its consumer (a provider, a tool header).
func (v Value) SecretText() string {
	if v.kind != ValSecret {
		return ""
	}
	return v.str()
}

// Len returns the number of elements of a list, entries of a map, fields of a
// record, or Unicode code points of a string; -1 for other kinds.
func (v Value) Len() int {
	switch v.kind {
	case ValList, ValMap, ValRecord:
		return int(v.n)
	case ValString:
		return utf8.RuneCountInString(v.str())
	}
	return -1
}

func (v Value) elems() []Value {
	if v.kind != ValList || v.n == 0 {
		return nil
	}
	return unsafe.Slice((*Value)(v.p), int(v.n))
}

func (v Value) entries() []Value {
	if v.kind != ValMap || v.n == 0 {
		return nil
	}
	return unsafe.Slice((*Value)(v.p), 2*int(v.n))
}

func (v Value) recordArray() []Value {
	if v.kind != ValRecord {
		return nil
	}
	return unsafe.Slice((*Value)(v.p), int(v.n)+1)
}

// Elem returns the i'th element of a list; null if i is out of range.
func (v Value) Elem(i int) Value {
	if v.kind != ValList || i < 0 || uint64(i) >= v.n {
		return Value{}
	}
	return *(*Value)(unsafe.Add(v.p, uintptr(i)*unsafe.Sizeof(Value{})))
}

// Elems returns a copy of a list's elements.
func (v Value) Elems() []Value { return slices.Clone(v.elems()) }

// MapEntry returns the i'th entry of a map in key order; i must be in range.
func (v Value) MapEntry(i int) (string, Value) {
	kv := v.entries()
	return kv[2*i].str(), kv[2*i+1]
}

// MapGet returns the value stored under key in a map.
func (v Value) MapGet(key string) (Value, bool) {
	kv := v.entries()
	if i, found := findKey(kv, key); found {
		return kv[2*i+1], true
	}
	return Value{}, false
}

// findKey binary-searches the keys of kv, returning the entry index where key
// is or would be inserted.
func findKey(kv []Value, key string) (int, bool) {
	lo, hi := 0, len(kv)/2
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := strings.Compare(kv[2*m].str(), key); {
		case c == 0:
			return m, true
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return lo, false
}

// Shape returns a record's shape, else nil.
func (v Value) Shape() *Shape {
	if v.kind != ValRecord {
		return nil
	}
	return (*Shape)((*Value)(v.p).p)
}

// FieldAt returns a record's i'th field value; i must be in range.
func (v Value) FieldAt(i int) Value { return v.recordArray()[i+1] }

// Field returns the named field of a record, or the entry under name of a map.
func (v Value) Field(name string) (Value, bool) {
	switch v.kind {
	case ValRecord:
		if i := v.Shape().Index(name); i >= 0 {
			return v.FieldAt(i), true
		}
	case ValMap:
		return v.MapGet(name)
	}
	return Value{}, false
}

// Index returns container[key]: the element at an int index of a list (0 ≤ i
// < len; out of range is an error), or the entry under a string key of a map
// (null when absent: the checker types m[k] as T?).
func Index(container, key Value) (Value, error) {
	switch container.kind {
	case ValList:
		if key.kind != ValInt {
			return Value{}, fmt.Errorf("list index must be int, not %s", key.kind)
		}
		i := int64(key.n)
		if i < 0 || uint64(i) >= container.n {
			return Value{}, fmt.Errorf("list index %d out of range [0, %d)", i, container.n)
		}
		return container.Elem(int(i)), nil
	case ValMap:
		if key.kind != ValString {
			return Value{}, fmt.Errorf("map key must be string, not %s", key.kind)
		}
		v, _ := container.MapGet(key.str())
		return v, nil
	}
	return Value{}, fmt.Errorf("cannot index %s", container.kind)
}

// Contains implements `x in container`: an element of a list (Equal), a key of
// a map, or a substring of a string. ok is false when container is none of
// these or x has the wrong kind for it.
func Contains(container, x Value) (found, ok bool) {
	switch container.kind {
	case ValList:
		for _, e := range container.elems() {
			if Equal(e, x) {
				return true, true
			}
		}
		return false, true
	case ValMap:
		if x.kind != ValString {
			return false, false
		}
		_, found = container.MapGet(x.str())
		return found, true
	case ValString:
		if x.kind != ValString {
			return false, false
		}
		return strings.Contains(container.str(), x.str()), true
	}
	return false, false
}

// Persistent updates. Each returns a new value; its arguments are unchanged.

// ListAppend returns list with xs appended (O(len(list)+len(xs))). A null (or
// any non-list) value is treated as the empty list.
func ListAppend(list Value, xs ...Value) Value {
	old := list.elems()
	out := make([]Value, 0, len(old)+len(xs))
	out = append(append(out, old...), xs...)
	return MakeList(out)
}

// MapSet returns m with key set to val. A null (or any non-map) m is treated
// as the empty map.
func MapSet(m Value, key string, val Value) Value {
	kv := m.entries()
	i, found := findKey(kv, key)
	var out []Value
	if found {
		out = slices.Clone(kv)
		out[2*i+1] = val
	} else {
		out = make([]Value, 0, len(kv)+2)
		out = append(out, kv[:2*i]...)
		out = append(out, MakeString(key), val)
		out = append(out, kv[2*i:]...)
	}
	return Value{kind: ValMap, n: uint64(len(out) / 2), p: unsafe.Pointer(unsafe.SliceData(out))}
}

// MapMerge returns the union of maps a and b; on a shared key b's value wins.
// A null argument is treated as empty.
func MapMerge(a, b Value) Value {
	x, y := a.entries(), b.entries()
	out := make([]Value, 0, len(x)+len(y))
	for len(x) > 0 && len(y) > 0 {
		switch c := strings.Compare(x[0].str(), y[0].str()); {
		case c < 0:
			out, x = append(out, x[0], x[1]), x[2:]
		case c > 0:
			out, y = append(out, y[0], y[1]), y[2:]
		default:
			out, x, y = append(out, y[0], y[1]), x[2:], y[2:]
		}
	}
	out = append(append(out, x...), y...)
	if len(out) == 0 {
		return Value{kind: ValMap}
	}
	return Value{kind: ValMap, n: uint64(len(out) / 2), p: unsafe.Pointer(unsafe.SliceData(out))}
}

// WithField returns record r with its i'th field replaced by val. r must be a
// record and i in range (like FieldAt).
func WithField(r Value, i int, val Value) Value {
	rv := slices.Clone(r.recordArray())
	rv[i+1] = val
	return Value{kind: ValRecord, n: r.n, p: unsafe.Pointer(unsafe.SliceData(rv))}
}

// Comparison.

// Equal reports whether a and b are the same value. Ints and floats compare
// numerically (1 == 1.0); lists compare element-wise; maps by keys and
// values; records by field names (in order) and values. Values of different
// kinds are otherwise unequal (a record never equals a map). NaN is unequal
// to everything, itself included. Equal never allocates.
func Equal(a, b Value) bool {
	if a.kind != b.kind {
		if a.kind == ValInt && b.kind == ValFloat {
			return cmpIntFloat(int64(a.n), b.Float()) == 0 && b.n != canonicalNaN
		}
		if a.kind == ValFloat && b.kind == ValInt {
			return cmpIntFloat(int64(b.n), a.Float()) == 0 && a.n != canonicalNaN
		}
		return false
	}
	switch a.kind {
	case ValNull:
		return true
	case ValBool, ValInt, ValDuration:
		return a.n == b.n
	case ValFloat:
		return a.Float() == b.Float()
	case ValString, ValSecret:
		return a.str() == b.str()
	case ValList, ValMap:
		if a.n != b.n {
			return false
		}
		var x, y []Value
		if a.kind == ValList {
			x, y = a.elems(), b.elems()
		} else {
			x, y = a.entries(), b.entries()
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case ValRecord:
		if a.n != b.n || !sameShape(a.Shape(), b.Shape()) {
			return false
		}
		x, y := a.recordArray()[1:], b.recordArray()[1:]
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// Compare orders two values of an ordered kind: int and float (numerically,
// also mixed), string (bytewise), bool (false < true), duration. ok is false
// when the values are not comparable (other kinds, mixed kinds, or a NaN).
// Compare never allocates.
func Compare(a, b Value) (c int, ok bool) {
	if a.kind == b.kind {
		switch a.kind {
		case ValInt, ValDuration:
			return cmp.Compare(int64(a.n), int64(b.n)), true
		case ValFloat:
			if a.n == canonicalNaN || b.n == canonicalNaN {
				return 0, false
			}
			return cmp.Compare(a.Float(), b.Float()), true
		case ValString:
			return strings.Compare(a.str(), b.str()), true
		case ValBool:
			return cmp.Compare(a.n, b.n), true
		}
		return 0, false
	}
	switch {
	case a.kind == ValInt && b.kind == ValFloat && b.n != canonicalNaN:
		return cmpIntFloat(int64(a.n), b.Float()), true
	case a.kind == ValFloat && b.kind == ValInt && a.n != canonicalNaN:
		return -cmpIntFloat(int64(b.n), a.Float()), true
	}
	return 0, false
}

// cmpIntFloat compares an int64 and a non-NaN float64 exactly.
func cmpIntFloat(i int64, f float64) int {
	if f != f {
		return 1 // unreachable for callers that exclude NaN
	}
	const two63 = 9223372036854775808.0
	if f >= two63 {
		return -1
	}
	if f < -two63 {
		return 1
	}
	t := math.Trunc(f)
	if c := cmp.Compare(i, int64(t)); c != 0 {
		return c
	}
	return cmp.Compare(0, f-t) // i == trunc(f): the fraction decides
}

// String renders v for people (disassembly, debugging, test failures): like
// canonical JSON, except that durations print bare (200ms), records print as
// {name: value}, non-finite floats as NaN/+Inf/-Inf, and secrets as <secret>.
// It is not a serialization.
func (v Value) String() string {
	var sb strings.Builder
	v.format(&sb, 0)
	return sb.String()
}

func (v Value) format(sb *strings.Builder, depth int) {
	if depth > MaxDepth {
		sb.WriteString("…")
		return
	}
	switch v.kind {
	case ValNull:
		sb.WriteString("null")
	case ValBool:
		sb.WriteString(strconv.FormatBool(v.Bool()))
	case ValInt:
		sb.WriteString(strconv.FormatInt(v.Int(), 10))
	case ValFloat:
		f := v.Float()
		switch {
		case math.IsNaN(f):
			sb.WriteString("NaN")
		case math.IsInf(f, 1):
			sb.WriteString("+Inf")
		case math.IsInf(f, -1):
			sb.WriteString("-Inf")
		default:
			b := appendFloat(nil, f)
			if !strings.ContainsAny(string(b), ".e") {
				b = append(b, ".0"...)
			}
			sb.Write(b)
		}
	case ValString:
		sb.Write(appendQuoted(nil, v.str()))
	case ValDuration:
		sb.WriteString(v.Duration().String())
	case ValSecret:
		sb.WriteString("<secret>")
	case ValList:
		sb.WriteByte('[')
		for i, e := range v.elems() {
			if i > 0 {
				sb.WriteString(", ")
			}
			e.format(sb, depth+1)
		}
		sb.WriteByte(']')
	case ValMap:
		sb.WriteByte('{')
		kv := v.entries()
		for i := 0; i < len(kv); i += 2 {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.Write(appendQuoted(nil, kv[i].str()))
			sb.WriteString(": ")
			kv[i+1].format(sb, depth+1)
		}
		sb.WriteByte('}')
	case ValRecord:
		sb.WriteByte('{')
		s := v.Shape()
		for i := 0; i < int(v.n); i++ {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(s.Name(i))
			sb.WriteString(": ")
			v.FieldAt(i).format(sb, depth+1)
		}
		sb.WriteByte('}')
	default:
		sb.WriteString("<invalid>")
	}
}
