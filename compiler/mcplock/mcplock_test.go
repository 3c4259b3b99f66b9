package mcplock

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/types"
)

func yes() *bool { b := true; return &b }

func sample() *File {
	return &File{Servers: []*Server{
		{Command: []string{"srv", "--stdio"}, Tools: []*Tool{
			{Name: "b", InputSchema: json.RawMessage(`{"type":"object"}`)},
		}},
		{URL: "http://127.0.0.1:1/mcp", Name: "docs", Version: "1.0", Tools: []*Tool{
			{Name: "search", Description: "Searches", Annotations: &Annotations{ReadOnlyHint: yes()},
				InputSchema:  json.RawMessage(`{"type":"object","required":["query"],"properties":{"query":{"type":"string"},"limit":{"type":"integer"}}}`),
				OutputSchema: json.RawMessage(`{"properties":{"hits":{"items":{"type":"string"},"type":"array"}},"type":"object"}`)},
			{Name: "a", InputSchema: json.RawMessage(`{ "type" : "object", "properties": {"x": {"maximum": 1.50}}}`)},
		}},
	}}
}

func TestMarshalDeterministicAndParses(t *testing.T) {
	b1, err := Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	f := sample()
	f.Servers[0], f.Servers[1] = f.Servers[1], f.Servers[0]
	b2, err := Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1, b2) {
		t.Fatalf("order changed the bytes:\n%s\n%s", b1, b2)
	}
	// Sorted servers and tools, sorted schema keys, exact numbers, one
	// member per line.
	s := string(b1)
	for _, want := range []string{`"agentc_mcp_lock": 1`, `"maximum": 1.50`, "\n            \"properties\": {\n              \"limit\": {"} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in\n%s", want, s)
		}
	}
	if strings.Index(s, `"command"`) > strings.Index(s, `"url"`) || strings.Index(s, `"name": "a"`) > strings.Index(s, `"name": "search"`) {
		t.Errorf("not sorted:\n%s", s)
	}
	got, err := Parse(b1)
	if err != nil {
		t.Fatal(err)
	}
	b3, err := Marshal(got)
	if err != nil || !bytes.Equal(b1, b3) {
		t.Fatalf("round trip: %v\n%s", err, b3)
	}
	srv := got.Server(URLKey("http://127.0.0.1:1/mcp"))
	if srv == nil || srv.Tool("search") == nil || srv.Tool("gone") != nil || got.Server(CommandKey([]string{"srv", "--stdio"})) == nil {
		t.Fatal("lookup")
	}
	if e, d := srv.Tool("search").Effect(); e != ReadOnly || d {
		t.Errorf("effect %v %v", e, d)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"empty", ``, "EOF"},
		{"truncated", `{"agentc_mcp_lock": 1,`, "EOF"},
		{"not json", "{\n  \"agentc_mcp_lock\": 1,,", "line 2"},
		{"version", `{"agentc_mcp_lock": 2, "servers": []}`, "want 1"},
		{"unknown member", `{"agentc_mcp_lock": 1, "servers": [], "x": 1}`, "unknown field"},
		{"trailing", `{"agentc_mcp_lock": 1, "servers": []} {}`, "after"},
		{"no transport", `{"agentc_mcp_lock": 1, "servers": [{"tools": []}]}`, "exactly one"},
		{"two transports", `{"agentc_mcp_lock": 1, "servers": [{"url": "u", "command": ["c"], "tools": []}]}`, "exactly one"},
		{"null server", `{"agentc_mcp_lock": 1, "servers": [null]}`, "null"},
		{"dup server", `{"agentc_mcp_lock": 1, "servers": [{"url": "u", "tools": []}, {"url": "u", "tools": []}]}`, "twice"},
		{"dup tool", `{"agentc_mcp_lock": 1, "servers": [{"url": "u", "tools": [{"name": "a", "input_schema": {}}, {"name": "a", "input_schema": {}}]}]}`, "twice"},
		{"nameless", `{"agentc_mcp_lock": 1, "servers": [{"url": "u", "tools": [{"input_schema": {}}]}]}`, "no name"},
		{"schema not object", `{"agentc_mcp_lock": 1, "servers": [{"url": "u", "tools": [{"name": "a", "input_schema": []}]}]}`, "not a JSON object"},
		{"schema missing", `{"agentc_mcp_lock": 1, "servers": [{"url": "u", "tools": [{"name": "a"}]}]}`, "missing"},
		{"deep", `{"agentc_mcp_lock": 1, "servers": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, "deeper"},
		{"wrong type", "{\n\"agentc_mcp_lock\": \"1\"}", "line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	b, _ := Marshal(sample())
	f.Add(b)
	f.Add([]byte(`{"agentc_mcp_lock": 1, "servers": [{"url": "u", "tools": [{"name": "a", "input_schema": {"type": ["object", 1]}}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		lf, err := Parse(data)
		if err != nil {
			return
		}
		// What parses re-encodes, parses again, and every schema walks.
		out, err := Marshal(lf)
		if err != nil {
			t.Fatalf("marshal of a parsed file: %v", err)
		}
		if _, err := Parse(out); err != nil {
			t.Fatalf("reparse: %v\n%s", err, out)
		}
		rec, _ := types.NewRecord("", []types.Field{{Name: "q", Type: types.OptionalOf(types.ListOf(types.StringType))}})
		for _, s := range lf.Servers {
			for _, tl := range s.Tools {
				CheckInput(rec, tl.Input())
				CheckOutput(rec, tl.Output())
				tl.Effect()
			}
		}
	})
}

func rec(t *testing.T, fields ...types.Field) *types.Type {
	t.Helper()
	r, err := types.NewRecord("", fields)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func schema(t *testing.T, s string) map[string]any {
	t.Helper()
	m, err := object(json.RawMessage(s))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCheckInput(t *testing.T) {
	str, i := types.StringType, types.IntType
	enum, _ := types.NewEnum("", []string{"a", "b"})
	for _, tc := range []struct {
		name   string
		in     *types.Type
		schema string
		want   []string // "kind arg: message part"
	}{
		{"fits", rec(t, types.Field{Name: "q", Type: str}, types.Field{Name: "n", Type: i, HasDefault: true, Default: types.MakeInt(5)}),
			`{"type":"object","required":["q"],"properties":{"q":{"type":"string"},"n":{"type":"number"}}}`, nil},
		{"required added", rec(t, types.Field{Name: "q", Type: str}),
			`{"type":"object","required":["q","lang"],"properties":{"q":{"type":"string"},"lang":{"type":"string"}}}`, []string{"1 lang: requires argument lang (string)"}},
		{"required but optional", rec(t, types.Field{Name: "q", Type: types.OptionalOf(str)}),
			`{"type":"object","required":["q"],"properties":{"q":{"type":"string"}}}`, []string{"1 q: optional in the declared input"}},
		{"type changed", rec(t, types.Field{Name: "q", Type: str}),
			`{"type":"object","properties":{"q":{"type":"integer"}}}`, []string{"2 q: q is string, the server wants integer"}},
		{"gone arg closed", rec(t, types.Field{Name: "q", Type: str}),
			`{"type":"object","properties":{},"additionalProperties":false}`, []string{"2 q: no argument q"}},
		{"gone arg open", rec(t, types.Field{Name: "q", Type: str}), `{"type":"object"}`, nil},
		{"enum subset", rec(t, types.Field{Name: "e", Type: enum}),
			`{"type":"object","properties":{"e":{"type":"string","enum":["a","b","c"]}}}`, nil},
		{"enum narrowed", rec(t, types.Field{Name: "e", Type: enum}),
			`{"type":"object","properties":{"e":{"enum":["a"]}}}`, []string{`2 e: may be "b"`}},
		{"string vs enum", rec(t, types.Field{Name: "e", Type: str}),
			`{"type":"object","properties":{"e":{"enum":["a"]}}}`, []string{"2 e: any string"}},
		{"nested record", rec(t, types.Field{Name: "f", Type: rec(t, types.Field{Name: "k", Type: i})}),
			`{"type":"object","properties":{"f":{"type":"object","properties":{"k":{"type":"string"}}}}}`, []string{"2 f: f.k is int, the server wants string"}},
		{"list items", rec(t, types.Field{Name: "l", Type: types.ListOf(i)}),
			`{"type":"object","properties":{"l":{"type":"array","items":{"type":"integer"}}}}`, nil},
		{"nested optional with anyOf", rec(t, types.Field{Name: "f", Type: rec(t, types.Field{Name: "k", Type: types.OptionalOf(str)})}),
			`{"type":"object","properties":{"f":{"type":"object","properties":{"k":{"anyOf":[{"type":"string"},{"type":"null"}]}}}}}`, nil},
		{"nested optional not nullable", rec(t, types.Field{Name: "f", Type: rec(t, types.Field{Name: "k", Type: types.OptionalOf(str)})}),
			`{"type":"object","properties":{"f":{"type":"object","properties":{"k":{"type":"string"}}}}}`, []string{"2 f: may be null"}},
		{"ref accepted", rec(t, types.Field{Name: "q", Type: str}), `{"type":"object","properties":{"q":{"$ref":"#/$defs/x"}}}`, nil},
		{"false schema", rec(t, types.Field{Name: "q", Type: str}), `{"type":"object","properties":{"q":false}}`, []string{"2 q: accepts no value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := CheckInput(tc.in, schema(t, tc.schema))
			if len(ps) != len(tc.want) {
				t.Fatalf("got %+v, want %v", ps, tc.want)
			}
			for k, p := range ps {
				kind, rest, _ := strings.Cut(tc.want[k], " ")
				arg, part, _ := strings.Cut(rest, ": ")
				if string(rune('0'+p.Kind)) != kind || p.Arg != arg || !strings.Contains(p.Msg, part) {
					t.Errorf("got %+v, want %s", p, tc.want[k])
				}
			}
		})
	}
}

func TestCheckOutput(t *testing.T) {
	out := rec(t, types.Field{Name: "hits", Type: types.ListOf(types.StringType)})
	for _, tc := range []struct{ name, schema, want string }{
		{"fits", `{"type":"object","properties":{"hits":{"type":"array","items":{"type":"string"}},"extra":{}}}`, ""},
		{"member gone", `{"type":"object","properties":{"total":{"type":"integer"}}}`, "needs member hits"},
		{"type changed", `{"type":"object","properties":{"hits":{"type":"array","items":{"type":"integer"}}}}`, "hits[] is string, the server returns integer"},
		{"null only", `{"type":"object","properties":{"hits":{"type":["array","null"]}}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := CheckOutput(out, schema(t, tc.schema))
			if tc.want == "" && len(ps) > 0 || tc.want != "" && (len(ps) != 1 || !strings.Contains(ps[0].Msg, tc.want)) {
				t.Fatalf("got %+v, want %q", ps, tc.want)
			}
		})
	}
	if ps := CheckOutput(types.StringType, schema(t, `{"type":"object"}`)); len(ps) > 0 {
		t.Errorf("a string output is not checked: %+v", ps)
	}
}

func TestEffect(t *testing.T) {
	no := func() *bool { b := false; return &b }
	for _, tc := range []struct {
		a    *Annotations
		want Effect
		dest bool
	}{
		{nil, None, false},
		{&Annotations{}, None, false},
		{&Annotations{ReadOnlyHint: yes(), DestructiveHint: yes()}, ReadOnly, false},
		{&Annotations{DestructiveHint: yes(), IdempotentHint: yes()}, SideEffect, true},
		{&Annotations{DestructiveHint: no(), IdempotentHint: yes()}, Idempotent, false},
		{&Annotations{ReadOnlyHint: no()}, None, false},
	} {
		e, d := (&Tool{Annotations: tc.a}).Effect()
		if e != tc.want || d != tc.dest {
			t.Errorf("%+v: got %v %v", tc.a, e, d)
		}
	}
}
