package model

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestLoadFixtureErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // regexp on the error text
	}{
		{"empty", ``, `^f\.yaml: empty fixture`},
		{"missing version", "replies: []\ndefault: {text: x}\n", `^f\.yaml:1:1: missing version: this agentc reads fixtures with version: 1`},
		{"bad version", "version: 2\ndefault: {text: x}\n", `^f\.yaml:1:10: unsupported fixture version 2: this agentc reads version 1`},
		{"version not int", "version: one\n", `^f\.yaml:1:10: version: want an integer, got "one"`},
		{"unknown top key", "version: 1\nmodels: fast\n", `^f\.yaml:2:1: fixture: unknown key "models" \(allowed: version, model, replies, default\)`},
		{"unknown rule key", "version: 1\nreplies:\n  - match: {node: a}\n    txt: hi\n", `^f\.yaml:4:5: replies\[0\]: unknown key "txt"`},
		{"unknown match key", "version: 1\nreplies:\n  - match: {nod: a}\n    text: hi\n", `^f\.yaml:3:13: replies\[0\]\.match: unknown key "nod"`},
		{"duplicate key", "version: 1\ndefault: {text: a, text: b}\n", `^f\.yaml:2:20: default: key "text" given twice`},
		{"bad regexp", "version: 1\nreplies:\n  - text: ok\n  - match: {input: \"(x\"}\n    text: hi\n", `^f\.yaml:4:20: replies\[1\]\.match\.input: bad regexp: .*missing closing \)`},
		{"turn zero", "version: 1\nreplies:\n  - match: {turn: 0}\n", `^f\.yaml:3:19: replies\[0\]\.match\.turn: want an integer ≥ 1, got 0`},
		{"negative index", "version: 1\nreplies:\n  - match: {index: -1}\n", `replies\[0\]\.match\.index: want an integer ≥ 0, got -1`},
		{"times zero", "version: 1\nreplies:\n  - times: 0\n", `replies\[0\]\.times: want an integer ≥ 1`},
		{"chunks string", "version: 1\ndefault: {chunks: many}\n", `default\.chunks: want an integer, got "many"`},
		{"bad error kind", "version: 1\ndefault:\n  error: {kind: boom}\n", `^f\.yaml:3:17: default\.error\.kind: unknown error kind "boom" \(want one of invalid_output, model_error, rate_limit, timeout, tool_error, unavailable\)`},
		{"error without kind", "version: 1\ndefault:\n  error: {message: x}\n", `default\.error: missing kind`},
		{"args not mapping", "version: 1\ndefault:\n  tool_calls:\n    - {name: t, args: \"{}\"}\n", `default\.tool_calls\[0\]\.args: want a mapping, got "\{\}"`},
		{"tool call without name", "version: 1\ndefault:\n  tool_calls: [{id: c1}]\n", `default\.tool_calls\[0\]: missing name`},
		{"args NaN", "version: 1\ndefault:\n  tool_calls: [{name: t, args: {x: .nan}}]\n", `default\.tool_calls\[0\]\.args\.x: \.nan has no JSON form`},
		{"replies not list", "version: 1\nreplies: {text: x}\n", `replies: want a list, got a mapping`},
		{"nothing scripted", "version: 1\n", `fixture has neither replies nor a default`},
		{"text null", "version: 1\ndefault: {text: null}\n", `default\.text: want a string, got null`},
		{"two documents", "version: 1\ndefault: {text: x}\n---\nversion: 1\n", `one YAML document`},
		{"syntax", "version: 1\ndefault: {text: [}\n", `^f\.yaml:\d+: invalid YAML: did not find expected node content`},
		{"not a mapping", "- a\n- b\n", `^f\.yaml:1:1: fixture: want a mapping, got a list`},
		{"merge key", "version: 1\nbase: &b {text: x}\n", `unknown key "base"`},
		{"usage negative", "version: 1\ndefault: {usage: {prompt_tokens: -1}}\n", `default\.usage\.prompt_tokens: want an integer in 0\.\.`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx, err := LoadFixture("f.yaml", []byte(tc.src))
			if err == nil {
				t.Fatalf("loaded %+v, want error matching %s", fx, tc.want)
			}
			if !regexp.MustCompile(tc.want).MatchString(err.Error()) {
				t.Fatalf("error %q\nwant match %s", err, tc.want)
			}
			var fe *FixtureError
			if !errors.As(err, &fe) || fe.File != "f.yaml" {
				t.Fatalf("error %T is not a *FixtureError for f.yaml", err)
			}
		})
	}
}

// specBlocks returns the ```yaml blocks of spec/fixtures.md.
func specBlocks(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../spec/fixtures.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, part := range strings.Split(string(data), "```yaml\n")[1:] {
		block, _, ok := strings.Cut(part, "```")
		if !ok {
			t.Fatal("unterminated yaml block in spec/fixtures.md")
		}
		blocks = append(blocks, block)
	}
	if len(blocks) != 3 {
		t.Fatalf("spec/fixtures.md has %d yaml blocks, want 3 (model, tool, recorded tool)", len(blocks))
	}
	return blocks
}

// The examples of the spec load, and mean what the spec says.
func TestSpecExamplesLoad(t *testing.T) {
	blocks := specBlocks(t)
	fx, err := LoadFixture("spec-model.yaml", []byte(blocks[0]))
	if err != nil {
		t.Fatalf("spec model fixture: %v", err)
	}
	if fx.Model != "fast" || len(fx.rules) != 1 || fx.def == nil {
		t.Fatalf("spec model fixture read as %+v", fx)
	}
	ru := fx.rules[0]
	if *ru.node != "triage" || *ru.index != 0 || *ru.turn != 1 || ru.input.String() != "x509|certificate" {
		t.Errorf("match read as node=%v index=%v turn=%v input=%v", *ru.node, *ru.index, *ru.turn, ru.input)
	}
	if got := string(ru.reply.toolCalls[0].args); got != `{"host":"prod.example.com"}` {
		t.Errorf("tool call args = %s", got)
	}
	if ru.reply.chunks != 3 || ru.reply.usage.PromptTokens != 120 || ru.reply.err.kind != "rate_limit" {
		t.Errorf("reply read as %+v", ru.reply)
	}
	if rfx, err := LoadToolFixture("spec-recorded.yaml", []byte(blocks[2])); err != nil || rfx.Tool != "search_docs" || len(rfx.results) != 1 {
		t.Fatalf("spec recorded fixture: %v %+v", err, rfx)
	}
	tfx, err := LoadToolFixture("spec-tool.yaml", []byte(blocks[1]))
	if err != nil {
		t.Fatalf("spec tool fixture: %v", err)
	}
	if tfx.Tool != "cert_scan" || len(tfx.results) != 2 {
		t.Fatalf("spec tool fixture read as %+v", tfx)
	}
	if got := string(tfx.results[0].output); got != `{"chain":["leaf","intermediate"],"expires":"2026-01-01"}` {
		t.Errorf("output = %s", got)
	}
}

func TestToolCallArgsToJSON(t *testing.T) {
	src := `version: 1
default:
  tool_calls:
    - name: t
      args:
        s: text
        n: 3
        f: 1.5
        b: true
        z: null
        big: 18446744073709551615
        list: [1, "two", {three: 3}]
        date: 2026-01-01
        quoted: "007"
        anchor: &a {k: v}
        again: *a
`
	fx, err := LoadFixture("f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"again":{"k":"v"},"anchor":{"k":"v"},"b":true,"big":18446744073709551615,"date":"2026-01-01","f":1.5,"list":[1,"two",{"three":3}],"n":3,"quoted":"007","s":"text","z":null}`
	if got := string(fx.def.toolCalls[0].args); got != want {
		t.Errorf("args =\n%s\nwant\n%s", got, want)
	}
}

// Aliases that expand exponentially are refused, not expanded.
func TestFixtureAliasBomb(t *testing.T) {
	src := "version: 1\ndefault:\n  tool_calls:\n    - name: t\n      args:\n        a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g"} {
		src += "        " + n + ": &" + n + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n"
		prev = n
	}
	_, err := LoadFixture("bomb.yaml", []byte(src))
	if err == nil || !strings.Contains(err.Error(), "value too large") {
		t.Fatalf("err = %v, want value too large", err)
	}
}

func TestLoadToolFixtureErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"bad version", "version: 3\nresults: []\n", `^t\.yaml:1:10: unsupported fixture version 3`},
		{"no results", "version: 1\ntool: x\n", `^t\.yaml:1:1: missing results`},
		{"empty results", "version: 1\nresults: []\n", `results: want at least one result`},
		{"both", "version: 1\nresults:\n  - output: 1\n    error: {kind: tool_error}\n", `^t\.yaml:4:12: results\[0\]: give output or error, not both`},
		{"neither", "version: 1\nresults:\n  - match: {}\n", `results\[0\]: missing output or error`},
		{"unknown match key", "version: 1\nresults:\n  - match: {args: {}}\n    output: 1\n", `results\[0\]\.match: unknown key "args" \(allowed: input\)`},
		{"model fixture", "version: 1\nreplies: []\n", `fixture: unknown key "replies" \(allowed: version, tool, results\)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadToolFixture("t.yaml", []byte(tc.src))
			if err == nil || !regexp.MustCompile(tc.want).MatchString(err.Error()) {
				t.Fatalf("err = %v\nwant match %s", err, tc.want)
			}
		})
	}
}
