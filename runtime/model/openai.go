package model

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/outbound"
	"github.com/agentc/agentc/vm"
)

// DefaultBaseURL is the OpenAI API's base URL, used when OpenAIConfig.BaseURL
// is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Backoff defaults, the same as a node's `retry N` without `backoff`.
const (
	DefaultMinBackoff = 500 * time.Millisecond
	DefaultMaxBackoff = 8 * time.Second
	// maxRetryAfter is the longest Retry-After the provider waits for; a
	// longer one ends the call with rate_limit at once, leaving the wait to
	// the node's retry policy.
	maxRetryAfter = time.Minute
)

// OpenAIConfig configures an OpenAI-compatible chat-completions model.
type OpenAIConfig struct {
	Name          string // the model declaration's name (ModelInfo.Name)
	Model         string // provider model id, e.g. "gpt-4o-mini"; required
	BaseURL       string // e.g. "http://127.0.0.1:8080/v1"; DefaultBaseURL when empty
	APIKey        string // sent as a bearer token; never logged nor put in an error
	ContextWindow int    // tokens; 0 when unknown

	Temperature *float64 // used when a request sets none; nil: provider default
	MaxTokens   int      // max_completion_tokens when a request sets none; 0: provider default

	// Timeout bounds one Generate call, retries and waits included; 0: only
	// the caller's context bounds it.
	Timeout time.Duration
	// MaxRetries is how many more attempts a call makes after a rate_limit
	// or unavailable failure (HTTP 429, 5xx, a connection failure) that
	// happened before any text was streamed; 0: none.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the exponential backoff between
	// attempts (defaults DefaultMinBackoff, DefaultMaxBackoff). A
	// Retry-After from the provider replaces the computed wait.
	MinBackoff, MaxBackoff time.Duration

	// HTTPClient makes the requests; nil: http.DefaultClient.
	HTTPClient *http.Client
	// Sleep waits between attempts; nil: a timer that stops early with the
	// context's error.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns the jitter in [0, 1): attempt n waits Rand() times
	// min(MaxBackoff, MinBackoff·2ⁿ) ("full jitter"). nil: no jitter, the
	// full wait. The composition root injects the run's entropy.
	Rand func() float64
	// Now reads the clock, only to honour a Retry-After given as an HTTP
	// date; nil: such a header is ignored (seconds are always honoured).
	Now func() time.Time
}

// openAIModel is a runtime.Model speaking the chat-completions protocol
// through go-openai's client.
type openAIModel struct {
	cfg  OpenAIConfig
	conf openai.ClientConfig // its HTTPClient is set per attempt (see exchange)
}

// NewOpenAI returns a model calling an OpenAI-compatible chat-completions
// endpoint with streaming. The client library reads no environment
// variables and makes no retries of its own: cfg is the whole
// configuration.
func NewOpenAI(cfg OpenAIConfig) (runtime.Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai model: no model id")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if _, ok := outbound.HTTPURL(cfg.BaseURL); !ok {
		return nil, fmt.Errorf("openai model %s: base URL %q is not an http(s) URL", cfg.Model, redact(cfg.BaseURL, cfg.APIKey))
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.MinBackoff)
	cfg.MaxRetries = max(cfg.MaxRetries, 0)
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Sleep == nil {
		cfg.Sleep = outbound.Sleep
	}
	cc := openai.DefaultConfig(cfg.APIKey)
	cc.BaseURL = cfg.BaseURL
	return &openAIModel{cfg: cfg, conf: cc}, nil
}

func (m *openAIModel) Info() runtime.ModelInfo {
	return runtime.ModelInfo{Name: m.cfg.Name, Provider: "openai", Model: m.cfg.Model, ContextWindow: m.cfg.ContextWindow}
}

// Generate streams one chat completion, retrying rate_limit and unavailable
// failures that happen before the first streamed text (see OpenAIConfig).
func (m *openAIModel) Generate(ctx context.Context, req *runtime.ModelRequest, onDelta func(string)) (*runtime.ModelResponse, error) {
	if m.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, m.cfg.Timeout, fmt.Errorf("no complete reply within the model's timeout of %s", m.cfg.Timeout))
		defer cancel()
	}
	if req == nil {
		return nil, runtime.Errorf(vm.KindModelError, "%s: nil request", m.what())
	}
	params, body, err := m.params(req)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return nil, ctxError(ctx, m.what())
		}
		resp, f := m.attempt(ctx, params, body, req.Messages, onDelta)
		if f == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, ctxError(ctx, m.what())
		}
		wait, retry := m.retryWait(f, attempt)
		if !retry {
			return nil, m.failed(f, attempt)
		}
		if err := m.cfg.Sleep(ctx, wait); err != nil {
			return nil, ctxError(ctx, m.what())
		}
	}
}

// what names the model in messages.
func (m *openAIModel) what() string { return "openai model " + m.cfg.Model }

// chatRequest is the body sent: go-openai's request with two fields
// replaced, because the library drops them when they are zero: a
// temperature of 0 (a float32 with omitempty, go-openai issue 678; a float32
// would also turn 0.7 into 0.699999988) and an empty message content, which
// the API requires for system, user and tool messages. top_p, stop and seed
// are sent the same way (a top_p of 0 would be dropped too). The outer
// fields shadow the embedded ones in encoding/json.
type chatRequest struct {
	openai.ChatCompletionRequest
	Messages    []chatMessage `json:"messages"`
	Temperature *float64      `json:"temperature,omitempty"`
	TopP        *float64      `json:"top_p,omitempty"`
	Stop        []string      `json:"stop,omitempty"`
	Seed        *int64        `json:"seed,omitempty"`
}

// chatMessage is one request message; Content is nil only for an assistant
// message that carries tool calls and no text.
type chatMessage struct {
	Role string `json:"role"`
	// Content is a *string, or the []openai.ChatMessagePart of a user
	// message with images.
	Content    any               `json:"content,omitempty"`
	Name       string            `json:"name,omitempty"`
	ToolCalls  []openai.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
}

// jsonSchema is a response schema as the library's json.Marshaler.
type jsonSchema map[string]any

func (s jsonSchema) MarshalJSON() ([]byte, error) { return json.Marshal(map[string]any(s)) }

// emptyParameters is the schema of a tool declared without one: the API's
// meaning of an omitted `parameters`, which the library cannot omit.
var emptyParameters = map[string]any{"type": "object", "properties": map[string]any{}}

// params builds the library's request and the body actually sent (see
// chatRequest). The library's request carries no temperature and no
// messages: its client-side checks of model families would otherwise refuse
// sampling settings some OpenAI-compatible servers accept under those names.
func (m *openAIModel) params(req *runtime.ModelRequest) (openai.ChatCompletionRequest, []byte, error) {
	p := openai.ChatCompletionRequest{
		Model:         m.cfg.Model,
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	}
	body := chatRequest{}
	for i, msg := range req.Messages {
		mp, err := messageParam(msg)
		if err != nil {
			return p, nil, runtime.Errorf(vm.KindModelError, "%s: message %d: %v", m.what(), i, err)
		}
		body.Messages = append(body.Messages, mp)
	}
	for _, t := range req.Tools {
		fn := &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}
		if t.InputSchema == nil {
			fn.Parameters = emptyParameters
		}
		p.Tools = append(p.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: fn})
	}
	if req.ToolChoice == "none" && len(p.Tools) > 0 {
		p.ToolChoice = "none"
	}
	if req.ResponseSchema != nil {
		p.ResponseFormat = &openai.ChatCompletionResponseFormat{
			Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
				Name:   "output",
				Strict: true,
				Schema: jsonSchema(req.ResponseSchema),
			},
		}
	}
	switch {
	case req.Temperature != nil:
		body.Temperature = req.Temperature
	case m.cfg.Temperature != nil:
		body.Temperature = m.cfg.Temperature
	}
	body.TopP, body.Stop, body.Seed = req.TopP, req.Stop, req.Seed
	switch {
	case req.MaxTokens > 0:
		p.MaxCompletionTokens = req.MaxTokens
	case m.cfg.MaxTokens > 0:
		p.MaxCompletionTokens = m.cfg.MaxTokens
	}
	body.ChatCompletionRequest = p
	data, err := json.Marshal(body)
	if err != nil {
		return p, nil, runtime.Errorf(vm.KindModelError, "%s: request: %v", m.what(), redact(err.Error(), m.cfg.APIKey))
	}
	return p, data, nil
}

// messageParam converts one message to the wire form.
func messageParam(msg runtime.Message) (chatMessage, error) {
	content := msg.Content
	switch msg.Role {
	case runtime.RoleSystem:
		return chatMessage{Role: openai.ChatMessageRoleSystem, Content: &content}, nil
	case runtime.RoleUser:
		if len(msg.Parts) > 0 {
			parts, err := contentParts(msg.Parts)
			if err != nil {
				return chatMessage{}, err
			}
			return chatMessage{Role: openai.ChatMessageRoleUser, Content: parts, Name: msg.Name}, nil
		}
		return chatMessage{Role: openai.ChatMessageRoleUser, Content: &content, Name: msg.Name}, nil
	case runtime.RoleAssistant:
		a := chatMessage{Role: openai.ChatMessageRoleAssistant, Name: msg.Name}
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			a.Content = &content
		}
		for _, c := range msg.ToolCalls {
			args := string(c.Args)
			if args == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, openai.ToolCall{
				ID:       c.ID,
				Type:     openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: c.Name, Arguments: args},
			})
		}
		return a, nil
	case runtime.RoleTool:
		return chatMessage{Role: openai.ChatMessageRoleTool, Content: &content, ToolCallID: msg.ToolCallID}, nil
	}
	return chatMessage{}, fmt.Errorf("unknown role %q", msg.Role)
}

// contentParts converts a user message's parts to the library's
// multi-content form: text parts, and images as image_url parts (a URL as
// it is, bytes as a data: URL).
func contentParts(parts []runtime.ContentPart) ([]openai.ChatMessagePart, error) {
	out := make([]openai.ChatMessagePart, 0, len(parts))
	for i, p := range parts {
		switch p.Type {
		case "text":
			out = append(out, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: p.Text})
		case "image":
			url := p.URL
			if p.Data != nil {
				mt := p.MediaType
				if mt == "" {
					mt = "application/octet-stream"
				}
				url = "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(p.Data)
			}
			if url == "" {
				return nil, fmt.Errorf("part %d: an image without bytes or URL", i)
			}
			out = append(out, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: url}})
		default:
			return nil, fmt.Errorf("part %d: unknown type %q", i, p.Type)
		}
	}
	return out, nil
}

// attempt makes one streaming request.
func (m *openAIModel) attempt(ctx context.Context, params openai.ChatCompletionRequest, body []byte, msgs []runtime.Message, onDelta func(string)) (*runtime.ModelResponse, *failure) {
	ex := &exchange{client: m.cfg.HTTPClient, body: body}
	cc := m.conf
	cc.HTTPClient = ex
	stream, err := openai.NewClientWithConfig(cc).CreateChatCompletionStream(ctx, params)
	if err != nil {
		return nil, m.classify(err, ex)
	}
	defer stream.Close()
	acc := newStreamAcc(m.cfg.Model)
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			f := m.classify(err, ex)
			f.streamed = acc.streamed
			return nil, f
		}
		acc.add(c, onDelta)
	}
	resp, f := acc.finish(msgs)
	if f != nil {
		f.streamed = acc.streamed
	}
	return resp, f
}

// exchange is the client's HTTPDoer for one attempt: it sends body in place
// of the library's own encoding of the request (see chatRequest) and keeps
// what the library does not pass on: whether the request was sent, the
// response's status and headers (Retry-After), and the start of an error
// response's body.
type exchange struct {
	client  *http.Client
	body    []byte
	sent    bool
	resp    *http.Response
	errBody []byte
}

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

func (ex *exchange) Do(req *http.Request) (*http.Response, error) {
	if ex.body != nil {
		body := ex.body
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	ex.sent = true
	resp, err := ex.client.Do(req)
	if err != nil {
		return nil, err
	}
	ex.resp = resp
	if failedStatus(resp.StatusCode) {
		// The library reads an error body to its end but does not close it.
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		ex.errBody = data
		resp.Body = io.NopCloser(bytes.NewReader(data))
	}
	return resp, nil
}

// failedStatus is the library's test for an error response.
func failedStatus(code int) bool { return code < http.StatusOK || code >= http.StatusBadRequest }
