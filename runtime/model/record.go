package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/vm"
)

// Recording records the calls of live tools and writes them as scripted
// tool fixtures (spec/fixtures.md), one per tool, that `tool NAME replay`
// reads back: `agentc run --record DIR`. It is safe for concurrent use.
type Recording struct {
	mu    sync.Mutex
	calls map[string][]recordedCall
}

type recordedCall struct {
	input  json.RawMessage
	output json.RawMessage // nil when err is set
	kind   vm.ErrorKind
	msg    string
}

// NewRecording returns an empty recording.
func NewRecording() *Recording { return &Recording{calls: map[string][]recordedCall{}} }

// Wrap returns t recording each call under name: its arguments and its
// output, or its error's kind and message. A call canceled by its context
// is not recorded (it has no outcome to replay).
func (r *Recording) Wrap(name string, t runtime.Tool) runtime.Tool {
	return &recordingTool{Tool: t, name: name, r: r}
}

type recordingTool struct {
	runtime.Tool
	name string
	r    *Recording
}

func (t *recordingTool) Call(ctx context.Context, req runtime.ToolRequest) (json.RawMessage, error) {
	out, err := t.Tool.Call(ctx, req)
	if ctx.Err() != nil {
		return out, err
	}
	args := req.Args
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	c := recordedCall{input: append(json.RawMessage(nil), args...)}
	if err != nil {
		c.kind, c.msg = vm.KindToolError, err.Error()
		var ve *vm.Error
		if errors.As(err, &ve) && errorKinds[ve.Kind] {
			c.kind, c.msg = ve.Kind, ve.Message
		}
	} else {
		c.output = append(json.RawMessage(nil), out...)
	}
	t.r.mu.Lock()
	t.r.calls[t.name] = append(t.r.calls[t.name], c)
	t.r.mu.Unlock()
	return out, err
}

// Tools are the names of the tools with recorded calls, sorted.
func (r *Recording) Tools() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.calls))
	for n := range r.calls {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Fixture is the scripted tool fixture of name's calls, in call order:
// each call's full input as its match and its output or error. A call
// whose input repeats a later call's answers once (`times: 1`), so a
// replay gives the same sequence of answers. nil when name has no calls.
func (r *Recording) Fixture(name string) []byte {
	r.mu.Lock()
	calls := append([]recordedCall(nil), r.calls[name]...)
	r.mu.Unlock()
	if len(calls) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("# Recorded by agentc run --record from the live tool.\nversion: 1\ntool: ")
	b.Write(jsonText(name))
	b.WriteString("\nresults:\n")
	for i, c := range calls {
		b.WriteString("  - match: {input: ")
		b.Write(compact(c.input))
		b.WriteString("}\n")
		for _, later := range calls[i+1:] {
			if bytes.Equal(compact(later.input), compact(c.input)) {
				b.WriteString("    times: 1\n")
				break
			}
		}
		if c.output != nil {
			b.WriteString("    output: ")
			b.Write(compact(c.output))
		} else {
			fmt.Fprintf(&b, "    error: {kind: %s, message: %s}", c.kind, jsonText(c.msg))
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

// compact is raw JSON on one line (JSON is YAML flow syntax), HTML
// characters unescaped.
func compact(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return jsonText(string(raw))
	}
	return b.Bytes()
}

// jsonText is s as a JSON (and YAML) double-quoted string.
func jsonText(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimRight(b.Bytes(), "\n")
}

// WriteDir writes each recorded tool's Fixture to dir/TOOL.yaml (making
// dir) and returns the paths written, in tool order; it writes nothing
// (and makes no dir) when no tool was called. Every file it can write is
// written; the errors of the others are joined.
func (r *Recording) WriteDir(dir string) ([]string, error) {
	tools := r.Tools()
	if len(tools) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	var errs []error
	for _, name := range tools {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, r.Fixture(name), 0o644); err != nil {
			errs = append(errs, err)
			continue
		}
		paths = append(paths, p)
	}
	return paths, errors.Join(errs...)
}

// Save is WriteDir for agentc run --record DIR: say gets, for each file
// written, the test-block line that replays it, that nothing was written
// when no tool was called, and WriteDir's error.
func (r *Recording) Save(dir string, say func(string)) {
	paths, err := r.WriteDir(dir)
	if len(paths) == 0 && err == nil {
		say("--record: no http, exec or mcp tool was called; nothing written")
	}
	for _, p := range paths {
		say(fmt.Sprintf("recorded %s (replay: tool %s replay %q)", p, strings.TrimSuffix(filepath.Base(p), ".yaml"), filepath.ToSlash(p)))
	}
	if err != nil {
		say(fmt.Sprintf("--record: %v", err))
	}
}
