package syntax

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"

	"github.com/agentc/agentc/lang/diag"
)

// Limits guarded before participle sees any input.
const (
	// MaxSourceSize is the largest source file accepted, in bytes.
	MaxSourceSize = 8 << 20
	// MaxNesting is the deepest bracket nesting accepted inside one declaration.
	MaxNesting = 200
)

// BadDecl stands in for a declaration that did not parse. It keeps the
// declaration's keyword and, when recognizable, its name, so later passes do
// not report references to it as unknown.
type BadDecl struct {
	At
	Keyword string
	Name    *Ident
}

func (*BadDecl) decl() {}

// declUnit wraps one declaration: the parser is invoked once per top-level
// declaration so a syntax error in one does not hide errors in the others.
type declUnit struct {
	Decl Decl `parser:"@@"`
}

var parserOptions = []participle.Option{
	participle.Lexer(lexDefinition{}),
	participle.Elide("Comment"),
	participle.UseLookahead(1),
	participle.Union[Decl](&Workflow{}, &Import{}, &BlockDecl{}, &TypeDecl{}, &Tool{}, &Skill{}, &State{}, &Agent{}, &Graph{}, &Serve{}, &Test{}),
	participle.Union[NodeBody](&CallNode{}, &SetNode{}, &MapNode{}, &InterruptNode{}, &JoinNode{}, &WaitNode{}),
	participle.Union[Primary](&Call{}, &Literal{}, &Name{}, &Paren{}, &ListLit{}, &RecordLit{}, &String{}),
}

// The participle parsers are built on first use: building them costs
// milliseconds that a process which never parses with participle (the
// recursive-descent parser serves Parse) should not pay at start-up.
var (
	declParser = sync.OnceValue(func() *participle.Parser[declUnit] {
		return participle.MustBuild[declUnit](parserOptions...)
	})
	fileParser = sync.OnceValue(func() *participle.Parser[File] {
		return participle.MustBuild[File](parserOptions...)
	})
)

// Grammar returns the EBNF of the whole language, as participle sees it.
// spec/grammar.ebnf is this text (pinned by a test).
func Grammar() string { return fileParser().String() + "\n" }

// Parse parses one source file. It always returns a File (possibly with
// BadDecl entries) and every diagnostic found: at least one syntax error per
// broken top-level declaration. name should be a relative, slash-separated
// path; it appears in every span.
func Parse(name string, src []byte) (*File, []diag.Diagnostic) {
	f := &File{Name: name}
	f.Pos = lexer.Position{Filename: name, Line: 1, Column: 1}
	f.EndPos = f.Pos
	if len(src) > MaxSourceSize {
		d := diag.Diagnostic{Severity: diag.Error, Code: diag.FileTooLarge,
			Summary: fmt.Sprintf("file is %d bytes; the limit is %d", len(src), MaxSourceSize),
			Subject: diag.Span{File: name, Start: diag.Pos{Line: 1, Col: 1}, End: diag.Pos{Line: 1, Col: 1}}}
		return f, []diag.Diagnostic{d}
	}
	if !utf8.Valid(src) {
		return f, []diag.Diagnostic{invalidUTF8(name, src)}
	}
	toks, text, diags := scan(name, src)
	f.EndPos = toks[len(toks)-1].pos(name)
	code := toks[:0] // comments are filtered out in place
	for i := range toks {
		t := &toks[i]
		switch {
		case t.Type == tokComment:
			f.Comments = append(f.Comments, Comment{Text: t.value(text), Pos: posOf(t.pos(name)), End: posOf(t.end(name, text))})
		case len(code) == i: // no comment so far: the token is in place
			code = code[:i+1]
		default:
			code = append(code, *t)
		}
	}
	if len(diags) >= maxLexErrors {
		return f, diags // garbage: don't pile syntax errors on top
	}
	alloc := &rdAlloc{limit: chunkLimit(len(code))}
	lexical := len(diags)
	for _, unit := range splitDecls(name, text, code) {
		decl, d := parseDecl(unit, alloc)
		if d != nil && !within(diags[:lexical], unit) {
			diags = append(diags, *d) // a lexical error of the declaration is its one error
		}
		if decl != nil {
			f.Decls = append(f.Decls, decl)
		}
	}
	return f, diags
}

// within reports whether one of ds starts inside the source of u.
func within(ds []diag.Diagnostic, u unit) bool {
	from, to := int(u.toks[0].Offset), u.toks[len(u.toks)-1].end(u.file, u.text).Offset
	for _, d := range ds {
		if d.Subject.Start.Offset >= from && d.Subject.Start.Offset <= to {
			return true
		}
	}
	return false
}

// invalidUTF8 reports the first invalid byte.
func invalidUTF8(name string, src []byte) diag.Diagnostic {
	p := lexer.Position{Filename: name, Line: 1, Column: 1}
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size <= 1 {
			end := p
			end.Offset++
			end.Column++
			return diag.Diagnostic{Severity: diag.Error, Code: diag.InvalidUTF8,
				Summary: fmt.Sprintf("file is not valid UTF-8 text (invalid byte 0x%02x)", src[i]),
				Subject: spanOf(p, end)}
		}
		p.Advance(string(src[i : i+size]))
		i += size
	}
	return diag.Diagnostic{Severity: diag.Error, Code: diag.InvalidUTF8, Summary: "file is not valid UTF-8 text", Subject: spanOf(p, p)}
}

// endOf is the position just past token t.
func endOf(t lexer.Token) lexer.Position {
	p := t.Pos
	p.Advance(t.Value)
	return p
}

// unit is the token range of one top-level declaration of file (whose
// source is text), EOF not included.
type unit struct {
	file, text string
	toks       []token
	maxDepth   int
	deepAt     *token // the first token past MaxNesting, if any
}

// splitDecls cuts the token stream at declaration keywords that stand at
// bracket depth 0 and begin a line (so `output summary` inside a graph
// header is not a cut). If a unit never closes its brackets, it is cut again at
// declaration keywords in column 1, so one missing "}" does not swallow the
// rest of the file.
func splitDecls(file, text string, toks []token) []unit {
	toks = toks[:len(toks)-1] // drop EOF
	var units []unit
	start, depth := 0, 0
	flush := func(end int, unbalanced bool) {
		if end <= start {
			return
		}
		if unbalanced {
			units = append(units, recut(file, text, toks[start:end])...)
		} else {
			units = append(units, measure(file, text, toks[start:end]))
		}
		start = end
	}
	for i := range toks {
		t := &toks[i]
		if depth == 0 && i > start && t.Type == tokIdent && t.Line > toks[i-1].Line && IsDeclKeyword(t.value(text)) {
			flush(i, false)
		}
		depth = nextDepth(depth, t, text)
	}
	flush(len(toks), depth > 0)
	return units
}

func nextDepth(depth int, t *token, text string) int {
	switch t.Type {
	case tokPunct:
		switch t.value(text) {
		case "{", "(", "[":
			return depth + 1
		case "}", ")", "]":
			if depth > 0 {
				return depth - 1
			}
		}
	case tokStrOpen, tokTextOpen, tokInterpOpen:
		return depth + 1
	case tokStrClose, tokTextClose, tokInterpEnd:
		if depth > 0 {
			return depth - 1
		}
	}
	return depth
}

// recut splits an unbalanced range at column-1 declaration keywords.
func recut(file, text string, toks []token) []unit {
	var out []unit
	start := 0
	for i, t := range toks {
		if i > start && t.Column == 1 && t.Type == tokIdent && IsDeclKeyword(t.value(text)) {
			out = append(out, measure(file, text, toks[start:i]))
			start = i
		}
	}
	return append(out, measure(file, text, toks[start:]))
}

func measure(file, text string, toks []token) unit {
	u := unit{file: file, text: text, toks: toks}
	depth := 0
	for i := range toks {
		depth = nextDepth(depth, &toks[i], text)
		if depth > u.maxDepth {
			u.maxDepth = depth
			if depth > MaxNesting && u.deepAt == nil {
				u.deepAt = &toks[i]
			}
		}
	}
	return u
}

// parseDecl parses one unit with the hand-written parser (rd.go), allocating
// its nodes from alloc. On failure it returns a BadDecl and the first syntax
// error.
func parseDecl(u unit, alloc *rdAlloc) (Decl, *diag.Diagnostic) {
	return parseUnit(u, alloc.parseDecl)
}

// parseDeclParticiple is parseDecl through participle, the grammar's
// executable definition; rd_test.go uses it as the oracle.
func parseDeclParticiple(u unit) (Decl, *diag.Diagnostic) {
	return parseUnit(u, func(u unit, eof token) (Decl, *diag.Diagnostic) {
		return participleDecl(lexTokens(u.file, u.text, u.toks), eof.lex(u.file, u.text))
	})
}

// participleDecl parses one declaration's tokens (EOF excluded) with
// participle.
func participleDecl(toks []lexer.Token, eof lexer.Token) (Decl, *diag.Diagnostic) {
	all := make([]lexer.Token, 0, len(toks)+1)
	all = append(append(all, toks...), eof)
	plex, err := lexer.Upgrade(&sliceLexer{toks: all})
	if err != nil {
		return nil, syntaxDiag(err, toks[0])
	}
	du, err := declParser().ParseFromLexer(plex)
	if err != nil {
		return nil, syntaxDiag(err, toks[0])
	}
	fixEnds(reflect.ValueOf(du.Decl), toks)
	return du.Decl, nil
}

// fixEnds rewrites participle's EndPos (the start of the token after a
// node) to the AST's convention: just past the node's last token, or the
// node's Pos when it consumed no token. Only the participle path needs it.
func fixEnds(v reflect.Value, toks []lexer.Token) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			fixEnds(v.Elem(), toks)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			fixEnds(v.Index(i), toks)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(At{}) {
			at := v.Addr().Interface().(*At)
			// The last token starting before EndPos ends the node.
			i := sort.Search(len(toks), func(i int) bool { return toks[i].Pos.Offset >= at.EndPos.Offset })
			if i == 0 || toks[i-1].Pos.Offset < at.Pos.Offset {
				at.EndPos = at.Pos
			} else {
				at.EndPos = endOf(toks[i-1])
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fixEnds(v.Field(i), toks)
			}
		}
	}
}

// parseUnit guards a unit (nesting, leading keyword) and parses it with
// parse, which gets the unit and the EOF token just past its tokens.
func parseUnit(u unit, parse func(u unit, eof token) (Decl, *diag.Diagnostic)) (Decl, *diag.Diagnostic) {
	first := &u.toks[0]
	last := &u.toks[len(u.toks)-1]
	keyword := first.value(u.text)
	bad := func() *BadDecl {
		b := &BadDecl{Keyword: keyword}
		b.Pos, b.EndPos = first.pos(u.file), last.end(u.file, u.text)
		if IsDeclKeyword(keyword) && len(u.toks) > 1 && u.toks[1].Type == tokIdent {
			b.Name = &Ident{Name: u.toks[1].value(u.text)}
			b.Name.Pos, b.Name.EndPos = u.toks[1].pos(u.file), u.toks[1].end(u.file, u.text)
		}
		return b
	}
	if u.maxDepth > MaxNesting {
		return bad(), &diag.Diagnostic{Severity: diag.Error, Code: diag.NestingTooDeep,
			Summary: fmt.Sprintf("brackets nest %d levels deep; the limit is %d", u.maxDepth, MaxNesting),
			Subject: spanOf(u.deepAt.pos(u.file), u.deepAt.end(u.file, u.text))}
	}
	if first.Type != tokIdent || !IsDeclKeyword(keyword) {
		return nil, &diag.Diagnostic{Severity: diag.Error, Code: diag.SyntaxError,
			Summary: fmt.Sprintf("unexpected %s; expected a declaration (%s)", describe(first.lex(u.file, u.text)), strings.Join(declWords(), ", ")),
			Subject: spanOf(first.pos(u.file), first.end(u.file, u.text))}
	}
	eof := tokenAt(tokEOF, 0, last.end(u.file, u.text))
	decl, d := parse(u, eof)
	if d != nil {
		return bad(), d
	}
	return decl, nil
}

func declWords() []string {
	var out []string
	for _, k := range keywords {
		if k.Class == ClassDeclaration {
			out = append(out, k.Word)
		}
	}
	return out
}

// describe names a token for a message.
func describe(t lexer.Token) string {
	switch t.Type {
	case tokEOF:
		return "end of file"
	case tokStrOpen, tokTextOpen:
		return "string"
	case tokText:
		return "string text"
	case tokInt, tokFloat:
		return fmt.Sprintf("number %s", t.Value)
	case tokDuration:
		return fmt.Sprintf("duration %s", t.Value)
	}
	return fmt.Sprintf("%q", t.Value)
}

// syntaxDiag converts a participle error into a positioned diagnostic.
func syntaxDiag(err error, fallback lexer.Token) *diag.Diagnostic {
	pos := fallback.Pos
	msg := err.Error()
	var perr participle.Error
	if errors.As(err, &perr) {
		pos = perr.Position()
		msg = perr.Message()
	}
	var ute *participle.UnexpectedTokenError
	end := pos
	if errors.As(err, &ute) {
		end = endOf(ute.Unexpected)
		msg = fmt.Sprintf("unexpected %s", describe(ute.Unexpected))
		if ute.Expect != "" {
			msg += fmt.Sprintf("; expected %s", ute.Expect)
		}
	}
	if end.Offset == pos.Offset {
		end.Offset++
		end.Column++
	}
	return &diag.Diagnostic{Severity: diag.Error, Code: diag.SyntaxError, Summary: msg, Subject: spanOf(pos, end)}
}
