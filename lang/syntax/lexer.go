package syntax

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/agentc/agentc/lang/diag"
)

// Token types produced by the lexer. The lexer is stateful: a mode stack
// tracks code, "..." strings, """...""" text blocks and {expr}
// interpolations inside them, so strings may nest inside interpolations.
// The constants are untyped so that they serve both token (the lexer's
// own, compact) and lexer.Token (participle's, for the oracle).
const (
	tokEOF        = -1 // lexer.EOF
	tokComment    = -(iota + 2)
	tokIdent      // identifiers and keywords
	tokInt        // 42
	tokFloat      // 4.2, 1e3
	tokDuration   // 200ms, 1h30m
	tokPunct      // operators and delimiters
	tokStrOpen    // "
	tokStrClose   // "
	tokTextOpen   // """
	tokTextClose  // """
	tokText       // literal characters inside a string or text block (escapes kept raw)
	tokInterpOpen // { inside a string
	tokInterpEnd  // } closing an interpolation
)

var tokenNames = map[string]lexer.TokenType{
	"EOF":        tokEOF,
	"Comment":    tokComment,
	"Ident":      tokIdent,
	"Int":        tokInt,
	"Float":      tokFloat,
	"Duration":   tokDuration,
	"Punct":      tokPunct,
	"StrOpen":    tokStrOpen,
	"StrClose":   tokStrClose,
	"TextOpen":   tokTextOpen,
	"TextClose":  tokTextClose,
	"Text":       tokText,
	"InterpOpen": tokInterpOpen,
	"InterpEnd":  tokInterpEnd,
}

// token is a token of one file: participle's lexer.Token without the file
// name (all tokens of a file share it; the parser adds it to positions),
// without the value (it is the source text from Offset, Len bytes long)
// and with 32-bit fields (sources are at most MaxSourceSize bytes). A
// file's token slice is a third of the size of a []lexer.Token and holds no
// pointer: less to allocate and clear, nothing for the collector to scan.
type token struct {
	Type   tokType
	Offset int32
	Len    int32 // 0 for synthetic closers and EOF
	Line   int32
	Column int32
}

type tokType int32

// pos is the position of t in file.
func (t *token) pos(file string) lexer.Position {
	return lexer.Position{Filename: file, Offset: int(t.Offset), Line: int(t.Line), Column: int(t.Column)}
}

// value is t's text in text, the source of its file.
func (t *token) value(text string) string { return text[t.Offset : t.Offset+t.Len] }

// end is the position just past t in file, whose source is text.
func (t *token) end(file, text string) lexer.Position {
	p := t.pos(file)
	advance(&p, t.value(text))
	return p
}

// advance is p.Advance(v), with a fast path for the usual token: ASCII on
// one line, where the column moves by the length (Advance counts newlines
// and runes in three passes; nodes' end positions call it for every node).
func advance(p *lexer.Position, v string) {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c >= utf8.RuneSelf || c == '\n' {
			p.Advance(v)
			return
		}
	}
	p.Offset += len(v)
	p.Column += len(v)
}

// lex converts t to participle's form.
func (t *token) lex(file, text string) lexer.Token {
	return lexer.Token{Type: lexer.TokenType(t.Type), Value: t.value(text), Pos: t.pos(file)}
}

// tokenAt is a token of type typ, n bytes long, at p.
func tokenAt(typ tokType, n int, p lexer.Position) token {
	return token{Type: typ, Len: int32(n), Offset: int32(p.Offset), Line: int32(p.Line), Column: int32(p.Column)}
}

// lexTokens converts a file's tokens to participle's form.
func lexTokens(file, text string, toks []token) []lexer.Token {
	out := make([]lexer.Token, len(toks))
	for i := range toks {
		out[i] = toks[i].lex(file, text)
	}
	return out
}

// lexDefinition adapts the hand-written lexer to participle. Parsing never
// goes through Lex (declarations are fed as pre-lexed token slices); Lex is
// here so the definition is complete and usable by participle's tooling.
type lexDefinition struct{}

func (lexDefinition) Symbols() map[string]lexer.TokenType { return tokenNames }

func (lexDefinition) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	src, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	toks, diags := lexAll(filename, src)
	if len(diags) > 0 {
		return nil, diags[0]
	}
	return &sliceLexer{toks: toks}, nil
}

// sliceLexer replays a token slice; the last token is always EOF.
type sliceLexer struct {
	toks []lexer.Token
	i    int
}

func (l *sliceLexer) Next() (lexer.Token, error) {
	if l.i >= len(l.toks) {
		return l.toks[len(l.toks)-1], nil
	}
	t := l.toks[l.i]
	l.i++
	return t, nil
}

// lexing modes.
type mode uint8

const (
	modeCode   mode = iota // top level or inside an interpolation
	modeString             // inside "..."
	modeText               // inside """..."""
)

type frame struct {
	mode  mode
	depth int // brace depth inside an interpolation (modeCode only)
	open  lexer.Position
	// toks and diags are how many tokens and diagnostics there were when
	// the frame opened: a string opened inside an interpolation that
	// reaches the end of its line is undone back to them (unclosedInterp).
	toks, diags int
}

// maxLexErrors caps lexical diagnostics per file so garbage input stays cheap.
const maxLexErrors = 20

type scanner struct {
	file  string
	src   []byte
	text  string // src as one string: token values are substrings of it
	pos   lexer.Position
	stack []frame
	toks  []token
	diags []diag.Diagnostic
	bad   map[string]bool // non-ASCII names already reported
}

// lexAll is scan with participle's tokens.
func lexAll(file string, src []byte) ([]lexer.Token, []diag.Diagnostic) {
	toks, text, diags := scan(file, src)
	return lexTokens(file, text, toks), diags
}

// scan splits src into tokens (comments included, whitespace dropped),
// whose values are substrings of text, src as a string. It never fails:
// problems become diagnostics and the token stream stays well-formed
// (every string and interpolation is closed, EOF is last).
func scan(file string, src []byte) (toks []token, text string, diags []diag.Diagnostic) {
	s := &scanner{
		file:  file,
		src:   src,
		text:  string(src),
		pos:   lexer.Position{Filename: file, Line: 1, Column: 1},
		stack: []frame{{mode: modeCode}},
		toks:  make([]token, 0, len(src)/3+1), // dense code has ~3 bytes per token
	}
	if bytes.HasPrefix(src, utf8BOM) { // a UTF-8 byte-order mark is accepted and ignored
		s.pos.Offset = len(utf8BOM)
	}
	s.run()
	return s.toks, s.text, s.diags
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func (s *scanner) errorf(code diag.Code, at, end lexer.Position, format string, args ...any) {
	if len(s.diags) == maxLexErrors {
		s.diags = append(s.diags, diag.Diagnostic{Severity: diag.Error, Code: code, Summary: "too many lexical errors; giving up on this file", Subject: spanOf(at, end)})
	}
	if len(s.diags) >= maxLexErrors {
		return
	}
	s.diags = append(s.diags, diag.Diagnostic{Severity: diag.Error, Code: code, Summary: fmt.Sprintf(format, args...), Subject: spanOf(at, end)})
}

// emit appends the token of the next n bytes and moves past it (its value
// is s.text at its offset: no allocation per token).
func (s *scanner) emit(typ tokType, n int) {
	s.push(typ, n)
	s.advance(n)
}

// emitASCII is emit for a token known to hold only ASCII bytes and no
// newline (names, numbers, punctuation, quotes, braces).
func (s *scanner) emitASCII(typ tokType, n int) {
	s.push(typ, n)
	s.pos.Offset += n
	s.pos.Column += n
}

// push appends a token of the next n bytes at the cursor.
func (s *scanner) push(typ tokType, n int) {
	if len(s.toks) == cap(s.toks) {
		s.toks = slices.Grow(s.toks, 1)
	}
	s.toks = s.toks[:len(s.toks)+1]
	t := &s.toks[len(s.toks)-1]
	t.Type = typ
	t.Len = int32(n)
	t.Offset = int32(s.pos.Offset)
	t.Line = int32(s.pos.Line)
	t.Column = int32(s.pos.Column)
}

// advance moves the cursor n bytes forward, counting lines and rune columns.
func (s *scanner) advance(n int) {
	chunk := s.src[s.pos.Offset : s.pos.Offset+n]
	s.pos.Offset += n
	if nl := bytes.LastIndexByte(chunk, '\n'); nl >= 0 {
		s.pos.Line += bytes.Count(chunk, []byte{'\n'})
		s.pos.Column = 1 + utf8.RuneCount(chunk[nl+1:])
	} else {
		s.pos.Column += utf8.RuneCount(chunk)
	}
}

func (s *scanner) top() *frame { return &s.stack[len(s.stack)-1] }

func (s *scanner) run() {
	for s.pos.Offset < len(s.src) {
		if len(s.diags) > maxLexErrors {
			break
		}
		switch s.top().mode {
		case modeCode:
			s.code()
		case modeString, modeText:
			s.str()
		}
	}
	// Close whatever is still open so the token stream stays balanced. The
	// synthetic closers have empty values: they occupy no source text.
	for i := len(s.stack) - 1; i > 0; i-- {
		f := s.stack[i]
		switch f.mode {
		case modeString:
			s.errorf(diag.UnterminatedText, f.open, s.pos, "string is not terminated")
			s.toks = append(s.toks, tokenAt(tokStrClose, 0, s.pos))
		case modeText:
			s.errorf(diag.UnterminatedText, f.open, s.pos, `text block is not terminated (missing """)`)
			s.toks = append(s.toks, tokenAt(tokTextClose, 0, s.pos))
		case modeCode:
			s.errorf(diag.UnterminatedText, f.open, s.pos, "interpolation is not terminated (missing })")
			s.toks = append(s.toks, tokenAt(tokInterpEnd, 0, s.pos))
		}
	}
	s.stack = s.stack[:1]
	s.toks = append(s.toks, tokenAt(tokEOF, 0, s.pos))
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

var punct2 = []string{"->", "==", "!=", "<=", ">=", ".."}

// isPunct2 reports whether a, b spell one of punct2.
func isPunct2(a, b byte) bool {
	switch b {
	case '>':
		return a == '-'
	case '=':
		return a == '=' || a == '!' || a == '<' || a == '>'
	case '.':
		return a == '.'
	}
	return false
}

const punct1 = "+-*/%<>=!.,:?|()[]{}"

func (s *scanner) code() {
	src, i := s.src, s.pos.Offset
	c := src[i]
	switch {
	case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		// Whitespace is ASCII: count lines and columns inline.
		j, line, col := i, s.pos.Line, s.pos.Column
		for ; j < len(src); j++ {
			switch src[j] {
			case '\n':
				line, col = line+1, 1
				continue
			case ' ', '\t', '\r':
				col++
				continue
			}
			break
		}
		s.pos.Offset, s.pos.Line, s.pos.Column = j, line, col
		return
	case c == '/' && i+1 < len(src) && src[i+1] == '/':
		j := bytes.IndexByte(src[i:], '\n')
		if j < 0 {
			j = len(src) - i
		}
		n := j
		if n > 0 && src[i+n-1] == '\r' {
			n--
		}
		s.emit(tokComment, n)
		return
	case c == '/' && i+1 < len(src) && src[i+1] == '*':
		j := bytes.Index(src[i+2:], []byte("*/"))
		if j < 0 {
			start := s.pos
			s.advance(len(src) - i)
			s.errorf(diag.UnterminatedText, start, s.pos, "block comment is not terminated (missing */)")
			return
		}
		s.emit(tokComment, j+4)
		return
	case c == '"':
		if bytes.HasPrefix(src[i:], []byte(`"""`)) {
			s.stack = append(s.stack, frame{mode: modeText, open: s.pos})
			s.emitASCII(tokTextOpen, 3)
			return
		}
		if s.quoteEndsString() {
			s.endInterp(len(s.stack) - 1) // the quote is read again, in the string, and closes it
			return
		}
		s.stack = append(s.stack, frame{mode: modeString, open: s.pos, toks: len(s.toks), diags: len(s.diags)})
		s.emitASCII(tokStrOpen, 1)
		return
	case isIdentStart(c):
		j := i + 1
		for j < len(src) && (isIdentStart(src[j]) || isDigit(src[j])) {
			j++
		}
		if j < len(src) && src[j] >= utf8.RuneSelf && nameRune(src[j:]) > 0 {
			s.nonASCIIName()
			return
		}
		s.emitASCII(tokIdent, j-i)
		return
	case isDigit(c):
		s.number()
		return
	}
	if len(s.stack) > 1 && (c == '{' || c == '}') {
		f := s.top()
		if c == '{' {
			f.depth++
		} else if f.depth == 0 {
			s.stack = s.stack[:len(s.stack)-1]
			s.emitASCII(tokInterpEnd, 1)
			return
		} else {
			f.depth--
		}
	}
	if i+1 < len(src) && isPunct2(c, src[i+1]) {
		s.emitASCII(tokPunct, 2)
		return
	}
	if strings.IndexByte(punct1, c) >= 0 {
		s.emitASCII(tokPunct, 1)
		return
	}
	if nameRune(src[i:]) > 0 {
		s.nonASCIIName()
		return
	}
	r, size := utf8.DecodeRune(src[i:])
	start := s.pos
	s.advance(size)
	s.errorf(diag.SyntaxError, start, s.pos, "unexpected character %q", r)
}

// nameRune is the size of the rune at the start of b when it could be part
// of a name written with letters outside ASCII (a letter, digit or mark
// above U+007F), else 0.
func nameRune(b []byte) int {
	r, size := utf8.DecodeRune(b)
	if r < utf8.RuneSelf || r == utf8.RuneError || !(unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)) {
		return 0
	}
	return size
}

// nonASCIIName lexes a name holding letters outside ASCII as one name
// token, so the parser sees a name, and reports it once per file: names
// are ASCII (one error per cause, not one per character and use).
func (s *scanner) nonASCIIName() {
	src, i := s.src, s.pos.Offset
	j := i
	for j < len(src) {
		if c := src[j]; isIdentStart(c) || isDigit(c) {
			j++
		} else if n := nameRune(src[j:]); n > 0 {
			j += n
		} else {
			break
		}
	}
	name, start := s.text[i:j], s.pos
	s.emit(tokIdent, j-i)
	if !s.bad[name] {
		if s.bad == nil {
			s.bad = map[string]bool{}
		}
		s.bad[name] = true
		s.errorf(diag.SyntaxError, start, s.pos, "name %q is not ASCII: names are made of ASCII letters, digits and _", name)
	}
}

// number lexes 12, 1.5, 2e10, and durations such as 200ms, 1h30m, 2d.
func (s *scanner) number() {
	src, i := s.src, s.pos.Offset
	j := i
	for j < len(src) && isDigit(src[j]) {
		j++
	}
	// Duration: digits followed by a unit, possibly repeated.
	if k := durationUnit(src[j:]); k > 0 {
		for {
			j += k
			d := j
			for d < len(src) && isDigit(src[d]) {
				d++
			}
			if d == j {
				break
			}
			k = durationUnit(src[d:])
			if k == 0 {
				break
			}
			j = d
		}
		if j < len(src) && (isIdentStart(src[j]) || isDigit(src[j])) {
			s.badNumber(j)
			return
		}
		s.emitASCII(tokDuration, j-i)
		return
	}
	typ := tokType(tokInt)
	if j+1 < len(src) && src[j] == '.' && isDigit(src[j+1]) {
		typ = tokFloat
		j++
		for j < len(src) && isDigit(src[j]) {
			j++
		}
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		k := j + 1
		if k < len(src) && (src[k] == '+' || src[k] == '-') {
			k++
		}
		if k < len(src) && isDigit(src[k]) {
			typ = tokFloat
			for k < len(src) && isDigit(src[k]) {
				k++
			}
			j = k
		}
	}
	if j < len(src) && (isIdentStart(src[j])) {
		s.badNumber(j)
		return
	}
	s.emitASCII(typ, j-i)
}

func (s *scanner) badNumber(j int) {
	for j < len(s.src) && (isIdentStart(s.src[j]) || isDigit(s.src[j]) || s.src[j] == '.') {
		j++
	}
	start := s.pos
	text := string(s.src[start.Offset:j])
	s.advance(j - start.Offset)
	s.errorf(diag.InvalidNumber, start, s.pos, "invalid number or duration %q (units: ms, s, m, h, d)", text)
}

// durationUnit returns the length of a duration unit at the start of b.
func durationUnit(b []byte) int {
	switch {
	case bytes.HasPrefix(b, []byte("ms")):
		return 2
	case len(b) > 0 && (b[0] == 's' || b[0] == 'm' || b[0] == 'h' || b[0] == 'd'):
		return 1
	}
	return 0
}

// str lexes inside "..." or """...""": literal text runs, escapes, {{ }}
// brace escapes, the closing quote, and the start of an interpolation.
func (s *scanner) str() {
	src, i := s.src, s.pos.Offset
	f := s.top()
	text := f.mode == modeText
	j := i
	for j < len(src) {
		c := src[j]
		if c == '\\' {
			if j+1 >= len(src) {
				j++
				break
			}
			if !validEscape(src[j+1]) {
				at := s.posAt(j)
				s.errorf(diag.InvalidEscape, at, s.posAt(j+2), "invalid escape \\%c in string", src[j+1])
			}
			j += 2
			continue
		}
		if c == '{' || c == '}' {
			if j+1 < len(src) && src[j+1] == c {
				j += 2
				continue
			}
			break
		}
		if c == '"' {
			if !text || bytes.HasPrefix(src[j:], []byte(`"""`)) {
				break
			}
		}
		if c == '\n' && !text {
			break
		}
		j++
	}
	if j > i {
		s.emit(tokText, j-i)
		return
	}
	c := src[i]
	switch {
	case c == '{':
		s.stack = append(s.stack, frame{mode: modeCode, open: s.pos, toks: len(s.toks), diags: len(s.diags)})
		s.emitASCII(tokInterpOpen, 1)
	case c == '}':
		start := s.pos
		s.emitASCII(tokText, 1)
		s.errorf(diag.InvalidEscape, start, s.pos, "unmatched } in string (write }} for a literal brace)")
	case c == '"' && text:
		s.stack = s.stack[:len(s.stack)-1]
		s.emitASCII(tokTextClose, 3)
	case c == '"':
		s.stack = s.stack[:len(s.stack)-1]
		s.emitASCII(tokStrClose, 1)
	case c == '\n' && s.inInterp():
		s.unclosedInterp()
	case c == '\n':
		s.errorf(diag.UnterminatedText, f.open, s.pos, `string is not terminated before the end of the line (use """ for text blocks)`)
		s.stack = s.stack[:len(s.stack)-1]
		s.toks = append(s.toks, tokenAt(tokStrClose, 0, s.pos))
	}
}

// inInterp reports whether the string being lexed opened inside an
// interpolation of a one-line string ("a {f("x")} b").
func (s *scanner) inInterp() bool {
	n := len(s.stack)
	return n >= 3 && s.stack[n-1].mode == modeString && s.stack[n-2].mode == modeCode && s.stack[n-3].mode == modeString
}

// quoteEndsString reports whether a quote in an interpolation of a one-line
// string, outside any brace, after an operand ("hello {name" ...), is the
// quote that ends the string rather than the start of a string in the
// expression: no string can follow an operand.
func (s *scanner) quoteEndsString() bool {
	n := len(s.stack)
	if n < 2 || s.stack[n-1].mode != modeCode || s.stack[n-2].mode != modeString || s.stack[n-1].depth > 0 {
		return false
	}
	for i := len(s.toks) - 1; i >= 0; i-- {
		if t := s.toks[i]; t.Type != tokComment {
			return endsOperand(t.Type, t.value(s.text))
		}
	}
	return false
}

// endsOperand reports whether a token of type typ and value v can end an
// operand: a name (not an operator word), a number, a duration, a string,
// ) or ].
func endsOperand(typ tokType, v string) bool {
	switch typ {
	case tokIdent:
		return v != "and" && v != "or" && v != "not" && v != "in"
	case tokInt, tokFloat, tokDuration, tokStrClose, tokTextClose:
		return true
	case tokPunct:
		return v == ")" || v == "]"
	}
	return false
}

// unclosedInterp handles a string opened inside an interpolation that
// reaches the end of its line: the likelier cause is an interpolation not
// closed before the quote that ends its string ("hello {f(name"). The
// string is undone (its tokens and diagnostics) and lexing resumes at that
// quote in the enclosing string.
func (s *scanner) unclosedInterp() {
	n := len(s.stack)
	str := s.stack[n-1]
	s.toks, s.diags, s.stack, s.pos = s.toks[:str.toks], s.diags[:str.diags], s.stack[:n-1], str.open
	s.endInterp(n - 2)
}

// endInterp ends the interpolation stack[i], which its author did not
// close, at the quote ending its string: a synthetic closer and one error,
// naming the interpolation.
func (s *scanner) endInterp(i int) {
	interp := s.stack[i]
	s.stack = s.stack[:i]
	s.toks = append(s.toks, tokenAt(tokInterpEnd, 0, synthEnd(s.file, s.text, s.toks)))
	s.errorf(diag.UnterminatedText, interp.open, s.pos, "interpolation is not closed before the end of the string (missing }; write {{ for a literal brace)")
}

// synthEnd is where a synthetic closer after toks goes: just past the last
// token that is not a comment, where a node it ends ends too.
func synthEnd(file, text string, toks []token) lexer.Position {
	for i := len(toks) - 1; i >= 0; i-- {
		if toks[i].Type != tokComment {
			return toks[i].end(file, text)
		}
	}
	return lexer.Position{}
}

// posAt computes the position of byte offset off ≥ s.pos.Offset on the
// current line run (used only for escape diagnostics).
func (s *scanner) posAt(off int) lexer.Position {
	p := s.pos
	chunk := s.src[p.Offset:off]
	p.Offset = off
	if nl := bytes.LastIndexByte(chunk, '\n'); nl >= 0 {
		p.Line += bytes.Count(chunk, []byte{'\n'})
		p.Column = 1 + utf8.RuneCount(chunk[nl+1:])
	} else {
		p.Column += utf8.RuneCount(chunk)
	}
	return p
}

func validEscape(c byte) bool {
	switch c {
	case 'n', 't', 'r', '\\', '"', '{', '}', 'u':
		return true
	}
	return false
}

// spanOf converts participle positions into a diag.Span. This and Pos below
// are the only places where lexer.Position becomes diag.Pos.
func spanOf(start, end lexer.Position) diag.Span {
	return diag.Span{File: start.Filename, Start: posOf(start), End: posOf(end)}
}

func posOf(p lexer.Position) diag.Pos {
	return diag.Pos{Offset: p.Offset, Line: p.Line, Col: p.Column}
}
