// Package skillmd reads SKILL.md, the file that makes a folder a skill: a
// YAML front matter between "---" lines, then Markdown instructions.
//
//	---
//	name: cert-diagnostics
//	description: How to read a TLS certificate chain.
//	version: "1.2"
//	tags: [tls, incident]
//	tools: [cert_scan]          # tools the instructions expect
//	shell: [sh, -c]             # optional: skill_run wraps commands in it
//	when_to_use: A TLS handshake fails.
//	---
//	# Certificate diagnostics
//	...
//
// Parse reports every problem with the position (file, line, column) of
// the offending text; the compiler turns problems into diagnostics and the
// runtime skill repository into load errors. Nothing here touches a file
// system.
package skillmd

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/agentc/agentc/lang/diag"
	"gopkg.in/yaml.v3"
)

// MaxSize is the largest SKILL.md Parse accepts.
const MaxSize = 256 << 10

// Front is the front matter of a SKILL.md.
type Front struct {
	Name        string   `yaml:"name" json:"name"`
	Description string   `yaml:"description" json:"description"`
	Version     string   `yaml:"version,omitempty" json:"version,omitempty"`
	Tags        []string `yaml:"tags,omitempty" json:"tags,omitempty"`
	Tools       []string `yaml:"tools,omitempty" json:"tools,omitempty"` // tools the instructions use
	Shell       []string `yaml:"shell,omitempty" json:"shell,omitempty"` // argv prefix for skill_run commands; none: no shell
	WhenToUse   string   `yaml:"when_to_use,omitempty" json:"when_to_use,omitempty"`
}

// File is a parsed SKILL.md.
type File struct {
	Front Front
	Body  string // the Markdown after the front matter
}

// Problem is one thing wrong with a SKILL.md, at a position in it.
type Problem struct {
	Span diag.Span
	Msg  string
}

func (p Problem) Error() string { return p.Span.String() + ": " + p.Msg }

// NameRE is what a skill name looks like: lower-case words joined by - or _.
var NameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// fields are the known front-matter keys and their kinds.
var fields = map[string]string{
	"name": "string", "description": "string", "version": "string", "when_to_use": "string",
	"tags": "list", "tools": "list", "shell": "list",
}

// Parse parses src, the contents of the SKILL.md named file (the name goes
// into problem spans). It returns what it could read and every problem.
func Parse(file string, src []byte) (*File, []Problem) {
	lines := lineStarts(src)
	at := func(line, col int) diag.Span {
		p := position(src, lines, line, col)
		return diag.Span{File: file, Start: p, End: p}
	}
	out := &File{}
	var probs []Problem
	bad := func(s diag.Span, format string, args ...any) {
		probs = append(probs, Problem{Span: s, Msg: fmt.Sprintf(format, args...)})
	}
	if len(src) > MaxSize {
		bad(at(1, 1), "SKILL.md is %d bytes, over the %d-byte limit", len(src), MaxSize)
		return out, probs
	}
	if !utf8.Valid(src) {
		bad(at(1, 1), "SKILL.md is not valid UTF-8")
		return out, probs
	}
	text := strings.TrimPrefix(string(src), "\uFEFF")
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t\r") != "---" {
		bad(at(1, 1), "SKILL.md must start with a front matter: a line \"---\", YAML, and a closing \"---\"")
		return out, probs
	}
	// Find the closing delimiter.
	var yamlText string
	closed := false
	body := ""
	off := 0
	for off <= len(rest) {
		line, after, more := strings.Cut(rest[off:], "\n")
		if strings.TrimRight(line, " \t\r") == "---" {
			yamlText = rest[:off]
			if more {
				body = after
			}
			closed = true
			break
		}
		if !more {
			break
		}
		off += len(line) + 1
	}
	if !closed {
		bad(at(1, 1), "the front matter is not closed by a line \"---\"")
		return out, probs
	}
	out.Body = body
	lineBase := 1 // the YAML's line 1 is the file's line 2
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(yamlText), &doc); err != nil {
		line, msg := yamlErrLine(err)
		bad(at(line+lineBase, 1), "front matter: %s", msg)
		return out, probs
	}
	if len(doc.Content) == 0 {
		bad(at(1, 1), "the front matter is empty; it needs name and description")
		return out, probs
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		bad(at(m.Line+lineBase, m.Column), "the front matter must be a mapping of keys to values")
		return out, probs
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		kpos := at(k.Line+lineBase, k.Column)
		vpos := at(v.Line+lineBase, v.Column)
		kind, known := fields[k.Value]
		switch {
		case !known:
			bad(kpos, "unknown front-matter key %q (known: description, name, shell, tags, tools, version, when_to_use)", k.Value)
			continue
		case seen[k.Value]:
			bad(kpos, "front-matter key %q is repeated", k.Value)
			continue
		}
		seen[k.Value] = true
		switch kind {
		case "string":
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
				bad(vpos, "%s must be a string", k.Value)
				continue
			}
			s := v.Value
			switch k.Value {
			case "name":
				out.Front.Name = s
				if !NameRE.MatchString(s) {
					bad(vpos, "name %q must be 1 to 64 lower-case letters, digits, - or _, starting with a letter or digit", s)
				}
			case "description":
				out.Front.Description = strings.TrimSpace(s)
				if out.Front.Description == "" {
					bad(vpos, "description must not be empty")
				} else if len(s) > 1024 {
					bad(vpos, "description is %d bytes; at most 1024", len(s))
				}
			case "version":
				out.Front.Version = s
			case "when_to_use":
				out.Front.WhenToUse = strings.TrimSpace(s)
			}
		case "list":
			var list []string
			ok := v.Kind == yaml.SequenceNode
			if ok {
				for _, e := range v.Content {
					if e.Kind != yaml.ScalarNode || e.Tag == "!!null" || e.Value == "" {
						bad(at(e.Line+lineBase, e.Column), "%s must be a list of non-empty strings", k.Value)
						ok = false
						break
					}
					list = append(list, e.Value)
				}
			} else {
				bad(vpos, "%s must be a list of strings, like [a, b]", k.Value)
			}
			if !ok {
				continue
			}
			switch k.Value {
			case "tags":
				out.Front.Tags = list
			case "tools":
				out.Front.Tools = list
			case "shell":
				out.Front.Shell = list
			}
		}
	}
	closing := at(1, 1)
	if !seen["name"] {
		bad(closing, "the front matter has no name")
	}
	if !seen["description"] {
		bad(closing, "the front matter has no description")
	}
	return out, probs
}

// yamlErrLine extracts "line N" from a yaml.v3 error.
func yamlErrLine(err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if _, e := fmt.Sscanf(msg, "line %d:", &line); e == nil && line > 0 {
		_, rest, _ := strings.Cut(msg, ":")
		return line, strings.TrimSpace(rest)
	}
	return 1, msg
}

// lineStarts returns the byte offset of each line's start (index 0 = line 1).
func lineStarts(src []byte) []int {
	out := []int{0}
	for i, c := range src {
		if c == '\n' {
			out = append(out, i+1)
		}
	}
	return out
}

// position converts a 1-based line and rune column to a Pos (clamped).
func position(src []byte, lines []int, line, col int) diag.Pos {
	if line < 1 {
		line = 1
	}
	if line > len(lines) {
		line = len(lines)
	}
	if col < 1 {
		col = 1
	}
	off := lines[line-1]
	end := len(src)
	if line < len(lines) {
		end = lines[line] - 1
	}
	for c := 1; c < col && off < end; c++ {
		_, n := utf8.DecodeRune(src[off:end])
		off += n
	}
	return diag.Pos{Offset: off, Line: line, Col: col}
}

// Render writes f back as SKILL.md text (front matter, then body).
func Render(f *File) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("---\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f.Front); err != nil {
		return nil, fmt.Errorf("skillmd: encode front matter: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("skillmd: encode front matter: %w", err)
	}
	b.WriteString("---\n")
	b.WriteString(f.Body)
	if !strings.HasSuffix(f.Body, "\n") {
		b.WriteString("\n")
	}
	return b.Bytes(), nil
}
