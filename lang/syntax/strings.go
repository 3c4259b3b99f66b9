package syntax

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Segment is one piece of a string after decoding: literal text or an
// interpolated expression (exactly one of the two is set).
type Segment struct {
	Text string
	Expr *Expr
}

// Segments returns the decoded pieces of s: escapes and {{ }} resolved, and
// for """ text blocks CRLF line ends read as LF and the leading newline,
// trailing blank line and common indentation removed. Adjacent literal pieces are merged.
func (s *String) Segments() []Segment {
	raw := make([]Segment, 0, len(s.Parts))
	for _, p := range s.Parts {
		if p.Text != nil {
			raw = append(raw, Segment{Text: *p.Text})
		} else if p.Interp != nil {
			raw = append(raw, Segment{Expr: p.Interp})
		}
	}
	if s.IsBlock() {
		// A text block's value does not depend on the file's line endings.
		for i := range raw {
			if raw[i].Expr == nil && strings.Contains(raw[i].Text, "\r\n") {
				raw[i].Text = strings.ReplaceAll(raw[i].Text, "\r\n", "\n")
			}
		}
		raw = dedent(raw)
	}
	out := make([]Segment, 0, len(raw))
	for _, seg := range raw {
		if seg.Expr != nil {
			out = append(out, seg)
			continue
		}
		text := unescape(seg.Text)
		if n := len(out); n > 0 && out[n-1].Expr == nil {
			out[n-1].Text += text
			continue
		}
		out = append(out, Segment{Text: text})
	}
	return out
}

// Literal returns the decoded value of s when it has no interpolation.
func (s *String) Literal() (string, bool) {
	segs := s.Segments()
	switch {
	case len(segs) == 0:
		return "", true
	case len(segs) == 1 && segs[0].Expr == nil:
		return segs[0].Text, true
	}
	return "", false
}

// unescape decodes \n \t \r \\ \" \{ \} \uXXXX and {{ }}. Invalid escapes
// were reported by the lexer and are kept verbatim.
func unescape(raw string) string {
	if !strings.ContainsAny(raw, `\{}`) {
		return raw
	}
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '\\' && i+1 < len(raw):
			i++
			switch raw[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'u':
				if i+4 < len(raw) {
					if v, err := strconv.ParseUint(raw[i+1:i+5], 16, 32); err == nil && utf8.ValidRune(rune(v)) {
						b.WriteRune(rune(v))
						i += 4
						continue
					}
				}
				b.WriteString(`\u`)
			case '\\', '"', '{', '}':
				b.WriteByte(raw[i])
			default:
				b.WriteByte('\\')
				b.WriteByte(raw[i])
			}
		case (c == '{' || c == '}') && i+1 < len(raw) && raw[i+1] == c:
			b.WriteByte(c)
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// dedent applies the text-block rules to raw (undecoded) segments:
//   - a first line holding only spaces is dropped with its newline;
//   - a last line holding only spaces is dropped with its newline;
//   - the longest run of spaces and tabs common to every line that has
//     content (text or an interpolation) is removed from each line.
func dedent(segs []Segment) []Segment {
	if len(segs) == 0 {
		return segs
	}
	segs = append([]Segment(nil), segs...)
	// Leading blank line.
	if first := segs[0]; first.Expr == nil {
		t := strings.TrimLeft(first.Text, " \t")
		if strings.HasPrefix(t, "\r\n") {
			segs[0].Text = t[2:]
		} else if strings.HasPrefix(t, "\n") {
			segs[0].Text = t[1:]
		}
	}
	// Trailing blank line.
	if last := segs[len(segs)-1]; last.Expr == nil {
		t := strings.TrimRight(last.Text, " \t")
		if nl := strings.LastIndexByte(t, '\n'); nl >= 0 && nl == len(t)-1 {
			t = t[:nl]
			t = strings.TrimSuffix(t, "\r")
			segs[len(segs)-1].Text = t
		}
	}
	// Common indentation.
	indent := -1
	var prefix string
	atStart, lineWS, lineHasContent := true, "", false
	finish := func() {
		if lineHasContent {
			if indent < 0 {
				indent, prefix = len(lineWS), lineWS
			} else {
				n := 0
				for n < len(prefix) && n < len(lineWS) && prefix[n] == lineWS[n] {
					n++
				}
				indent, prefix = n, prefix[:n]
			}
		}
		atStart, lineWS, lineHasContent = true, "", false
	}
	for _, seg := range segs {
		if seg.Expr != nil {
			atStart = false
			lineHasContent = true
			continue
		}
		for i := 0; i < len(seg.Text); i++ {
			c := seg.Text[i]
			switch {
			case c == '\n':
				finish()
			case atStart && (c == ' ' || c == '\t'):
				lineWS += string(c)
			case c == '\r':
			default:
				atStart = false
				lineHasContent = true
			}
		}
	}
	finish()
	if indent <= 0 {
		return segs
	}
	out := make([]Segment, len(segs))
	col := 0 // bytes of indentation already skipped on the current line; -1 after content
	for i, seg := range segs {
		if seg.Expr != nil {
			out[i] = seg
			col = -1
			continue
		}
		var b strings.Builder
		for j := 0; j < len(seg.Text); j++ {
			c := seg.Text[j]
			if c == '\n' {
				b.WriteByte(c)
				col = 0
				continue
			}
			if col >= 0 && col < indent && (c == ' ' || c == '\t') {
				col++
				continue
			}
			col = -1
			b.WriteByte(c)
		}
		out[i] = Segment{Text: b.String()}
	}
	return out
}
