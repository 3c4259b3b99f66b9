package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/agentc/agentc/vm"
)

// FixtureError is a problem in a fixture file, located at a 1-based line and
// column when it has one (Line 0 means the whole file).
type FixtureError struct {
	File   string
	Line   int
	Column int
	Msg    string
}

func (e *FixtureError) Error() string {
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Limits that keep a hostile fixture from costing more than its size: YAML
// aliases can expand exponentially, so values converted to JSON are bounded
// in nesting and in the number of nodes visited.
const (
	maxValueDepth = 64
	maxValueNodes = 100_000
)

// yamlReader reads one fixture file strictly: every mapping is checked
// against the keys it may hold, every value against the type it must have,
// and every problem is a *FixtureError naming the place and the path.
type yamlReader struct {
	file  string
	nodes int // nodes visited converting values to JSON
}

func (r *yamlReader) errorf(n *yaml.Node, format string, args ...any) error {
	e := &FixtureError{File: r.file, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// document parses data as exactly one YAML document and returns its root.
func (r *yamlReader) document(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, r.errorf(nil, "empty fixture (want a mapping starting with version: 1)")
		}
		return nil, r.syntaxError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, r.syntaxError(err)
		}
		return nil, r.errorf(&extra, "a fixture holds one YAML document, found another")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, r.errorf(&doc, "empty fixture (want a mapping starting with version: 1)")
	}
	return doc.Content[0], nil
}

// syntaxError converts a yaml.v3 parse error ("yaml: line 3: ...") into a
// located FixtureError.
func (r *yamlReader) syntaxError(err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &FixtureError{File: r.file, Line: line, Msg: "invalid YAML: " + m[2]}
	}
	return &FixtureError{File: r.file, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// resolve follows aliases.
func (r *yamlReader) resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxValueDepth; i++ {
		n = n.Alias
	}
	return n
}

// mapping is a checked YAML mapping: its values by key, in source order.
type mapping struct {
	node   *yaml.Node
	keys   []string
	values map[string]*yaml.Node
}

func (m *mapping) get(key string) *yaml.Node { return m.values[key] }

// mapping checks that n is a mapping whose keys are all in allowed, unique,
// and plain strings. path names n in messages ("replies[2].match").
func (r *yamlReader) mapping(n *yaml.Node, path string, allowed ...string) (*mapping, error) {
	n = r.resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, r.errorf(n, "%s: want a mapping, got %s", path, describe(n))
	}
	m := &mapping{node: n, values: map[string]*yaml.Node{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := r.resolve(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
			return nil, r.errorf(k, "%s: keys must be plain strings, got %s", path, describe(k))
		}
		if !slices.Contains(allowed, k.Value) {
			return nil, r.errorf(k, "%s: unknown key %q (allowed: %s)", path, k.Value, strings.Join(allowed, ", "))
		}
		if _, dup := m.values[k.Value]; dup {
			return nil, r.errorf(k, "%s: key %q given twice", path, k.Value)
		}
		m.keys = append(m.keys, k.Value)
		m.values[k.Value] = v
	}
	return m, nil
}

// sequence checks that n is a sequence and returns its items.
func (r *yamlReader) sequence(n *yaml.Node, path string) ([]*yaml.Node, error) {
	n = r.resolve(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil, r.errorf(n, "%s: want a list, got %s", path, describe(n))
	}
	return n.Content, nil
}

// sequenceOf reads the list n at path with item (i counts from 0); an empty
// list gives nil.
func sequenceOf[T any](r *yamlReader, n *yaml.Node, path string, item func(n *yaml.Node, i int) (T, error)) ([]T, error) {
	items, err := r.sequence(n, path)
	if err != nil {
		return nil, err
	}
	var out []T
	for i, it := range items {
		v, err := item(it, i)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// str reads a scalar as text. Any non-null scalar is accepted and read as
// written, so `input: 404` is the pattern "404".
func (r *yamlReader) str(n *yaml.Node, path string) (string, error) {
	n = r.resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		return "", r.errorf(n, "%s: want a string, got %s", path, describe(n))
	}
	return n.Value, nil
}

// integer reads an integer scalar within [lo, hi].
func (r *yamlReader) integer(n *yaml.Node, path string, lo, hi int) (int, error) {
	n = r.resolve(n)
	var v int
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		return 0, r.errorf(n, "%s: want an integer, got %s", path, describe(n))
	}
	if v < lo || v > hi {
		if hi == math.MaxInt {
			return 0, r.errorf(n, "%s: want an integer ≥ %d, got %d", path, lo, v)
		}
		return 0, r.errorf(n, "%s: want an integer in %d..%d, got %d", path, lo, hi, v)
	}
	return v, nil
}

// errorValue reads `error: {kind, message}`.
func (r *yamlReader) errorValue(n *yaml.Node, path string) (*scriptedError, error) {
	m, err := r.mapping(n, path, "kind", "message")
	if err != nil {
		return nil, err
	}
	kn := m.get("kind")
	if kn == nil {
		return nil, r.errorf(m.node, "%s: missing kind", path)
	}
	k, err := r.str(kn, path+".kind")
	if err != nil {
		return nil, err
	}
	if !errorKinds[vm.ErrorKind(k)] {
		return nil, r.errorf(kn, "%s.kind: unknown error kind %q (want one of %s)", path, k, kindList())
	}
	e := &scriptedError{kind: vm.ErrorKind(k)}
	if mn := m.get("message"); mn != nil {
		if e.message, err = r.str(mn, path+".message"); err != nil {
			return nil, err
		}
	}
	if e.message == "" {
		e.message = "scripted " + k
	}
	return e, nil
}

func kindList() string {
	var ks []string
	for k := range errorKinds {
		ks = append(ks, string(k))
	}
	slices.Sort(ks)
	return strings.Join(ks, ", ")
}

// json converts a YAML value to JSON. Mappings become objects (keys sorted
// by encoding/json), sequences arrays, and scalars by their resolved tag.
func (r *yamlReader) json(n *yaml.Node, path string) (json.RawMessage, error) {
	v, err := r.value(n, path, 0)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, r.errorf(n, "%s: %v", path, err)
	}
	return b, nil
}

func (r *yamlReader) value(n *yaml.Node, path string, depth int) (any, error) {
	if r.nodes++; r.nodes > maxValueNodes {
		return nil, r.errorf(n, "%s: value too large (more than %d nodes after expanding aliases)", path, maxValueNodes)
	}
	if depth > maxValueDepth {
		return nil, r.errorf(n, "%s: value nested more than %d levels", path, maxValueDepth)
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return r.value(n.Alias, path, depth+1)
	}
	if n == nil {
		return nil, r.errorf(n, "%s: missing value", path)
	}
	switch n.Kind {
	case yaml.MappingNode:
		obj := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := r.resolve(n.Content[i])
			if k == nil || k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" || k.ShortTag() == "!!merge" {
				return nil, r.errorf(k, "%s: object keys must be plain scalars, got %s", path, describe(k))
			}
			if _, dup := obj[k.Value]; dup {
				return nil, r.errorf(k, "%s: key %q given twice", path, k.Value)
			}
			v, err := r.value(n.Content[i+1], path+"."+k.Value, depth+1)
			if err != nil {
				return nil, err
			}
			obj[k.Value] = v
		}
		return obj, nil
	case yaml.SequenceNode:
		arr := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			v, err := r.value(c, fmt.Sprintf("%s[%d]", path, i), depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		return arr, nil
	case yaml.ScalarNode:
		return r.scalar(n, path)
	}
	return nil, r.errorf(n, "%s: unsupported YAML node", path)
}

func (r *yamlReader) scalar(n *yaml.Node, path string) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, r.errorf(n, "%s: bad boolean %q", path, n.Value)
		}
		return b, nil
	case "!!int":
		var i int64
		if n.Decode(&i) == nil {
			return i, nil
		}
		var u uint64
		if n.Decode(&u) == nil {
			return u, nil
		}
		return nil, r.errorf(n, "%s: integer %s out of range", path, n.Value)
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, r.errorf(n, "%s: bad number %q", path, n.Value)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, r.errorf(n, "%s: %s has no JSON form", path, n.Value)
		}
		return f, nil
	case "!!str", "!!timestamp", "!!binary":
		return n.Value, nil
	}
	return nil, r.errorf(n, "%s: unsupported tag %s", path, n.Tag)
}

// describe names what a node is, for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "null"
		}
		return strconv.Quote(clip(n.Value, 40))
	}
	return "a document"
}

// clip shortens s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
