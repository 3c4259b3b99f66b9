package openai_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// judgeSource serves a graph whose output is a record, through a model
// declaration that sets every sampling attribute.
const judgeSource = `workflow judge "Judges the message"

model m { provider = openai, name = "x", max_tokens = 100, temperature = 0.3, top_p = 0.9, seed = 7 }

type Verdict { ok: bool, reason: string }

agent judge llm "Judges" { model = m }

state S {
  question : string
  verdict  : Verdict?
}

graph decide(S) input question output verdict {
  node ask = llm judge { prompt = "{question}" } into verdict
  start -> ask
  ask   -> end
}

serve { run = decide }
`

// chatWith is a request for model id with one user message and the extra
// members given as JSON object members (`"temperature": 1`).
func chatWith(model, extra string) string {
	body := `{"model":"` + model + `","messages":[{"role":"user","content":"hello"}]`
	if extra != "" {
		body += "," + extra
	}
	return body + "}"
}

func TestSamplingRejected(t *testing.T) {
	text := newEnv(t, envOpts{})
	record := newEnv(t, envOpts{source: judgeSource})
	tests := []struct {
		name        string
		record      bool // against the record-output server
		extra       string
		param, code string
	}{
		{"temperature above 2", false, `"temperature": 5`, "temperature", "decimal_above_max_value"},
		{"temperature below 0", false, `"temperature": -0.1`, "temperature", "decimal_below_min_value"},
		{"temperature not a number", false, `"temperature": "hot"`, "temperature", "invalid_type"},
		{"top_p above 1", false, `"top_p": 1.5`, "top_p", "decimal_above_max_value"},
		{"top_p below 0", false, `"top_p": -1`, "top_p", "decimal_below_min_value"},
		{"max_tokens 0", false, `"max_tokens": 0`, "max_tokens", "integer_below_min_value"},
		{"max_tokens negative", false, `"max_tokens": -5`, "max_tokens", "integer_below_min_value"},
		{"max_tokens not an integer", false, `"max_tokens": 1.5`, "max_tokens", "invalid_type"},
		{"max_tokens too large", false, `"max_tokens": 4294967296`, "max_tokens", "integer_above_max_value"},
		{"max_completion_tokens 0", false, `"max_completion_tokens": 0`, "max_completion_tokens", "integer_below_min_value"},
		{"both token limits differ", false, `"max_tokens": 10, "max_completion_tokens": 20`, "max_completion_tokens", "invalid_value"},
		{"five stop sequences", false, `"stop": ["a","b","c","d","e"]`, "stop", "array_above_max_length"},
		{"stop not strings", false, `"stop": [1]`, "stop", "invalid_type"},
		{"stop an object", false, `"stop": {}`, "stop", "invalid_type"},
		{"empty stop sequence", false, `"stop": ["a", ""]`, "stop[1]", "invalid_value"},
		{"seed not an integer", false, `"seed": 1.5`, "seed", "invalid_type"},
		{"seed a string", false, `"seed": "7"`, "seed", "invalid_type"},
		{"response_format not an object", false, `"response_format": "json"`, "response_format", "invalid_type"},
		{"response_format without type", false, `"response_format": {}`, "response_format.type", "missing_required_parameter"},
		{"response_format unknown type", false, `"response_format": {"type": "xml"}`, "response_format.type", "invalid_value"},
		{"json_object for a text answer", false, `"response_format": {"type": "json_object"}`, "response_format", "unsupported_value"},
		{"json_schema for a text answer", false, `"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string"}}}`, "response_format", "unsupported_value"},
		{"text for a record answer", true, `"response_format": {"type": "text"}`, "response_format", "unsupported_value"},
		{"json_schema without json_schema", true, `"response_format": {"type": "json_schema"}`, "response_format.json_schema", "missing_required_parameter"},
		{"json_schema of another type", true, `"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "array"}}}`, "response_format", "unsupported_value"},
		{"json_schema requiring a missing property", true,
			`"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}, "score": {"type": "number"}}, "required": ["ok", "score"]}}}`,
			"response_format", "unsupported_value"},
		{"json_schema with a property of another type", true,
			`"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"ok": {"type": "string"}}}}}`,
			"response_format", "unsupported_value"},
		{"json_schema closed without a property", true,
			`"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "additionalProperties": false}}}`,
			"response_format", "unsupported_value"},
		{"json_schema refusing null", true,
			`"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}`,
			"response_format", "unsupported_value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, model := text, "echo"
			if tt.record {
				e, model = record, "judge"
			}
			before := len(e.model.requests())
			for _, stream := range []string{"false", "true"} {
				r := e.chat(aliceToken, chatWith(model, `"stream": `+stream+`, `+tt.extra))
				if r.status != http.StatusBadRequest {
					t.Fatalf("stream %s: status %d: %s", stream, r.status, r.body)
				}
				typ, param, code, msg := apiError(t, r.body)
				if typ != "invalid_request_error" || param != tt.param || code != tt.code || msg == "" {
					t.Fatalf("stream %s: error %q %q %q %q", stream, typ, param, code, msg)
				}
			}
			if n := len(e.model.requests()); n != before {
				t.Fatalf("a refused request reached the model (%d calls)", n-before)
			}
		})
	}
}

func TestSamplingReachesModel(t *testing.T) {
	e := newEnv(t, envOpts{})
	tests := []struct {
		name  string
		extra string
		want  runtime.ModelRequest // the sampling fields
	}{
		{"none", ``, runtime.ModelRequest{}},
		{"nulls", `"temperature": null, "top_p": null, "max_tokens": null, "stop": null, "seed": null, "response_format": null`, runtime.ModelRequest{}},
		{"all", `"temperature": 0, "top_p": 0.5, "max_tokens": 64, "stop": ["END", "\n\n"], "seed": -3`,
			runtime.ModelRequest{Temperature: new(0.0), TopP: new(0.5), MaxTokens: 64, Stop: []string{"END", "\n\n"}, Seed: new(int64(-3))}},
		{"max_completion_tokens and a stop string", `"max_completion_tokens": 9, "stop": "STOP", "temperature": 2`,
			runtime.ModelRequest{Temperature: new(2.0), MaxTokens: 9, Stop: []string{"STOP"}}},
		{"both token limits equal", `"max_tokens": 12, "max_completion_tokens": 12`, runtime.ModelRequest{MaxTokens: 12}},
		{"four stop sequences", `"stop": ["a", "b", "c", "d"]`, runtime.ModelRequest{Stop: []string{"a", "b", "c", "d"}}},
		{"response_format text", `"response_format": {"type": "text"}, "top_p": 1`, runtime.ModelRequest{TopP: new(1.0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, stream := range []string{"false", "true"} {
				before := len(e.model.requests())
				r := e.chat(aliceToken, chatWith("echo", `"stream": `+stream+maybeComma(tt.extra)))
				if r.status != http.StatusOK {
					t.Fatalf("stream %s: status %d: %s", stream, r.status, r.body)
				}
				reqs := e.model.requests()[before:]
				if len(reqs) != 1 {
					t.Fatalf("stream %s: %d model calls", stream, len(reqs))
				}
				if got := samplingOf(reqs[0]); !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("stream %s: model got %s, want %s", stream, show(got), show(tt.want))
				}
			}
		})
	}
}

func maybeComma(extra string) string {
	if extra == "" {
		return ""
	}
	return ", " + extra
}

// samplingOf keeps the sampling fields of a model request.
func samplingOf(r runtime.ModelRequest) runtime.ModelRequest {
	return runtime.ModelRequest{Temperature: r.Temperature, TopP: r.TopP, MaxTokens: r.MaxTokens, Stop: r.Stop, Seed: r.Seed}
}

func show(r runtime.ModelRequest) string {
	b, _ := json.Marshal(map[string]any{"temperature": r.Temperature, "top_p": r.TopP, "max_tokens": r.MaxTokens, "stop": r.Stop, "seed": r.Seed})
	return string(b)
}

// TestSamplingDeclarationCaps: a request's values replace the model
// declaration's, except max_tokens, which may only lower the declared cap;
// response_format json_object and a fitting json_schema are accepted for a
// record answer.
func TestSamplingDeclarationCaps(t *testing.T) {
	e := newEnv(t, envOpts{source: judgeSource})
	declared := runtime.ModelRequest{Temperature: new(0.3), TopP: new(0.9), MaxTokens: 100, Seed: new(int64(7))}
	tests := []struct {
		name  string
		extra string
		want  runtime.ModelRequest
	}{
		{"declared values", ``, declared},
		{"request replaces and lowers", `"temperature": 1.5, "top_p": 0.1, "seed": 1, "max_tokens": 50, "stop": "x"`,
			runtime.ModelRequest{Temperature: new(1.5), TopP: new(0.1), MaxTokens: 50, Stop: []string{"x"}, Seed: new(int64(1))}},
		{"max_tokens above the cap keeps the cap", `"max_completion_tokens": 5000, "response_format": {"type": "json_object"}`, declared},
		{"fitting json_schema", `"response_format": {"type": "json_schema", "json_schema": {"name": "verdict", "strict": true, "schema": {"anyOf": [{"type": "object", "properties": {"ok": {"type": "boolean"}, "reason": {"type": "string"}}, "required": ["ok", "reason"], "additionalProperties": false}, {"type": "null"}]}}}`, declared},
		{"fitting json_schema allowing null", `"response_format": {"type": "json_schema", "json_schema": {"name": "verdict", "schema": {"type": ["object", "null"], "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}}`, declared},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(e.model.requests())
			r := e.chat(aliceToken, chatWith("judge", `"stream": false`+maybeComma(tt.extra)))
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			var c struct {
				Choices []struct{ Message struct{ Content string } }
			}
			if err := json.Unmarshal(r.body, &c); err != nil || len(c.Choices) != 1 || !strings.Contains(c.Choices[0].Message.Content, `"ok":true`) {
				t.Fatalf("completion %s (%v)", r.body, err)
			}
			reqs := e.model.requests()[before:]
			if len(reqs) != 1 {
				t.Fatalf("%d model calls", len(reqs))
			}
			if got := samplingOf(reqs[0]); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("model got %s, want %s", show(got), show(tt.want))
			}
		})
	}
}

// TestSamplingJournaled: the input event records the request's sampling
// parameters, and one without any records none.
func TestSamplingJournaled(t *testing.T) {
	e := newEnv(t, envOpts{})
	r := e.chat(aliceToken, chatWith("echo", `"temperature": 0.7, "max_tokens": 3, "stop": ["a"], "seed": 5`), "X-Agentc-Session", "journaled")
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if r = e.chat(aliceToken, chatWith("echo", ""), "X-Agentc-Session", "journaled"); r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	evs, err := e.b.Sessions.Events(t.Context(), store.SessionKey{App: e.b.App(), User: "alice", Session: "journaled"},
		session.EventFilter{Kinds: []runtime.EventKind{runtime.EventInput}})
	if err != nil || len(evs) != 2 {
		t.Fatalf("input events %v, %v", evs, err)
	}
	want := &runtime.Sampling{Temperature: new(0.7), MaxTokens: 3, Stop: []string{"a"}, Seed: new(int64(5))}
	if !reflect.DeepEqual(evs[0].Sampling, want) || evs[1].Sampling != nil {
		t.Fatalf("journaled sampling %+v, %+v", evs[0].Sampling, evs[1].Sampling)
	}
}

// TestSamplingOfficialGoClient sends the sampling parameters with
// github.com/openai/openai-go: they reach the model, and out-of-range ones
// come back as an *openai.Error with the parameter.
func TestSamplingOfficialGoClient(t *testing.T) {
	ctx := t.Context()
	connect := func(e *env) *oai.Client {
		c := oai.NewClient(option.WithBaseURL(e.url+"/v1/"), option.WithAPIKey(aliceToken), option.WithMaxRetries(0))
		return &c
	}
	text := newEnv(t, envOpts{})
	record := newEnv(t, envOpts{source: judgeSource})
	msgs := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hello")}

	t.Run("accepted", func(t *testing.T) {
		c, err := connect(text).Chat.Completions.New(ctx, oai.ChatCompletionNewParams{
			Model: "echo", Messages: msgs,
			Temperature: oai.Float(0), TopP: oai.Float(0.5), MaxCompletionTokens: oai.Int(64), Seed: oai.Int(42),
			Stop:           oai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"END", "STOP"}},
			ResponseFormat: oai.ChatCompletionNewParamsResponseFormatUnion{OfText: &shared.ResponseFormatTextParam{}},
		})
		if err != nil || len(c.Choices) != 1 || c.Choices[0].Message.Content != "echo: hello" {
			t.Fatalf("completion %+v, %v", c, err)
		}
		reqs := text.model.requests()
		want := runtime.ModelRequest{Temperature: new(0.0), TopP: new(0.5), MaxTokens: 64, Stop: []string{"END", "STOP"}, Seed: new(int64(42))}
		if got := samplingOf(reqs[len(reqs)-1]); !reflect.DeepEqual(got, want) {
			t.Fatalf("model got %s, want %s", show(got), show(want))
		}
	})

	t.Run("streaming", func(t *testing.T) {
		stream := connect(text).Chat.Completions.NewStreaming(ctx, oai.ChatCompletionNewParams{
			Model: "echo", Messages: msgs, Temperature: oai.Float(1.2), MaxTokens: oai.Int(7),
			Stop: oai.ChatCompletionNewParamsStopUnion{OfString: oai.String("\n")},
		})
		acc := oai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "echo: hello" {
			t.Fatalf("stream %+v, %v", acc.ChatCompletion, err)
		}
		reqs := text.model.requests()
		want := runtime.ModelRequest{Temperature: new(1.2), MaxTokens: 7, Stop: []string{"\n"}}
		if got := samplingOf(reqs[len(reqs)-1]); !reflect.DeepEqual(got, want) {
			t.Fatalf("model got %s, want %s", show(got), show(want))
		}
	})

	t.Run("json_schema for a record answer", func(t *testing.T) {
		schema := map[string]any{
			"type": []any{"object", "null"}, "additionalProperties": false, "required": []any{"ok", "reason"},
			"properties": map[string]any{"ok": map[string]any{"type": "boolean"}, "reason": map[string]any{"type": "string"}},
		}
		c, err := connect(record).Chat.Completions.New(ctx, oai.ChatCompletionNewParams{
			Model: "judge", Messages: msgs, MaxTokens: oai.Int(5000),
			ResponseFormat: oai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "verdict", Strict: oai.Bool(true), Schema: schema}}},
		})
		var v struct {
			OK     bool   `json:"ok"`
			Reason string `json:"reason"`
		}
		if err != nil || len(c.Choices) != 1 || json.Unmarshal([]byte(c.Choices[0].Message.Content), &v) != nil || !v.OK || v.Reason != "hello" {
			t.Fatalf("completion %+v, %v", c, err)
		}
		reqs := record.model.requests()
		if got := reqs[len(reqs)-1].MaxTokens; got != 100 {
			t.Fatalf("max_tokens %d, want the declared cap 100", got)
		}
	})

	t.Run("rejected", func(t *testing.T) {
		tests := []struct {
			name        string
			e           *env
			params      oai.ChatCompletionNewParams
			param, code string
		}{
			{"temperature 5", text, oai.ChatCompletionNewParams{Model: "echo", Messages: msgs, Temperature: oai.Float(5)}, "temperature", "decimal_above_max_value"},
			{"top_p 2", text, oai.ChatCompletionNewParams{Model: "echo", Messages: msgs, TopP: oai.Float(2)}, "top_p", "decimal_above_max_value"},
			{"max_completion_tokens 0", text, oai.ChatCompletionNewParams{Model: "echo", Messages: msgs, MaxCompletionTokens: oai.Int(0)}, "max_completion_tokens", "integer_below_min_value"},
			{"five stops", text, oai.ChatCompletionNewParams{Model: "echo", Messages: msgs,
				Stop: oai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"a", "b", "c", "d", "e"}}}, "stop", "array_above_max_length"},
			{"json_object for text", text, oai.ChatCompletionNewParams{Model: "echo", Messages: msgs,
				ResponseFormat: oai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}, "response_format", "unsupported_value"},
			{"text for a record", record, oai.ChatCompletionNewParams{Model: "judge", Messages: msgs,
				ResponseFormat: oai.ChatCompletionNewParamsResponseFormatUnion{OfText: &shared.ResponseFormatTextParam{}}}, "response_format", "unsupported_value"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := connect(tc.e).Chat.Completions.New(ctx, tc.params)
				var apiErr *oai.Error
				if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != tc.code || apiErr.Param != tc.param || apiErr.Type != "invalid_request_error" {
					t.Fatalf("error %v, want 400 param %s code %s", err, tc.param, tc.code)
				}
			})
		}
	})
}
