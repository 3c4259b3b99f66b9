package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/vm"
)

const testKey = "sk-test-0123456789abcdef"

// chatServer is an httptest server speaking chat completions. Each request
// is served by the next handler; the last one serves the rest.
type chatServer struct {
	*httptest.Server
	mu       sync.Mutex
	handlers []func(w http.ResponseWriter, r *http.Request)
	bodies   []map[string]any
	headers  []http.Header
}

func newChatServer(t *testing.T, handlers ...func(w http.ResponseWriter, r *http.Request)) *chatServer {
	t.Helper()
	s := &chatServer{handlers: handlers}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusTeapot)
			return
		}
		data, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(data, &body); err != nil {
			t.Errorf("request body is not JSON: %v\n%s", err, data)
		}
		s.mu.Lock()
		n := len(s.bodies)
		s.bodies = append(s.bodies, body)
		s.headers = append(s.headers, r.Header.Clone())
		h := s.handlers[min(n, len(s.handlers)-1)]
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *chatServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// sse answers with the given frames, each as `data: <frame>`, flushing after each.
func sse(frames ...string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, f := range frames {
			fmt.Fprintf(w, "data: %s\n\n", f)
			w.(http.Flusher).Flush()
		}
	}
}

// chunk is one chat.completion.chunk with the given choice delta and finish reason.
func chunk(delta, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1735689600,"model":"gpt-test-2026","choices":[{"index":0,"delta":` +
		delta + `,"logprobs":null,"finish_reason":` + fr + `}],"usage":null}`
}

const usageChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1735689600,"model":"gpt-test-2026","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21}}`

func errorBody(status int, msg, typ string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":%q,"param":null,"code":null}}`, msg, typ)
	}
}

// testClock records the waits a model asks for instead of sleeping.
type testClock struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (c *testClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	return ctx.Err()
}

func newTestModel(t *testing.T, s *chatServer, edit func(*OpenAIConfig)) (runtime.Model, *testClock) {
	t.Helper()
	clock := &testClock{}
	cfg := OpenAIConfig{
		Name:          "fast",
		Model:         "gpt-test",
		BaseURL:       s.URL + "/v1",
		APIKey:        testKey,
		ContextWindow: 128000,
		HTTPClient:    s.Client(),
		Sleep:         clock.sleep,
		Rand:          func() float64 { return 0.5 },
	}
	if edit != nil {
		edit(&cfg)
	}
	m, err := NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, clock
}

func simpleRequest() *runtime.ModelRequest {
	return &runtime.ModelRequest{
		Site:     runtime.CallSite{Node: "triage", MapIndex: -1, Turn: 1},
		Messages: []runtime.Message{{Role: runtime.RoleUser, Content: "hello"}},
	}
}

// wantKind checks err is a *vm.Error of kind, whose message holds every sub
// and never the API key.
func wantKind(t *testing.T, err error, kind vm.ErrorKind, subs ...string) {
	t.Helper()
	t.Logf("error: %v", err)
	var ve *vm.Error
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v (%T), want a *vm.Error of kind %s", err, err, kind)
	}
	if ve.Kind != kind {
		t.Errorf("kind = %s (%s), want %s", ve.Kind, ve.Message, kind)
	}
	for _, sub := range subs {
		if !strings.Contains(ve.Message, sub) {
			t.Errorf("message %q lacks %q", ve.Message, sub)
		}
	}
	if strings.Contains(err.Error(), testKey) || strings.Contains(fmt.Sprintf("%+v %#v", err, err), testKey) {
		t.Errorf("error contains the API key: %v", err)
	}
}

func TestOpenAITextStream(t *testing.T) {
	s := newChatServer(t, sse(
		chunk(`{"role":"assistant","content":""}`, ""),
		chunk(`{"content":"Hel"}`, ""),
		chunk(`{"content":"lo, wörld"}`, ""),
		chunk(`{}`, "stop"),
		usageChunk,
		"[DONE]",
	))
	temp := 0.25
	m, clock := newTestModel(t, s, func(c *OpenAIConfig) { c.Temperature = &temp; c.MaxTokens = 500 })
	if got := m.Info(); got != (runtime.ModelInfo{Name: "fast", Provider: "openai", Model: "gpt-test", ContextWindow: 128000}) {
		t.Errorf("info = %+v", got)
	}
	req := &runtime.ModelRequest{
		Site: runtime.CallSite{Node: "triage", MapIndex: -1, Turn: 2},
		Messages: []runtime.Message{
			{Role: runtime.RoleSystem, Content: "be brief"},
			{Role: runtime.RoleUser, Content: "hi", Name: "ana"},
			{Role: runtime.RoleAssistant, ToolCalls: []runtime.ToolCall{{ID: "call_1", Name: "lookup", Args: json.RawMessage(`{"q":"x"}`)}}},
			{Role: runtime.RoleTool, ToolCallID: "call_1", Content: `{"found":true}`},
		},
	}
	var deltas []string
	resp, err := m.Generate(context.Background(), req, func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Hello, wörld" || resp.FinishReason != "stop" || resp.Model != "gpt-test-2026" {
		t.Errorf("resp = %+v", resp)
	}
	if !reflect.DeepEqual(deltas, []string{"Hel", "lo, wörld"}) {
		t.Errorf("deltas = %q", deltas)
	}
	if resp.Usage != (runtime.Usage{PromptTokens: 9, CompletionTokens: 12}) {
		t.Errorf("usage = %+v", resp.Usage)
	}
	if len(clock.waits) != 0 {
		t.Errorf("waited %v", clock.waits)
	}

	body := s.bodies[0]
	wantBody := map[string]any{
		"model":                 "gpt-test",
		"stream":                true,
		"stream_options":        map[string]any{"include_usage": true},
		"temperature":           0.25,
		"max_completion_tokens": 500.0,
		"messages": []any{
			map[string]any{"role": "system", "content": "be brief"},
			map[string]any{"role": "user", "content": "hi", "name": "ana"},
			map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function", "function": map[string]any{"name": "lookup", "arguments": `{"q":"x"}`},
			}}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": `{"found":true}`},
		},
	}
	if !reflect.DeepEqual(body, wantBody) {
		got, _ := json.MarshalIndent(body, "", "  ")
		want, _ := json.MarshalIndent(wantBody, "", "  ")
		t.Errorf("request body\n%s\nwant\n%s", got, want)
	}
	if got := s.headers[0].Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
}

// Two parallel tool calls whose ids, names and argument fragments arrive
// interleaved across chunks; no usage chunk, so usage is estimated.
func TestOpenAIStreamedToolCalls(t *testing.T) {
	s := newChatServer(t, sse(
		chunk(`{"role":"assistant","content":null}`, ""),
		chunk(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{\"tz\":"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"ty\": \"Paris\"}"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"function":{"arguments":" \"CET\"}"}}]}`, ""),
		chunk(`{}`, "tool_calls"),
		"[DONE]",
	))
	m, _ := newTestModel(t, s, nil)
	req := simpleRequest()
	req.Tools = []runtime.ToolSpec{
		{Name: "get_weather", Description: "weather now", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}},
		{Name: "get_time", InputSchema: map[string]any{"type": "object"}},
	}
	var deltas int
	resp, err := m.Generate(context.Background(), req, func(string) { deltas++ })
	if err != nil {
		t.Fatal(err)
	}
	want := []runtime.ToolCall{
		{ID: "call_a", Name: "get_weather", Args: json.RawMessage(`{"city": "Paris"}`)},
		{ID: "call_b", Name: "get_time", Args: json.RawMessage(`{"tz": "CET"}`)},
	}
	if !reflect.DeepEqual(resp.ToolCalls, want) || resp.FinishReason != "tool_calls" || resp.Text != "" || deltas != 0 {
		t.Errorf("resp = %+v (deltas %d)", resp, deltas)
	}
	if resp.Usage.PromptTokens != 2 || resp.Usage.CompletionTokens == 0 {
		t.Errorf("estimated usage = %+v", resp.Usage)
	}
	wantTools := []any{
		map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "description": "weather now",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}},
		map[string]any{"type": "function", "function": map[string]any{"name": "get_time", "parameters": map[string]any{"type": "object"}}},
	}
	if got := s.bodies[0]["tools"]; !reflect.DeepEqual(got, wantTools) {
		t.Errorf("tools = %v", got)
	}
}

func TestOpenAIStructuredOutput(t *testing.T) {
	s := newChatServer(t, sse(chunk(`{"role":"assistant","content":"{\"verdict\":\"ok\"}"}`, ""), chunk(`{}`, "stop"), usageChunk, "[DONE]"))
	m, _ := newTestModel(t, s, nil)
	req := simpleRequest()
	temp := 0.0
	req.Temperature, req.MaxTokens = &temp, 64
	req.ResponseSchema = map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"verdict": map[string]any{"type": "string"}},
		"required":             []any{"verdict"},
		"additionalProperties": false,
	}
	resp, err := m.Generate(context.Background(), req, nil)
	if err != nil || resp.Text != `{"verdict":"ok"}` {
		t.Fatalf("resp = %+v, %v", resp, err)
	}
	want := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "output", "strict": true, "schema": req.ResponseSchema}}
	body := s.bodies[0]
	if !reflect.DeepEqual(body["response_format"], want) {
		t.Errorf("response_format = %#v", body["response_format"])
	}
	if body["temperature"] != 0.0 || body["max_completion_tokens"] != 64.0 {
		t.Errorf("temperature %v, max_completion_tokens %v", body["temperature"], body["max_completion_tokens"])
	}
}

func TestOpenAISamplingParameters(t *testing.T) {
	tests := []struct {
		name string
		set  func(*runtime.ModelRequest)
		want map[string]any // members of the body; nil: absent
	}{
		{"none", func(*runtime.ModelRequest) {}, map[string]any{"top_p": nil, "stop": nil, "seed": nil}},
		{"zero top_p and seed are sent", func(r *runtime.ModelRequest) { r.TopP, r.Seed = new(0.0), new(int64(0)) },
			map[string]any{"top_p": 0.0, "seed": 0.0, "stop": nil}},
		{"all", func(r *runtime.ModelRequest) {
			r.TopP, r.Seed, r.Stop = new(0.25), new(int64(42)), []string{"END", "\n\n"}
		}, map[string]any{"top_p": 0.25, "seed": 42.0, "stop": []any{"END", "\n\n"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newChatServer(t, sse(chunk(`{"role":"assistant","content":"ok"}`, ""), chunk(`{}`, "stop"), "[DONE]"))
			m, _ := newTestModel(t, s, nil)
			req := simpleRequest()
			tt.set(req)
			if _, err := m.Generate(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			body := s.bodies[0]
			for k, want := range tt.want {
				got, ok := body[k]
				if want == nil {
					if ok {
						t.Errorf("%s = %v, want absent", k, got)
					}
					continue
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", k, got, want)
				}
			}
		})
	}
}

func TestOpenAIRateLimitRetryAfter(t *testing.T) {
	limited := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "2")
		errorBody(http.StatusTooManyRequests, "Rate limit reached", "requests")(w, r)
	}
	s := newChatServer(t, limited, sse(chunk(`{"role":"assistant","content":"ok"}`, ""), chunk(`{}`, "stop"), "[DONE]"))
	m, clock := newTestModel(t, s, func(c *OpenAIConfig) { c.MaxRetries = 2 })
	resp, err := m.Generate(context.Background(), simpleRequest(), nil)
	if err != nil || resp.Text != "ok" {
		t.Fatalf("resp = %+v, %v", resp, err)
	}
	if !reflect.DeepEqual(clock.waits, []time.Duration{2 * time.Second}) || s.requests() != 2 {
		t.Errorf("waits %v over %d requests, want [2s] over 2", clock.waits, s.requests())
	}
}

func TestOpenAIRateLimitExhausted(t *testing.T) {
	limited := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After-Ms", "1500")
		errorBody(http.StatusTooManyRequests, "Rate limit reached", "requests")(w, r)
	}
	s := newChatServer(t, limited)
	m, clock := newTestModel(t, s, func(c *OpenAIConfig) { c.MaxRetries = 1 })
	_, err := m.Generate(context.Background(), simpleRequest(), nil)
	wantKind(t, err, vm.KindRateLimit, "HTTP 429 Too Many Requests: Rate limit reached", "(after 2 attempts)")
	if !reflect.DeepEqual(clock.waits, []time.Duration{1500 * time.Millisecond}) {
		t.Errorf("waits = %v", clock.waits)
	}
}

// A Retry-After longer than the provider waits ends the call at once.
func TestOpenAIRetryAfterTooLong(t *testing.T) {
	limited := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		errorBody(http.StatusTooManyRequests, "quota", "insufficient_quota")(w, r)
	}
	s := newChatServer(t, limited)
	m, clock := newTestModel(t, s, func(c *OpenAIConfig) { c.MaxRetries = 5 })
	_, err := m.Generate(context.Background(), simpleRequest(), nil)
	wantKind(t, err, vm.KindRateLimit, "quota", "retry after 1h0m0s")
	if len(clock.waits) != 0 || s.requests() != 1 {
		t.Errorf("waits %v over %d requests", clock.waits, s.requests())
	}
}

func TestOpenAIServerErrorsExhaustRetries(t *testing.T) {
	s := newChatServer(t, errorBody(http.StatusInternalServerError, "The server had an error", "server_error"))
	m, clock := newTestModel(t, s, func(c *OpenAIConfig) { c.MaxRetries = 3 })
	_, err := m.Generate(context.Background(), simpleRequest(), nil)
	wantKind(t, err, vm.KindUnavailable, "HTTP 500 Internal Server Error: The server had an error", "(after 4 attempts)")
	// Full jitter with Rand = 0.5 over 500ms, 1s, 2s.
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second}
	if !reflect.DeepEqual(clock.waits, want) || s.requests() != 4 {
		t.Errorf("waits %v over %d requests, want %v over 4", clock.waits, s.requests(), want)
	}
}

// An error body that is not the usual JSON envelope still gives the status.
func TestOpenAIPlainErrorBody(t *testing.T) {
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream overloaded", http.StatusBadGateway)
	})
	m, _ := newTestModel(t, s, nil)
	_, err := m.Generate(context.Background(), simpleRequest(), nil)
	wantKind(t, err, vm.KindUnavailable, "HTTP 502 Bad Gateway: upstream overloaded")
	if s.requests() != 1 {
		t.Errorf("%d requests with MaxRetries 0", s.requests())
	}
}

func TestOpenAIClientErrors(t *testing.T) {
	tests := []struct {
		status int
		msg    string
	}{
		{http.StatusUnauthorized, "Incorrect API key provided: " + testKey + "."},
		{http.StatusBadRequest, "Invalid value for 'temperature'"},
		{http.StatusNotFound, "The model `gpt-test` does not exist"},
	}
	for _, tc := range tests {
		s := newChatServer(t, errorBody(tc.status, tc.msg, "invalid_request_error"))
		m, clock := newTestModel(t, s, func(c *OpenAIConfig) { c.MaxRetries = 3 })
		_, err := m.Generate(context.Background(), simpleRequest(), nil)
		want := strings.ReplaceAll(tc.msg, testKey, "[redacted]")
		wantKind(t, err, vm.KindModelError, fmt.Sprintf("HTTP %d %s: %s", tc.status, http.StatusText(tc.status), want))
		if s.requests() != 1 || len(clock.waits) != 0 {
			t.Errorf("%d: retried a client error (%d requests)", tc.status, s.requests())
		}
	}
}

func TestOpenAIStreamCutOff(t *testing.T) {
	abort := func(w http.ResponseWriter, r *http.Request) {
		sse(chunk(`{"role":"assistant","content":""}`, ""), chunk(`{"content":"partial"}`, ""))(w, r)
		panic(http.ErrAbortHandler) // drop the connection mid-stream
	}
	s := newChatServer(t, abort)
	m, _ := newTestModel(t, s, func(c *OpenAIConfig) { c.MaxRetries = 3 })
	var deltas []string
	_, err := m.Generate(context.Background(), simpleRequest(), func(d string) { deltas = append(deltas, d) })
	wantKind(t, err, vm.KindUnavailable, "stream interrupted: unexpected EOF")
	if !reflect.DeepEqual(deltas, []string{"partial"}) {
		t.Errorf("deltas = %q", deltas)
	}
	if s.requests() != 1 {
		t.Errorf("retried after text was streamed: %d requests", s.requests())
	}
}

// A stream that ends cleanly but before a finish reason was cut off too;
// nothing was streamed yet, so it is retried.
func TestOpenAIStreamEndsEarly(t *testing.T) {
	s := newChatServer(t, sse(chunk(`{"role":"assistant","content":""}`, "")))
	m, clock := newTestModel(t, s, func(c *OpenAIConfig) { c.MaxRetries = 1 })
	_, err := m.Generate(context.Background(), simpleRequest(), func(string) {})
	wantKind(t, err, vm.KindUnavailable, "stream ended before the completion finished", "(after 2 attempts)")
	if len(clock.waits) != 1 {
		t.Errorf("waits = %v", clock.waits)
	}
}

func TestOpenAIMalformedChunk(t *testing.T) {
	s := newChatServer(t, sse(chunk(`{"role":"assistant","content":""}`, ""), `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"x"`, "[DONE]"))
	m, _ := newTestModel(t, s, nil)
	_, err := m.Generate(context.Background(), simpleRequest(), nil)
	wantKind(t, err, vm.KindModelError, "malformed stream chunk")
}

func TestOpenAIErrorEvent(t *testing.T) {
	tests := []struct {
		typ  string
		kind vm.ErrorKind
	}{
		{"server_error", vm.KindUnavailable},
		{"rate_limit_exceeded", vm.KindRateLimit},
		{"invalid_request_error", vm.KindModelError},
	}
	for _, tc := range tests {
		s := newChatServer(t, sse(chunk(`{"role":"assistant","content":""}`, ""), `{"error":{"message":"went wrong","type":"`+tc.typ+`"}}`))
		m, _ := newTestModel(t, s, nil)
		_, err := m.Generate(context.Background(), simpleRequest(), nil)
		wantKind(t, err, tc.kind, "error in stream: went wrong")
	}
}

func TestOpenAIRefusal(t *testing.T) {
	s := newChatServer(t, sse(chunk(`{"role":"assistant","refusal":"I can't help"}`, ""), chunk(`{"refusal":" with that."}`, ""), chunk(`{}`, "stop"), "[DONE]"))
	m, _ := newTestModel(t, s, nil)
	_, err := m.Generate(context.Background(), simpleRequest(), nil)
	wantKind(t, err, vm.KindModelError, "model refused: I can't help with that.")
}

func TestOpenAITimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	m, _ := newTestModel(t, s, func(c *OpenAIConfig) { c.Timeout = 50 * time.Millisecond; c.MaxRetries = 3 })
	_, err := m.Generate(context.Background(), simpleRequest(), nil)
	wantKind(t, err, vm.KindTimeout, "no complete reply within the model's timeout of 50ms")
	if !errors.Is(err, context.DeadlineExceeded) || s.requests() != 1 {
		t.Errorf("err %v, %d requests", err, s.requests())
	}
}

// A timeout in the middle of a stream is a timeout too, not a cut connection.
func TestOpenAITimeoutMidStream(t *testing.T) {
	s := newChatServer(t, func(w http.ResponseWriter, r *http.Request) {
		sse(chunk(`{"role":"assistant","content":"slow"}`, ""))(w, r)
		<-r.Context().Done()
	})
	m, _ := newTestModel(t, s, func(c *OpenAIConfig) { c.Timeout = 50 * time.Millisecond })
	_, err := m.Generate(context.Background(), simpleRequest(), func(string) {})
	wantKind(t, err, vm.KindTimeout)
}

func TestOpenAICanceled(t *testing.T) {
	s := newChatServer(t, errorBody(http.StatusServiceUnavailable, "busy", "server_error"))
	ctx, cancel := context.WithCancel(context.Background())
	m, _ := newTestModel(t, s, func(c *OpenAIConfig) {
		c.MaxRetries = 5
		c.Sleep = func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }
	})
	_, err := m.Generate(ctx, simpleRequest(), nil)
	wantKind(t, err, vm.KindCanceled)
	if s.requests() != 1 {
		t.Errorf("%d requests after cancel", s.requests())
	}
}

func TestOpenAIConnectionRefused(t *testing.T) {
	s := newChatServer(t, sse())
	m, clock := newTestModel(t, s, func(c *OpenAIConfig) { c.MaxRetries = 2 })
	s.Close()
	_, err := m.Generate(context.Background(), simpleRequest(), nil)
	wantKind(t, err, vm.KindUnavailable, "connection failed", "(after 3 attempts)")
	if len(clock.waits) != 2 {
		t.Errorf("waits = %v", clock.waits)
	}
}

func TestOpenAIConfig(t *testing.T) {
	if _, err := NewOpenAI(OpenAIConfig{}); err == nil {
		t.Error("no model id accepted")
	}
	_, err := NewOpenAI(OpenAIConfig{Model: "m", BaseURL: "ftp://x/" + testKey, APIKey: testKey})
	if err == nil || strings.Contains(err.Error(), testKey) {
		t.Errorf("bad base URL: %v", err)
	}
	m, err := NewOpenAI(OpenAIConfig{Model: "m"})
	if err != nil || m.Info().Provider != "openai" {
		t.Errorf("defaults: %v", err)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	m := &openAIModel{cfg: OpenAIConfig{Now: func() time.Time { return now }}}
	tests := []struct {
		key, value string
		want       time.Duration
		ok         bool
	}{
		{"Retry-After", "3", 3 * time.Second, true},
		{"Retry-After", "0.5", 500 * time.Millisecond, true},
		{"Retry-After-Ms", "250", 250 * time.Millisecond, true},
		{"Retry-After", now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second, true},
		{"Retry-After", now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"Retry-After", "soon", 0, false},
		{"Retry-After", "-1", 0, false},
	}
	for _, tc := range tests {
		got, ok := m.retryAfter(http.Header{tc.key: {tc.value}})
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %s → %v %v, want %v %v", tc.key, tc.value, got, ok, tc.want, tc.ok)
		}
	}
	// Without a clock an HTTP date is ignored.
	m.cfg.Now = nil
	if _, ok := m.retryAfter(http.Header{"Retry-After": {now.Format(http.TimeFormat)}}); ok {
		t.Error("HTTP date honoured without a clock")
	}
}

// Fields the client library would omit when zero are sent: a temperature
// of 0 from the configuration, an empty message content; a tool without a
// schema gets the empty parameter list.
func TestOpenAIZeroValuesSent(t *testing.T) {
	s := newChatServer(t, sse(chunk(`{"content":"ok"}`, "stop"), "[DONE]"))
	zero := 0.0
	m, _ := newTestModel(t, s, func(c *OpenAIConfig) { c.Temperature = &zero })
	req := &runtime.ModelRequest{
		Messages: []runtime.Message{{Role: runtime.RoleSystem}, {Role: runtime.RoleUser}, {Role: runtime.RoleAssistant}, {Role: runtime.RoleTool, ToolCallID: "c"}},
		Tools:    []runtime.ToolSpec{{Name: "ping"}},
	}
	if _, err := m.Generate(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	body := s.bodies[0]
	if v, ok := body["temperature"]; !ok || v != 0.0 {
		t.Errorf("temperature = %v (present %v)", v, ok)
	}
	wantMsgs := []any{
		map[string]any{"role": "system", "content": ""},
		map[string]any{"role": "user", "content": ""},
		map[string]any{"role": "assistant", "content": ""},
		map[string]any{"role": "tool", "content": "", "tool_call_id": "c"},
	}
	if !reflect.DeepEqual(body["messages"], wantMsgs) {
		t.Errorf("messages = %#v", body["messages"])
	}
	wantTools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "ping",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{}}}}}
	if !reflect.DeepEqual(body["tools"], wantTools) {
		t.Errorf("tools = %#v", body["tools"])
	}
}

// A request the client library refuses is a model_error and is not sent.
func TestOpenAIRequestNotSent(t *testing.T) {
	s := newChatServer(t, sse(chunk(`{"content":"ok"}`, "stop"), "[DONE]"))
	m, _ := newTestModel(t, s, func(c *OpenAIConfig) { c.Model = "text-davinci-003"; c.MaxRetries = 2 })
	_, err := m.Generate(context.Background(), simpleRequest(), nil)
	wantKind(t, err, vm.KindModelError, "request not sent")
	if s.requests() != 0 {
		t.Errorf("%d requests", s.requests())
	}
}

// TestOpenAIToolChoiceNone: ToolChoice "none" sends the tools with
// tool_choice none (a summary fork keeps its parent's tools); without tools
// nothing is sent.
func TestOpenAIToolChoiceNone(t *testing.T) {
	for _, tools := range []bool{true, false} {
		s := newChatServer(t, sse(chunk(`{"role":"assistant","content":"summary"}`, ""), chunk(`{}`, "stop"), usageChunk, "[DONE]"))
		m, _ := newTestModel(t, s, nil)
		req := simpleRequest()
		req.ToolChoice = "none"
		if tools {
			req.Tools = []runtime.ToolSpec{{Name: "lookup"}}
		}
		if _, err := m.Generate(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		body := s.bodies[0]
		if got, want := body["tool_choice"], map[bool]any{true: "none", false: nil}[tools]; got != want {
			t.Errorf("tools %v: tool_choice %v, want %v", tools, got, want)
		}
		if tools && len(body["tools"].([]any)) != 1 {
			t.Errorf("tools %v", body["tools"])
		}
	}
}

// TestOpenAIImageParts: a user message with parts is sent as content
// parts: its text, then images as image_url (bytes as a data: URL).
func TestOpenAIImageParts(t *testing.T) {
	s := newChatServer(t, sse(chunk(`{"role":"assistant","content":"a cat"}`, ""), chunk(`{}`, "stop"), usageChunk, "[DONE]"))
	m, _ := newTestModel(t, s, nil)
	req := simpleRequest()
	req.Messages = []runtime.Message{{Role: runtime.RoleUser, Content: "what is this?", Parts: []runtime.ContentPart{
		{Type: "text", Text: "what is this?"},
		{Type: "image", MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
		{Type: "image", URL: "https://example.com/cat.jpg"},
	}}}
	if _, err := m.Generate(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	msgs := s.bodies[0]["messages"].([]any)
	want := []any{
		map[string]any{"type": "text", "text": "what is this?"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBORw=="}},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/cat.jpg"}},
	}
	if got := msgs[0].(map[string]any)["content"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("content %#v", got)
	}
}
