// Package diag holds agentc's one position vocabulary and its diagnostics.
//
// A Pos is a point in a source file: a byte offset and a 1-based line and
// column (columns count runes). A Span is a half-open range [Start, End) in
// one file. File names are relative, slash-separated paths so that every
// rendering (text, JSON, SARIF, bytecode span tables) is machine-independent.
//
// Diagnostics are values. Code below cmd/ collects them in a List and never
// prints; renderers (text with a caret snippet, JSON, SARIF 2.1.0) run only at
// the edge.
package diag

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Pos is a point in a source file.
// Invariants: Offset is a byte offset ≥ 0; Line and Col are 1-based when valid
// (Line == 0 means "no position").
type Pos struct {
	Offset int `json:"offset"`
	Line   int `json:"line"`
	Col    int `json:"column"`
}

// IsValid reports whether p names a real position.
func (p Pos) IsValid() bool { return p.Line > 0 }

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Before reports whether p comes strictly before q.
func (p Pos) Before(q Pos) bool { return p.Offset < q.Offset }

// Span is a half-open source range [Start, End) in File.
// Invariant: Start.Offset ≤ End.Offset.
type Span struct {
	File  string `json:"file"`
	Start Pos    `json:"start"`
	End   Pos    `json:"end"`
}

// IsValid reports whether s names a real range.
func (s Span) IsValid() bool { return s.Start.IsValid() }

// String renders "file:line:col".
func (s Span) String() string {
	if !s.IsValid() {
		if s.File == "" {
			return "-"
		}
		return s.File
	}
	return fmt.Sprintf("%s:%d:%d", s.File, s.Start.Line, s.Start.Col)
}

// Join returns the smallest span covering s and t (same file assumed).
func (s Span) Join(t Span) Span {
	if !s.IsValid() {
		return t
	}
	if !t.IsValid() {
		return s
	}
	out := s
	if t.Start.Offset < out.Start.Offset {
		out.Start = t.Start
	}
	if t.End.Offset > out.End.Offset {
		out.End = t.End
	}
	return out
}

// Severity orders diagnostics: Error > Warning > Info.
type Severity uint8

const (
	Error Severity = iota + 1
	Warning
	Info
)

func (s Severity) String() string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	case Info:
		return "info"
	}
	return "unknown"
}

// MarshalText renders the severity as its name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Related points at a second place that explains a diagnostic
// ("previous declaration here").
type Related struct {
	Message string `json:"message"`
	Span    Span   `json:"span"`
}

// Diagnostic is one finding about source text.
// Code is stable and append-only (see codes.go); Summary is one line with no
// trailing period; Detail is optional longer prose.
type Diagnostic struct {
	Severity Severity  `json:"severity"`
	Code     Code      `json:"code"`
	Summary  string    `json:"summary"`
	Detail   string    `json:"detail,omitempty"`
	Subject  Span      `json:"span"`
	Related  []Related `json:"related,omitempty"`
}

// Error implements error: "file:line:col: CODE: summary".
func (d Diagnostic) Error() string {
	return fmt.Sprintf("%s: %s %s: %s", d.Subject, d.Severity, d.Code, d.Summary)
}

// List collects diagnostics. The zero value is ready to use.
type List struct {
	items []Diagnostic
}

// Add appends one diagnostic.
func (l *List) Add(d Diagnostic) { l.items = append(l.items, d) }

// Errorf adds an error with the given code at span.
func (l *List) Errorf(code Code, span Span, format string, args ...any) *Diagnostic {
	l.items = append(l.items, Diagnostic{Severity: Error, Code: code, Summary: fmt.Sprintf(format, args...), Subject: span})
	return &l.items[len(l.items)-1]
}

// Warnf adds a warning with the given code at span.
func (l *List) Warnf(code Code, span Span, format string, args ...any) *Diagnostic {
	l.items = append(l.items, Diagnostic{Severity: Warning, Code: code, Summary: fmt.Sprintf(format, args...), Subject: span})
	return &l.items[len(l.items)-1]
}

// Append adds every diagnostic of other.
func (l *List) Append(other ...Diagnostic) { l.items = append(l.items, other...) }

// Len is the number of diagnostics collected so far.
func (l *List) Len() int { return len(l.items) }

// HasErrors reports whether any diagnostic is an error.
func (l *List) HasErrors() bool {
	for _, d := range l.items {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Sorted returns the diagnostics ordered by file, offset, code and summary,
// with exact duplicates removed. The List itself is not modified.
func (l *List) Sorted() []Diagnostic {
	out := slices.Clone(l.items)
	Sort(out)
	return slices.CompactFunc(out, func(a, b Diagnostic) bool {
		return a.Code == b.Code && a.Subject == b.Subject && a.Summary == b.Summary && a.Severity == b.Severity
	})
}

// Sort orders diagnostics by file, position, severity, code and summary.
func Sort(ds []Diagnostic) {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(
			cmp.Compare(a.Subject.File, b.Subject.File),
			cmp.Compare(a.Subject.Start.Offset, b.Subject.Start.Offset),
			cmp.Compare(a.Severity, b.Severity),
			cmp.Compare(a.Code, b.Code),
			cmp.Compare(a.Summary, b.Summary),
		)
	})
}

// CountErrors returns the number of errors and warnings in ds.
func CountErrors(ds []Diagnostic) (errors, warnings int) {
	for _, d := range ds {
		switch d.Severity {
		case Error:
			errors++
		case Warning:
			warnings++
		}
	}
	return errors, warnings
}

// WithArticle is word (a phrase: its first word decides) after its
// indefinite article, for messages: "an" before a vowel or an initialism
// read with one ("an llm agent", "an interrupt node", "an http tool"),
// else "a" ("a set node").
func WithArticle(word string) string {
	first, _, _ := strings.Cut(word, " ")
	if first != "" && (strings.ContainsRune("aeiouAEIOU", rune(first[0])) || anInitialisms[strings.ToLower(first)]) {
		return "an " + word
	}
	return "a " + word
}

// anInitialisms are the initialisms spelled out with a leading vowel sound.
var anInitialisms = map[string]bool{"llm": true, "mcp": true, "http": true, "sse": true, "html": true, "xml": true}
