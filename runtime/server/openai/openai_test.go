package openai_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/store"
)

func TestModels(t *testing.T) {
	e := newEnv(t, envOpts{})
	tests := []struct {
		name, path string
		status     int
		want       string // exact body for 200s
		code       string // error code otherwise
	}{
		{"list", "/v1/models", 200, `{"object":"list","data":[{"id":"echo","object":"model","created":1767323045,"owned_by":"agentc"}]}` + "\n", ""},
		{"get", "/v1/models/echo", 200, `{"id":"echo","object":"model","created":1767323045,"owned_by":"agentc"}` + "\n", ""},
		{"unknown model", "/v1/models/gpt-4o", 404, "", "model_not_found"},
		{"unknown path", "/v1/embeddings", 404, "", "not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("GET", tc.path, aliceToken, "")
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status == 200 {
				if string(r.body) != tc.want {
					t.Fatalf("body\n%s\nwant\n%s", r.body, tc.want)
				}
				return
			}
			if _, _, code, _ := apiError(t, r.body); code != tc.code {
				t.Fatalf("code %q, want %q", code, tc.code)
			}
		})
	}
}

type completionJSON struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
		Total      int `json:"total_tokens"`
		Details    *struct {
			Cached int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

func decodeCompletion(t *testing.T, r response) completionJSON {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var c completionJSON
	if err := json.Unmarshal(r.body, &c); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	if len(c.Choices) != 1 || c.Choices[0].Message.Content == nil {
		t.Fatalf("want one choice with content: %s", r.body)
	}
	return c
}

func TestChatNonStreaming(t *testing.T) {
	e := newEnv(t, envOpts{})
	r := e.chat(aliceToken, chatBody("echo", false, "user", "hello there"))
	c := decodeCompletion(t, r)
	ch := c.Choices[0]
	switch {
	case c.Object != "chat.completion" || c.Model != "echo" || !strings.HasPrefix(c.ID, "chatcmpl-"):
		t.Errorf("object %q model %q id %q", c.Object, c.Model, c.ID)
	case c.Created < 1_000_000_000 || c.Created > 10_000_000_000:
		t.Errorf("created %d is not Unix seconds", c.Created)
	case ch.Message.Role != "assistant" || *ch.Message.Content != "echo: hello there" || ch.FinishReason != "stop":
		t.Errorf("choice %+v content %q", ch, *ch.Message.Content)
	case c.Usage.Prompt != 3 || c.Usage.Completion != 5 || c.Usage.Total != 8 || c.Usage.Details == nil || c.Usage.Details.Cached != 2:
		t.Errorf("usage %+v (details %+v)", c.Usage, c.Usage.Details)
	}
	if r.header.Get("Content-Type") != "application/json" || r.header.Get("X-Agentc-Session") == "" ||
		!strings.HasPrefix(r.header.Get("X-Agentc-Run"), "run_") || r.header.Get("X-Agentc-Status") != "completed" {
		t.Errorf("headers %v", r.header)
	}
}

func TestChatStreamingWireFormat(t *testing.T) {
	e := newEnv(t, envOpts{})
	tests := []struct {
		name         string
		includeUsage bool
	}{
		{"without usage", false},
		{"with include_usage", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"model":"echo","stream":true,"stream_options":{"include_usage":%v},"messages":[{"role":"user","content":"stream me"}]}`, tc.includeUsage)
			r := e.chat(aliceToken, body, "Accept", "application/json") // the official client's Accept
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d type %q: %s", r.status, r.header.Get("Content-Type"), r.body)
			}
			fs := frames(t, r.body)
			if fs[len(fs)-1] != "[DONE]" {
				t.Fatalf("last frame %q, want [DONE]", fs[len(fs)-1])
			}
			var text strings.Builder
			finishes, usageChunks, id := 0, 0, ""
			for i, f := range fs[:len(fs)-1] {
				var ch map[string]json.RawMessage
				if err := json.Unmarshal([]byte(f), &ch); err != nil {
					t.Fatalf("frame %d: %v: %s", i, err, f)
				}
				var cid string
				_ = json.Unmarshal(ch["id"], &cid)
				if id == "" {
					id = cid
				} else if cid != id {
					t.Fatalf("frame %d has id %q, want %q", i, cid, id)
				}
				if string(ch["object"]) != `"chat.completion.chunk"` {
					t.Fatalf("frame %d object %s", i, ch["object"])
				}
				u, hasUsage := ch["usage"]
				if hasUsage != tc.includeUsage {
					t.Fatalf("frame %d: usage member present=%v with include_usage=%v: %s", i, hasUsage, tc.includeUsage, f)
				}
				var choices []struct {
					Delta        map[string]any `json:"delta"`
					FinishReason *string        `json:"finish_reason"`
				}
				_ = json.Unmarshal(ch["choices"], &choices)
				if len(choices) == 0 {
					usageChunks++
					if string(u) == "null" || i != len(fs)-2 {
						t.Fatalf("choices:[] chunk %d must be the last one and carry usage: %s", i, f)
					}
					continue
				}
				if hasUsage && string(u) != "null" {
					t.Fatalf("frame %d: usage must be null on choice chunks: %s", i, f)
				}
				if i == 0 && (choices[0].Delta["role"] != "assistant" || choices[0].Delta["content"] != "") {
					t.Fatalf("first delta %v, want role assistant and empty content", choices[0].Delta)
				}
				if i > 0 && choices[0].Delta["role"] != nil {
					t.Fatalf("frame %d repeats the role", i)
				}
				if choices[0].FinishReason != nil {
					finishes++
					if *choices[0].FinishReason != "stop" || len(choices[0].Delta) != 0 {
						t.Fatalf("finish chunk %s", f)
					}
				} else if finishes > 0 {
					t.Fatalf("a choice chunk after the finish chunk: %s", f)
				}
				if s, ok := choices[0].Delta["content"].(string); ok {
					text.WriteString(s)
				}
			}
			if finishes != 1 {
				t.Errorf("%d finish chunks, want 1", finishes)
			}
			if want := map[bool]int{false: 0, true: 1}[tc.includeUsage]; usageChunks != want {
				t.Errorf("%d usage chunks, want %d", usageChunks, want)
			}
			if text.String() != "echo: stream me" {
				t.Errorf("streamed text %q", text.String())
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t, envOpts{limits: server.Limits{MaxBodyBytes: 4096}})
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name, method, path, token, body string
		status                          int
		code, param                     string
	}{
		{"malformed json", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo",`, 400, "invalid_json", ""},
		{"not an object", "POST", "/v1/chat/completions", aliceToken, `[1,2]`, 400, "invalid_type", ""},
		{"wrong type stream", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","stream":"yes",` + msgs + `}`, 400, "invalid_type", "stream"},
		{"wrong type messages", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","messages":"hi"}`, 400, "invalid_type", "messages"},
		{"wrong type content", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","messages":[{"role":"user","content":7}]}`, 400, "invalid_value", "messages[0].content"},
		{"missing model", "POST", "/v1/chat/completions", aliceToken, `{` + msgs + `}`, 400, "missing_required_parameter", "model"},
		{"missing messages", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo"}`, 400, "missing_required_parameter", "messages"},
		{"empty messages", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","messages":[]}`, 400, "invalid_value", "messages"},
		{"missing role", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","messages":[{"content":"hi"}]}`, 400, "missing_required_parameter", "messages[0].role"},
		{"unknown role", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","messages":[{"role":"robot","content":"hi"}]}`, 400, "invalid_value", "messages[0].role"},
		{"last message not user", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`, 400, "invalid_value", "messages[1].role"},
		{"tool result for no call", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","messages":[{"role":"tool","tool_call_id":"c1","content":"42"}]}`, 400, "invalid_value", "messages[0].tool_call_id"},
		{"tool result without id", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","messages":[{"role":"tool","content":"42"}]}`, 400, "missing_required_parameter", "messages[0].tool_call_id"},
		{"function message", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","messages":[{"role":"function","name":"f","content":"42"}]}`, 400, "unsupported_value", "messages[0].role"},
		{"tool not a function", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","tools":[{"type":"custom","custom":{"name":"f"}}],` + msgs + `}`, 400, "invalid_value", "tools[0].type"},
		{"tool without name", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","tools":[{"type":"function","function":{"parameters":{}}}],` + msgs + `}`, 400, "missing_required_parameter", "tools[0].function.name"},
		{"tool parameters not an object", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","tools":[{"type":"function","function":{"name":"f","parameters":[1]}}],` + msgs + `}`, 400, "invalid_type", "tools[0].function.parameters"},
		{"tool bad name", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","tools":[{"type":"function","function":{"name":"a b"}}],` + msgs + `}`, 400, "invalid_value", "tools"},
		{"tool twice", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}],` + msgs + `}`, 400, "invalid_value", "tools"},
		{"tool_choice required", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","tool_choice":"required","tools":[{"type":"function","function":{"name":"f"}}],` + msgs + `}`, 400, "unsupported_value", "tool_choice"},
		{"tools wrong type", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","tools":{},` + msgs + `}`, 400, "invalid_type", "tools"},
		{"image part", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "invalid_value", "messages[0].content"},
		{"n 2", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","n":2,` + msgs + `}`, 400, "unsupported_value", "n"},
		{"empty text", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","messages":[{"role":"user","content":""}]}`, 400, "invalid_value", "messages[0].content"},
		{"bad session header", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo",` + msgs + `}`, 400, "invalid_session", ""},
		{"unknown model", "POST", "/v1/chat/completions", aliceToken, `{"model":"gpt-4o",` + msgs + `}`, 404, "model_not_found", "model"},
		{"oversized body", "POST", "/v1/chat/completions", aliceToken, `{"model":"echo","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, 413, "request_too_large", ""},
		{"no token", "POST", "/v1/chat/completions", "", `{"model":"echo",` + msgs + `}`, 401, "invalid_api_key", ""},
		{"bad token", "GET", "/v1/models", "tok-mallory", "", 401, "invalid_api_key", ""},
		{"wrong method", "GET", "/v1/chat/completions", aliceToken, "", 405, "method_not_allowed", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var headers []string
			if tc.name == "bad session header" {
				headers = []string{"X-Agentc-Session", strings.Repeat("s", 300)}
			}
			r := e.do(tc.method, tc.path, tc.token, tc.body, headers...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			_, param, code, msg := apiError(t, r.body)
			if code != tc.code || param != tc.param || msg == "" {
				t.Fatalf("code %q param %q, want %q %q (message %q)", code, param, tc.code, tc.param, msg)
			}
		})
	}
	t.Run("oversized chunked body", func(t *testing.T) {
		body := io.MultiReader(strings.NewReader(`{"model":"echo","messages":[{"role":"user","content":"`), strings.NewReader(strings.Repeat("x", 5000)+`"}]}`))
		req, _ := http.NewRequest("POST", e.url+"/v1/chat/completions", body) // unknown length: sent chunked
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 413 || req.ContentLength != 0 {
			t.Fatalf("status %d (content length %d): %s", resp.StatusCode, req.ContentLength, b)
		}
		if _, _, code, _ := apiError(t, b); code != "request_too_large" {
			t.Fatalf("code %q", code)
		}
	})
	t.Run("tools with tool_choice none are ignored", func(t *testing.T) {
		r := e.chat(aliceToken, `{"model":"echo","tool_choice":"none","tools":[{"type":"function","function":{"name":"f"}}],`+msgs+`}`)
		if c := decodeCompletion(t, r); *c.Choices[0].Message.Content != "echo: hi" {
			t.Fatalf("content %q", *c.Choices[0].Message.Content)
		}
	})
	t.Run("unknown parameters are ignored", func(t *testing.T) {
		r := e.chat(aliceToken, `{"model":"echo","temperature":0.2,"seed":1,"logit_bias":{},"metadata":{"a":"b"},`+msgs+`}`)
		decodeCompletion(t, r)
	})
}

// TestGarbage sends 1,000 malformed requests; every one gets the error
// shape and the server keeps serving, with no run left behind.
func TestGarbage(t *testing.T) {
	e := newEnv(t, envOpts{limits: server.Limits{MaxBodyBytes: 2048}})
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{`{`, `}`, `[`, `]`, `"model"`, `:`, `,`, `"echo"`, `"messages"`, `null`, `1e999`, `"\u0000"`, `{"role":"user"}`, `"stream"`, `true`, `"content"`, "\xff", `[{"role":"user","content":[{"type":"text"}]}]`}
	client := &http.Client{}
	for i := range 1000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		if i%97 == 0 {
			b.WriteString(strings.Repeat("z", 3000))
		}
		req, _ := http.NewRequest("POST", e.url+"/v1/chat/completions", strings.NewReader(b.String()))
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		var body strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			continue // the garbage happened to be a valid request
		}
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Fatalf("request %d (%q): status %d: %s", i, b.String(), resp.StatusCode, body.String())
		}
		apiError(t, []byte(body.String()))
	}
	decodeCompletion(t, e.chat(aliceToken, chatBody("echo", false, "user", "still here")))
	e.waitIdle()
}

func TestHistory(t *testing.T) {
	e := newEnv(t, envOpts{})
	t.Run("stateless request folds earlier messages into the input", func(t *testing.T) {
		r := e.chat(aliceToken, chatBody("echo", false, "system", "be brief", "user", "a", "assistant", "b", "user", "c"))
		got := *decodeCompletion(t, r).Choices[0].Message.Content
		want := "echo: Conversation so far:\nsystem: be brief\nuser: a\nassistant: b\n\nCurrent message:\nc"
		if got != want {
			t.Fatalf("content %q, want %q", got, want)
		}
	})
	t.Run("a continued session takes only the last message", func(t *testing.T) {
		first := decodeCompletion(t, e.chat(aliceToken, chatBody("echo", false, "user", "one"), "X-Agentc-Session", "h1"))
		r := e.chat(aliceToken, chatBody("echo", false, "user", "one", "assistant", *first.Choices[0].Message.Content, "user", "two"), "X-Agentc-Session", "h1")
		if got := *decodeCompletion(t, r).Choices[0].Message.Content; got != "echo: two" {
			t.Fatalf("content %q", got)
		}
		runs, err := e.b.Sessions.Runs(context.Background(), store.SessionKey{App: "echo", User: "alice", Session: "h1"})
		if err != nil || len(runs) != 2 {
			t.Fatalf("runs %v, %v", runs, err)
		}
	})
	t.Run("the user field names the session", func(t *testing.T) {
		body := `{"model":"echo","user":"end-user-7","messages":[{"role":"user","content":"x"}]}`
		r := e.chat(aliceToken, body)
		if got := r.header.Get("X-Agentc-Session"); got != "user:end-user-7" {
			t.Fatalf("session %q", got)
		}
	})
}

// TestInterruptContinuity runs the support example over two requests: the
// first stops at the approval interrupt, the second answers it.
func TestInterruptContinuity(t *testing.T) {
	e := newEnv(t, envOpts{support: true})
	const question = "prod.example.com fails with x509: certificate signed by unknown authority"
	hdr := []string{"X-Agentc-Session", "case-1"}
	first := e.chat(aliceToken, chatBody("support", false, "user", question), hdr...)
	c := decodeCompletion(t, first)
	content := *c.Choices[0].Message.Content
	if first.header.Get("X-Agentc-Status") != "interrupted" || !strings.Contains(content, "intermediate") || !strings.HasSuffix(content, "\n\nPublish this report?") {
		t.Fatalf("status %q content %q", first.header.Get("X-Agentc-Status"), content)
	}
	if c.Usage.Total == 0 || c.Usage.Total != c.Usage.Prompt+c.Usage.Completion {
		t.Fatalf("usage %+v", c.Usage)
	}
	run := first.header.Get("X-Agentc-Run")

	tests := []struct {
		name, answer string
		status       int
		code         string
	}{
		{"an answer of the wrong type is refused", "maybe later", 400, "invalid_resume"},
		{"a JSON answer resumes the run", `{"approved": true}`, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.chat(aliceToken, chatBody("support", true, "user", question, "assistant", content, "user", tc.answer), hdr...)
			if r.status != tc.status {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if tc.status != 200 {
				code, pe := pendingAPIError(t, r.body)
				if code != tc.code {
					t.Fatalf("code %q", code)
				}
				// The refusal lists what waits, machine-readably.
				if pe.Run != run || len(pe.Pending) != 1 || pe.Pending[0].ID != "investigate/approve" || pe.Pending[0].Schema == nil {
					t.Fatalf("pending interrupts %+v", pe)
				}
				return
			}
			if got := r.header.Get("X-Agentc-Run"); got != run {
				t.Fatalf("resumed run %q, want %q", got, run)
			}
			fs := frames(t, r.body)
			if !strings.Contains(strings.Join(fs, ""), "intermediate") {
				t.Fatalf("the resumed run's answer lacks the report: %v", fs)
			}
		})
	}
	got, err := e.b.GetRun(context.Background(), "alice", run)
	if err != nil || got.Status != store.RunCompleted {
		t.Fatalf("run %+v, %v", got, err)
	}
}

// TestResentRequestRedeliversInterrupt: a client that never got the
// paused run's answer (the server died, the response was lost) sends its
// request again. The message is not taken as the interrupt's answer: the
// answer is 409 interrupt_pending listing the interrupts, and answering
// them resumes the run.
func TestResentRequestRedeliversInterrupt(t *testing.T) {
	e := newEnv(t, envOpts{support: true})
	const question = "prod.example.com fails with x509: certificate signed by unknown authority"
	hdr := []string{"X-Agentc-Session", "case-resent"}
	first := e.chat(aliceToken, chatBody("support", false, "user", question), hdr...)
	if first.status != 200 || first.header.Get("X-Agentc-Status") != "interrupted" {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	run := first.header.Get("X-Agentc-Run")
	for _, stream := range []bool{false, true} {
		again := e.chat(aliceToken, chatBody("support", stream, "user", question), hdr...)
		if again.status != http.StatusConflict || again.header.Get("X-Agentc-Run") != run {
			t.Fatalf("re-sent (stream %v): %d %s", stream, again.status, again.body)
		}
		code, pe := pendingAPIError(t, again.body)
		if code != "interrupt_pending" || pe.Run != run || len(pe.Pending) != 1 ||
			pe.Pending[0].ID != "investigate/approve" || pe.Pending[0].Prompt != "Publish this report?" {
			t.Fatalf("re-sent: code %q %+v", code, pe)
		}
	}
	ok := e.chat(aliceToken, chatBody("support", false, "user", question, "user", `{"approved": true}`), hdr...)
	if ok.status != 200 || ok.header.Get("X-Agentc-Run") != run || ok.header.Get("X-Agentc-Status") != "completed" {
		t.Fatalf("answer: %d %v %s", ok.status, ok.header, ok.body)
	}
}

type pendingMembers struct {
	Run     string                  `json:"run"`
	Pending []runtime.InterruptInfo `json:"pending_interrupts"`
}

// pendingAPIError checks an error body of a session that waits on
// interrupts: the four OpenAI members (strings or null) plus exactly "run"
// and "pending_interrupts".
func pendingAPIError(t *testing.T, body []byte) (string, pendingMembers) {
	t.Helper()
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(body, &outer); err != nil || len(outer) != 1 || outer["error"] == nil {
		t.Fatalf("not an error object: %s", body)
	}
	var inner map[string]json.RawMessage
	if err := json.Unmarshal(outer["error"], &inner); err != nil || len(inner) != 6 {
		t.Fatalf("error members: want message, type, param, code, run, pending_interrupts: %s", body)
	}
	var code *string
	for _, k := range []string{"message", "type", "param", "code"} {
		var v *string
		raw, ok := inner[k]
		if !ok || json.Unmarshal(raw, &v) != nil || (v == nil && (k == "message" || k == "type")) {
			t.Fatalf("error member %q: %s", k, body)
		}
		if k == "code" {
			code = v
		}
	}
	var pm pendingMembers
	if err := json.Unmarshal(outer["error"], &pm); err != nil || pm.Pending == nil {
		t.Fatalf("pending members: %v: %s", err, body)
	}
	if code == nil {
		return "", pm
	}
	return *code, pm
}

// TestTenantIsolation: bob naming alice's session id gets his own session;
// he can neither see nor continue her run.
func TestTenantIsolation(t *testing.T) {
	e := newEnv(t, envOpts{support: true})
	hdr := []string{"X-Agentc-Session", "shared-name"}
	a := e.chat(aliceToken, chatBody("support", false, "user", "prod.example.com fails with x509: certificate signed by unknown authority"), hdr...)
	if a.status != 200 || a.header.Get("X-Agentc-Status") != "interrupted" {
		t.Fatalf("alice: %d %s", a.status, a.body)
	}
	aliceRun := a.header.Get("X-Agentc-Run")
	b := e.chat(bobToken, chatBody("support", false, "user", `{"approved": true}`), hdr...)
	if b.status != 200 {
		t.Fatalf("bob: %d %s", b.status, b.body)
	}
	if b.header.Get("X-Agentc-Run") == aliceRun {
		t.Fatal("bob continued alice's run")
	}
	ctx := context.Background()
	if _, err := e.b.GetRun(ctx, "bob", aliceRun); !errors.Is(err, server.ErrNotFound) {
		t.Fatalf("bob reads alice's run: %v", err)
	}
	if err := e.b.Cancel("bob", aliceRun); !errors.Is(err, server.ErrNotFound) {
		t.Fatalf("bob cancels alice's run: %v", err)
	}
	r, err := e.b.GetRun(ctx, "alice", aliceRun)
	if err != nil || r.Status != store.RunInterrupted {
		t.Fatalf("alice's run after bob's request: %+v, %v", r, err)
	}
	for _, user := range []string{"alice", "bob"} {
		runs, err := e.b.Sessions.Runs(ctx, store.SessionKey{App: "support", User: user, Session: "shared-name"})
		if err != nil || len(runs) != 1 {
			t.Fatalf("%s has runs %v, %v", user, runs, err)
		}
	}
}

// TestConcurrencyLimits: beyond MaxRuns a request gets 429; a second
// request in a busy session gets 409.
func TestConcurrencyLimits(t *testing.T) {
	e := newEnv(t, envOpts{limits: server.Limits{MaxRuns: 1}})
	done := e.chatAsync(aliceToken, chatBody("echo", false, "user", "block"), "X-Agentc-Session", "busy")
	<-e.model.started
	tests := []struct {
		name, session string
		status        int
		code          string
	}{
		{"over the run limit", "other", 429, "rate_limit_exceeded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.chat(bobToken, chatBody("echo", false, "user", "x"), "X-Agentc-Session", tc.session)
			if r.status != tc.status {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if typ, _, code, _ := apiError(t, r.body); code != tc.code || typ != "rate_limit_error" {
				t.Fatalf("type %q code %q", typ, code)
			}
			if r.header.Get("Retry-After") == "" {
				t.Fatal("no Retry-After")
			}
		})
	}
	close(e.model.gate)
	if r := <-done; r.status != 200 {
		t.Fatalf("blocked request: %d %s", r.status, r.body)
	}
}

func TestSessionBusy(t *testing.T) {
	e := newEnv(t, envOpts{})
	done := e.chatAsync(aliceToken, chatBody("echo", false, "user", "block"), "X-Agentc-Session", "busy")
	<-e.model.started
	r := e.chat(aliceToken, chatBody("echo", false, "user", "x"), "X-Agentc-Session", "busy")
	if r.status != 409 || r.header.Get("X-Should-Retry") != "false" {
		t.Fatalf("status %d headers %v: %s", r.status, r.header, r.body)
	}
	if _, _, code, _ := apiError(t, r.body); code != "session_busy" {
		t.Fatalf("code %q", code)
	}
	close(e.model.gate)
	<-done
}

// TestStreamWhileTheModelWaits: a delta the model streams before it waits
// reaches the client while it waits (frames are held only while the run
// writes to the store, "Streams" in spec/serve.md).
func TestStreamWhileTheModelWaits(t *testing.T) {
	e := newEnv(t, envOpts{})
	req, _ := http.NewRequest("POST", e.url+"/v1/chat/completions", strings.NewReader(chatBody("echo", true, "user", "block")))
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	released := make(chan struct{}) // the model, by the timer
	timer := time.AfterFunc(10*time.Second, func() { close(released); close(e.model.gate) })
	resp, err := http.DefaultClient.Do(req) // its headers, too, come while the model waits
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before the delta: %v", err)
		}
		if strings.Contains(line, `"content":"waiting"`) {
			break
		}
	}
	if !timer.Stop() {
		<-released
		t.Fatal("the delta came only after the model stopped waiting")
	}
	close(e.model.gate)
	if _, err := io.Copy(io.Discard, rd); err != nil {
		t.Fatal(err)
	}
}

// TestClientDisconnect: a client that goes away mid-stream cancels its
// run, which still records its end; the server keeps serving.
func TestClientDisconnect(t *testing.T) {
	e := newEnv(t, envOpts{})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/v1/chat/completions", strings.NewReader(chatBody("echo", true, "user", "block")))
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("X-Agentc-Session", "gone")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	run := resp.Header.Get("X-Agentc-Run")
	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadString('\n')
	if err != nil || !strings.Contains(line, `"role":"assistant"`) {
		t.Fatalf("first line %q, %v", line, err)
	}
	<-e.model.started
	cancel()
	resp.Body.Close()
	e.waitIdle()
	var got store.Run
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err = e.b.GetRun(context.Background(), "alice", run)
		if err == nil && got.Status == store.RunCanceled || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil || got.Status != store.RunCanceled {
		t.Fatalf("run after disconnect: %+v, %v", got, err)
	}
	var m strings.Builder
	if _, err := e.b.Metrics.WriteTo(&m); err != nil || !strings.Contains(m.String(), `agentc_runs_finished_total{protocol="openai",status="canceled"} 1`) {
		t.Errorf("the canceled run is not counted as canceled (%v):\n%s", err, m.String())
	}
	decodeCompletion(t, e.chat(aliceToken, chatBody("echo", false, "user", "next"), "X-Agentc-Session", "gone"))
}

func TestRunFailure(t *testing.T) {
	e := newEnv(t, envOpts{})
	t.Run("non-streaming", func(t *testing.T) {
		r := e.chat(aliceToken, chatBody("echo", false, "user", "please fail"))
		if r.status != 500 || r.header.Get("X-Should-Retry") != "false" || r.header.Get("X-Agentc-Status") != "failed" {
			t.Fatalf("status %d headers %v: %s", r.status, r.header, r.body)
		}
		if typ, _, code, msg := apiError(t, r.body); typ != "server_error" || code != "run_failed" || !strings.Contains(msg, "the model refuses") {
			t.Fatalf("type %q code %q message %q", typ, code, msg)
		}
	})
	t.Run("streaming", func(t *testing.T) {
		r := e.chat(aliceToken, chatBody("echo", true, "user", "please fail"))
		fs := frames(t, r.body)
		if len(fs) < 3 || fs[len(fs)-1] != "[DONE]" {
			t.Fatalf("frames %v", fs)
		}
		if _, _, code, _ := apiError(t, []byte(fs[len(fs)-2])); code != "run_failed" {
			t.Fatalf("error frame %s", fs[len(fs)-2])
		}
		if strings.Contains(strings.Join(fs, ""), `"finish_reason":"stop"`) {
			t.Fatal("a failed run has a finish chunk")
		}
	})
}

// TestConcurrentSessions runs 32 sessions at once, each twice.
func TestConcurrentSessions(t *testing.T) {
	e := newEnv(t, envOpts{})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 32 {
		wg.Go(func() {
			sess := fmt.Sprintf("c%d", i)
			for turn := range 2 {
				msg := fmt.Sprintf("s%d t%d", i, turn)
				r := <-e.chatAsync(aliceToken, chatBody("echo", turn == 1, "user", msg), "X-Agentc-Session", sess)
				if r.status != 200 || !strings.Contains(string(r.body), "echo") || turn == 1 && !strings.HasSuffix(string(r.body), "data: [DONE]\n\n") {
					errs <- fmt.Errorf("%s turn %d: %d %s", sess, turn, r.status, r.body)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	e.waitIdle()
}

// TestShutdown: a run in flight when Shutdown starts is canceled at the
// grace deadline and records its end; new requests are refused meanwhile;
// the store is closed afterwards.
func TestShutdown(t *testing.T) {
	e := newEnv(t, envOpts{})
	done := e.chatAsync(aliceToken, chatBody("echo", false, "user", "block"), "X-Agentc-Session", "late")
	<-e.model.started
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	e.stopped = true
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := <-e.served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	r := <-done
	if r.status != 503 {
		t.Fatalf("in-flight request: %d %s", r.status, r.body)
	}
	if _, _, code, _ := apiError(t, r.body); code != "run_canceled" {
		t.Fatalf("code %q", code)
	}
	if _, err := e.b.Runner.LookupRun(context.Background(), r.header.Get("X-Agentc-Run")); err == nil {
		t.Fatal("the store is still open after Shutdown")
	}
	if _, err := e.b.Start(context.Background(), "openai", runtime.Invocation{User: "alice", Session: "after", Input: "hi"}); !errors.Is(err, server.ErrShuttingDown) {
		t.Fatalf("Start after shutdown: %v", err)
	}
}

// TestSlowClient: a client that stops reading is cut off after the write
// timeout; its run is canceled and the server keeps serving.
func TestSlowClient(t *testing.T) {
	e := newEnv(t, envOpts{limits: server.Limits{WriteTimeout: 200 * time.Millisecond}})
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := chatBody("echo", true, "user", "huge")
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nX-Agentc-Session: slow\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", aliceToken, len(body), body)
	// Never read: the server's writes block once the socket buffers fill.
	for deadline := time.Now().Add(5 * time.Second); e.b.Running() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the run did not start")
		}
		time.Sleep(time.Millisecond)
	}
	e.waitIdle()
	runs, err := e.b.Sessions.Runs(context.Background(), store.SessionKey{App: "echo", User: "alice", Session: "slow"})
	if err != nil || len(runs) != 1 || runs[0].Status != store.RunCanceled {
		t.Fatalf("runs %+v, %v", runs, err)
	}
	decodeCompletion(t, e.chat(aliceToken, chatBody("echo", false, "user", "after")))
}

// TestRunTimeout: a run over Limits.RunTimeout is canceled (and stays
// resumable); the client gets 503 run_canceled, or an error frame when
// streaming.
func TestRunTimeout(t *testing.T) {
	e := newEnv(t, envOpts{limits: server.Limits{RunTimeout: 100 * time.Millisecond}})
	tests := []struct {
		name   string
		stream bool
	}{
		{"non-streaming", false},
		{"streaming", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.chat(aliceToken, chatBody("echo", tc.stream, "user", "block"))
			body := r.body
			if tc.stream {
				fs := frames(t, r.body)
				if r.status != 200 || len(fs) < 2 || fs[len(fs)-1] != "[DONE]" {
					t.Fatalf("frames %v", fs)
				}
				body = []byte(fs[len(fs)-2])
			} else if r.status != 503 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if _, _, code, _ := apiError(t, body); code != "run_canceled" {
				t.Fatalf("code %q", code)
			}
			got, err := e.b.GetRun(context.Background(), "alice", r.header.Get("X-Agentc-Run"))
			if err != nil || got.Status != store.RunCanceled {
				t.Fatalf("run %+v, %v", got, err)
			}
		})
	}
}

// nestedSource: a map whose items run a sub-graph that asks for approval.
const nestedSource = "workflow nested\n\n" + runtimetest.MapOfApprovals + "\nserve { run = batch }\n"

// TestSubRunInterruptsByID: interrupts inside a sub-graph run by each
// item of a map are pending with their path ids, and an object keyed by
// pending ids answers them one at a time (issue 16 item 2).
func TestSubRunInterruptsByID(t *testing.T) {
	e := newEnv(t, envOpts{source: nestedSource})
	hdr := []string{"X-Agentc-Session", "nested"}
	first := e.chat(aliceToken, chatBody("nested", false, "user", "check both"), hdr...)
	if first.status != 200 || first.header.Get("X-Agentc-Status") != "interrupted" {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	again := e.chat(aliceToken, chatBody("nested", false, "user", "check both"), hdr...)
	code, pe := pendingAPIError(t, again.body)
	if code != "interrupt_pending" || len(pe.Pending) != 2 || pe.Pending[0].ID != "batch/each/0/gate/check" ||
		pe.Pending[1].ID != "batch/each/1/gate/check" || pe.Pending[1].Node != "each/1/gate/check" ||
		pe.Pending[1].Prompt != "Approve y?" || pe.Pending[1].Schema["type"] != "boolean" {
		t.Fatalf("pending: %s %+v", code, pe)
	}
	one := e.chat(aliceToken, chatBody("nested", false, "user", `{"each/1/gate/check": true}`), hdr...)
	if one.status != 200 || one.header.Get("X-Agentc-Status") != "interrupted" {
		t.Fatalf("one answer: %d %v %s", one.status, one.header, one.body)
	}
	again = e.chat(aliceToken, chatBody("nested", false, "user", "check both"), hdr...)
	if _, pe = pendingAPIError(t, again.body); len(pe.Pending) != 1 || pe.Pending[0].ID != "batch/each/0/gate/check" {
		t.Fatalf("after one answer: %+v", pe)
	}
	last := e.chat(aliceToken, chatBody("nested", false, "user", "false"), hdr...)
	c := decodeCompletion(t, last)
	if last.header.Get("X-Agentc-Status") != "completed" || *c.Choices[0].Message.Content != "x checked, y checked" {
		t.Fatalf("last: %v %s", last.header, last.body)
	}
}
