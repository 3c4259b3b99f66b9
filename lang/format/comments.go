package format

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agentc/agentc/lang/syntax"
)

// participle keeps no comments and records as a node's end the start of the
// token that follows it, so the printer reads the source around the tree: a
// scanner finds where a node's last token really ends, where the next token
// starts, and on which line an offset lies. Between two tokens of code there
// is only whitespace and comments, which is all it needs to skip.

// scanner answers position questions about one source file.
type scanner struct {
	src        []byte
	cmts       []syntax.Comment
	lineStarts []int // byte offset of the start of every line
}

func newScanner(src []byte, cmts []syntax.Comment) *scanner {
	s := &scanner{src: src, cmts: cmts, lineStarts: []int{0}}
	for i, c := range src {
		if c == '\n' {
			s.lineStarts = append(s.lineStarts, i+1)
		}
	}
	return s
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// line returns the 0-based line of byte offset off.
func (s *scanner) line(off int) int {
	return sort.Search(len(s.lineStarts), func(i int) bool { return s.lineStarts[i] > off }) - 1
}

// sameLine reports whether the offsets a and b, both known, lie on one line.
func (s *scanner) sameLine(a, b int) bool { return a >= 0 && b >= 0 && s.line(a) == s.line(b) }

// commentAt returns the index of the comment covering byte offset off, or -1.
func (s *scanner) commentAt(off int) int {
	k := sort.Search(len(s.cmts), func(i int) bool { return s.cmts[i].Pos.Offset > off }) - 1
	if k >= 0 && off < s.cmts[k].End.Offset {
		return k
	}
	return -1
}

// tokEnd returns the end of the last token before off: off moved back over
// whitespace and comments. Applied to a node's end position it gives the end
// of the node's last token.
func (s *scanner) tokEnd(off int) int {
	i := min(max(off, 0), len(s.src))
	for i > 0 {
		if isSpace(s.src[i-1]) {
			i--
			continue
		}
		if k := s.commentAt(i - 1); k >= 0 && s.cmts[k].Pos.Offset < i {
			i = s.cmts[k].Pos.Offset
			continue
		}
		break
	}
	return i
}

// skip returns the start of the next token at or after off: off moved
// forward over whitespace and comments.
func (s *scanner) skip(off int) int {
	i := min(max(off, 0), len(s.src))
	for i < len(s.src) {
		if isSpace(s.src[i]) {
			i++
			continue
		}
		if k := s.commentAt(i); k >= 0 && s.cmts[k].End.Offset > i {
			i = s.cmts[k].End.Offset
			continue
		}
		break
	}
	return i
}

// blankBefore reports whether the whitespace just before off holds a blank
// line.
func (s *scanner) blankBefore(off int) bool {
	n := 0
	for i := min(off, len(s.src)) - 1; i >= 0 && isSpace(s.src[i]); i-- {
		if s.src[i] == '\n' {
			n++
		}
	}
	return n >= 2
}

// hasCommentIn reports whether a comment starts in (from, to).
func (s *scanner) hasCommentIn(from, to int) bool {
	k := sort.Search(len(s.cmts), func(i int) bool { return s.cmts[i].Pos.Offset > from })
	return k < len(s.cmts) && s.cmts[k].Pos.Offset < to
}

// posText renders offset off as line:col for messages.
func (s *scanner) posText(off int) string {
	l := s.line(off)
	return fmt.Sprintf("%d:%d", l+1, len([]rune(string(s.src[s.lineStarts[l]:off])))+1)
}

// commentText is the text printed for c: line endings normalized to LF and,
// for // comments, trailing blanks removed.
func commentText(c syntax.Comment) (text string, isLine bool) {
	if strings.HasPrefix(c.Text, "//") {
		return strings.TrimRight(c.Text, " \t\r"), true
	}
	return strings.ReplaceAll(c.Text, "\r\n", "\n"), false
}

// flushInline emits the comments that start before off while the printer is
// in the middle of a construct: a trailing comment stays on the current line,
// any other goes on its own continuation line.
func (p *printer) flushInline(off int) {
	p.flush(off, p.contCol(), false)
}

// flush emits every pending comment that starts before off, where the next
// token starts. A comment on the line where the last emitted token ended
// trails it; any other comment starts its own line indented to col, after a
// blank line when the author left one and item is set (comments between
// items). It reports whether a comment started its own line.
func (p *printer) flush(off, col int, item bool) (ownLine bool) {
	for p.ci < len(p.cmts) && p.cmts[p.ci].Pos.Offset < off {
		c := p.cmts[p.ci]
		p.ci++
		text, isLine := commentText(c)
		if p.hasContent() && p.lastEnd > 0 && p.sameLine(p.lastEnd-1, c.Pos.Offset) {
			p.cur.text = append(p.cur.text, ' ')
			at := len(p.cur.text)
			p.multiline(text)
			if isLine {
				p.cur.cmt = at
				p.brk, p.space = true, false
			} else {
				p.space = true
			}
		} else {
			if p.hasContent() {
				p.push()
			}
			if item && p.allowBlank && p.blankBefore(c.Pos.Offset) {
				p.blankLine()
			}
			p.startLine(col)
			p.markRegion()
			p.multiline(text)
			// What follows on the comment's source line (a block comment
			// can be followed by one) stays on its line.
			next := off
			if p.ci < len(p.cmts) && p.cmts[p.ci].Pos.Offset < off {
				next = p.cmts[p.ci].Pos.Offset
			}
			if !isLine && p.sameLine(c.End.Offset-1, next) {
				p.space = true
			} else {
				p.brk = true
			}
			p.allowBlank = true
			ownLine = true
		}
		p.lastEnd = c.End.Offset
	}
	return ownLine
}

// multiline appends text to the current line; lines after the first are
// copied verbatim (block comments, text-block content).
func (p *printer) multiline(text string) {
	for {
		nl := strings.IndexByte(text, '\n')
		if nl < 0 {
			p.cur.text = append(p.cur.text, text...)
			return
		}
		p.cur.text = append(p.cur.text, text[:nl]...)
		p.push()
		p.cur.raw = true
		text = text[nl+1:]
	}
}
