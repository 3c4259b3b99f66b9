package recall

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokenization (spec/recall.md, "Tokenization"). Text is cut into words: runs
// of letters and digits, joined across the connectors - _ . : / # when a
// letter or digit follows, so that "SN-4471-AX", "v2.3.1" and "INC/2291" stay
// whole. A joined word is emitted whole and also as its parts, so both the
// exact identifier and its pieces match. Words are lower-cased; English stop
// words and one-letter words are dropped; a plain alphabetic word longer than
// three letters loses one trailing "s" ("databases" → "database", but not
// "class"). Han, Hiragana, Katakana and Hangul runs have no spaces: each
// rune is a term, and so is each pair of neighbours. A term is at most
// maxTermBytes bytes (longer ones are cut at a rune boundary).

const (
	maxTermBytes = 64
	maxQueryLen  = 1000 // bytes of a query that are read
	maxQueryTerm = 32   // distinct terms of a query that are used
)

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be been but by can could did do does for from had has
		have he her his how i if in into is it its me my no not of on or our she so than that the their them then
		there these they this those to was we were what when where which who whom why will with would you your
		yours us am any all also just about over again more most some such only own same too very s t don should
		now let lets get got please tell remind`) {
		m[w] = true
	}
	return m
}()

func isConnector(r rune) bool {
	switch r {
	case '-', '_', '.', ':', '/', '#':
		return true
	}
	return false
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// Terms returns the index terms of text in order, repeats included.
func Terms(text string) []string {
	var out []string
	emit := func(t string) {
		if t = normTerm(t); t != "" {
			out = append(out, t)
		}
	}
	i := 0
	for i < len(text) {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case isCJK(r):
			prev := ""
			for i < len(text) {
				r, n = utf8.DecodeRuneInString(text[i:])
				if !isCJK(r) {
					break
				}
				cur := string(unicode.ToLower(r))
				out = append(out, cur)
				if prev != "" {
					out = append(out, prev+cur)
				}
				prev = cur
				i += n
			}
		case isWordRune(r):
			start := i
			parts := 1
			for i < len(text) {
				r, n = utf8.DecodeRuneInString(text[i:])
				if isWordRune(r) && !isCJK(r) {
					i += n
					continue
				}
				if isConnector(r) && i+n < len(text) {
					r2, _ := utf8.DecodeRuneInString(text[i+n:])
					if isWordRune(r2) && !isCJK(r2) {
						parts++
						i += n
						continue
					}
				}
				break
			}
			word := text[start:i]
			if parts == 1 {
				emit(word)
				continue
			}
			emit(word)
			for _, p := range strings.FieldsFunc(word, isConnector) {
				emit(p)
			}
		default:
			i += n
		}
	}
	return out
}

// normTerm lower-cases a word and applies the stop list, the one-letter
// rule, the plural rule and the length limit; "" drops it.
func normTerm(w string) string {
	w = strings.ToLower(w)
	if utf8.RuneCountInString(w) < 2 && !(len(w) == 1 && w[0] >= '0' && w[0] <= '9') {
		return ""
	}
	if stopWords[w] {
		return ""
	}
	if len(w) > 3 && w[len(w)-1] == 's' && w[len(w)-2] != 's' && isAlpha(w) {
		w = w[:len(w)-1]
	}
	if len(w) > maxTermBytes {
		cut := maxTermBytes
		for cut > 0 && !utf8.RuneStart(w[cut]) {
			cut--
		}
		w = w[:cut]
	}
	return w
}

func isAlpha(w string) bool {
	for _, r := range w {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}

// query is a parsed search query: its distinct terms, and its clauses when
// it is compound (more than one).
type query struct {
	terms   []string   // distinct, in first-seen order, at most maxQueryTerm
	clauses [][]string // distinct terms of each clause; nil unless ≥ 2 clauses
}

// clauseSplitters cut a compound query into clauses.
var clauseWords = map[string]bool{"and": true, "or": true, "then": true, "also": true, "plus": true, "versus": true, "vs": true}

// parseQuery reads a query: at most maxQueryLen bytes, cut into clauses at
// , ; | ? ! newlines, quotes and the words and/or/then/also/plus/vs.
func parseQuery(q string) query {
	if len(q) > maxQueryLen {
		cut := maxQueryLen
		for cut > 0 && !utf8.RuneStart(q[cut]) {
			cut--
		}
		q = q[:cut]
	}
	var raw []string
	var cur strings.Builder
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			raw = append(raw, s)
		}
		cur.Reset()
	}
	for _, f := range strings.FieldsFunc(q, func(r rune) bool {
		switch r {
		case ',', ';', '|', '?', '!', '\n', '"', '\u201c', '\u201d':
			return true
		}
		return false
	}) {
		for _, w := range strings.Fields(f) {
			if clauseWords[strings.ToLower(w)] {
				flush()
				continue
			}
			cur.WriteString(w)
			cur.WriteByte(' ')
		}
		flush()
	}
	var out query
	seen := map[string]bool{}
	var clauses [][]string
	for _, c := range raw {
		var ct []string
		cseen := map[string]bool{}
		for _, t := range Terms(c) {
			if !cseen[t] {
				cseen[t] = true
				ct = append(ct, t)
			}
			if !seen[t] && len(out.terms) < maxQueryTerm {
				seen[t] = true
				out.terms = append(out.terms, t)
			}
		}
		if len(ct) > 0 {
			clauses = append(clauses, ct)
		}
	}
	if len(clauses) >= 2 {
		if len(clauses) > maxClauses {
			clauses = clauses[:maxClauses]
		}
		out.clauses = clauses
	}
	return out
}
