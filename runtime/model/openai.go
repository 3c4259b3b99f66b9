package model

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentc/agentc/runtime"
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

// openAIModel is a runtime.Model speaking the chat-completions protocol.
type openAIModel struct {
	cfg    OpenAIConfig
	client openai.ChatCompletionService
}

// NewOpenAI returns a model calling an OpenAI-compatible chat-completions
// endpoint with streaming. The client library's own retries are disabled
// and its environment defaults (OPENAI_*) are not read: cfg is the whole
// configuration.
func NewOpenAI(cfg OpenAIConfig) (runtime.Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai model: no model id")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
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
		cfg.Sleep = sleep
	}
	// NewChatCompletionService, unlike openai.NewClient, reads no
	// environment variables.
	client := openai.NewChatCompletionService(
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0),
	)
	return &openAIModel{cfg: cfg, client: client}, nil
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
	params, err := m.params(req)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return nil, ctxError(ctx, m.what())
		}
		resp, f := m.attempt(ctx, params, req.Messages, onDelta)
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

// params builds the request body.
func (m *openAIModel) params(req *runtime.ModelRequest) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(m.cfg.Model),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	for i, msg := range req.Messages {
		mp, err := messageParam(msg)
		if err != nil {
			return p, runtime.Errorf(vm.KindModelError, "%s: message %d: %v", m.what(), i, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	for _, t := range req.Tools {
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(t.InputSchema)}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if req.ResponseSchema != nil {
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
					Name:   "output",
					Strict: openai.Bool(true),
					Schema: req.ResponseSchema,
				},
			},
		}
	}
	switch {
	case req.Temperature != nil:
		p.Temperature = openai.Float(*req.Temperature)
	case m.cfg.Temperature != nil:
		p.Temperature = openai.Float(*m.cfg.Temperature)
	}
	switch {
	case req.MaxTokens > 0:
		p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	case m.cfg.MaxTokens > 0:
		p.MaxCompletionTokens = openai.Int(int64(m.cfg.MaxTokens))
	}
	return p, nil
}

// messageParam converts one message to the wire form.
func messageParam(msg runtime.Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch msg.Role {
	case runtime.RoleSystem:
		return openai.SystemMessage(msg.Content), nil
	case runtime.RoleUser:
		u := openai.ChatCompletionUserMessageParam{Content: openai.ChatCompletionUserMessageParamContentUnion{OfString: openai.String(msg.Content)}}
		if msg.Name != "" {
			u.Name = openai.String(msg.Name)
		}
		return openai.ChatCompletionMessageParamUnion{OfUser: &u}, nil
	case runtime.RoleAssistant:
		a := openai.ChatCompletionAssistantMessageParam{}
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			a.Content.OfString = openai.String(msg.Content)
		}
		if msg.Name != "" {
			a.Name = openai.String(msg.Name)
		}
		for _, c := range msg.ToolCalls {
			args := string(c.Args)
			if args == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       c.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args},
				},
			})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	case runtime.RoleTool:
		return openai.ToolMessage(msg.Content, msg.ToolCallID), nil
	}
	return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", msg.Role)
}

// attempt makes one streaming request.
func (m *openAIModel) attempt(ctx context.Context, params openai.ChatCompletionNewParams, msgs []runtime.Message, onDelta func(string)) (*runtime.ModelResponse, *failure) {
	var httpResp *http.Response
	stream := m.client.NewStreaming(ctx, params, option.WithResponseInto(&httpResp))
	defer stream.Close()
	acc := newStreamAcc(m.cfg.Model)
	for stream.Next() {
		acc.add(stream.Current(), onDelta)
	}
	if err := stream.Err(); err != nil {
		f := m.classify(err, httpResp)
		f.streamed = acc.streamed
		return nil, f
	}
	resp, f := acc.finish(msgs)
	if f != nil {
		f.streamed = acc.streamed
	}
	return resp, f
}
