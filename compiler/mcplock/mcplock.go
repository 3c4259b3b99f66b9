// Package mcplock reads and writes MCP lock files (spec/tools.md "Pinned
// schemas"): for the `run = mcp` tools an .agent file declares, each
// server's tool list with its JSON Schemas and annotations, pinned so that
// `agentc validate` type-checks calls without the network. Parse is a
// decoder of untrusted bytes: it never panics and bounds what it accepts.
package mcplock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/agentc/agentc/compiler/types"
)

// Version is the lock format, the value of "agentc_mcp_lock".
const Version = 1

// Limits of Parse.
const (
	MaxSize  = 16 << 20 // bytes of a lock file
	MaxDepth = 64       // JSON nesting
)

// Name is the lock file of the .agent file name: x.agent → x.mcp.lock, in
// the same folder.
func Name(agentFile string) string {
	return strings.TrimSuffix(agentFile, ".agent") + ".mcp.lock"
}

// File is a lock file: the servers one .agent file declares.
type File struct {
	Servers []*Server `json:"servers"`
}

// Server is one MCP server: how the declaration reaches it (exactly one of
// URL and Command, as written: a URL given by env() is its source text),
// what it reported at initialization, and its tools.
type Server struct {
	URL     string   `json:"url,omitempty"`
	Command []string `json:"command,omitempty"`
	// Name and Version are the server's serverInfo (informative).
	Name    string  `json:"name,omitempty"`
	Version string  `json:"version,omitempty"`
	Tools   []*Tool `json:"tools"`
}

// Tool is one tool of a server as tools/list described it.
type Tool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// Annotations are the tool's behaviour hints (nil: not given).
type Annotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// wire is the file's top level.
type wire struct {
	Lock    int       `json:"agentc_mcp_lock"`
	Servers []*Server `json:"servers"`
}

// Key identifies a server the way a declaration names it.
func (s *Server) Key() string {
	if s.URL != "" {
		return "url " + s.URL
	}
	b, _ := json.Marshal(s.Command)
	return "command " + string(b)
}

// URLKey and CommandKey are Key for a declaration's url or command.
func URLKey(url string) string { return (&Server{URL: url}).Key() }

// CommandKey is Key for a declaration's command.
func CommandKey(argv []string) string { return (&Server{Command: argv}).Key() }

// Server returns the server with key, or nil.
func (f *File) Server(key string) *Server {
	if f == nil {
		return nil
	}
	for _, s := range f.Servers {
		if s.Key() == key {
			return s
		}
	}
	return nil
}

// Tool returns the server's tool named name, or nil.
func (s *Server) Tool(name string) *Tool {
	if s == nil {
		return nil
	}
	for _, t := range s.Tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Parse decodes a lock file. Unknown members, a wrong version, a server
// without exactly one of url and command, duplicate servers or tools, and
// schemas that are not JSON objects are errors, as is anything larger than
// MaxSize or nested deeper than MaxDepth.
func Parse(data []byte) (*File, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("larger than %d bytes", MaxSize)
	}
	if err := checkDepth(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w wire
	if err := dec.Decode(&w); err != nil {
		return nil, positioned(data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the lock object")
	}
	if w.Lock != Version {
		return nil, fmt.Errorf("agentc_mcp_lock is %d, want %d", w.Lock, Version)
	}
	f := &File{Servers: w.Servers}
	seen := map[string]bool{}
	for i, s := range f.Servers {
		if s == nil {
			return nil, fmt.Errorf("servers[%d] is null", i)
		}
		if (s.URL == "") == (len(s.Command) == 0) {
			return nil, fmt.Errorf("servers[%d] needs exactly one of url and command", i)
		}
		k := s.Key()
		if seen[k] {
			return nil, fmt.Errorf("servers[%d]: %s is listed twice", i, k)
		}
		seen[k] = true
		names := map[string]bool{}
		for j, t := range s.Tools {
			if t == nil || t.Name == "" {
				return nil, fmt.Errorf("%s: tools[%d] has no name", k, j)
			}
			if names[t.Name] {
				return nil, fmt.Errorf("%s: tool %s is listed twice", k, t.Name)
			}
			names[t.Name] = true
			if _, err := object(t.InputSchema); err != nil {
				return nil, fmt.Errorf("%s: tool %s: input_schema: %w", k, t.Name, err)
			}
			if len(t.OutputSchema) > 0 {
				if _, err := object(t.OutputSchema); err != nil {
					return nil, fmt.Errorf("%s: tool %s: output_schema: %w", k, t.Name, err)
				}
			}
		}
	}
	return f, nil
}

// checkDepth refuses JSON nested deeper than MaxDepth (strings skipped).
func checkDepth(data []byte) error {
	depth, inStr, esc := 0, false, false
	for _, c := range data {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			if depth++; depth > MaxDepth {
				return fmt.Errorf("nested deeper than %d", MaxDepth)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// positioned adds the line and column of a JSON error.
func positioned(data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return err
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := int(off) - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

// object decodes a schema: a JSON object, numbers kept exact.
func object(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 {
		return nil, errors.New("missing")
	}
	v, err := types.DecodeAny(raw)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

// Input is the tool's input schema, decoded (nil if it does not decode:
// Parse refuses such files).
func (t *Tool) Input() map[string]any {
	m, _ := object(t.InputSchema)
	return m
}

// Output is the tool's output schema, decoded; nil when there is none.
func (t *Tool) Output() map[string]any {
	if len(t.OutputSchema) == 0 {
		return nil
	}
	m, _ := object(t.OutputSchema)
	return m
}

// Canonical returns a schema as compact JSON with object keys sorted and
// numbers as written: the form a lock file holds.
func Canonical(schema []byte) (json.RawMessage, error) {
	v, err := types.DecodeAny(schema)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// Marshal encodes f deterministically: servers sorted by Key, tools by
// name, schemas canonical, two-space indentation, one member per line, a
// final newline. The same server answers give the same bytes.
func Marshal(f *File) ([]byte, error) {
	w := wire{Lock: Version, Servers: make([]*Server, 0, len(f.Servers))}
	for _, s := range f.Servers {
		c := *s
		c.Tools = make([]*Tool, 0, len(s.Tools))
		for _, t := range s.Tools {
			ct := *t
			var err error
			if len(t.InputSchema) == 0 {
				ct.InputSchema = json.RawMessage(`{"type":"object"}`)
			} else if ct.InputSchema, err = Canonical(t.InputSchema); err != nil {
				return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
			}
			if len(t.OutputSchema) > 0 {
				if ct.OutputSchema, err = Canonical(t.OutputSchema); err != nil {
					return nil, fmt.Errorf("tool %s: output schema: %w", t.Name, err)
				}
			}
			c.Tools = append(c.Tools, &ct)
		}
		sort.Slice(c.Tools, func(i, j int) bool { return c.Tools[i].Name < c.Tools[j].Name })
		w.Servers = append(w.Servers, &c)
	}
	sort.Slice(w.Servers, func(i, j int) bool { return w.Servers[i].Key() < w.Servers[j].Key() })
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Effect is the effect class annotations suggest (spec/language.md §12.9).
type Effect uint8

// Effects, weakest first; None: the annotations say nothing.
const (
	None Effect = iota
	ReadOnly
	Idempotent
	SideEffect
)

func (e Effect) String() string {
	return [...]string{"", "read_only", "idempotent", "side_effect"}[e]
}

// Effect is the effect the tool's annotations give: readOnlyHint →
// read_only; else destructiveHint → side_effect; else idempotentHint →
// idempotent; else None (the declaration's default stands). destructive
// reports an explicit destructiveHint: true (with readOnlyHint not true).
func (t *Tool) Effect() (e Effect, destructive bool) {
	a := t.Annotations
	if a == nil {
		return None, false
	}
	is := func(p *bool) bool { return p != nil && *p }
	switch {
	case is(a.ReadOnlyHint):
		return ReadOnly, false
	case is(a.DestructiveHint):
		return SideEffect, true
	case is(a.IdempotentHint):
		return Idempotent, false
	}
	return None, false
}
