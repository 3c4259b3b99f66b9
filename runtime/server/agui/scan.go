package agui

import "bytes"

// scanner reads the members and elements of a JSON text that json.Valid
// accepted, as the spans of its bytes: no value is decoded or copied.
// Valid JSON is what makes it short (every string and container is
// closed); it must never be given anything else.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// object enters the object at the scanner's position; false when the value
// there is not an object.
func (s *scanner) object() bool {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return false
	}
	s.i++
	return true
}

// array enters the array at the scanner's position; false when the value
// there is not an array.
func (s *scanner) array() bool {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return false
	}
	s.i++
	return true
}

// member reads the next member of the object entered: its key as written
// between the quotes (escapes left as they are) and its value; ok false at
// the object's end, which it passes.
func (s *scanner) member() (key, val []byte, ok bool) {
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
	return key, s.value(), true
}

// elem reads the next element of the array entered; ok false at the
// array's end, which it passes.
func (s *scanner) elem() (val []byte, ok bool) {
	s.ws()
	if s.b[s.i] == ',' {
		s.i++
		s.ws()
	}
	if s.b[s.i] == ']' {
		s.i++
		return nil, false
	}
	return s.value(), true
}

// value passes the value at the scanner's position and returns its bytes.
func (s *scanner) value() []byte {
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
func (s *scanner) skipString() {
	for s.i++; s.b[s.i] != '"'; s.i++ {
		if s.b[s.i] == '\\' {
			s.i++ // the escaped byte: \" does not end the string
		}
	}
	s.i++
}

// countElems is the number of elements of a JSON array (valid JSON).
func countElems(arr []byte) int {
	s := scanner{b: arr}
	if !s.array() {
		return 0
	}
	n := 0
	for {
		if _, ok := s.elem(); !ok {
			return n
		}
		n++
	}
}

// plainKey reports whether key, a member's key as written, names none of
// names for encoding/json, which matches a key to a member's name
// case-insensitively (Unicode folding: "ſ" is an "s"), escapes decoded: a
// key with an escape, or one that folds to a name, is left to it.
func plainKey(key []byte, names []string) bool {
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
