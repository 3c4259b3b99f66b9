package types

// The JSON mapping. ToJSON writes canonical JSON:
//
//   - no insignificant whitespace;
//   - map keys in ascending bytewise order; record fields in the record
//     type's declared order (schema order), which is fixed, so both are
//     deterministic;
//   - strings escape only `"`, `\` and control characters (\b \f \n \r \t, the
//     rest as \u00XX); invalid UTF-8 becomes U+FFFD; <, >, & and non-ASCII are
//     written as is;
//   - ints in decimal; floats in the shortest form that round-trips, as
//     ECMAScript prints numbers (1e21 and above, and below 1e-6, in exponent
//     form); NaN and ±Inf are errors;
//   - durations as Go duration strings ("1m30s"), which FromJSON accepts back;
//   - secrets are errors (ErrSecret).
//
// FromJSON parses RFC 8259 JSON (rejecting duplicate object keys and trailing
// data) and converts it to a type, reporting the first mismatch with its path.

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ToJSON returns the canonical JSON text of v.
func ToJSON(v Value) ([]byte, error) { return AppendJSON(nil, v) }

// AppendJSON appends the canonical JSON text of v to dst.
func AppendJSON(dst []byte, v Value) ([]byte, error) { return appendJSON(dst, v, 0) }

// AppendText appends v as string interpolation renders it: a string's raw
// bytes, and canonical JSON for every other value.
func AppendText(dst []byte, v Value) ([]byte, error) {
	if v.kind == ValString {
		return append(dst, v.str()...), nil
	}
	return appendJSON(dst, v, 0)
}

func appendJSON(dst []byte, v Value, depth int) ([]byte, error) {
	if depth > MaxDepth {
		return dst, fmt.Errorf("value nested deeper than %d", MaxDepth)
	}
	var err error
	switch v.kind {
	case ValNull:
		return append(dst, "null"...), nil
	case ValBool:
		return strconv.AppendBool(dst, v.Bool()), nil
	case ValInt:
		return strconv.AppendInt(dst, v.Int(), 10), nil
	case ValFloat:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return dst, fmt.Errorf("float %v has no JSON form", f)
		}
		return appendFloat(dst, f), nil
	case ValString:
		return appendQuoted(dst, v.str()), nil
	case ValDuration:
		return appendQuoted(dst, v.Duration().String()), nil
	case ValSecret:
		return dst, ErrSecret
	case ValList:
		dst = append(dst, '[')
		for i, x := range v.elems() {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = appendJSON(dst, x, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case ValMap:
		dst = append(dst, '{')
		kv := v.entries()
		for i := 0; i < len(kv); i += 2 {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendQuoted(dst, kv[i].str()), ':')
			if dst, err = appendJSON(dst, kv[i+1], depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case ValRecord:
		dst = append(dst, '{')
		s := v.Shape()
		for i, x := range v.recordArray()[1:] {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendQuoted(dst, s.Name(i)), ':')
			if dst, err = appendJSON(dst, x, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	return dst, fmt.Errorf("invalid value kind %d", v.kind)
}

// appendFloat formats a finite float as ECMAScript's Number::toString does
// (the same rule as encoding/json).
func appendFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 → 1e-7
		b := dst[start:]
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			dst = dst[:len(dst)-1]
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendQuoted appends s as a JSON string literal (see the rules above).
func appendQuoted(dst []byte, s string) []byte { return AppendJSONString(dst, s, false) }

// AppendJSONString appends s as a JSON string literal: `"` and `\` escaped,
// control characters as \n \r \t \b \f or \u00XX, invalid UTF-8 as
// U+FFFD. With html it also escapes <, >, & and U+2028/U+2029 and writes
// U+FFFD as \ufffd, exactly as encoding/json does.
func AppendJSONString(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			if html {
				dst = append(dst, `\ufffd`...)
			} else {
				dst = append(dst, "\ufffd"...)
			}
			i++
			start = i
			continue
		}
		if html && (r == '\u2028' || r == '\u2029') {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// FromJSON parses data and converts it to a value of type t. Errors name the
// place: `invalid JSON at byte 17: ...` for syntax, `$.hosts[2]: want string,
// got number` for a type mismatch. Besides Convert's rules, JSON input may
// spell an int as an integral number (3.0), a duration as a Go duration
// string ("1m30s"), a record as an object, and a defaulted field as null.
// A secret cannot come from JSON.
func FromJSON(t *Type, data []byte) (Value, error) {
	v, err := ParseJSON(data)
	if err != nil {
		return Value{}, err
	}
	c := converter{fromJSON: true}
	c.path = c.buf[:0]
	return c.convert(v, t, 0)
}

// ParseJSON parses data as untyped JSON: objects become maps, arrays lists,
// numbers ints when written without fraction or exponent and within int64,
// else floats.
func ParseJSON(data []byte) (Value, error) {
	p := jsonParser{b: data}
	p.space()
	v := p.value(0)
	if p.err == nil {
		p.space()
		if p.off < len(p.b) {
			p.fail("unexpected data after the value")
		}
	}
	if p.err != nil {
		return Value{}, p.err
	}
	return v, nil
}

type jsonParser struct {
	b   []byte
	off int
	err error
}

func (p *jsonParser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("invalid JSON at byte %d: %s", p.off, fmt.Sprintf(format, args...))
	}
}

func (p *jsonParser) space() {
	for p.off < len(p.b) {
		switch p.b[p.off] {
		case ' ', '\t', '\n', '\r':
			p.off++
		default:
			return
		}
	}
}

func (p *jsonParser) literal(word string, v Value) Value {
	if len(p.b)-p.off >= len(word) && string(p.b[p.off:p.off+len(word)]) == word {
		p.off += len(word)
		return v
	}
	p.fail("invalid literal")
	return Value{}
}

func (p *jsonParser) value(depth int) Value {
	if p.off >= len(p.b) {
		p.fail("unexpected end of input")
		return Value{}
	}
	switch c := p.b[p.off]; {
	case c == 'n':
		return p.literal("null", Value{})
	case c == 't':
		return p.literal("true", MakeBool(true))
	case c == 'f':
		return p.literal("false", MakeBool(false))
	case c == '"':
		return MakeString(p.string())
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	case c == '[' || c == '{':
		if depth >= MaxDepth {
			p.fail("nested deeper than %d", MaxDepth)
			return Value{}
		}
		if c == '[' {
			return p.array(depth)
		}
		return p.object(depth)
	default:
		p.fail("unexpected character %q", rune(c))
		return Value{}
	}
}

// empty steps over the opening bracket of an array or object and, when the
// closing one follows, over that too and reports true.
func (p *jsonParser) empty(closing byte) bool {
	p.off++ // [ or {
	p.space()
	if p.off < len(p.b) && p.b[p.off] == closing {
		p.off++
		return true
	}
	return false
}

// more reads what follows an element of an array or object (in, closed by
// closing): true after a comma, false after the closing bracket or on an
// error (p.err set).
func (p *jsonParser) more(closing byte, in string) bool {
	p.space()
	if p.off >= len(p.b) {
		p.fail("unexpected end of input in %s", in)
		return false
	}
	switch p.b[p.off] {
	case ',':
		p.off++
		return true
	case closing:
		p.off++
		return false
	}
	p.fail("want , or %c in %s", closing, in)
	return false
}

func (p *jsonParser) array(depth int) Value {
	if p.empty(']') {
		return MakeList(nil)
	}
	var elems []Value
	for {
		p.space()
		elems = append(elems, p.value(depth+1))
		if p.err != nil {
			return Value{}
		}
		if !p.more(']', "array") {
			break
		}
	}
	if p.err != nil {
		return Value{}
	}
	return MakeList(elems)
}

func (p *jsonParser) object(depth int) Value {
	if p.empty('}') {
		return Value{kind: ValMap}
	}
	var keys []string
	var vals []Value
	for {
		p.space()
		if p.off >= len(p.b) || p.b[p.off] != '"' {
			p.fail("want string key in object")
			return Value{}
		}
		k := p.string()
		p.space()
		if p.err == nil && (p.off >= len(p.b) || p.b[p.off] != ':') {
			p.fail("want : after object key")
		}
		if p.err != nil {
			return Value{}
		}
		p.off++
		p.space()
		v := p.value(depth + 1)
		if p.err != nil {
			return Value{}
		}
		keys, vals = append(keys, k), append(vals, v)
		if !p.more('}', "object") {
			break
		}
	}
	if p.err != nil {
		return Value{}
	}
	m, err := MakeMap(keys, vals)
	if err != nil { // the only possible error: a repeated key
		p.fail("object %v", err)
		return Value{}
	}
	return m
}

// string parses a JSON string starting at its opening quote.
func (p *jsonParser) string() string {
	p.off++ // "
	start := p.off
	// Fast path: no escapes, valid UTF-8.
	for p.off < len(p.b) {
		c := p.b[p.off]
		if c == '"' {
			s := p.b[start:p.off]
			if utf8.Valid(s) {
				p.off++
				return string(s)
			}
			break
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.off++
	}
	buf := append([]byte(nil), p.b[start:p.off]...)
	for {
		if p.off >= len(p.b) {
			p.fail("unterminated string")
			return ""
		}
		c := p.b[p.off]
		switch {
		case c == '"':
			p.off++
			return string(buf)
		case c < 0x20:
			p.fail("control character in string")
			return ""
		case c == '\\':
			if p.off+1 >= len(p.b) {
				p.fail("unterminated string")
				return ""
			}
			e := p.b[p.off+1]
			p.off += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return ""
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if p.off+1 < len(p.b) && p.b[p.off] == '\\' && p.b[p.off+1] == 'u' {
						save := p.off
						p.off += 2
						if r2, ok = p.hex4(); !ok {
							return ""
						}
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r = d
						} else {
							p.off = save
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				}
				buf = utf8.AppendRune(buf, r)
			default:
				p.off -= 2
				p.fail("invalid escape \\%c", e)
				return ""
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			p.off++
		default:
			r, size := utf8.DecodeRune(p.b[p.off:])
			if r == utf8.RuneError && size == 1 {
				buf = append(buf, "\ufffd"...)
			} else {
				buf = append(buf, p.b[p.off:p.off+size]...)
			}
			p.off += size
		}
	}
}

func (p *jsonParser) hex4() (rune, bool) {
	if len(p.b)-p.off < 4 {
		p.fail("short \\u escape")
		return 0, false
	}
	var r rune
	for _, c := range p.b[p.off : p.off+4] {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			p.fail("invalid \\u escape")
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	p.off += 4
	return r, true
}

func (p *jsonParser) number() Value {
	start := p.off
	digits := func() int {
		n := 0
		for p.off < len(p.b) && '0' <= p.b[p.off] && p.b[p.off] <= '9' {
			p.off++
			n++
		}
		return n
	}
	if p.b[p.off] == '-' {
		p.off++
	}
	if p.off < len(p.b) && p.b[p.off] == '0' {
		p.off++
	} else if digits() == 0 {
		p.fail("invalid number")
		return Value{}
	}
	isInt := true
	if p.off < len(p.b) && p.b[p.off] == '.' {
		p.off++
		isInt = false
		if digits() == 0 {
			p.fail("invalid number")
			return Value{}
		}
	}
	if p.off < len(p.b) && (p.b[p.off] == 'e' || p.b[p.off] == 'E') {
		p.off++
		isInt = false
		if p.off < len(p.b) && (p.b[p.off] == '+' || p.b[p.off] == '-') {
			p.off++
		}
		if digits() == 0 {
			p.fail("invalid number")
			return Value{}
		}
	}
	text := string(p.b[start:p.off])
	if isInt {
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return MakeInt(i)
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsInf(f, 0) {
		p.off = start
		p.fail("number %s out of range", text)
		return Value{}
	}
	return MakeFloat(f)
}
