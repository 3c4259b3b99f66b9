// Package format prints .agent source in its one canonical layout, keeping
// every comment. It is what `agentc fmt` and the language server's
// formatting request run. The layout is a function of the syntax tree, the
// comments and a few facts the author chose (blank lines between items,
// whether a short bracketed list was written on one line); everything else
// is regenerated, so formatting is idempotent.
//
// # Layout
//
//   - Indentation is two spaces per level. An opening brace or bracket stays
//     on the line of what it opens; a closing one is on its own line at the
//     indentation of the line that opened it.
//   - Top-level declarations are separated by one blank line. Single-line
//     declarations the author wrote on consecutive lines (imports, one-line
//     types) stay together; a declaration that spans several lines always has
//     a blank line before and after it.
//   - Inside a block, items are one per line. Where the author left one or
//     more blank lines between two items (or comments), one blank line is
//     kept; there is never a blank line just after an opening brace or just
//     before a closing one.
//
// # One-line or expanded
//
// An attribute block ({ k = v }), a record type ({ f: T }), a list literal,
// a record literal and a map node's body are printed on one line when the
// source had their opening and closing brackets on the same line and the
// output line, up to and including the closing bracket (before alignment
// padding), fits in 100 columns; otherwise they are expanded, one item per
// line. One-line forms separate items with ", " and put spaces inside braces
// ({ a = 1, b = 2 }) but not inside brackets ([a, b]). Expanded list and
// record literals end every element with a comma; expanded blocks and record
// types use no commas. The bodies of tool, state, graph and test
// declarations are always expanded. An empty bracket pair with no comment
// inside is printed {} or [].
//
// Function calls, interpolations and everything else in an expression stay
// on one line; node clauses follow the node on its line, in source order,
// and a map node's clauses follow its body on one line.
//
// # Alignment
//
// Consecutive items of one kind in an expanded block form a run: attributes
// (key = value, key { … }), fields (name : type; expanded fields always put
// a space before the colon, one-line ones do not), tool items, node
// declarations, edges and test answers. A blank line, a comment on its own
// line, or an item of another kind ends a run; an item that spans several
// lines does not (its first line takes part). In a run the "=" (or ":") is
// aligned one space after the longest key; edges align "->" and then their
// when/otherwise/max clause. At the top level, consecutive single-line type
// and configuration-block declarations (type, model, summary, compaction,
// recall, memory, evolution) form a run that aligns what follows their name:
//
//	type Triage     { verdict: string }
//	type Decision   = "yes" | "no"
//	recall everyone { search = true }
//
// Trailing // comments on consecutive lines with the same indentation are
// aligned one space after the longest of those lines. Expressions, including
// list and record literals, are never padded.
//
// # Expressions and strings
//
// Binary operators have one space on each side; there is no space inside
// parentheses, brackets or calls, after a unary minus, or around "." and
// "..": a.b, f(x, y), [a, b], { k: v }, x[i], -n, not ok, 200ms..5s.
//
// The literal parts of strings and """ text blocks are reproduced byte for
// byte, escapes as written: only the line holding the opening quotes is
// re-indented, never the content or the closing line of a text block, so a
// string's value never changes. Interpolated expressions are formatted like
// any other expression.
//
// # Comments
//
// Comments are attached by position. A comment on the same line as the end
// of the preceding token stays at the end of that line (a // comment forces
// what follows onto a new, continuation-indented line when it was in the
// middle of a construct); any other comment goes on its own line before the
// first token that starts after it, at that item's indentation. Comments
// before a closing brace stay inside the block. A comment is never dropped
// or moved past a token, so never across a declaration boundary. Trailing
// whitespace of // comments is removed; block comments are kept verbatim.
//
// # Line endings
//
// The output uses LF line endings and ends with exactly one newline (an
// empty file stays empty). A carriage return inside a text block is part of
// the string's value in the current language, so it is kept unless dropping
// it provably leaves the value unchanged.
package format

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Source formats f, which must be the syntax tree that syntax.Parse returned
// for src without any error. It refuses a tree that holds declarations with
// syntax errors or does not match src.
func Source(f *syntax.File, src []byte) ([]byte, error) {
	if f == nil {
		return nil, errors.New("format: no syntax tree")
	}
	if err := check(f, src); err != nil {
		return nil, fmt.Errorf("format %s: %w", f.Name, err)
	}
	p := newPrinter(src, f.Comments)
	p.file(f)
	if p.err != nil {
		return nil, fmt.Errorf("format %s: %w", f.Name, p.err)
	}
	return p.bytes(), nil
}

// Why says in a few words why src, a file that parses, differs from its
// canonical form beyond layout: "CRLF line endings; the canonical form uses
// LF" for a file whose lines end in CRLF, else "".
func Why(src []byte) string {
	if bytes.Contains(src, []byte("\r\n")) {
		return "CRLF line endings; the canonical form uses LF"
	}
	return ""
}

// Bytes parses src as the file name and formats it. It returns the parse
// diagnostics, and no output, when src has errors.
func Bytes(name string, src []byte) ([]byte, []diag.Diagnostic) {
	f, diags := syntax.Parse(name, src)
	for _, d := range diags {
		if d.Severity == diag.Error {
			return nil, diags
		}
	}
	out, err := Source(f, src)
	if err != nil {
		return nil, append(diags, diag.Diagnostic{
			Severity: diag.Error,
			Code:     diag.SyntaxError,
			Summary:  err.Error(),
			Subject:  diag.Span{File: name, Start: diag.Pos{Line: 1, Col: 1}, End: diag.Pos{Line: 1, Col: 1}},
		})
	}
	return out, diags
}

// check refuses trees that cannot be printed faithfully: declarations that
// did not parse, positions outside src, and source text that belongs to no
// declaration and no comment (what the parser skipped after an error).
// utf8BOM is the byte-order mark a file may start with.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func check(f *syntax.File, src []byte) error {
	if end := f.Span().End.Offset; end != len(src) {
		return fmt.Errorf("the syntax tree ends at byte %d but the source has %d bytes", end, len(src))
	}
	prev := 0
	for _, c := range f.Comments {
		if c.Pos.Offset < prev || c.End.Offset < c.Pos.Offset || c.End.Offset > len(src) {
			return fmt.Errorf("comment at %s lies outside the source or out of order", c.Pos)
		}
		prev = c.End.Offset
	}
	s := newScanner(src, f.Comments)
	covered := 0
	if bytes.HasPrefix(src, utf8BOM) {
		covered = len(utf8BOM) // the parser ignores it; the canonical form drops it
	}
	for _, d := range f.Decls {
		if d == nil {
			return errors.New("the syntax tree holds a nil declaration")
		}
		if bad, ok := d.(*syntax.BadDecl); ok {
			return fmt.Errorf("%s: the declaration has syntax errors", bad.Span())
		}
		sp := d.Span()
		start, end := sp.Start.Offset, s.tokEnd(sp.End.Offset)
		if start < covered || start > len(src) || end < start {
			return fmt.Errorf("%s: declaration positions do not match the source", sp)
		}
		if g := s.skip(covered); g < start {
			return fmt.Errorf("%s: source text outside any declaration (it had syntax errors)", s.posText(g))
		}
		covered = end
	}
	if g := s.skip(covered); g < len(src) {
		return fmt.Errorf("%s: source text outside any declaration (it had syntax errors)", s.posText(g))
	}
	return nil
}
