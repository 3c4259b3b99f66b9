// Package jsonscan reads a JSON text that json.Valid accepted as the spans
// of its bytes, for the protocol adapters' fast paths: a request of the
// usual shape is read in one pass, without reflection, and anything else is
// left to encoding/json, which stays the definition of what a body means.
package jsonscan

import (
	"bytes"
	"unicode/utf8"
)

// Scanner reads the members and elements of a JSON text that json.Valid
// accepted, as the spans of its bytes: no value is decoded or copied.
// Valid JSON is what makes it short (every string and container is
// closed); it must never be given anything else.
type Scanner struct {
	b []byte
	i int
}

// New returns a scanner at the start of b, a JSON text json.Valid
// accepted (or a value of one).
func New(b []byte) Scanner { return Scanner{b: b} }

func (s *Scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// Object enters the object at the scanner's position; false when the value
// there is not an object.
func (s *Scanner) Object() bool {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	s.i++
	return true
}

// Array enters the array at the scanner's position; false when the value
// there is not an array.
func (s *Scanner) Array() bool {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return false
	}
	s.i++
	return true
}

// Member reads the next member of the object entered: its key as written
// between the quotes (escapes left as they are) and its value; ok false at
// the object's end, which it passes.
func (s *Scanner) Member() (key, val []byte, ok bool) {
	s.ws()
	if s.b[s.i] == ',' {
		s.i++
		s.ws()
	}
	if s.b[s.i] == '}' {
		s.i++
		return nil, nil, false
	}
	start := s.i
	s.skipString()
	key = s.b[start+1 : s.i-1]
	s.ws()
	s.i++ // ':'
	s.ws()
	return key, s.Value(), true
}

// Elem reads the next element of the array entered; ok false at the
// array's end, which it passes.
func (s *Scanner) Elem() (val []byte, ok bool) {
	s.ws()
	if s.b[s.i] == ',' {
		s.i++
		s.ws()
	}
	if s.b[s.i] == ']' {
		s.i++
		return nil, false
	}
	return s.Value(), true
}

// Value passes the value at the scanner's position and returns its bytes.
func (s *Scanner) Value() []byte {
	start := s.i
	switch s.b[s.i] {
	case '"':
		s.skipString()
	case '{', '[':
		depth := 0
		for {
			switch s.b[s.i] {
			case '"':
				s.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				break
			}
		}
	default: // a number, true, false or null
		for s.i < len(s.b) && bytes.IndexByte([]byte(" \t\r\n,}]"), s.b[s.i]) < 0 {
			s.i++
		}
	}
	return s.b[start:s.i:s.i]
}

// skipString passes the string at the scanner's position.
func (s *Scanner) skipString() {
	for s.i++; s.b[s.i] != '"'; s.i++ {
		if s.b[s.i] == '\\' {
			s.i++ // the escaped byte: \" does not end the string
		}
	}
	s.i++
}

// CountElems is the number of elements of a JSON array (valid JSON).
func CountElems(arr []byte) int {
	s := New(arr)
	if !s.Array() {
		return 0
	}
	n := 0
	for {
		if _, ok := s.Elem(); !ok {
			return n
		}
		n++
	}
}

// PlainKey reports whether key, a member's key as written, names none of
// names for encoding/json, which matches a key to a member's name
// case-insensitively (Unicode folding: "ſ" is an "s"), escapes decoded: a
// key with an escape, or one that folds to a name, is left to it.
func PlainKey(key []byte, names []string) bool {
	if bytes.IndexByte(key, '\\') >= 0 {
		return false
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return false
		}
	}
	return true
}

// String returns the JSON string literal lit as json.Unmarshal decodes it
// when it has no escape and is valid UTF-8 (ok false otherwise: the caller
// leaves it to encoding/json, which would unescape it or replace invalid
// bytes with U+FFFD): its bytes between the quotes, copied.
func String(lit []byte) (string, bool) {
	n := len(lit)
	if n < 2 || lit[0] != '"' || lit[n-1] != '"' {
		return "", false
	}
	in := lit[1 : n-1]
	for _, c := range in {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}
