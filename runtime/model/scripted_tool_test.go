package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/vm"
)

const toolFixture = `version: 1
tool: cert_scan
results:
  - match: {input: {host: prod.example.com}}
    output: {chain: ["leaf", "intermediate"], expires: "2026-01-01"}
  - match: {input: {host: staging, ports: [443, 8443], opts: {deep: true}}}
    output: staging-result
  - match: {input: {retries: 3}}
    output: null
  - match: {input: {host: down}}
    error: {kind: unavailable, message: "connection refused"}
`

func TestScriptedTool(t *testing.T) {
	fx, err := LoadToolFixture("cert.yaml", []byte(toolFixture))
	if err != nil {
		t.Fatal(err)
	}
	spec := runtime.ToolSpec{Name: "cert_scan", InputSchema: map[string]any{"type": "object"}}
	tool := NewScriptedTool(spec, runtime.ReadOnly, fx)
	if tool.Spec().Name != "cert_scan" || tool.Effect() != runtime.ReadOnly {
		t.Fatalf("spec/effect = %+v/%v", tool.Spec(), tool.Effect())
	}
	tests := []struct {
		args string
		want string // output JSON, or "error <kind>: <substring>"
	}{
		{`{"host":"prod.example.com"}`, `{"chain":["leaf","intermediate"],"expires":"2026-01-01"}`},
		{`{"host":"prod.example.com","extra":1}`, `{"chain":["leaf","intermediate"],"expires":"2026-01-01"}`},
		{`{"host":"staging","ports":[443,8443],"opts":{"deep":true,"fast":false}}`, `"staging-result"`},
		{`{"host":"staging","ports":[443],"opts":{"deep":true}}`, `error tool_error: no scripted result for input`},
		{`{"host":"staging","ports":[443,8443],"opts":{"deep":false}}`, `error tool_error: no scripted result`},
		{`{"retries":3.0}`, `null`},
		{`{"retries":3e0}`, `null`},
		{`{"retries":"3"}`, `error tool_error: no scripted result`},
		{`{"host":"down"}`, `error unavailable: connection refused`},
		{`[1,2]`, `error tool_error: no scripted result`},
		{`{"host":`, `error tool_error: input is not JSON`},
	}
	for _, tc := range tests {
		out, err := tool.Call(context.Background(), runtime.ToolRequest{CallID: "c", Args: json.RawMessage(tc.args)})
		if rest, ok := strings.CutPrefix(tc.want, "error "); ok {
			kind, sub, _ := strings.Cut(rest, ": ")
			var ve *vm.Error
			if !errors.As(err, &ve) || string(ve.Kind) != kind || !strings.Contains(ve.Message, sub) {
				t.Errorf("%s: err = %v, want %s containing %q", tc.args, err, kind, sub)
			}
			continue
		}
		if err != nil || string(out) != tc.want {
			t.Errorf("%s: %s, %v; want %s", tc.args, out, err, tc.want)
		}
	}
}

func TestScriptedToolEmptyMatch(t *testing.T) {
	fx, err := LoadToolFixture("t.yaml", []byte("version: 1\nresults:\n  - match: {}\n    output: {ok: true}\n  - output: never\n"))
	if err != nil {
		t.Fatal(err)
	}
	tool := NewScriptedTool(runtime.ToolSpec{Name: "t"}, runtime.SideEffect, fx)
	for _, args := range []string{`{}`, `{"a":1}`, ``, `"x"`} {
		out, err := tool.Call(context.Background(), runtime.ToolRequest{Args: json.RawMessage(args)})
		if err != nil || string(out) != `{"ok":true}` {
			t.Errorf("args %q: %s, %v", args, out, err)
		}
	}
}

func TestToolFixtureCheckOutputs(t *testing.T) {
	fx, err := LoadToolFixture("cert.yaml", []byte(toolFixture))
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	err = fx.CheckOutputs(func(out json.RawMessage) error {
		seen = append(seen, string(out))
		if string(out) == `"staging-result"` {
			return fmt.Errorf("want an object")
		}
		return nil
	})
	if err == nil || err.Error() != "cert.yaml:7:13: results[1].output: want an object" {
		t.Errorf("err = %v", err)
	}
	if len(seen) != 2 {
		t.Errorf("checked %q, want to stop at the first failure", seen)
	}
}
