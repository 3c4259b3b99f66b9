package tools

// Declared tools: `run = http { ... }` and `run = exec { ... }`. Their
// templates are chunks of the program (`input` is local 0), evaluated by a
// loaded vm.Machine against the call's validated input record; env()
// references written directly as a header value are resolved once, when the
// tools are bound (the program's load), through Config.LookupEnv.

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/vm"
)

// Defaults of the declared tool kinds (spec/language.md §7.2, §7.3).
const (
	DefaultHTTPTimeout = 30 * time.Second
	DefaultExecTimeout = 60 * time.Second
)

// BindDeclared adds to into, for every declared `run = http` and `run =
// exec` tool of m's program, its implementation under the tool's name,
// unless into already has one (a scripted replay wins). It fails, naming
// the tool, when a header's env() variable is unset without a default (the
// program does not load) or an attribute is malformed.
func BindDeclared(into map[string]runtime.Tool, m *vm.Machine, cfg Config) error {
	return BindKinds(into, m.Program(), func(t *bytecode.Tool) (runtime.Tool, error) {
		d, err := newDeclared(m, t, cfg)
		if err != nil {
			return nil, err
		}
		if t.Impl.Kind == bytecode.ImplHTTP {
			return newHTTPTool(d)
		}
		return newExecTool(d)
	}, bytecode.ImplHTTP, bytecode.ImplExec)
}

// BindKinds adds to into, for every tool of p whose implementation is of
// one of kinds and that into lacks (a scripted replay wins), the tool
// newTool makes of it; it stops at newTool's first error.
func BindKinds(into map[string]runtime.Tool, p *bytecode.Program, newTool func(t *bytecode.Tool) (runtime.Tool, error), kinds ...bytecode.ImplKind) error {
	for i := range p.Tools {
		t := &p.Tools[i]
		if into[t.Name] != nil || !slices.Contains(kinds, t.Impl.Kind) {
			continue
		}
		tool, err := newTool(t)
		if err != nil {
			return err
		}
		into[t.Name] = tool
	}
	return nil
}

// declared is what both kinds share: the program, the descriptor, its
// types and the per-call timeout the tool block sets.
type declared struct {
	m       *vm.Machine
	p       *bytecode.Program
	t       *bytecode.Tool
	cfg     Config
	in, out *types.Type
	timeout time.Duration            // the tool block's `timeout`; 0 = none
	opts    map[string]bytecode.Attr // Impl.Options by name (http: query, body, timeout, headers as one expression; exec: dir, env, stdin)
}

func newDeclared(m *vm.Machine, t *bytecode.Tool, cfg Config) (*declared, error) {
	p := m.Program()
	if int(t.Input) >= len(p.Types) || int(t.Output) >= len(p.Types) {
		return nil, fmt.Errorf("tool %s: type index out of range", t.Name)
	}
	d := &declared{m: m, p: p, t: t, cfg: cfg, in: p.Types[t.Input], out: p.Types[t.Output],
		opts: make(map[string]bytecode.Attr, len(t.Impl.Options))}
	for _, a := range t.Impl.Options {
		d.opts[a.Name] = a
	}
	for _, a := range t.Attrs {
		if a.Name == "timeout" {
			v, err := d.constAttr(a)
			if err != nil {
				return nil, err
			}
			d.timeout = v.Duration()
		}
	}
	return d, nil
}

// spec is the tool as a model sees it.
func (d *declared) spec() runtime.ToolSpec {
	return runtime.ToolSpec{Name: d.t.Name, Description: d.t.Doc, InputSchema: types.JSONSchema(d.in)}
}

// errorf is a *vm.Error of kind naming the tool.
func (d *declared) errorf(kind vm.ErrorKind, format string, args ...any) error {
	return runtime.Errorf(kind, "tool %s: %s", d.t.Name, fmt.Sprintf(format, args...))
}

// input validates the call's arguments against the declared input type (the
// runtime has done so already; a direct caller may not have).
func (d *declared) input(args json.RawMessage) (types.Value, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	v, err := types.FromJSON(d.in, args)
	if err != nil {
		return types.Value{}, d.errorf(vm.KindToolError, "invalid arguments: %v", err)
	}
	return v, nil
}

// eval runs a template chunk with input as local 0.
func (d *declared) eval(ctx context.Context, what string, chunk uint32, input types.Value) (types.Value, error) {
	v, err := d.m.Eval(ctx, int(chunk), nil, input)
	if err != nil {
		return types.Value{}, d.errorf(vm.KindToolError, "%s: %v", what, err)
	}
	return v, nil
}

// text evaluates a template that must give a string.
func (d *declared) text(ctx context.Context, what string, chunk uint32, input types.Value) (string, error) {
	v, err := d.eval(ctx, what, chunk, input)
	if err != nil {
		return "", err
	}
	switch v.Kind() {
	case types.ValString:
		return v.Str(), nil
	case types.ValSecret:
		return v.SecretText(), nil
	}
	return "", d.errorf(vm.KindToolError, "%s: want a string, got %s", what, v.Kind())
}

// attrValue is an attribute's value for this call: a constant, an env
// reference resolved at bind time (env), or a template evaluated now.
func (d *declared) attrValue(ctx context.Context, a bytecode.Attr, env map[string]types.Value, input types.Value) (types.Value, error) {
	switch a.Kind {
	case bytecode.AttrConst:
		return d.constAttr(a)
	case bytecode.AttrEnv:
		return env[a.Name], nil
	case bytecode.AttrCode:
		return d.eval(ctx, a.Name, a.Code, input)
	}
	return types.Value{}, d.errorf(vm.KindInternal, "attribute %s: unsupported kind %s", a.Name, a.Kind)
}

// optString evaluates the option name, which must give a string; ok is
// false when the tool does not set it.
func (d *declared) optString(ctx context.Context, name string, input types.Value) (s string, ok bool, err error) {
	a, ok := d.opts[name]
	if !ok {
		return "", false, nil
	}
	v, err := d.attrValue(ctx, a, nil, input)
	if err != nil {
		return "", true, err
	}
	if v.Kind() != types.ValString {
		return "", true, d.errorf(vm.KindToolError, "%s: want a string, got %s", name, v.Kind())
	}
	return v.Str(), true, nil
}

// optStringMap evaluates the option name as a map of strings (stringMap);
// ok is false when the tool does not set it.
func (d *declared) optStringMap(ctx context.Context, name string, input types.Value) (m map[string]string, ok bool, err error) {
	a, ok := d.opts[name]
	if !ok {
		return nil, false, nil
	}
	v, err := d.attrValue(ctx, a, nil, input)
	if err != nil {
		return nil, true, err
	}
	m, err = d.stringMap(name, v)
	return m, true, err
}

// constAttr is a's constant (bytecode.Program.AttrConst), else an error
// naming the tool.
func (d *declared) constAttr(a bytecode.Attr) (types.Value, error) {
	if v, ok := d.p.AttrConst(a); ok {
		return v, nil
	}
	return types.Value{}, fmt.Errorf("tool %s: attribute %s is not a constant", d.t.Name, a.Name)
}

// resolveEnv resolves the env references among attrs (by attribute name,
// bytecode.Program.AttrValue over Config.LookupEnv), failing the load when
// one is unset without a default. Values are never part of an error.
func (d *declared) resolveEnv(attrs []bytecode.Attr) (map[string]types.Value, error) {
	out := map[string]types.Value{}
	for _, a := range attrs {
		if a.Kind != bytecode.AttrEnv {
			continue
		}
		v, _, err := d.p.AttrValue(a, d.cfg.LookupEnv)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %s: %w", d.t.Name, a.Name, err)
		}
		out[a.Name] = v
	}
	return out, nil
}

// stringMap converts a map<string> value to Go, secrets included.
func (d *declared) stringMap(what string, v types.Value) (map[string]string, error) {
	if v.IsNull() {
		return nil, nil
	}
	if v.Kind() != types.ValMap {
		return nil, d.errorf(vm.KindToolError, "%s: want a map of strings, got %s", what, v.Kind())
	}
	out := make(map[string]string, v.Len())
	for i := range v.Len() {
		k, e := v.MapEntry(i)
		switch e.Kind() {
		case types.ValString:
			out[k] = e.Str()
		case types.ValSecret:
			out[k] = e.SecretText()
		case types.ValNull:
		default:
			return nil, d.errorf(vm.KindToolError, "%s: %s: want a string, got %s", what, k, e.Kind())
		}
	}
	return out, nil
}

// callTimeout is the tightest of the kind's own timeout and the tool
// block's.
func (d *declared) callTimeout(own time.Duration) time.Duration {
	if d.timeout > 0 && d.timeout < own {
		return d.timeout
	}
	return own
}

// result decodes a successful body as the output type: a string output
// takes the text as is, anything else must be JSON of that type.
func (d *declared) result(what string, body []byte) (json.RawMessage, error) {
	if isText(d.out) {
		b, err := json.Marshal(toValidUTF8(body))
		if err != nil {
			return nil, d.errorf(vm.KindInternal, "encode %s: %v", what, err)
		}
		return b, nil
	}
	v, err := types.FromJSON(d.out, project(d.out, body))
	if err != nil {
		return nil, d.errorf(vm.KindInvalidOutput, "%s does not fit %s: %v", what, d.out, err)
	}
	b, err := types.ToJSON(v)
	if err != nil {
		return nil, d.errorf(vm.KindInvalidOutput, "%s: %v", what, err)
	}
	return b, nil
}

// DecodeOutput decodes a tool result body as out, the way declared tools
// do: a string output takes the text as is (invalid UTF-8 replaced),
// anything else must be JSON of that type, members out's records do not
// declare dropped. The error is a *vm.Error of kind invalid_output.
func DecodeOutput(out *types.Type, what string, body []byte) (json.RawMessage, error) {
	d := &declared{t: &bytecode.Tool{Name: what}, out: out}
	return d.result("result", body)
}

// project drops the object members that d.out's records do not declare, so
// that a response may carry more than the tool asks for. Anything that is
// not JSON is returned as is (FromJSON reports it).
func project(t *types.Type, body []byte) []byte {
	v, err := types.DecodeAny(body)
	if err != nil {
		return body
	}
	out, err := json.Marshal(projectValue(t, v))
	if err != nil {
		return body
	}
	return out
}

func projectValue(t *types.Type, v any) any {
	switch t.Kind() {
	case types.KindOptional:
		return projectValue(t.Elem(), v)
	case types.KindList:
		if xs, ok := v.([]any); ok {
			for i := range xs {
				xs[i] = projectValue(t.Elem(), xs[i])
			}
		}
	case types.KindMap:
		if m, ok := v.(map[string]any); ok {
			for k := range m {
				m[k] = projectValue(t.Elem(), m[k])
			}
		}
	case types.KindRecord:
		if m, ok := v.(map[string]any); ok {
			for k := range m {
				if i := t.FieldIndex(k); i < 0 {
					delete(m, k)
				} else {
					m[k] = projectValue(t.Field(i).Type, m[k])
				}
			}
		}
	}
	return v
}

// isText reports whether an output type takes a body as text.
func isText(t *types.Type) bool {
	if t.Kind() == types.KindOptional {
		t = t.Elem()
	}
	return t.Kind() == types.KindString
}

// fileDir is the folder of the file that declares the tool, relative to the
// module root and slash-separated ("." at the root).
func (d *declared) fileDir() string {
	if f := int(d.t.Span.File); f < len(d.p.Files) && d.t.Span.IsValid() {
		return path.Dir(d.p.Files[f])
	}
	return "."
}
