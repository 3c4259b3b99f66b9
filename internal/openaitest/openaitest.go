// Package openaitest is a fake OpenAI-compatible chat completions endpoint
// for tests: an httptest server on 127.0.0.1 that records every request and
// answers each from a function of it (never from global call order alone),
// streaming SSE chunks (text deltas, tool-call deltas, usage, [DONE]) or a
// plain chat.completion when the request does not ask for a stream.
package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"unicode/utf8"
)

// Request is one recorded chat completions request.
type Request struct {
	N        int // 0-based, in arrival order
	Model    string
	Stream   bool
	Messages []Message
	Tools    []string // function names offered
	Header   http.Header
	Body     map[string]any // the whole request body
}

// Message is one request message, flattened.
type Message struct {
	Role       string
	Content    string
	Name       string
	ToolCallID string
	ToolCalls  []ToolCall
}

// ToolCall is a function call of an assistant message or a reply.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text
}

// Reply is the fake model's answer to one request.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	// Chunks streams Text in this many deltas (default 1).
	Chunks int
	// Status, when not 0 or 200, answers with this HTTP status and an
	// OpenAI error body carrying Error.
	Status int
	Error  string
}

// Server is the fake endpoint. BaseURL is what OPENAI_BASE_URL takes.
type Server struct {
	*httptest.Server
	BaseURL string

	mu    sync.Mutex
	reqs  []Request
	reply func(Request) Reply
}

// New starts a server answering every request with reply(request). Close it
// when done.
func New(reply func(Request) Reply) *Server {
	s := &Server{reply: reply}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	s.BaseURL = s.Server.URL + "/v1"
	return s
}

// Requests returns a copy of the requests served so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		writeError(w, http.StatusNotFound, "unexpected "+r.Method+" "+r.URL.Path)
		return
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	req, err := parse(data)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	req.Header = r.Header.Clone()
	s.mu.Lock()
	req.N = len(s.reqs)
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()

	rep := s.reply(req)
	if rep.Status != 0 && rep.Status != http.StatusOK {
		writeError(w, rep.Status, rep.Error)
		return
	}
	for i := range rep.ToolCalls {
		if rep.ToolCalls[i].ID == "" {
			rep.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", req.N, i)
		}
	}
	finish := "stop"
	if len(rep.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	if !req.Stream {
		writeCompletion(w, req, rep, finish)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1735689600, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, piece := range split(rep.Text, rep.Chunks) {
		send(chunk(map[string]any{"content": piece}, nil))
	}
	for i, tc := range rep.ToolCalls {
		send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""}}}}, nil))
		// Arguments arrive in two pieces, as real providers send them.
		half := len(tc.Arguments) / 2
		for _, a := range []string{tc.Arguments[:half], tc.Arguments[half:]} {
			send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": a}}}}, nil))
		}
	}
	send(chunk(map[string]any{}, finish))
	send(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1735689600, "model": req.Model,
		"choices": []any{}, "usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func writeCompletion(w http.ResponseWriter, req Request, rep Reply, finish string) {
	msg := map[string]any{"role": "assistant", "content": rep.Text, "refusal": nil}
	if len(rep.ToolCalls) > 0 {
		var calls []any
		for _, tc := range rep.ToolCalls {
			calls = append(calls, map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}})
		}
		msg["tool_calls"] = calls
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "created": 1735689600, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}})
	w.Write(b)
}

// split cuts text into n pieces of nearly equal rune counts (none for "").
func split(text string, n int) []string {
	if text == "" {
		return nil
	}
	runes := utf8.RuneCountInString(text)
	n = max(1, min(n, runes))
	var out []string
	r := []rune(text)
	for i := range n {
		out = append(out, string(r[i*len(r)/n:(i+1)*len(r)/n]))
	}
	return out
}

func parse(data []byte) (Request, error) {
	var body map[string]any
	if err := json.Unmarshal(data, &body); err != nil {
		return Request{}, fmt.Errorf("request body is not JSON: %v", err)
	}
	var wire struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			Name       string          `json:"name"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(data, &wire); err != nil {
		return Request{}, fmt.Errorf("request body: %v", err)
	}
	req := Request{Model: wire.Model, Stream: wire.Stream, Body: body}
	for _, m := range wire.Messages {
		msg := Message{Role: m.Role, Content: content(m.Content), Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range wire.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	return req, nil
}

// content flattens a message content: a string, or the text parts of an
// array of parts.
func content(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

// Last is the last message of a request with the given role (zero if none).
func (r Request) Last(role string) Message {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == role {
			return r.Messages[i]
		}
	}
	return Message{}
}
