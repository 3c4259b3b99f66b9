package types

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// Convert returns v as a value of type t, or an error naming the first
// place (a JSON-path such as `$.hosts[2]`) where v does not conform.
//
// Convert is the value side of AssignableTo and the semantics of the CONV
// opcode: it widens ints to floats, rebuilds records in t's field order
// (filling absent optional fields with null and absent defaulted fields with
// their default; a field t does not declare is an error), and checks enum
// membership. A value that already conforms is returned unchanged without
// allocating. Nothing converts to secret except a secret.
func Convert(v Value, t *Type) (Value, error) {
	var c converter
	c.path = c.buf[:0]
	return c.convert(v, t, 0)
}

// converter holds the conversion mode. fromJSON additionally accepts what a
// JSON document can only spell one way: an integral number for an int, a
// duration string for a duration, an object for a record, and null for a
// field that has a default.
type converter struct {
	fromJSON bool
	path     []pathElem
	buf      [8]pathElem
}

// pathElem is one step of the JSON path to the value being converted; the
// path is rendered only when an error is reported. It lives in a slice on the
// converter, not in a linked list, so that converting allocates nothing.
type pathElem struct {
	key   string
	index int
	isIdx bool
}

func (c *converter) pushKey(k string) { c.path = append(c.path, pathElem{key: k}) }
func (c *converter) pushIndex(i int)  { c.path = append(c.path, pathElem{index: i, isIdx: true}) }
func (c *converter) pop()             { c.path = c.path[:len(c.path)-1] }

func (c *converter) pathString() string {
	var sb strings.Builder
	sb.WriteByte('$')
	for _, e := range c.path {
		switch {
		case e.isIdx:
			sb.WriteByte('[')
			sb.WriteString(strconv.Itoa(e.index))
			sb.WriteByte(']')
		case isIdent(e.key):
			sb.WriteByte('.')
			sb.WriteString(e.key)
		default:
			sb.WriteByte('[')
			sb.Write(appendQuoted(nil, e.key))
			sb.WriteByte(']')
		}
	}
	return sb.String()
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && !('a' <= r && r <= 'z') && !('A' <= r && r <= 'Z') && (i == 0 || !('0' <= r && r <= '9')) {
			return false
		}
	}
	return true
}

func (c *converter) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", c.pathString(), fmt.Sprintf(format, args...))
}

// got names v's kind for an error message: JSON vocabulary when converting
// from JSON, else the value kind.
func (c *converter) got(v Value) string {
	if c.fromJSON {
		switch v.kind {
		case ValNull:
			return "null"
		case ValBool:
			return "boolean"
		case ValInt, ValFloat:
			return "number"
		case ValString:
			return "string"
		case ValList:
			return "array"
		case ValMap, ValRecord:
			return "object"
		}
	}
	return v.kind.String()
}

func (c *converter) want(t *Type) string {
	if c.fromJSON {
		switch t.kind {
		case KindRecord, KindMap:
			return "object"
		case KindList, KindMessages:
			return "array"
		case KindFloat, KindInt:
			if t.kind == KindInt {
				return "integer"
			}
			return "number"
		case KindBool:
			return "boolean"
		case KindDuration:
			return "duration string"
		}
	}
	return t.String()
}

func (c *converter) mismatch(v Value, t *Type) error {
	return c.errorf("want %s, got %s", c.want(t), c.got(v))
}

func (c *converter) convert(v Value, t *Type, depth int) (Value, error) {
	if t == nil || t.kind == KindInvalid || t.kind >= kindCount {
		return Value{}, c.errorf("invalid type")
	}
	if depth > MaxDepth {
		return Value{}, c.errorf("value nested deeper than %d", MaxDepth)
	}
	switch t.kind {
	case KindNull:
		if v.kind == ValNull {
			return v, nil
		}
	case KindOptional:
		if v.kind == ValNull {
			return v, nil
		}
		return c.convert(v, t.elem, depth)
	case KindJSON:
		if err := c.checkJSON(v, depth); err != nil {
			return Value{}, err
		}
		return v, nil
	case KindString:
		if v.kind == ValString {
			return v, nil
		}
	case KindSecret:
		if v.kind == ValSecret && !c.fromJSON {
			return v, nil
		}
	case KindEnum:
		if v.kind == ValString {
			if t.HasLiteral(v.str()) {
				return v, nil
			}
			return Value{}, c.errorf("want %s, got %s", t.Literal(), strconv.Quote(v.str()))
		}
	case KindBool:
		if v.kind == ValBool {
			return v, nil
		}
	case KindInt:
		switch v.kind {
		case ValInt:
			return v, nil
		case ValFloat:
			if c.fromJSON {
				f := v.Float()
				if f == float64(int64(f)) && f >= -9223372036854775808.0 && f < 9223372036854775808.0 {
					return MakeInt(int64(f)), nil
				}
				return Value{}, c.errorf("want integer, got %s", v.String())
			}
		}
	case KindFloat:
		switch v.kind {
		case ValFloat:
			return v, nil
		case ValInt:
			return MakeFloat(float64(v.Int())), nil
		}
	case KindDuration:
		switch v.kind {
		case ValDuration:
			return v, nil
		case ValString:
			if c.fromJSON {
				d, err := time.ParseDuration(v.str())
				if err != nil {
					return Value{}, c.errorf("want duration string, got %s", strconv.Quote(v.str()))
				}
				return MakeDuration(d), nil
			}
		}
	case KindList, KindMessages:
		if v.kind == ValList {
			return c.list(v, t.elem, depth)
		}
	case KindMap:
		if v.kind == ValMap {
			return c.mapValue(v, t.elem, depth)
		}
	case KindRecord:
		switch v.kind {
		case ValRecord:
			return c.record(v, t, depth)
		case ValMap:
			if c.fromJSON {
				return c.record(v, t, depth)
			}
		}
	}
	return Value{}, c.mismatch(v, t)
}

func (c *converter) list(v Value, elem *Type, depth int) (Value, error) {
	xs := v.elems()
	var out []Value // allocated at the first element that changes
	for i, x := range xs {
		c.pushIndex(i)
		y, err := c.convert(x, elem, depth+1)
		c.pop()
		if err != nil {
			return Value{}, err
		}
		if out == nil && !sameRepr(x, y) {
			out = make([]Value, len(xs))
			copy(out, xs[:i])
		}
		if out != nil {
			out[i] = y
		}
	}
	if out == nil {
		return v, nil
	}
	return MakeList(out), nil
}

func (c *converter) mapValue(v Value, elem *Type, depth int) (Value, error) {
	kv := v.entries()
	var out []Value
	for i := 1; i < len(kv); i += 2 {
		x := kv[i]
		c.pushKey(kv[i-1].str())
		y, err := c.convert(x, elem, depth+1)
		c.pop()
		if err != nil {
			return Value{}, err
		}
		if out == nil && !sameRepr(x, y) {
			out = append([]Value(nil), kv...)
		}
		if out != nil {
			out[i] = y
		}
	}
	if out == nil {
		return v, nil
	}
	return Value{kind: ValMap, n: v.n, p: unsafe.Pointer(unsafe.SliceData(out))}, nil
}

// record converts a record (or, from JSON, a map) to record type t.
func (c *converter) record(v Value, t *Type, depth int) (Value, error) {
	if v.kind == ValRecord && sameShape(v.Shape(), t.shape) {
		xs := v.recordArray()[1:]
		var out []Value
		for i, x := range xs {
			f := &t.fields[i]
			if x.kind == ValNull && c.fromJSON && f.HasDefault {
				x = f.Default
			}
			c.pushKey(f.Name)
			y, err := c.convert(x, f.Type, depth+1)
			c.pop()
			if err != nil {
				return Value{}, err
			}
			if out == nil && !sameRepr(xs[i], y) {
				out = make([]Value, len(xs))
				copy(out, xs[:i])
			}
			if out != nil {
				out[i] = y
			}
		}
		if out == nil {
			return v, nil // equal shapes encode identically; keep the value
		}
		return MakeRecord(t.shape, out)
	}
	// Reshape by name.
	var names func(i int) string
	var vals func(i int) Value
	n := int(v.n)
	if v.kind == ValRecord {
		s, arr := v.Shape(), v.recordArray()[1:]
		names, vals = s.Name, func(i int) Value { return arr[i] }
	} else {
		kv := v.entries()
		names = func(i int) string { return kv[2*i].str() }
		vals = func(i int) Value { return kv[2*i+1] }
	}
	for i := 0; i < n; i++ {
		if t.shape.Index(names(i)) < 0 {
			return Value{}, c.errorf("unknown field %s for %s", strconv.Quote(names(i)), t.String())
		}
	}
	out := make([]Value, len(t.fields))
	for i := range t.fields {
		f := &t.fields[i]
		c.pushKey(f.Name)
		x, found := Value{}, false
		for j := 0; j < n; j++ {
			if names(j) == f.Name {
				x, found = vals(j), true
				break
			}
		}
		switch {
		case (!found || (x.kind == ValNull && c.fromJSON)) && f.HasDefault:
			out[i] = f.Default
			c.pop()
			continue
		case !found && f.Type.Nullable():
			out[i] = Value{}
			c.pop()
			continue
		case !found:
			return Value{}, c.errorf("missing required field")
		}
		y, err := c.convert(x, f.Type, depth+1)
		if err != nil {
			return Value{}, err
		}
		c.pop()
		out[i] = y
	}
	return MakeRecord(t.shape, out)
}

// sameRepr reports whether two values are the same representation (same
// kind, payload and backing array): Convert returned its input unchanged.
func sameRepr(a, b Value) bool { return a == b }

// checkJSON checks that v holds no secret (anything else may live in json).
func (c *converter) checkJSON(v Value, depth int) error {
	if depth > MaxDepth {
		return c.errorf("value nested deeper than %d", MaxDepth)
	}
	switch v.kind {
	case ValSecret:
		return c.errorf("want json, got secret")
	case ValList:
		for i, x := range v.elems() {
			c.pushIndex(i)
			if err := c.checkJSON(x, depth+1); err != nil {
				return err
			}
			c.pop()
		}
	case ValMap:
		kv := v.entries()
		for i := 1; i < len(kv); i += 2 {
			c.pushKey(kv[i-1].str())
			if err := c.checkJSON(kv[i], depth+1); err != nil {
				return err
			}
			c.pop()
		}
	case ValRecord:
		s := v.Shape()
		for i, x := range v.recordArray()[1:] {
			c.pushKey(s.Name(i))
			if err := c.checkJSON(x, depth+1); err != nil {
				return err
			}
			c.pop()
		}
	}
	return nil
}
