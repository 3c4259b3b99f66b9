package model

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentc/agentc/runtime"
)

// FuzzLoadFixture checks that loading never panics, that every failure is a
// *FixtureError, and that a loaded fixture answers calls without panicking.
func FuzzLoadFixture(f *testing.F) {
	for _, s := range []string{
		matchFixture,
		toolFixture,
		"version: 1\ndefault: {text: hi, chunks: 3}\n",
		"version: 1\nreplies:\n  - match: {input: \"(a|b)+\"}\n    tool_calls: [{name: t, args: {a: &x [1, *x]}}]\n",
		"version: 2\n",
		"version: 1\ndefault: {text: [}\n",
		"{version: 1, default: {error: {kind: timeout}}}",
		"version: 1\nresults:\n  - match: {input: {a: [1, {b: null}]}}\n    output: ~\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fe *FixtureError
		fx, err := LoadFixture("fuzz.yaml", data)
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("error %v is a %T, not a *FixtureError", err, err)
		}
		if err == nil {
			m := NewScripted(runtime.ModelInfo{Name: "fuzz"}, fx)
			for _, site := range []runtime.CallSite{{Node: "triage", MapIndex: -1, Turn: 1}, {Node: "scan", MapIndex: 1, Turn: 2}} {
				req := &runtime.ModelRequest{Site: site, Messages: []runtime.Message{{Role: runtime.RoleUser, Content: "x509 retry"}}}
				resp, err := m.Generate(context.Background(), req, func(string) {})
				if err == nil {
					for _, c := range resp.ToolCalls {
						if !json.Valid(c.Args) {
							t.Fatalf("scripted args are not JSON: %s", c.Args)
						}
					}
				}
			}
		}
		tfx, err := LoadToolFixture("fuzz.yaml", data)
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("error %v is a %T, not a *FixtureError", err, err)
		}
		if err == nil {
			tool := NewScriptedTool(runtime.ToolSpec{Name: "t"}, runtime.ReadOnly, tfx)
			out, err := tool.Call(context.Background(), runtime.ToolRequest{Args: json.RawMessage(`{"a":[1,{"b":null}],"host":"x"}`)})
			if err == nil && !json.Valid(out) {
				t.Fatalf("scripted output is not JSON: %s", out)
			}
		}
	})
}
