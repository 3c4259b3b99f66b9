package types

// The canonical binary codec for values and types.
//
// Value grammar (uvarint = unsigned LEB128, minimal length; zigzag = signed
// integers mapped to unsigned as in protobuf sint64; str = uvarint length,
// then that many bytes):
//
//	value     = null | false | true | int | float | string | duration
//	          | list | map | recorddef | recordref .
//	null      = 0x01 .
//	false     = 0x02 .
//	true      = 0x03 .
//	int       = 0x04 zigzag .
//	float     = 0x05 byte[8] .                 IEEE-754 bits, little-endian; never -0, one NaN
//	string    = 0x06 str .
//	duration  = 0x07 zigzag .                  nanoseconds
//	list      = 0x08 uvarint(n) value*n .
//	map       = 0x09 uvarint(n) (str value)*n .          keys strictly ascending (bytewise)
//	recorddef = 0x0A uvarint(n) str*n value*n .          defines the next shape number
//	recordref = 0x0B uvarint(shape) value*n .            n = fields of that shape
//
// Shapes (ordered field-name lists) are numbered 0, 1, ... in the order their
// recorddef appears within one top-level value. The encoder writes a
// recorddef the first time a shape occurs and a recordref afterwards, so a
// list of 200 messages spells its field names once. Nesting deeper than
// MaxDepth containers is rejected on both sides.
//
// The encoding is canonical: one value has exactly one encoding, and the
// decoder rejects every other byte string (non-minimal varints, -0, other NaN
// payloads, unsorted or repeated map keys, a recorddef for an already defined
// shape, repeated field names). So decode(b) succeeding implies
// encode(decode(b)) == b. Secrets have no encoding: AppendValue fails.
//
// Type grammar (AppendType; kind bytes are the Kind constants, which are
// therefore frozen):
//
//	type   = kind:byte body .
//	body   = (null, string, int, float, bool, duration, json, secret, messages: empty)
//	       | enum:     str(name) uvarint(n) str*n
//	       | record:   str(name) uvarint(n) field*n
//	       | optional, list, map: type .
//	field  = str(name) flags:byte type [value] .   flags bit 0: has default (then the value follows)

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// MaxDepth is the deepest nesting of lists, maps and records (and of type
// constructors) that the codecs, JSON and Convert accept.
const MaxDepth = 64

// Value tags.
const (
	tagNull      = 0x01
	tagFalse     = 0x02
	tagTrue      = 0x03
	tagInt       = 0x04
	tagFloat     = 0x05
	tagString    = 0x06
	tagDuration  = 0x07
	tagList      = 0x08
	tagMap       = 0x09
	tagRecordDef = 0x0A
	tagRecordRef = 0x0B
)

// DecodeError reports malformed input to DecodeValue or DecodeType. Offset is
// the byte position within the decoded slice where the problem was found.
type DecodeError struct {
	Offset int
	Msg    string
}

func (e *DecodeError) Error() string { return fmt.Sprintf("%s at byte %d", e.Msg, e.Offset) }

// ErrSecret is returned when encoding or rendering a secret value.
var ErrSecret = errors.New("secret value cannot be serialized")

// AppendValue appends the canonical encoding of v to dst. It fails only for a
// secret, or for nesting deeper than MaxDepth.
func AppendValue(dst []byte, v Value) ([]byte, error) {
	var e encoder
	return e.value(dst, v, 0)
}

type encoder struct {
	ptrs      map[*Shape]int
	keys      map[string]int
	nshapes   int
	last      *Shape
	lastIndex int
}

func (e *encoder) value(dst []byte, v Value, depth int) ([]byte, error) {
	switch v.kind {
	case ValNull:
		return append(dst, tagNull), nil
	case ValBool:
		if v.n != 0 {
			return append(dst, tagTrue), nil
		}
		return append(dst, tagFalse), nil
	case ValInt:
		return binary.AppendUvarint(append(dst, tagInt), zigzag(int64(v.n))), nil
	case ValFloat:
		return binary.LittleEndian.AppendUint64(append(dst, tagFloat), v.n), nil
	case ValString:
		return appendStr(append(dst, tagString), v.str()), nil
	case ValDuration:
		return binary.AppendUvarint(append(dst, tagDuration), zigzag(int64(v.n))), nil
	case ValSecret:
		return dst, ErrSecret
	}
	if depth >= MaxDepth {
		return dst, fmt.Errorf("value nested deeper than %d", MaxDepth)
	}
	var err error
	switch v.kind {
	case ValList:
		dst = binary.AppendUvarint(append(dst, tagList), v.n)
		for _, x := range v.elems() {
			if dst, err = e.value(dst, x, depth+1); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case ValMap:
		dst = binary.AppendUvarint(append(dst, tagMap), v.n)
		kv := v.entries()
		for i := 0; i < len(kv); i += 2 {
			dst = appendStr(dst, kv[i].str())
			if dst, err = e.value(dst, kv[i+1], depth+1); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case ValRecord:
		s := v.Shape()
		if k, ok := e.shapeIndex(s); ok {
			dst = binary.AppendUvarint(append(dst, tagRecordRef), uint64(k))
		} else {
			dst = binary.AppendUvarint(append(dst, tagRecordDef), v.n)
			for _, n := range s.names {
				dst = appendStr(dst, n)
			}
		}
		for _, x := range v.recordArray()[1:] {
			if dst, err = e.value(dst, x, depth+1); err != nil {
				return dst, err
			}
		}
		return dst, nil
	}
	return dst, fmt.Errorf("invalid value kind %d", v.kind)
}

// shapeIndex returns the number of s's shape if it was already defined in
// this value, else defines it (ok = false).
func (e *encoder) shapeIndex(s *Shape) (int, bool) {
	if s == e.last {
		return e.lastIndex, true
	}
	if k, ok := e.ptrs[s]; ok {
		e.last, e.lastIndex = s, k
		return k, true
	}
	if e.ptrs == nil {
		e.ptrs = make(map[*Shape]int)
		e.keys = make(map[string]int)
	}
	key := shapeKey(s.names)
	if k, ok := e.keys[key]; ok {
		e.ptrs[s] = k
		e.last, e.lastIndex = s, k
		return k, true
	}
	k := e.nshapes
	e.nshapes++
	e.ptrs[s], e.keys[key] = k, k
	e.last, e.lastIndex = s, k
	return k, false
}

func shapeKey(names []string) string {
	var b []byte
	for _, n := range names {
		b = appendStr(b, n)
	}
	return string(b)
}

func appendStr(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

func zigzag(i int64) uint64   { return uint64(i<<1) ^ uint64(i>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// DecodeValue decodes one canonical value from the front of b (a []byte or a
// string) and returns it with the number of bytes it occupied. Decoding from
// a string shares its memory: the value's strings are substrings of b.
// Errors are *DecodeError.
func DecodeValue[T ~[]byte | ~string](b T) (Value, int, error) {
	d := decoder[T]{b: b}
	v := d.value(0)
	if d.err != nil {
		return Value{}, 0, d.err
	}
	return v, d.off, nil
}

type decoder[T ~[]byte | ~string] struct {
	b      T
	off    int
	err    error
	shapes []*Shape
	keys   map[string]int
}

func (d *decoder[T]) fail(off int, format string, args ...any) {
	if d.err == nil {
		d.err = &DecodeError{Offset: off, Msg: fmt.Sprintf(format, args...)}
	}
}

func (d *decoder[T]) truncated(what string) {
	d.fail(len(d.b), "%s truncated", what)
}

// uvarint reads a minimal-length unsigned LEB128.
func (d *decoder[T]) uvarint(what string) uint64 {
	var x uint64
	start := d.off
	for shift := uint(0); ; shift += 7 {
		if d.off >= len(d.b) {
			d.truncated(what)
			return 0
		}
		c := d.b[d.off]
		d.off++
		if shift == 63 && c > 1 {
			d.fail(start, "varint overflows 64 bits")
			return 0
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			if c == 0 && d.off-start > 1 {
				d.fail(start, "non-canonical varint")
				return 0
			}
			return x
		}
	}
}

// count reads a uvarint element count and checks that at least min bytes per
// element remain, so that a hostile count cannot force a huge allocation.
func (d *decoder[T]) count(what string, min int) int {
	start := d.off
	n := d.uvarint(what)
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)-d.off)/uint64(min) {
		d.fail(start, "%s count %d exceeds the remaining input", what, n)
		return 0
	}
	return int(n)
}

func (d *decoder[T]) str(what string) string {
	n := d.uvarint(what)
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)-d.off) {
		d.truncated(what)
		return ""
	}
	s := string(d.b[d.off : d.off+int(n)])
	d.off += int(n)
	return s
}

func (d *decoder[T]) value(depth int) Value {
	if d.off >= len(d.b) {
		d.truncated("value")
		return Value{}
	}
	start := d.off
	tag := d.b[d.off]
	d.off++
	switch tag {
	case tagNull:
		return Value{}
	case tagFalse:
		return MakeBool(false)
	case tagTrue:
		return MakeBool(true)
	case tagInt:
		return MakeInt(unzigzag(d.uvarint("int")))
	case tagDuration:
		return Value{kind: ValDuration, n: uint64(unzigzag(d.uvarint("duration")))}
	case tagFloat:
		if len(d.b)-d.off < 8 {
			d.truncated("float")
			return Value{}
		}
		var bits uint64
		for i := 7; i >= 0; i-- {
			bits = bits<<8 | uint64(d.b[d.off+i])
		}
		d.off += 8
		f := math.Float64frombits(bits)
		if bits == 1<<63 || (f != f && bits != canonicalNaN) {
			d.fail(start, "non-canonical float")
			return Value{}
		}
		return Value{kind: ValFloat, n: bits}
	case tagString:
		return MakeString(d.str("string"))
	}
	if tag < tagList || tag > tagRecordRef {
		d.fail(start, "unknown value tag 0x%02x", tag)
		return Value{}
	}
	if depth >= MaxDepth {
		d.fail(start, "value nested deeper than %d", MaxDepth)
		return Value{}
	}
	switch tag {
	case tagList:
		n := d.count("list", 1)
		if n == 0 {
			return Value{kind: ValList}
		}
		elems := make([]Value, n)
		for i := range elems {
			if elems[i] = d.value(depth + 1); d.err != nil {
				return Value{}
			}
		}
		return MakeList(elems)
	case tagMap:
		n := d.count("map", 2)
		if n == 0 {
			return Value{kind: ValMap}
		}
		kv := make([]Value, 2*n)
		for i := 0; i < n; i++ {
			koff := d.off
			k := MakeString(d.str("map key"))
			if d.err != nil {
				return Value{}
			}
			if i > 0 && kv[2*i-2].str() >= k.str() {
				d.fail(koff, "map keys out of order")
				return Value{}
			}
			kv[2*i] = k
			if kv[2*i+1] = d.value(depth + 1); d.err != nil {
				return Value{}
			}
		}
		return Value{kind: ValMap, n: uint64(n), p: unsafe.Pointer(unsafe.SliceData(kv))}
	case tagRecordDef:
		n := d.count("record", 2)
		names := make([]string, n)
		kstart := d.off
		for i := range names {
			noff := d.off
			names[i] = d.str("field name")
			if d.err != nil {
				return Value{}
			}
			for _, m := range names[:i] {
				if m == names[i] {
					d.fail(noff, "field %q repeated", m)
					return Value{}
				}
			}
		}
		key := string(d.b[kstart:d.off])
		if d.keys == nil {
			d.keys = make(map[string]int)
		}
		if _, dup := d.keys[key]; dup {
			d.fail(start, "record shape defined twice")
			return Value{}
		}
		d.keys[key] = len(d.shapes)
		s := &Shape{names: names}
		d.shapes = append(d.shapes, s)
		return d.fields(s, depth)
	default: // tagRecordRef
		k := d.uvarint("record shape")
		if d.err != nil {
			return Value{}
		}
		if k >= uint64(len(d.shapes)) {
			d.fail(start, "record shape %d not defined", k)
			return Value{}
		}
		return d.fields(d.shapes[k], depth)
	}
}

func (d *decoder[T]) fields(s *Shape, depth int) Value {
	n := len(s.names)
	if n > len(d.b)-d.off {
		d.truncated("record")
		return Value{}
	}
	rv := make([]Value, n+1)
	rv[0] = Value{kind: valShape, p: unsafe.Pointer(s)}
	for i := 1; i <= n; i++ {
		if rv[i] = d.value(depth + 1); d.err != nil {
			return Value{}
		}
	}
	return Value{kind: ValRecord, n: uint64(n), p: unsafe.Pointer(unsafe.SliceData(rv))}
}

// AppendType appends the canonical encoding of t to dst (grammar above).
func AppendType(dst []byte, t *Type) ([]byte, error) { return appendType(dst, t, 0) }

func appendType(dst []byte, t *Type, depth int) ([]byte, error) {
	if t == nil || t.kind == KindInvalid || t.kind >= kindCount {
		return dst, errors.New("invalid type")
	}
	if depth >= MaxDepth {
		return dst, fmt.Errorf("type nested deeper than %d", MaxDepth)
	}
	dst = append(dst, byte(t.kind))
	var err error
	switch t.kind {
	case KindEnum:
		dst = appendStr(dst, t.name)
		dst = binary.AppendUvarint(dst, uint64(len(t.lits)))
		for _, l := range t.lits {
			dst = appendStr(dst, l)
		}
	case KindRecord:
		dst = appendStr(dst, t.name)
		dst = binary.AppendUvarint(dst, uint64(len(t.fields)))
		for _, f := range t.fields {
			dst = appendStr(dst, f.Name)
			if f.HasDefault {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
			if dst, err = appendType(dst, f.Type, depth+1); err != nil {
				return dst, err
			}
			if f.HasDefault {
				if dst, err = AppendValue(dst, f.Default); err != nil {
					return dst, fmt.Errorf("default of field %q: %w", f.Name, err)
				}
			}
		}
	case KindOptional, KindList, KindMap:
		return appendType(dst, t.elem, depth+1)
	}
	return dst, nil
}

// DecodeType decodes one canonical type from the front of b and returns it
// with the number of bytes it occupied. Errors are *DecodeError.
func DecodeType[T ~[]byte | ~string](b T) (*Type, int, error) {
	d := decoder[T]{b: b}
	t := d.typ(0)
	if d.err != nil {
		return nil, 0, d.err
	}
	return t, d.off, nil
}

func (d *decoder[T]) typ(depth int) *Type {
	if d.off >= len(d.b) {
		d.truncated("type")
		return nil
	}
	start := d.off
	if depth >= MaxDepth {
		d.fail(start, "type nested deeper than %d", MaxDepth)
		return nil
	}
	k := Kind(d.b[d.off])
	d.off++
	switch k {
	case KindNull:
		return NullType
	case KindString:
		return StringType
	case KindInt:
		return IntType
	case KindFloat:
		return FloatType
	case KindBool:
		return BoolType
	case KindDuration:
		return DurationType
	case KindJSON:
		return JSONType
	case KindSecret:
		return SecretType
	case KindMessages:
		return MessagesType
	case KindOptional, KindList, KindMap:
		elem := d.typ(depth + 1)
		if d.err != nil {
			return nil
		}
		switch k {
		case KindList:
			return ListOf(elem)
		case KindMap:
			return MapOf(elem)
		}
		if elem.kind == KindOptional {
			d.fail(start, "optional of optional type")
			return nil
		}
		return OptionalOf(elem)
	case KindEnum:
		return namedType(d, start, "enum", "enum", 1, func(lit *string) { *lit = d.str("enum literal") }, NewEnum)
	case KindRecord:
		return namedType(d, start, "record", "record type", 3, func(f *Field) { d.field(f, depth) }, NewRecord)
	}
	d.fail(start, "unknown type kind 0x%02x", byte(k))
	return nil
}

// namedType decodes the rest of an enum or record type: its name, the
// count of its elements (each at least min bytes), each element by elem
// (which fails through d.err), and the type build makes of them (an error
// is reported at start).
func namedType[T ~[]byte | ~string, E any](d *decoder[T], start int, what, counted string, min int, elem func(*E), build func(string, []E) (*Type, error)) *Type {
	name := d.str(what + " name")
	n := d.count(counted, min)
	if d.err != nil {
		return nil
	}
	elems := make([]E, n)
	for i := range elems {
		if elem(&elems[i]); d.err != nil {
			return nil
		}
	}
	t, err := build(name, elems)
	if err != nil {
		d.fail(start, "%v", err)
		return nil
	}
	return t
}

// field decodes one field of a record type.
func (d *decoder[T]) field(f *Field, depth int) {
	if f.Name = d.str("field name"); d.err != nil {
		return
	}
	if d.off >= len(d.b) {
		d.truncated("field flags")
		return
	}
	flags := d.b[d.off]
	if flags > 1 {
		d.fail(d.off, "invalid field flags 0x%02x", flags)
		return
	}
	d.off++
	if f.Type = d.typ(depth + 1); d.err != nil {
		return
	}
	if flags == 1 {
		f.HasDefault = true
		voff := d.off
		v, n, err := DecodeValue(d.b[d.off:])
		if err != nil {
			var de *DecodeError
			if errors.As(err, &de) {
				d.fail(voff+de.Offset, "%s", de.Msg)
			} else {
				d.fail(voff, "%v", err)
			}
			return
		}
		d.off += n
		// The default must already be in its converted form, or
		// re-encoding the type would not reproduce the input.
		c, err := Convert(v, f.Type)
		if err != nil {
			d.fail(voff, "default of field %q: %v", f.Name, err)
			return
		}
		if enc, _ := AppendValue(nil, c); string(enc) != string(d.b[voff:d.off]) {
			d.fail(voff, "default of field %q not in canonical form", f.Name)
			return
		}
		f.Default = v
	}
}
