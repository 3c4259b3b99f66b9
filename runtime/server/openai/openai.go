// Package openai serves a workflow as an OpenAI-compatible chat model:
// GET {path}/models, GET {path}/models/{id} and POST {path}/chat/completions,
// non-streaming and streaming (spec/serve.md; the wire contract is
// research/protocols.md §3).
//
// One request is one invocation of the served runnable. The last message is
// the input. A request names its session with the X-Agentc-Session header,
// else with the body's `user` field (session "user:<user>"); without either
// it gets a fresh session, whose id the response's X-Agentc-Session header
// reports so that the client can continue it. In a session that already has
// runs the earlier messages are in the ledger and are not sent again; in a
// new session with earlier messages, they are folded into the input as a
// transcript when the runnable takes text. When the session's latest run is
// waiting on an interrupt, the last message answers it (as JSON when it
// parses, else as a string) and the run resumes; a re-sent request (its
// last message is the one that started the waiting run) is answered 409
// interrupt_pending, and it and invalid_resume list the pending
// interrupts in the error object (run, pending_interrupts).
//
// A request's function tools are the run's client tools (tools.go): when
// the model calls one, the run pauses and the response carries the
// tool_calls (finish_reason "tool_calls"); the next request's tool
// messages resume it.
//
// The sampling parameters (temperature, top_p, max_tokens or
// max_completion_tokens, stop, seed) are checked against OpenAI's ranges and
// apply to the run's model calls; response_format is checked against the
// runnable's output type (sampling.go).
package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// Protocol is the adapter's name in logs and metrics.
const Protocol = "openai"

// SessionHeader names the session of a request (and, in the response, the
// session the request ran in). RunHeader reports the run in the response.
const (
	SessionHeader = "X-Agentc-Session"
	RunHeader     = "X-Agentc-Run"
	StatusHeader  = "X-Agentc-Status"
)

// Options configure the adapter.
type Options struct {
	// Path is the mount prefix the routes live under (default "/v1").
	Path string
	// Model is the model id /models lists and requests must name (default:
	// the app name).
	Model string
}

// Handler serves the OpenAI-compatible routes for one Backend.
type Handler struct {
	b           *server.Backend
	sessions    *session.Service
	path        string
	model       string
	created     int64
	fingerprint string
	textInput   bool        // the default runnable's input takes text (history can be folded into it)
	output      *types.Type // the default runnable's output type; nil: none
	seq         atomic.Uint64
	mux         *http.ServeMux

	mu      sync.Mutex
	answers map[string]*answerInfo // runnable name → where its answer comes from
}

// answerInfo says which events carry a runnable's answer: the model deltas
// of the nodes writing its output field, and that field's state changes.
type answerInfo struct {
	nodes map[string]bool
	field string
}

// New returns the adapter over b. The handler serves the routes under
// opts.Path; mount it at opts.Path+"/".
func New(b *server.Backend, opts Options) *Handler {
	if opts.Path == "" {
		opts.Path = "/v1"
	}
	opts.Path = "/" + strings.Trim(opts.Path, "/")
	if opts.Model == "" {
		opts.Model = b.App()
	}
	h := &Handler{b: b, sessions: b.Sessions, path: opts.Path, model: opts.Model, answers: map[string]*answerInfo{}}
	if b.Clock != nil {
		h.created = b.Clock.Now().Unix()
	}
	if b.Runner != nil {
		p := b.Runner.Program()
		h.fingerprint = "fp_" + hex.EncodeToString(p.Hash[:6])
		if gi, err := b.Runner.SelectRunnable(""); err == nil {
			h.textInput = takesText(p, gi)
			h.output = outputType(p, gi)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+opts.Path+"/models", h.listModels)
	mux.HandleFunc("GET "+opts.Path+"/models/{id}", h.getModel)
	mux.HandleFunc("POST "+opts.Path+"/chat/completions", h.chat)
	mux.HandleFunc(opts.Path+"/", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case opts.Path + "/models", opts.Path + "/chat/completions":
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "method_not_allowed", r.Method+" is not allowed on "+r.URL.Path)
		default:
			writeError(w, http.StatusNotFound, "invalid_request_error", "", "not_found", "unknown endpoint "+r.Method+" "+r.URL.Path)
		}
	})
	h.mux = mux
	return h
}

// Path is the prefix the handler serves under.
func (h *Handler) Path() string { return h.path }

// Model is the model id the handler serves.
func (h *Handler) Model() string { return h.model }

// Mount is the adapter as the server mounts it.
func (h *Handler) Mount() server.Mount {
	return server.Mount{Pattern: h.path + "/", Protocol: Protocol, Handler: h, Error: WriteError}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// WriteError is the server.ErrorFunc of this protocol: the OpenAI error
// object with the status's usual type.
func WriteError(w http.ResponseWriter, _ *http.Request, status int, code, message string) {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusUnauthorized:
		typ, code = "authentication_error", "invalid_api_key"
	case status == http.StatusRequestEntityTooLarge:
		code = "request_too_large"
	case status >= 500:
		typ = "server_error"
	}
	writeError(w, status, typ, "", code, message)
}

// writeError writes {"error":{"message","type","param","code"}}; empty
// param and code are null.
func writeError(w http.ResponseWriter, status int, typ, param, code, message string) {
	writeErrorWith(w, status, typ, param, code, message, nil)
}

// writeErrorWith writes an error whose object carries more members: extra
// appends them (each preceded by a comma).
func writeErrorWith(w http.ResponseWriter, status int, typ, param, code, message string, extra func([]byte) []byte) {
	var b []byte
	b = append(b, `{"error":{"message":`...)
	b = appendString(b, message)
	b = append(b, `,"type":`...)
	b = appendString(b, typ)
	b = append(b, `,"param":`...)
	b = appendNullable(b, param)
	b = append(b, `,"code":`...)
	b = appendNullable(b, code)
	if extra != nil {
		b = extra(b)
	}
	b = append(b, "}}\n"...)
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	if status >= 500 || status == http.StatusConflict {
		// The official clients retry 409 and 5xx; a run that failed or a
		// busy session is not fixed by retrying at once.
		hd.Set("X-Should-Retry", "false")
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// appendString appends s as a JSON string, as encoding/json writes it.
func appendString(b []byte, s string) []byte { return types.AppendJSONString(b, s, true) }

func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

func (h *Handler) listModels(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(h.modelJSON([]byte(`{"object":"list","data":[`), "]}\n"))
}

func (h *Handler) getModel(w http.ResponseWriter, r *http.Request) {
	if id := r.PathValue("id"); id != h.model {
		h.fail(w, http.StatusNotFound, "invalid_request_error", "model", "model_not_found", fmt.Sprintf("The model '%s' does not exist; this server serves '%s'", id, h.model))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(h.modelJSON(nil, "\n"))
}

func (h *Handler) modelJSON(b []byte, tail string) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, h.model)
	b = append(b, `,"object":"model","created":`...)
	b = strconv.AppendInt(b, h.created, 10)
	b = append(b, `,"owned_by":"agentc"}`...)
	return append(b, tail...)
}

// fail writes an error response and counts it.
func (h *Handler) fail(w http.ResponseWriter, status int, typ, param, code, message string) {
	h.b.Metrics.Error(Protocol, code)
	writeError(w, status, typ, param, code, message)
}

// chatRequest is the part of a chat completion request the adapter reads;
// other parameters are accepted and ignored.
type chatRequest struct {
	Model         *string           `json:"model"`
	Messages      []chatMessage     `json:"messages"`
	Stream        bool              `json:"stream"`
	StreamOptions *streamOptions    `json:"stream_options"`
	N             *int              `json:"n"`
	Tools         []json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage   `json:"tool_choice"`
	User          string            `json:"user"`

	// Sampling parameters (sampling.go).
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Stop                json.RawMessage `json:"stop"`
	Seed                *int64          `json:"seed"`
	ResponseFormat      json.RawMessage `json:"response_format"`

	sampling    *runtime.Sampling  // the checked parameters; nil: none set
	clientTools []runtime.ToolSpec // the checked tools; nil: none (or tool_choice "none")

	// What Model and StreamOptions point to when decodeFast read them
	// (no allocation of their own).
	model string
	opts  streamOptions
	// msgs holds the messages of a short request (a system prompt and a
	// question): no slice of their own.
	msgs [2]chatMessage
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role       string  `json:"role"`
	Content    content `json:"content"`
	ToolCallID string  `json:"tool_call_id"`
}

type contentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

// badRequest is a 400 with the parameter it is about.
type badRequest struct{ param, code, msg string }

func (e *badRequest) Error() string { return e.msg }

func invalid(param, format string, args ...any) *badRequest {
	return &badRequest{param: param, code: "invalid_value", msg: fmt.Sprintf(format, args...)}
}

// parse decodes and checks a request body.
func parse(body []byte) (*chatRequest, *badRequest) {
	var req chatRequest
	if err := decode(body, &req); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, &badRequest{param: te.Field, code: "invalid_type", msg: fmt.Sprintf("Invalid type for '%s': expected %s, got %s", te.Field, jsonTypeName(te.Type.Kind().String()), te.Value)}
		}
		return nil, &badRequest{code: "invalid_json", msg: "We could not parse the JSON body of your request: " + err.Error()}
	}
	switch {
	case req.Model == nil || *req.Model == "":
		return nil, &badRequest{param: "model", code: "missing_required_parameter", msg: "Missing required parameter: 'model'"}
	case req.Messages == nil:
		return nil, &badRequest{param: "messages", code: "missing_required_parameter", msg: "Missing required parameter: 'messages'"}
	case len(req.Messages) == 0:
		return nil, invalid("messages", "Invalid 'messages': empty array; expected at least one message")
	case req.N != nil && *req.N != 1:
		return nil, &badRequest{param: "n", code: "unsupported_value", msg: "Only n = 1 is supported"}
	}
	var bad *badRequest
	if req.clientTools, bad = parseTools(req.Tools, req.ToolChoice); bad != nil {
		return nil, bad
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool", "function":
		case "":
			return nil, &badRequest{param: fmt.Sprintf("messages[%d].role", i), code: "missing_required_parameter", msg: fmt.Sprintf("Missing required parameter: 'messages[%d].role'", i)}
		default:
			return nil, invalid(fmt.Sprintf("messages[%d].role", i), "Invalid value for 'messages[%d].role': %q; supported: system, developer, user, assistant, tool", i, m.Role)
		}
		if _, err := m.Content.text(); err != nil {
			return nil, invalid(fmt.Sprintf("messages[%d].content", i), "Invalid 'messages[%d].content': %v", i, err)
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			p := fmt.Sprintf("messages[%d].tool_call_id", i)
			return nil, &badRequest{param: p, code: "missing_required_parameter", msg: fmt.Sprintf("Missing required parameter: '%s'", p)}
		}
	}
	if req.sampling, bad = req.checkSampling(); bad != nil {
		return nil, bad
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != "user" && last.Role != "tool" {
		p := fmt.Sprintf("messages[%d].role", len(req.Messages)-1)
		if last.Role == "function" {
			return nil, &badRequest{param: p, code: "unsupported_value", msg: "Function messages are not supported; send tool results as tool messages"}
		}
		return nil, invalid(p, "The last message must be a user message (it is the input) or tool results, not %q", last.Role)
	}
	return &req, nil
}

func jsonTypeName(goKind string) string {
	switch goKind {
	case "bool":
		return "a boolean"
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return "a number"
}

// messageContent is a message's text and its images: image_url parts, a
// data: URL (base64) as the image's bytes, an http(s) URL as a reference
// the server does not fetch (spec/serve.md, "Images").
func messageContent(raw json.RawMessage) (string, []runtime.InputFile, error) {
	s := bytes.TrimSpace(raw)
	if len(s) == 0 || string(s) == "null" {
		return "", nil, nil
	}
	if s[0] == '"' {
		var out string
		if err := json.Unmarshal(raw, &out); err != nil {
			return "", nil, err
		}
		return out, nil, nil
	}
	if s[0] != '[' {
		return "", nil, errors.New("expected a string or an array of content parts")
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, errors.New("expected a string or an array of content parts")
	}
	var b strings.Builder
	var files []runtime.InputFile
	for i, p := range parts {
		switch p.Type {
		case "text":
			b.WriteString(p.Text)
		case "image_url":
			if p.ImageURL == nil || p.ImageURL.URL == "" {
				return "", nil, fmt.Errorf("part %d: an image_url part needs image_url.url", i)
			}
			f, err := imageFile(p.ImageURL.URL)
			if err != nil {
				return "", nil, fmt.Errorf("part %d: %v", i, err)
			}
			files = append(files, f)
		default:
			return "", nil, fmt.Errorf("part %d has type %q; only text and image_url parts are supported", i, p.Type)
		}
	}
	if len(files) > runtime.MaxInputFiles {
		return "", nil, fmt.Errorf("%d images, at most %d", len(files), runtime.MaxInputFiles)
	}
	return b.String(), files, nil
}

// imageFile is an image_url's URL as an input file: data:<type>;base64,…
// decoded, or an http(s) reference.
func imageFile(url string) (runtime.InputFile, error) {
	if strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://") {
		return runtime.InputFile{URL: url}, nil
	}
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return runtime.InputFile{}, errors.New("an image URL is an http(s) URL or a data: URL")
	}
	meta, data, ok := strings.Cut(rest, ",")
	mt, isBase64 := strings.CutSuffix(meta, ";base64")
	if !ok || !isBase64 || !strings.HasPrefix(mt, "image/") || strings.ContainsAny(mt, ";, ") {
		return runtime.InputFile{}, errors.New("a data: URL of an image is data:image/<type>;base64,<data>")
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return runtime.InputFile{}, errors.New("the data: URL's data is not base64")
	}
	return runtime.InputFile{MediaType: mt, Data: b}, nil
}

// validSession reports whether s can name a session.
func validSession(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// readAll is io.ReadAll into b (a pooled buffer).
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // room to read into
		}
	}
}

func (h *Handler) newID(prefix string) string {
	if h.b.NewID != nil {
		return h.b.NewID(prefix)
	}
	return prefix + strconv.FormatUint(h.seq.Add(1), 10)
}

func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	buf := getBuf()
	body, err := readAll(r.Body, *buf)
	defer putBuf(buf, body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			h.fail(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "", "request_too_large", fmt.Sprintf("The request body is larger than %d bytes", mbe.Limit))
			return
		}
		h.fail(w, http.StatusBadRequest, "invalid_request_error", "", "unreadable_body", "could not read the request body: "+err.Error())
		return
	}
	req, bad := parse(body)
	if bad != nil {
		h.fail(w, http.StatusBadRequest, "invalid_request_error", bad.param, bad.code, bad.msg)
		return
	}
	if *req.Model != h.model {
		h.fail(w, http.StatusNotFound, "invalid_request_error", "model", "model_not_found",
			fmt.Sprintf("The model '%s' does not exist; this server serves '%s'", *req.Model, h.model))
		return
	}
	if bad := checkResponseFormat(req.ResponseFormat, h.output); bad != nil {
		h.fail(w, http.StatusBadRequest, "invalid_request_error", bad.param, bad.code, bad.msg)
		return
	}
	if bad := h.checkToolNames(req.clientTools); bad != nil {
		h.fail(w, http.StatusBadRequest, "invalid_request_error", bad.param, bad.code, bad.msg)
		return
	}
	user := server.UserFrom(r.Context())
	if user == "" {
		h.fail(w, http.StatusUnauthorized, "authentication_error", "", "invalid_api_key", "the request is not authenticated")
		return
	}
	id := h.newID("chatcmpl-")
	sess, continued := r.Header.Get(SessionHeader), true
	switch {
	case sess != "":
		if !validSession(sess) {
			h.fail(w, http.StatusBadRequest, "invalid_request_error", "", "invalid_session", SessionHeader+" must be 1 to 200 printable characters")
			return
		}
	case req.User != "":
		sess = "user:" + req.User
		if !validSession(sess) {
			h.fail(w, http.StatusBadRequest, "invalid_request_error", "user", "invalid_value", "'user' must be 1 to 195 printable characters")
			return
		}
	default:
		sess, continued = id, false
		// Tool results without a session: the session of the run that
		// handed the calls out.
		if results, first := toolResults(req.Messages); len(results) > 0 {
			found, ok, err := h.sessionOfToolCall(r.Context(), user, results[0].ToolCallID)
			if err != nil {
				h.logger().Error("openai: tool call record", "err", err)
				h.fail(w, http.StatusInternalServerError, "server_error", "", "internal", "could not read the session")
				return
			}
			if !ok {
				h.fail(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages[%d].tool_call_id", first), "invalid_value",
					fmt.Sprintf("Invalid 'tool_call_id': no run is waiting for the result of tool call %q", results[0].ToolCallID))
				return
			}
			sess, continued = found, true
		}
	}
	// Idempotency-Key: reserve the key before anything starts, so a
	// re-sent request finds this one's run and never starts a second.
	idem := r.Header.Get(IdempotencyHeader)
	var rec idemRecord
	release := func() {}
	if idem != "" {
		if !validIdemKey(idem) {
			h.fail(w, http.StatusBadRequest, "invalid_request_error", "", "invalid_idempotency_key", IdempotencyHeader+" must be 1 to 255 printable ASCII characters")
			return
		}
		rec = idemRecord{V: 1, Hash: bodyHash(body), Session: sess, ID: id, Created: h.now(), Stream: req.Stream}
		prev, reserved, err := h.reserve(r.Context(), user, idem, rec)
		if err != nil {
			h.logger().Error("openai: idempotency key", "err", err)
			h.fail(w, http.StatusInternalServerError, "server_error", "", "internal", "could not record the Idempotency-Key")
			return
		}
		if !reserved {
			if prev.Hash != rec.Hash {
				h.fail(w, http.StatusUnprocessableEntity, "invalid_request_error", "", "idempotency_key_reused",
					"This Idempotency-Key was used with a different request body; use a new key for a new request")
				return
			}
			h.rejoin(w, r, user, prev, req)
			return
		}
		bg := context.WithoutCancel(r.Context())
		release = func() { h.settle(bg, user, idem, rec, "") }
	}
	inv, pending, err := h.invocation(r.Context(), user, sess, continued, req)
	if err != nil {
		release()
		if pe, ok := err.(*pendingError); ok {
			h.b.Metrics.Error(Protocol, "interrupt_pending")
			w.Header().Set(SessionHeader, sess)
			w.Header().Set(RunHeader, pe.run)
			writeErrorWith(w, http.StatusConflict, "invalid_request_error", "messages", "interrupt_pending", pe.Error(), pe.appendMembers)
			return
		}
		if bad, ok := err.(*badRequest); ok {
			h.fail(w, http.StatusBadRequest, "invalid_request_error", bad.param, bad.code, bad.msg)
			return
		}
		h.logger().Error("openai: read session", "session", sess, "err", err)
		h.fail(w, http.StatusInternalServerError, "server_error", "", "internal", "could not read the session")
		return
	}
	inv.ID = id
	inv.Sampling = req.sampling
	inv.ClientTools = req.clientTools
	// The request's context bounds the run. A stream also stops its run
	// when its client is too slow (stream's cancel); a non-streaming
	// response reads the run to its end before it returns, so it needs no
	// context of its own.
	ctx, cancel := r.Context(), context.CancelFunc(func() {})
	if req.Stream {
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	run, err := h.b.Start(ctx, Protocol, inv)
	if err != nil {
		release()
		if pending != nil && errors.Is(err, runtime.ErrInvalidResume) {
			// The last message does not answer the interrupts: say which
			// ones wait, machine-readably, as for a re-sent request.
			h.b.Metrics.Error(Protocol, "invalid_resume")
			w.Header().Set(SessionHeader, sess)
			w.Header().Set(RunHeader, pending.run)
			writeErrorWith(w, http.StatusBadRequest, "invalid_request_error", "messages", "invalid_resume",
				"The session is waiting for an answer to an interrupt and the last message does not answer it: "+err.Error(), pending.appendMembers)
			return
		}
		h.startError(w, err)
		return
	}
	if idem != "" {
		h.settle(context.WithoutCancel(r.Context()), user, idem, rec, run.ID)
	}
	setHeaders(w.Header(), SessionHeader, sess, RunHeader, run.ID, "X-Request-Id", id)
	c := &completion{h: h, id: id, created: h.now(), user: user, session: sess}
	if req.Stream {
		c.includeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		c.stream(ctx, cancel, w, r, run)
		return
	}
	c.collect(run)
	c.respond(r.Context(), w)
}

func (h *Handler) logger() *slog.Logger {
	if h.b.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.b.Logger
}

func (h *Handler) now() int64 {
	if h.b.Clock == nil {
		return 0
	}
	return h.b.Clock.Now().Unix()
}

// invocation builds the run request: a resume when the session's latest
// run waits on interrupts, else a new run whose input is the last message
// (with the earlier ones folded in when the session has no history).
//
// When the latest run waits, pending describes it. A request whose last
// message is the one that started that run is a re-sent request (its
// client never got the pause): it is answered with a *pendingError, which
// re-delivers the interrupts, instead of taking the message as the answer.
func (h *Handler) invocation(ctx context.Context, user, sess string, continued bool, req *chatRequest) (runtime.Invocation, *pendingError, error) {
	inv := runtime.Invocation{User: user, Session: sess}
	last := req.Messages[len(req.Messages)-1]
	text, files, _ := last.Content.get()
	if last.Role == "user" {
		inv.Files = files
	}
	history := false
	if continued {
		key := store.SessionKey{App: h.b.App(), User: user, Session: sess}
		latest, ok, err := h.sessions.LastRun(ctx, key)
		if err != nil {
			return inv, nil, err
		}
		history = ok
		if history && waiting(latest.Status) {
			evs, err := h.sessions.RunEvents(ctx, latest, session.EventFilter{Kinds: []runtime.EventKind{runtime.EventInput, runtime.EventRunFinished}})
			if err != nil {
				return inv, nil, err
			}
			var fin *runtime.Event
			started := ""
			for _, e := range evs {
				switch {
				case e.Kind == runtime.EventRunFinished:
					fin = e
				case e.Kind == runtime.EventInput && e.Resume == nil && started == "":
					started = e.Text
				}
			}
			if fin != nil && len(fin.Decisions) > 0 {
				// A side effect whose outcome is unknown: the message
				// decides it (runtime.DecisionAnswers, as every front end).
				pending := &pendingError{run: latest.ID, decisions: fin.Decisions}
				if started != "" && text == started {
					return inv, nil, pending
				}
				value := json.RawMessage(text)
				if !json.Valid(value) {
					value = appendString(nil, text)
				}
				ds, err := runtime.DecisionAnswers(fin.Decisions, value)
				if err != nil {
					return inv, nil, &badRequest{param: "messages", code: "invalid_resume", msg: "The session's run " + latest.ID + " needs a decision: " + err.Error()}
				}
				inv.Resume = &runtime.ResumeRequest{Run: latest.ID, Decisions: ds}
				return inv, pending, nil
			}
			if fin != nil && len(fin.Interrupts) > 0 {
				pending := &pendingError{run: latest.ID, interrupts: fin.Interrupts}
				if calls := pendingCalls(fin.Interrupts); len(calls) > 0 {
					// Paused on client tool calls: the tool messages answer.
					if last.Role != "tool" {
						if started != "" && text == started {
							return inv, nil, pending
						}
						return inv, nil, &badRequest{param: "messages", code: "invalid_value",
							msg: "The session's run " + latest.ID + " waits for the results of tool calls " + callIDs(calls) + "; send them as tool messages"}
					}
					vals, err := toolResume(req, pending)
					if err != nil {
						return inv, nil, err
					}
					inv.Resume = &runtime.ResumeRequest{Run: latest.ID, Values: vals}
					return inv, pending, nil
				}
				if last.Role == "tool" {
					return inv, nil, invalid(fmt.Sprintf("messages[%d].role", len(req.Messages)-1), "The session's run %s waits for an answer to an interrupt, not for tool results", latest.ID)
				}
				if started != "" && text == started {
					return inv, nil, pending
				}
				value := json.RawMessage(text)
				if !json.Valid(value) {
					value = appendString(nil, text)
				}
				vals := pendingAnswers(fin.Interrupts, value)
				inv.Resume = &runtime.ResumeRequest{Run: latest.ID, Values: vals}
				return inv, pending, nil
			}
		}
	}
	if last.Role == "tool" {
		results, first := toolResults(req.Messages)
		return inv, nil, invalid(fmt.Sprintf("messages[%d].tool_call_id", first), "Invalid 'tool_call_id': no run of the session is waiting for the result of tool call %q", results[0].ToolCallID)
	}
	if !history && len(req.Messages) > 1 && h.textInput {
		var b strings.Builder
		b.WriteString("Conversation so far:\n")
		for _, m := range req.Messages[:len(req.Messages)-1] {
			t, _ := m.Content.text()
			b.WriteString(m.Role)
			b.WriteString(": ")
			b.WriteString(t)
			b.WriteByte('\n')
		}
		b.WriteString("\nCurrent message:\n")
		b.WriteString(text)
		text = b.String()
	}
	if text == "" && len(inv.Files) == 0 {
		return inv, nil, invalid(fmt.Sprintf("messages[%d].content", len(req.Messages)-1), "The last message has no text")
	}
	inv.Input = text
	return inv, nil, nil
}

// pendingAnswers maps the answer of a request onto the pending
// interrupts: an object keyed by pending interrupt ids (or their paths
// relative to the runnable, "each/0/gate/check") answers those
// interrupts, each with its own value, and leaves the others waiting; any
// other value answers every pending interrupt.
func pendingAnswers(its []runtime.InterruptInfo, value json.RawMessage) map[string]json.RawMessage {
	var byID map[string]json.RawMessage
	if len(its) > 1 && json.Unmarshal(value, &byID) == nil && len(byID) > 0 {
		keyed := true
		for k := range byID {
			keyed = keyed && slices.ContainsFunc(its, func(in runtime.InterruptInfo) bool { return in.ID == k || in.Node == k })
		}
		if keyed {
			return byID
		}
	}
	vals := map[string]json.RawMessage{}
	for _, in := range its {
		vals[in.ID] = value
	}
	return vals
}

// waiting reports whether a run of status st waits for an answer: an
// interrupt's, or a decision's.
func waiting(st store.RunStatus) bool {
	return st == store.RunInterrupted || st == store.RunStatus(runtime.StatusNeedsDecision)
}

// pendingError is a session whose latest run waits on interrupts, as an
// error body lists them: "run" and "pending_interrupts" [{id, node,
// prompt, schema}] next to the usual members (spec/serve.md, "OpenAI";
// answer with a message whose content is the value).
type pendingError struct {
	run        string
	interrupts []runtime.InterruptInfo
	decisions  []runtime.DecisionInfo // a needs_decision run's, instead of interrupts
}

func (e *pendingError) Error() string {
	if len(e.decisions) > 0 {
		return fmt.Sprintf(`The session's run %s needs a decision: %s; send {"decision": "done"|"retry"|"fail", "result"?} as the last message`,
			e.run, runtime.DecisionPrompts(e.decisions))
	}
	ids := make([]string, len(e.interrupts))
	for i, in := range e.interrupts {
		ids[i] = in.ID
	}
	return fmt.Sprintf("The session's run %s is waiting for an answer to %s; send the answer as the last message (JSON when it parses, else a string)",
		e.run, strings.Join(ids, ", "))
}

func (e *pendingError) appendMembers(b []byte) []byte {
	b = append(b, `,"run":`...)
	b = appendString(b, e.run)
	b = append(b, `,"pending_interrupts":`...)
	list := e.interrupts
	if list == nil {
		list = []runtime.InterruptInfo{}
	}
	j, err := json.Marshal(list)
	if err != nil {
		j = []byte("[]")
	}
	b = append(b, j...)
	if len(e.decisions) > 0 {
		if j, err := json.Marshal(e.decisions); err == nil {
			b = append(b, `,"pending_decisions":`...)
			b = append(b, j...)
		}
	}
	return b
}

// startError maps a Backend.Start error to a response.
func (h *Handler) startError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, server.ErrOverloaded):
		w.Header().Set("Retry-After", "1")
		h.fail(w, http.StatusTooManyRequests, "rate_limit_error", "", "rate_limit_exceeded", "The server is running its maximum number of concurrent runs; retry later")
	case errors.Is(err, server.ErrShuttingDown), errors.Is(err, runtime.ErrClosed):
		h.fail(w, http.StatusServiceUnavailable, "server_error", "", "shutting_down", "The server is shutting down")
	case errors.Is(err, runtime.ErrSessionBusy):
		h.fail(w, http.StatusConflict, "invalid_request_error", "", "session_busy", "The session already has a run in progress; retry when it has finished")
	case errors.Is(err, runtime.ErrInvalidResume):
		h.fail(w, http.StatusBadRequest, "invalid_request_error", "messages", "invalid_resume",
			"The session is waiting for an answer to an interrupt and the last message does not answer it: "+err.Error())
	case errors.Is(err, runtime.ErrInvalidInvocation), errors.Is(err, runtime.ErrNotResumable):
		h.fail(w, http.StatusBadRequest, "invalid_request_error", "messages", "invalid_input", err.Error())
	case errors.Is(err, context.Canceled):
		h.fail(w, 499, "invalid_request_error", "", "canceled", "The request was canceled")
	default:
		h.logger().Error("openai: start run", "err", err)
		h.fail(w, http.StatusInternalServerError, "server_error", "", "internal", "could not start the run")
	}
}

// answerFor returns where runnable's answer comes from (cached).
func (h *Handler) answerFor(runnable string) *answerInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a, ok := h.answers[runnable]; ok {
		return a
	}
	a := &answerInfo{nodes: map[string]bool{}}
	if gi, err := h.b.Runner.SelectRunnable(runnable); err == nil && runnable != "" {
		p := h.b.Runner.Program()
		if gi >= 0 && gi < len(p.Graphs) && p.Graphs[gi].Output != bytecode.None {
			g := &p.Graphs[gi]
			a.field = p.States[g.State].Fields[g.Output].Name
			for _, n := range g.Nodes {
				if n.Into == g.Output && (n.Kind == bytecode.NodeLLM || n.Kind == bytecode.NodeAgent) {
					a.nodes[n.Name] = true
				}
			}
		}
	}
	h.answers[runnable] = a
	return a
}

// takesText reports whether graph gi's input field is a string (or json):
// text can be written to it as it is.
func takesText(p *bytecode.Program, gi int) bool {
	g := &p.Graphs[gi]
	if g.Input == bytecode.None {
		return false
	}
	t := p.Types[p.States[g.State].Fields[g.Input].Type]
	if t.Kind() == types.KindOptional {
		t = t.Elem()
	}
	return t.Kind() == types.KindString || t.Kind() == types.KindJSON
}

// outputType is graph gi's output field's type; nil when it has none.
func outputType(p *bytecode.Program, gi int) *types.Type {
	g := &p.Graphs[gi]
	if g.Output == bytecode.None {
		return nil
	}
	return p.Types[p.States[g.State].Fields[g.Output].Type]
}
