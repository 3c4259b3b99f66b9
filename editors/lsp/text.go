package lsp

import (
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentc/agentc/lang/diag"
)

// text is one version of a document's content with its line starts, to
// convert between agentc's byte offsets and LSP's UTF-16 positions.
type text struct {
	src   []byte
	lines []int // byte offset of each line's first byte
}

func newText(src []byte) *text {
	t := &text{src: src, lines: []int{0}}
	for i, b := range src {
		if b == '\n' {
			t.lines = append(t.lines, i+1)
		}
	}
	return t
}

// position converts a byte offset (clamped to the text) into an LSP
// position. An offset inside a multi-byte rune counts up to that rune.
func (t *text) position(off int) Position {
	off = max(0, min(off, len(t.src)))
	line := sort.Search(len(t.lines), func(i int) bool { return t.lines[i] > off }) - 1
	start := t.lines[line]
	units := 0
	for i := start; i < off; {
		r, n := utf8.DecodeRune(t.src[i:])
		if i+n > off {
			break
		}
		units += runeUnits(r)
		i += n
	}
	return Position{Line: line, Character: units}
}

// runeUnits is the number of UTF-16 code units of r; an invalid byte,
// decoded as utf8.RuneError, counts as one.
func runeUnits(r rune) int {
	if n := utf16.RuneLen(r); n > 0 {
		return n
	}
	return 1
}

// offset converts an LSP position into a byte offset, clamping a line past
// the end to the end and a character past the line's end to the line's
// end (before its newline).
func (t *text) offset(p Position) int {
	if p.Line < 0 {
		return 0
	}
	if p.Line >= len(t.lines) {
		return len(t.src)
	}
	i := t.lines[p.Line]
	end := len(t.src)
	if p.Line+1 < len(t.lines) {
		end = t.lines[p.Line+1] - 1 // the newline
	}
	for units := 0; i < end && units < p.Character; {
		r, n := utf8.DecodeRune(t.src[i:])
		u := runeUnits(r)
		if units+u > p.Character {
			break
		}
		units += u
		i += n
	}
	return i
}

// rangeOf converts a span of this text into an LSP range. An invalid span
// is the file's first position.
func (t *text) rangeOf(s diag.Span) Range {
	if !s.IsValid() {
		return Range{}
	}
	end := s.End.Offset
	if end < s.Start.Offset {
		end = s.Start.Offset
	}
	return Range{Start: t.position(s.Start.Offset), End: t.position(end)}
}

// end is the position after the last byte.
func (t *text) end() Position { return t.position(len(t.src)) }

// apply returns the text after one content change.
func (t *text) apply(c contentChange) ([]byte, error) {
	if c.Range == nil {
		return []byte(c.Text), nil
	}
	start, end := t.offset(c.Range.Start), t.offset(c.Range.End)
	if end < start {
		return nil, fmt.Errorf("change range ends before it starts (%d:%d..%d:%d)",
			c.Range.Start.Line, c.Range.Start.Character, c.Range.End.Line, c.Range.End.Character)
	}
	out := make([]byte, 0, len(t.src)-(end-start)+len(c.Text))
	out = append(out, t.src[:start]...)
	out = append(out, c.Text...)
	out = append(out, t.src[end:]...)
	return out, nil
}

// pathOf converts a file URI into an absolute, clean OS path.
func pathOf(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("document URI %q: %w", uri, err)
	}
	if u.Scheme != "file" {
		return "", fmt.Errorf("document URI %q: only file: URIs are supported", uri)
	}
	p := u.Path
	if runtime.GOOS == "windows" {
		p = strings.TrimPrefix(p, "/")
	}
	p = filepath.Clean(filepath.FromSlash(p))
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("document URI %q: the path is not absolute", uri)
	}
	return p, nil
}

// uriOf converts an absolute OS path into a file URI.
func uriOf(path string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}
