package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/vm"
)

// ToolFixture is a loaded scripted tool fixture (spec/fixtures.md): ordered
// result rules, the first whose input pattern is a subset of the call's
// input wins.
type ToolFixture struct {
	// Name is the name the fixture was loaded under (usually its path).
	Name string
	// Tool is the `tool:` key, the tool the fixture scripts, or "".
	Tool string

	results []*toolResult
}

type toolResult struct {
	num      int
	line     int
	outLine  int
	outCol   int
	input    any // decoded JSON pattern, when hasInput
	hasInput bool
	output   json.RawMessage // nil when err is set
	err      *scriptedError
	times    int // 0: unlimited
}

// LoadToolFixture parses a scripted tool fixture, as strictly as LoadFixture.
func LoadToolFixture(name string, data []byte) (*ToolFixture, error) {
	r := &yamlReader{file: name}
	m, tool, err := r.head(data, "tool", "results")
	if err != nil {
		return nil, err
	}
	fx := &ToolFixture{Name: name, Tool: tool}
	n := m.get("results")
	if n == nil {
		return nil, r.errorf(m.node, "missing results")
	}
	fx.results, err = sequenceOf(r, n, "results", func(item *yaml.Node, i int) (*toolResult, error) { return r.toolResult(item, i+1) })
	if err != nil {
		return nil, err
	}
	if len(fx.results) == 0 {
		return nil, r.errorf(n, "results: want at least one result")
	}
	return fx, nil
}

func (r *yamlReader) toolResult(n *yaml.Node, num int) (*toolResult, error) {
	path := fmt.Sprintf("results[%d]", num-1)
	m, err := r.mapping(n, path, "match", "times", "output", "error")
	if err != nil {
		return nil, err
	}
	res := &toolResult{num: num, line: m.node.Line}
	if tn := m.get("times"); tn != nil {
		if res.times, err = r.integer(tn, path+".times", 1, math.MaxInt); err != nil {
			return nil, err
		}
	}
	if mn := m.get("match"); mn != nil {
		mm, err := r.mapping(mn, path+".match", "input")
		if err != nil {
			return nil, err
		}
		if in := mm.get("input"); in != nil {
			raw, err := r.json(in, path+".match.input")
			if err != nil {
				return nil, err
			}
			res.input, _ = types.DecodeAny(raw) // raw was just encoded: valid
			res.hasInput = true
		}
	}
	out, e := m.get("output"), m.get("error")
	switch {
	case out != nil && e != nil:
		return nil, r.errorf(e, "%s: give output or error, not both", path)
	case out != nil:
		if res.output, err = r.json(out, path+".output"); err != nil {
			return nil, err
		}
		res.outLine, res.outCol = out.Line, out.Column
	case e != nil:
		if res.err, err = r.errorValue(e, path+".error"); err != nil {
			return nil, err
		}
	default:
		return nil, r.errorf(m.node, "%s: missing output or error", path)
	}
	return res, nil
}

// CheckOutputs calls check on every scripted output, in order, and returns
// the first failure located at its output. Whoever knows the tool's declared
// output type (the fixture's binder) uses it to check outputs at load time.
func (fx *ToolFixture) CheckOutputs(check func(output json.RawMessage) error) error {
	for _, res := range fx.results {
		if res.output == nil {
			continue
		}
		if err := check(res.output); err != nil {
			return &FixtureError{File: fx.Name, Line: res.outLine, Column: res.outCol,
				Msg: fmt.Sprintf("results[%d].output: %v", res.num-1, err)}
		}
	}
	return nil
}

// scriptedTool is the tool that replays a ToolFixture. Its only state, how
// often each `times` result has answered, is guarded by mu; it is safe for
// concurrent use.
type scriptedTool struct {
	spec   runtime.ToolSpec
	effect runtime.Effect
	fx     *ToolFixture

	mu   sync.Mutex
	used []int // per result
}

// NewScriptedTool returns a tool with the given spec and effect whose calls
// are answered from fx.
func NewScriptedTool(spec runtime.ToolSpec, effect runtime.Effect, fx *ToolFixture) runtime.Tool {
	return &scriptedTool{spec: spec, effect: effect, fx: fx, used: make([]int, len(fx.results))}
}

func (t *scriptedTool) Spec() runtime.ToolSpec { return t.spec }
func (t *scriptedTool) Effect() runtime.Effect { return t.effect }
func (t *scriptedTool) name() string           { return "tool " + t.spec.Name }

// Call answers with the first result whose input pattern is a subset of
// req.Args and whose `times` (if any) is not used up (objects: every pattern key present with a matching value;
// arrays: same length, items matching in order; numbers by value; other
// scalars equal). No match is a tool_error.
func (t *scriptedTool) Call(ctx context.Context, req runtime.ToolRequest) (json.RawMessage, error) {
	if ctx.Err() != nil {
		return nil, ctxError(ctx, t.name())
	}
	args := req.Args
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("null")
	}
	input, err := types.DecodeAny(args)
	if err != nil {
		return nil, runtime.Errorf(vm.KindToolError, "%s: input is not JSON: %v", t.name(), err)
	}
	t.mu.Lock()
	var chosen *toolResult
	for i, res := range t.fx.results {
		if res.hasInput && !subset(res.input, input) {
			continue
		}
		if res.times > 0 && t.used[i] >= res.times {
			continue
		}
		t.used[i]++
		chosen = res
		break
	}
	t.mu.Unlock()
	if chosen != nil {
		if chosen.err != nil {
			return nil, runtime.Errorf(chosen.err.kind, "%s", chosen.err.message)
		}
		return append(json.RawMessage(nil), chosen.output...), nil
	}
	return nil, runtime.Errorf(vm.KindToolError, "%s: no scripted result for input %s (fixture %s)",
		t.name(), clip(string(args), 200), t.fx.Name)
}

// subset reports whether pattern matches value (see scriptedTool.Call).
func subset(pattern, value any) bool {
	switch p := pattern.(type) {
	case map[string]any:
		v, ok := value.(map[string]any)
		if !ok {
			return false
		}
		for k, pv := range p {
			vv, ok := v[k]
			if !ok || !subset(pv, vv) {
				return false
			}
		}
		return true
	case []any:
		v, ok := value.([]any)
		if !ok || len(v) != len(p) {
			return false
		}
		for i := range p {
			if !subset(p[i], v[i]) {
				return false
			}
		}
		return true
	case json.Number:
		v, ok := value.(json.Number)
		return ok && sameNumber(p, v)
	}
	return pattern == value
}

// sameNumber compares two JSON numbers by value, so 1, 1.0 and 1e0 are
// equal: exactly when both are integers, else as float64.
func sameNumber(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, errx := a.Int64()
	y, erry := b.Int64()
	if errx == nil && erry == nil {
		return x == y
	}
	f, errf := a.Float64()
	g, errg := b.Float64()
	return errf == nil && errg == nil && f == g
}
