package openai_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

var weatherTool = oai.ChatCompletionFunctionTool(oai.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: oai.String("The weather in a city"),
	Parameters:  oai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
})

// TestClientToolsLoop runs the standard OpenAI tools loop with openai-go:
// the reply carries the model's tool_calls (finish_reason tool_calls), and
// the tool messages of the next request, without a session header, resume
// the paused run; streaming and not.
func TestClientToolsLoop(t *testing.T) {
	e := newEnv(t, envOpts{})
	ctx := context.Background()
	alice := oai.NewClient(option.WithBaseURL(e.url+"/v1/"), option.WithAPIKey(aliceToken), option.WithMaxRetries(0))
	bob := oai.NewClient(option.WithBaseURL(e.url+"/v1/"), option.WithAPIKey(bobToken), option.WithMaxRetries(0))
	tools := []oai.ChatCompletionToolUnionParam{weatherTool}

	// first asks and returns the assistant message with its tool calls.
	first := func(t *testing.T, question string, stream bool) (oai.ChatCompletionMessage, string) {
		t.Helper()
		params := oai.ChatCompletionNewParams{Model: "echo", Tools: tools, Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage(question)}}
		if !stream {
			c, err := alice.Chat.Completions.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			return c.Choices[0].Message, string(c.Choices[0].FinishReason)
		}
		s := alice.Chat.Completions.NewStreaming(ctx, params)
		acc := oai.ChatCompletionAccumulator{}
		gotTool := false
		for s.Next() {
			acc.AddChunk(s.Current())
			if _, ok := acc.JustFinishedToolCall(); ok {
				gotTool = true
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if !gotTool {
			t.Errorf("the accumulator saw no finished tool call")
		}
		return acc.Choices[0].Message, string(acc.Choices[0].FinishReason)
	}

	for _, stream := range []bool{false, true} {
		name := "non-streaming"
		if stream {
			name = "streaming"
		}
		t.Run(name, func(t *testing.T) {
			msg, finish := first(t, "what is the weather in Paris", stream)
			if finish != "tool_calls" || len(msg.ToolCalls) != 1 || msg.Content != "Let me check." {
				t.Fatalf("first reply %s %+v", finish, msg)
			}
			tc := msg.ToolCalls[0]
			if tc.Function.Name != "get_weather" || tc.Function.Arguments != `{"city":"Paris"}` || !strings.HasPrefix(tc.ID, "call_") || tc.Type != "function" {
				t.Fatalf("tool call %+v", tc)
			}
			history := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("what is the weather in Paris"), msg.ToParam(), oai.ToolMessage("Sunny, 21 C", tc.ID)}
			params := oai.ChatCompletionNewParams{Model: "echo", Tools: tools, Messages: history}

			// Another user cannot answer alice's calls.
			_, err := bob.Chat.Completions.New(ctx, params)
			var apiErr *oai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "invalid_value" || apiErr.Param != "messages[2].tool_call_id" {
				t.Fatalf("bob answering: %v", err)
			}

			c, err := alice.Chat.Completions.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if c.Choices[0].FinishReason != "stop" || c.Choices[0].Message.Content != "tools said: get_weather=Sunny, 21 C" {
				t.Fatalf("final %+v", c.Choices[0])
			}
			// The calls were answered: the same results again find no waiting run.
			if _, err := alice.Chat.Completions.New(ctx, params); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
				t.Fatalf("answered twice: %v", err)
			}
		})
	}

	t.Run("wrong and missing ids", func(t *testing.T) {
		msg, _ := first(t, "the weather, two cities", false)
		if len(msg.ToolCalls) != 2 {
			t.Fatalf("calls %+v", msg.ToolCalls)
		}
		q := oai.UserMessage("the weather, two cities")
		tests := []struct {
			name    string
			results []oai.ChatCompletionMessageParamUnion
			param   string
			msg     string
		}{
			{"missing", []oai.ChatCompletionMessageParamUnion{oai.ToolMessage("a", msg.ToolCalls[0].ID)}, "messages", msg.ToolCalls[1].ID},
			{"unknown", []oai.ChatCompletionMessageParamUnion{oai.ToolMessage("a", msg.ToolCalls[0].ID), oai.ToolMessage("b", "call_nope")}, "messages[3].tool_call_id", "call_nope"},
			{"twice", []oai.ChatCompletionMessageParamUnion{oai.ToolMessage("a", msg.ToolCalls[0].ID), oai.ToolMessage("b", msg.ToolCalls[0].ID)}, "messages[3].tool_call_id", "twice"},
		}
		for _, tc := range tests {
			_, err := alice.Chat.Completions.New(ctx, oai.ChatCompletionNewParams{Model: "echo", Tools: tools,
				Messages: append([]oai.ChatCompletionMessageParamUnion{q, msg.ToParam()}, tc.results...)})
			var apiErr *oai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != tc.param || !strings.Contains(apiErr.Message, tc.msg) {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
		// The run still waits: both results resume it, in either order.
		c, err := alice.Chat.Completions.New(ctx, oai.ChatCompletionNewParams{Model: "echo", Tools: tools,
			Messages: []oai.ChatCompletionMessageParamUnion{q, msg.ToParam(), oai.ToolMessage("rain", msg.ToolCalls[1].ID), oai.ToolMessage("sun", msg.ToolCalls[0].ID)}})
		if err != nil || c.Choices[0].Message.Content != "tools said: get_weather=sun, get_weather=rain" {
			t.Fatalf("both results: %v %+v", err, c)
		}
	})

	t.Run("session header and a user message instead of results", func(t *testing.T) {
		sess := option.WithHeader("X-Agentc-Session", "tools-sess")
		c, err := alice.Chat.Completions.New(ctx, oai.ChatCompletionNewParams{Model: "echo", Tools: tools,
			Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("weather please")}}, sess)
		if err != nil || c.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("%v %+v", err, c)
		}
		_, err = alice.Chat.Completions.New(ctx, oai.ChatCompletionNewParams{Model: "echo", Tools: tools,
			Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("never mind")}}, sess)
		var apiErr *oai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, c.Choices[0].Message.ToolCalls[0].ID) {
			t.Fatalf("user message: %v", err)
		}
		// The first request again is a re-sent one: 409 with the pause.
		_, err = alice.Chat.Completions.New(ctx, oai.ChatCompletionNewParams{Model: "echo", Tools: tools,
			Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("weather please")}}, sess)
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusConflict || !strings.Contains(apiErr.RawJSON(), `"tool_calls"`) {
			t.Fatalf("re-sent: %v", err)
		}
		c, err = alice.Chat.Completions.New(ctx, oai.ChatCompletionNewParams{Model: "echo", Tools: tools,
			Messages: []oai.ChatCompletionMessageParamUnion{oai.ToolMessage("fog", c.Choices[0].Message.ToolCalls[0].ID)}}, sess)
		if err != nil || c.Choices[0].Message.Content != "tools said: get_weather=fog" {
			t.Fatalf("results with the header: %v %+v", err, c)
		}
	})
}

// TestClientToolNameCollision: a client tool may not be named like one of
// the workflow's tools.
func TestClientToolNameCollision(t *testing.T) {
	e := newEnv(t, envOpts{support: true})
	r := e.do("POST", "/v1/chat/completions", aliceToken, `{"model":"support","tools":[{"type":"function","function":{"name":"cert_scan"}}],"messages":[{"role":"user","content":"hi"}]}`)
	if r.status != http.StatusBadRequest {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if _, param, code, msg := apiError(t, r.body); param != "tools" || code != "invalid_value" || !strings.Contains(msg, "cert_scan") {
		t.Fatalf("%s %s %s", param, code, msg)
	}
}

// TestClientToolsIdempotent: a request re-sent with its Idempotency-Key
// gets the same tool calls, whose results then resume the run without a
// session header.
func TestClientToolsIdempotent(t *testing.T) {
	e := newEnv(t, envOpts{})
	ctx := context.Background()
	alice := oai.NewClient(option.WithBaseURL(e.url+"/v1/"), option.WithAPIKey(aliceToken), option.WithMaxRetries(0))
	params := oai.ChatCompletionNewParams{Model: "echo", Tools: []oai.ChatCompletionToolUnionParam{weatherTool},
		Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("the weather in Paris")}}
	key := option.WithHeader("Idempotency-Key", "tools-1")
	first, err := alice.Chat.Completions.New(ctx, params, key)
	if err != nil {
		t.Fatal(err)
	}
	again, err := alice.Chat.Completions.New(ctx, params, key)
	if err != nil {
		t.Fatal(err)
	}
	if again.Choices[0].FinishReason != "tool_calls" || len(again.Choices[0].Message.ToolCalls) != 1 ||
		again.Choices[0].Message.ToolCalls[0].ID != first.Choices[0].Message.ToolCalls[0].ID {
		t.Fatalf("re-sent: %+v, first %+v", again.Choices[0], first.Choices[0])
	}
	msg := again.Choices[0].Message
	params.Messages = append(params.Messages, msg.ToParam(), oai.ToolMessage("Sunny", msg.ToolCalls[0].ID))
	c, err := alice.Chat.Completions.New(ctx, params)
	if err != nil || c.Choices[0].Message.Content != "tools said: get_weather=Sunny" {
		t.Fatalf("results: %v %+v", err, c)
	}
}
