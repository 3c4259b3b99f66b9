package runtime

import (
	"context"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/store"
)

// Preloader contributes context to an llm agent's call before its first
// model turn: recall hits from the user's other sessions, memories. The llm
// loop calls every configured Preloader (RunnerConfig.Preloaders) once per
// agent call and places the messages it returns after the agent's
// instruction, as evidence rather than instructions. A Preloader that has
// nothing to add returns nil; an error is logged and the call goes on
// without its messages (preloading never fails a run).
type Preloader interface {
	Preload(ctx context.Context, req PreloadRequest) ([]Message, error)
}

// PreloadRequest says where an agent call runs and what it is about.
type PreloadRequest struct {
	Session store.SessionKey
	Run     string
	Node    string // node path relative to the runnable
	// Program and Agent (an index into Program.Agents) let a preloader read
	// the agent's policies (recall.preload, memory.preload).
	Program *bytecode.Program
	Agent   int
	// Query is the agent call's prompt (the user's input for a top-level
	// agent).
	Query string
}

// Markers of preloaded blocks in untrusted text.
//
// A preloaded block wraps untrusted text (recalled snippets, memories) in
// markers such as <recalled_history> … </recalled_history>. Text inside
// must not be able to close the block, nor open another one, in any form a
// model may read as the marker: NeutralizeMarkers matches a marker after
// folding the text — Unicode compatibility forms (NFKC: fullwidth ＜／＞,
// small forms, mathematical letters, ligatures), case, angle-bracket and
// slash look-alikes (‹ › 〈 〉 ⟨ ⟩ ˂ ˃ ∕ ⁄ ⧸), default-ignorable and
// zero-width characters and combining marks (dropped), any spacing between
// "<", "/" and the name, and any run of spaces, "_" or "-" between the
// words of the name — and replaces the whole matched span with
// "[marker removed]". The replacement contains no marker, so removing a
// marker cannot splice two halves into a new one.

// markerRemoved replaces a neutralized marker.
const markerRemoved = "[marker removed]"

// NeutralizeMarkers returns text with every opening or closing form of the
// markers names (e.g. "recalled_history") replaced by "[marker removed]".
func NeutralizeMarkers(text string, names ...string) string {
	if len(names) == 0 || text == "" {
		return text
	}
	sk, spans := markerSkeleton(text)
	type cut struct{ from, to int }
	var cuts []cut
	for _, name := range names {
		words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '_' || r == '-' || r == ' ' })
		if len(words) == 0 {
			continue
		}
		for i := 0; i < len(sk); i++ {
			if sk[i] != '<' {
				continue
			}
			if end, ok := matchMarker(sk, i+1, words); ok {
				cuts = append(cuts, cut{spans[i].from, spans[end-1].to})
			}
		}
	}
	if len(cuts) == 0 {
		return text
	}
	slices.SortFunc(cuts, func(a, b cut) int { return a.from - b.from })
	var b strings.Builder
	pos := 0
	for _, c := range cuts {
		if c.to <= pos {
			continue // inside an earlier cut
		}
		if c.from < pos {
			c.from = pos
		} else {
			b.WriteString(text[pos:c.from])
		}
		b.WriteString(markerRemoved)
		pos = c.to
	}
	b.WriteString(text[pos:])
	return b.String()
}

// matchMarker matches, in the skeleton from i (just after "<"): spaces, an
// optional "/", spaces, the words separated by runs of spaces, "_" or "-",
// and then a character that cannot continue a name (or the end). It
// returns the end of the match (before that character).
func matchMarker(sk []byte, i int, words []string) (int, bool) {
	skip := func(set string) {
		for i < len(sk) && strings.IndexByte(set, sk[i]) >= 0 {
			i++
		}
	}
	skip(" ")
	if i < len(sk) && sk[i] == '/' {
		i++
	}
	skip(" ")
	for wi, w := range words {
		if wi > 0 {
			skip(" _-")
		}
		if len(sk)-i < len(w) || string(sk[i:i+len(w)]) != w {
			return 0, false
		}
		i += len(w)
	}
	if i < len(sk) {
		if c := sk[i]; c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' {
			return 0, false
		}
	}
	return i, true
}

// span is the bytes of the original text one skeleton byte stands for.
type span struct{ from, to int }

// markerSkeleton folds text for marker matching: one or more ASCII bytes
// per rune (lower case; whitespace as ' '; anything else as '#'), none for
// an ignorable rune, with the original span of each byte.
func markerSkeleton(text string) ([]byte, []span) {
	sk := make([]byte, 0, len(text))
	spans := make([]span, 0, len(text))
	for i, r := range text {
		_, n := utf8.DecodeRuneInString(text[i:])
		sp := span{i, i + n}
		emit := func(c byte) { sk = append(sk, c); spans = append(spans, sp) }
		switch {
		case r < utf8.RuneSelf:
			if r >= 'A' && r <= 'Z' {
				r += 'a' - 'A'
			}
			if unicode.IsSpace(r) {
				r = ' '
			}
			emit(byte(r))
			continue
		case ignorable(r):
			continue
		case unicode.IsSpace(r):
			emit(' ')
			continue
		}
		if c, ok := lookalikes[r]; ok {
			emit(c)
			continue
		}
		for _, fr := range strings.ToLower(norm.NFKC.String(string(r))) {
			switch {
			case fr < utf8.RuneSelf:
				if unicode.IsSpace(fr) {
					fr = ' '
				}
				emit(byte(fr))
			case ignorable(fr):
			default:
				if c, ok := lookalikes[fr]; ok {
					emit(c)
				} else {
					emit('#')
				}
			}
		}
	}
	return sk, spans
}

// ignorable reports runes a reader does not see: format characters
// (zero-width space and joiners, word joiner, BOM, soft hyphen, bidi
// controls, tags), combining marks and variation selectors.
func ignorable(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Mn, unicode.Me, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// lookalikes are the angle brackets and slashes NFKC leaves alone.
var lookalikes = map[rune]byte{
	'‹': '<', '›': '>', '〈': '<', '〉': '>', '⟨': '<', '⟩': '>', '《': '<', '》': '>',
	'˂': '<', '˃': '>', '❮': '<', '❯': '>', '⧼': '<', '⧽': '>', 'ᐸ': '<', 'ᐳ': '>',
	'∕': '/', '⁄': '/', '⧸': '/', '╱': '/', '⟋': '/',
}
