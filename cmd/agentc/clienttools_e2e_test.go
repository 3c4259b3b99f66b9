package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentc/agentc/internal/openaitest"
)

const clientToolsSource = `workflow weather "Answers with the client's tools"

model fast { provider = openai, name = "gpt-4o-mini" }

tool lookup "Looks a city up" {
  input  { city: string }
  output { country: string }
  run    = exec { command = ["sh", "lookup.sh"] }
  effect = read_only
}

agent assistant llm "Answers questions" {
  model       = fast
  instruction = "Answer briefly."
  tools       = [lookup]
}

serve { run = assistant }
`

// serveUntilCleanup starts `agentc serve file` in root (startServeFile)
// and stops it with SIGTERM when the test ends, requiring a clean exit.
func serveUntilCleanup(t *testing.T, root string, env []string, file string) (addr string, banner func() string) {
	t.Helper()
	cmd, addr, banner := startServeFile(t, root, env, file)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("serve exit: %v\n%s", err, banner())
		}
	})
	return addr, banner
}

// TestClientToolsThroughOpenAI drives the real binary with openai-go and
// the OpenAI provider against a fake upstream: the client's function tool
// reaches the upstream after the agent's own, the upstream's call of it
// comes back as tool_calls (the agent's own call in the same reply runs on
// the server), and the tool message resumes the run, whose next upstream
// request holds the whole loop with the upstream's call ids kept apart from
// the ids the client got.
func TestClientToolsThroughOpenAI(t *testing.T) {
	upstream := openaitest.New(func(r openaitest.Request) openaitest.Reply {
		if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
			return openaitest.Reply{Text: "Paris: " + last.Content, Chunks: 2}
		}
		return openaitest.Reply{Text: "Checking.", ToolCalls: []openaitest.ToolCall{
			{ID: "up_1", Name: "lookup", Arguments: `{"city":"Paris"}`},
			{ID: "up_2", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		}}
	})
	defer upstream.Close()
	root := newProject(t, "weather.agent", clientToolsSource, "lookup.sh", "echo '{\"country\": \"France\"}'\n")
	env := cleanEnv("OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+upstream.BaseURL, "AGENTC_DATA="+root+"/data", "AGENTC_UNCONFINED_EXEC=1")
	addr, banner := serveUntilCleanup(t, root, env, "weather.agent")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := oai.NewClient(option.WithBaseURL("http://"+addr+"/v1/"), option.WithAPIKey("tok"), option.WithMaxRetries(0))
	weather := oai.ChatCompletionFunctionTool(oai.FunctionDefinitionParam{Name: "get_weather",
		Parameters: oai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}})
	msgs := []oai.ChatCompletionMessageParamUnion{oai.UserMessage("What is the weather in Paris?")}
	params := oai.ChatCompletionNewParams{Model: "weather", Tools: []oai.ChatCompletionToolUnionParam{weather}, Messages: msgs}

	stream := client.Chat.Completions.NewStreaming(ctx, params)
	acc := oai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("first: %v\n%s", err, banner())
	}
	msg := acc.Choices[0].Message
	if acc.Choices[0].FinishReason != "tool_calls" || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "get_weather" ||
		msg.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` || msg.ToolCalls[0].ID == "up_2" {
		t.Fatalf("first reply %+v", acc.ChatCompletion)
	}
	reqs := upstream.Requests()
	if len(reqs) != 1 || strings.Join(reqs[0].Tools, ",") != "lookup,get_weather" {
		t.Fatalf("upstream requests %+v", reqs)
	}

	params.Messages = append(msgs, msg.ToParam(), oai.ToolMessage("Sunny, 21 C", msg.ToolCalls[0].ID))
	c, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatalf("second: %v\n%s", err, banner())
	}
	if c.Choices[0].FinishReason != "stop" || c.Choices[0].Message.Content != "Paris: Sunny, 21 C" {
		t.Fatalf("second reply %+v", c.Choices[0])
	}
	reqs = upstream.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	// The second upstream request continues the loop: the assistant reply
	// with both calls, then both results, the client's under its id.
	got := reqs[1].Messages
	n := len(got)
	if n < 4 || got[n-3].Role != "assistant" || len(got[n-3].ToolCalls) != 2 || got[n-3].ToolCalls[0].ID != "up_1" ||
		got[n-3].ToolCalls[1].ID != msg.ToolCalls[0].ID || got[n-2].ToolCallID != "up_1" || !strings.Contains(got[n-2].Content, "France") ||
		got[n-1].ToolCallID != msg.ToolCalls[0].ID || got[n-1].Content != "Sunny, 21 C" {
		b, _ := json.MarshalIndent(got, "", " ")
		t.Fatalf("second upstream messages %s", b)
	}
	if strings.Join(reqs[1].Tools, ",") != "lookup,get_weather" {
		t.Errorf("second upstream tools %v", reqs[1].Tools)
	}
}

const imagesSource = `workflow looker "Looks at images"

model eyes { provider = openai, name = "gpt-4o", image_input = true }

agent looker llm { model = eyes }

serve { run = looker }
`

// TestImagesThroughOpenAI: an image the client sends over /v1 (a data:
// URL) reaches the upstream of a model that takes images as an image_url
// content part after the prompt's text, byte for byte.
func TestImagesThroughOpenAI(t *testing.T) {
	upstream := openaitest.New(func(r openaitest.Request) openaitest.Reply { return openaitest.Reply{Text: "a chart"} })
	defer upstream.Close()
	root := newProject(t, "looker.agent", imagesSource)
	env := cleanEnv("OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+upstream.BaseURL, "AGENTC_DATA="+root+"/data")
	addr, banner := serveUntilCleanup(t, root, env, "looker.agent")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := oai.NewClient(option.WithBaseURL("http://"+addr+"/v1/"), option.WithAPIKey("tok"), option.WithMaxRetries(0))
	url := "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	c, err := client.Chat.Completions.New(ctx, oai.ChatCompletionNewParams{Model: "looker", Messages: []oai.ChatCompletionMessageParamUnion{
		oai.UserMessage([]oai.ChatCompletionContentPartUnionParam{oai.TextContentPart("What does this show?"),
			oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{URL: url})}),
	}})
	if err != nil || c.Choices[0].Message.Content != "a chart" {
		t.Fatalf("%v %+v\n%s", err, c, banner())
	}
	reqs := upstream.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	msgs, _ := reqs[0].Body["messages"].([]any)
	last, _ := msgs[len(msgs)-1].(map[string]any)
	parts, _ := last["content"].([]any)
	want := []any{
		map[string]any{"type": "text", "text": "What does this show?"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": url}},
	}
	if !reflect.DeepEqual(parts, want) {
		b, _ := json.Marshal(last)
		t.Fatalf("upstream's last message %s", b)
	}
}
