package openai_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentc/agentc/runtime/artifact"
)

const imageSource = `workflow echo "Looks at images"

model m { provider = openai, name = "x", image_input = true }

agent echo llm "Echoes the message" { model = m }
`

// TestImageParts: an image_url part of the last message (a data: URL) is
// stored as an artifact of the request's session and reaches a model that
// takes images, after the text; an http(s) URL goes as a reference; a bad
// URL is a 400.
func TestImageParts(t *testing.T) {
	e := newEnv(t, envOpts{source: imageSource})
	ctx := context.Background()
	client := oai.NewClient(option.WithBaseURL(e.url+"/v1/"), option.WithAPIKey(aliceToken), option.WithMaxRetries(0))
	png := []byte{0x89, 'P', 'N', 'G', 9, 9}
	var resp *http.Response
	_, err := client.Chat.Completions.New(ctx, oai.ChatCompletionNewParams{Model: "echo", Messages: []oai.ChatCompletionMessageParamUnion{
		oai.UserMessage([]oai.ChatCompletionContentPartUnionParam{
			oai.TextContentPart("what is this?"),
			oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)}),
			oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{URL: "https://example.com/cat.jpg"}),
		}),
	}}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	reqs := e.model.requests()
	msg := reqs[len(reqs)-1].Messages[len(reqs[len(reqs)-1].Messages)-1]
	if msg.Content != "what is this?" || len(msg.Parts) != 3 || string(msg.Parts[1].Data) != string(png) || msg.Parts[1].MediaType != "image/png" ||
		msg.Parts[2].URL != "https://example.com/cat.jpg" {
		t.Fatalf("the model's prompt %+v", msg)
	}
	sess := resp.Header.Get("X-Agentc-Session")
	a, err := artifact.New(e.b.Docs, nil).Get(ctx, artifact.Key{App: e.b.App(), User: "alice", Session: sess, Name: "input/file-1.png"}, 0)
	if err != nil || string(a.Data) != string(png) {
		t.Fatalf("artifact %+v %v", a, err)
	}
	for _, bad := range []string{"data:text/plain;base64,aGk=", "data:image/png,raw", "data:image/png;base64,!!", "ftp://x/y.png"} {
		r := e.do("POST", "/v1/chat/completions", aliceToken, `{"model":"echo","messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"`+bad+`"}}]}]}`)
		if _, param, code, _ := apiError(t, r.body); r.status != http.StatusBadRequest || code != "invalid_value" || param != "messages[0].content" {
			t.Errorf("%s: %d %s %s", bad, r.status, code, param)
		}
	}
}
