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

// TestOfficialGoClient drives the server with github.com/openai/openai-go.
func TestOfficialGoClient(t *testing.T) {
	e := newEnv(t, envOpts{support: true})
	ctx := context.Background()
	client := func(token string, opts ...option.RequestOption) oai.Client {
		return oai.NewClient(append([]option.RequestOption{
			option.WithBaseURL(e.url + "/v1/"), option.WithAPIKey(token), option.WithMaxRetries(0),
		}, opts...)...)
	}
	alice := client(aliceToken)
	const question = "prod.example.com fails with x509: certificate signed by unknown authority"

	t.Run("models", func(t *testing.T) {
		page, err := alice.Models.List(ctx)
		if err != nil || len(page.Data) != 1 || page.Data[0].ID != "support" {
			t.Fatalf("list: %+v, %v", page, err)
		}
		m, err := alice.Models.Get(ctx, "support")
		if err != nil || m.ID != "support" || m.OwnedBy != "agentc" {
			t.Fatalf("get: %+v, %v", m, err)
		}
	})

	t.Run("non-streaming", func(t *testing.T) {
		c, err := alice.Chat.Completions.New(ctx, oai.ChatCompletionNewParams{
			Model: "support", Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage(question)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Choices) != 1 || !strings.Contains(c.Choices[0].Message.Content, "Publish this report?") ||
			c.Choices[0].FinishReason != "stop" || c.Usage.TotalTokens != c.Usage.PromptTokens+c.Usage.CompletionTokens {
			t.Fatalf("completion %+v", c)
		}
	})

	t.Run("streaming with usage and multi-turn continuity", func(t *testing.T) {
		sess := option.WithHeader("X-Agentc-Session", "go-client")
		turns := []struct {
			message, want string
		}{
			{question, "Publish this report?"},
			{`{"approved": true}`, "intermediate"},
		}
		history := []oai.ChatCompletionMessageParamUnion{}
		for i, turn := range turns {
			history = append(history, oai.UserMessage(turn.message))
			stream := alice.Chat.Completions.NewStreaming(ctx, oai.ChatCompletionNewParams{
				Model: "support", Messages: history,
				StreamOptions: oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)},
			}, sess)
			acc := oai.ChatCompletionAccumulator{}
			finished := false
			for stream.Next() {
				acc.AddChunk(stream.Current())
				if _, ok := acc.JustFinishedContent(); ok {
					finished = true
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("turn %d: %v", i, err)
			}
			if len(acc.Choices) != 1 || !strings.Contains(acc.Choices[0].Message.Content, turn.want) || acc.Choices[0].FinishReason != "stop" || !finished {
				t.Fatalf("turn %d: %+v", i, acc.ChatCompletion)
			}
			if acc.Usage.TotalTokens == 0 && i == 0 {
				t.Fatalf("turn %d: no usage", i)
			}
			history = append(history, oai.AssistantMessage(acc.Choices[0].Message.Content))
		}
	})

	t.Run("errors", func(t *testing.T) {
		tests := []struct {
			name   string
			client oai.Client
			model  string
			status int
			code   string
		}{
			{"unknown model", alice, "gpt-4o", http.StatusNotFound, "model_not_found"},
			{"bad token", client("nope"), "support", http.StatusUnauthorized, "invalid_api_key"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := tc.client.Chat.Completions.New(ctx, oai.ChatCompletionNewParams{
					Model: tc.model, Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")},
				})
				var apiErr *oai.Error
				if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || apiErr.Code != tc.code {
					t.Fatalf("error %v, want status %d code %s", err, tc.status, tc.code)
				}
			})
		}
	})
}
