package openaitest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/vm"
)

// TestWithTheProvider drives the fake with agentc's own OpenAI provider:
// a streamed tool-call reply, then (with the tool result in the request) a
// streamed text reply, then an error status.
func TestWithTheProvider(t *testing.T) {
	s := New(func(r Request) Reply {
		switch r.N {
		case 0:
			return Reply{ToolCalls: []ToolCall{{ID: "call_a", Name: "lookup", Arguments: `{"q": "tls"}`}, {Name: "now", Arguments: `{}`}}}
		case 1:
			return Reply{Text: "The chain is missing its intermediate.", Chunks: 4}
		}
		return Reply{Status: http.StatusBadRequest, Error: "no more"}
	})
	defer s.Close()
	m, err := model.NewOpenAI(model.OpenAIConfig{Name: "fast", Model: "gpt-test", BaseURL: s.BaseURL, APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	req := &runtime.ModelRequest{
		Messages: []runtime.Message{{Role: runtime.RoleSystem, Content: "Be brief."}, {Role: runtime.RoleUser, Content: "Why does TLS fail?"}},
		Tools:    []runtime.ToolSpec{{Name: "lookup", InputSchema: map[string]any{"type": "object"}}, {Name: "now", InputSchema: map[string]any{"type": "object"}}},
	}
	resp, err := m.Generate(context.Background(), req, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	want := []runtime.ToolCall{{ID: "call_a", Name: "lookup", Args: json.RawMessage(`{"q": "tls"}`)}, {ID: "call_0_1", Name: "now", Args: json.RawMessage(`{}`)}}
	if !reflect.DeepEqual(resp.ToolCalls, want) || resp.FinishReason != "tool_calls" {
		t.Fatalf("reply 1: %+v", resp)
	}

	req.Messages = append(req.Messages,
		runtime.Message{Role: runtime.RoleAssistant, ToolCalls: resp.ToolCalls},
		runtime.Message{Role: runtime.RoleTool, ToolCallID: "call_a", Name: "lookup", Content: "leaf only"},
		runtime.Message{Role: runtime.RoleTool, ToolCallID: "call_0_1", Name: "now", Content: "2026-11-30T06:00:00Z"})
	var deltas []string
	resp, err = m.Generate(context.Background(), req, func(d string) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "The chain is missing its intermediate." || len(deltas) != 4 || strings.Join(deltas, "") != resp.Text || resp.Usage.PromptTokens != 10 {
		t.Fatalf("reply 2: %+v, deltas %q", resp, deltas)
	}

	_, err = m.Generate(context.Background(), req, func(string) {})
	var ve *vm.Error
	if !errors.As(err, &ve) || ve.Kind != vm.KindModelError || !strings.Contains(ve.Message, "no more") {
		t.Fatalf("reply 3: %v", err)
	}

	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[1]
	if !r.Stream || r.Model != "gpt-test" || r.Header.Get("Authorization") != "Bearer sk-test" || !reflect.DeepEqual(r.Tools, []string{"lookup", "now"}) {
		t.Errorf("request 2: %+v", r)
	}
	if len(r.Messages) != 5 || r.Last("user").Content != "Why does TLS fail?" || r.Last("tool").Content != "2026-11-30T06:00:00Z" ||
		r.Messages[2].Role != "assistant" || len(r.Messages[2].ToolCalls) != 2 || r.Messages[2].ToolCalls[0].Name != "lookup" ||
		r.Messages[3].ToolCallID != "call_a" {
		t.Errorf("request 2 messages: %+v", r.Messages)
	}
}

// TestNonStreaming answers a request without "stream" as one completion.
func TestNonStreaming(t *testing.T) {
	s := New(func(Request) Reply {
		return Reply{Text: "hi", ToolCalls: []ToolCall{{Name: "f", Arguments: `{"a":1}`}}}
	})
	defer s.Close()
	resp, err := http.Post(s.BaseURL+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	c := body.Choices[0]
	if body.Object != "chat.completion" || c.Message.Content != "hi" || c.FinishReason != "tool_calls" || c.Message.ToolCalls[0].ID != "call_0_0" ||
		c.Message.ToolCalls[0].Function.Arguments != `{"a":1}` {
		t.Errorf("completion %+v", body)
	}
	if got := s.Requests()[0]; got.Stream || got.Last("user").Content != "ab" {
		t.Errorf("request %+v", got)
	}
	if r, err := http.Get(s.URL + "/v1/models"); err != nil || r.StatusCode != http.StatusNotFound {
		t.Errorf("GET /v1/models: %v %v", r, err)
	} else {
		r.Body.Close()
	}
}
