package tools

// Escaping an http tool's URL template by position. The template is a
// chunk that renders one string, so which of its characters came from the
// input is not visible in the result. It is evaluated a second time with
// every string of the input replaced by a marker that no text contains;
// the markers then show where each input string lands — in the host, a
// path segment, the query or the fragment — and each is replaced by its
// value escaped for that place. That is sound only when the template
// interpolates input strings as they are: the two renderings must agree
// once the markers are replaced by the raw values; a template that
// changes a value (upper(input.x)) or branches on it is refused rather
// than sent unescaped.

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/vm"
)

// Markers are noncharacters, never part of interchanged text.
const markOpen, markClose = "\uFDD0", "\uFDD1"

// leaf is one input string replaced by a marker.
type leaf struct {
	path, value string
}

// marked returns v with every string replaced by a marker, and the
// strings replaced (indexed by the marker's number).
func marked(v types.Value, path string, leaves *[]leaf) (types.Value, error) {
	switch v.Kind() {
	case types.ValString:
		*leaves = append(*leaves, leaf{path, v.Str()})
		return types.MakeString(markOpen + strconv.Itoa(len(*leaves)-1) + markClose), nil
	case types.ValList:
		xs := v.Elems()
		for i := range xs {
			x, err := marked(xs[i], fmt.Sprintf("%s[%d]", path, i), leaves)
			if err != nil {
				return v, err
			}
			xs[i] = x
		}
		return types.MakeList(xs), nil
	case types.ValMap:
		keys, vals := make([]string, v.Len()), make([]types.Value, v.Len())
		for i := range v.Len() {
			k, e := v.MapEntry(i)
			x, err := marked(e, path+"."+k, leaves)
			if err != nil {
				return v, err
			}
			keys[i], vals[i] = k, x
		}
		return types.MakeMap(keys, vals)
	case types.ValRecord:
		sh := v.Shape()
		vals := make([]types.Value, v.Len())
		for i := range v.Len() {
			x, err := marked(v.FieldAt(i), path+"."+sh.Name(i), leaves)
			if err != nil {
				return v, err
			}
			vals[i] = x
		}
		return types.MakeRecord(sh, vals)
	}
	return v, nil
}

// piece is a run of template text, or an input string (leaf >= 0).
type piece struct {
	text string
	leaf int
}

// split cuts a marked rendering into text and markers.
func split(s string, n int) ([]piece, bool) {
	var out []piece
	for {
		i := strings.Index(s, markOpen)
		if i < 0 {
			if s != "" {
				out = append(out, piece{text: s, leaf: -1})
			}
			return out, true
		}
		if i > 0 {
			out = append(out, piece{text: s[:i], leaf: -1})
		}
		s = s[i+len(markOpen):]
		j := strings.Index(s, markClose)
		if j < 0 {
			return nil, false
		}
		k, err := strconv.Atoi(s[:j])
		if err != nil || k < 0 || k >= n {
			return nil, false
		}
		out = append(out, piece{leaf: k})
		s = s[j+len(markClose):]
	}
}

// URL parts, in the order a URL has them.
type urlPart int

const (
	partScheme urlPart = iota
	partAuthority
	partPath
	partQuery
	partFragment
)

// advance moves part over literal URL text.
func advance(part urlPart, text string) urlPart {
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch part {
		case partScheme:
			if strings.HasPrefix(text[i:], "://") {
				part, i = partAuthority, i+2
			}
		case partAuthority:
			switch c {
			case '/':
				part = partPath
			case '?':
				part = partQuery
			case '#':
				part = partFragment
			}
		case partPath:
			switch c {
			case '?':
				part = partQuery
			case '#':
				part = partFragment
			}
		case partQuery:
			if c == '#' {
				part = partFragment
			}
		}
	}
	return part
}

// escapeURL renders the URL template (chunk) for input with every input
// string escaped for the part of the URL it fills. real is the template's
// plain rendering.
func (h *httpTool) escapeURL(ctx context.Context, chunk uint32, input types.Value, real string) (string, error) {
	var leaves []leaf
	mv, err := marked(input, "input", &leaves)
	if err != nil || len(leaves) == 0 {
		return real, nil // nothing from the input is text
	}
	skel, err := h.text(ctx, "url", chunk, mv)
	if err != nil {
		return "", err
	}
	pieces, ok := split(skel, len(leaves))
	var check strings.Builder
	used := map[int]bool{}
	for _, p := range pieces {
		if p.leaf >= 0 {
			check.WriteString(leaves[p.leaf].value)
			used[p.leaf] = true
		} else {
			check.WriteString(p.text)
		}
	}
	if !ok || check.String() != real {
		var paths []string
		for i, l := range leaves {
			if used[i] || len(used) == 0 {
				paths = append(paths, l.path)
			}
		}
		return "", h.errorf(vm.KindToolError, "url: the template changes or tests %s before interpolating it, so the value cannot be escaped for its place in the URL; interpolate input values as they are, or pass them in query", strings.Join(paths, ", "))
	}
	var out strings.Builder
	part := partScheme
	for i, p := range pieces {
		if p.leaf < 0 {
			out.WriteString(p.text)
			part = advance(part, p.text)
			continue
		}
		l := leaves[p.leaf]
		switch {
		case i == 0:
			// The template starts with the value: a whole URL, or its
			// base, taken as it is (the allowlist still applies).
			out.WriteString(l.value)
			part = advance(partScheme, l.value)
		case part == partScheme:
			return "", h.errorf(vm.KindToolError, "url: %s fills the URL's scheme", l.path)
		case part == partAuthority:
			if strings.Trim(strings.ToLower(l.value), "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" || l.value == "" {
				return "", h.errorf(vm.KindToolError, "url: %s is not a host name: %q", l.path, redactValue(l.value))
			}
			out.WriteString(l.value)
		case part == partPath:
			if l.value == "." || l.value == ".." {
				return "", h.errorf(vm.KindToolError, "url: %s = %q cannot be a path segment", l.path, l.value)
			}
			out.WriteString(url.PathEscape(l.value))
		case part == partQuery:
			out.WriteString(url.QueryEscape(l.value))
		default:
			out.WriteString(url.PathEscape(l.value))
		}
	}
	return out.String(), nil
}

// redactValue shortens a value for an error message.
func redactValue(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
