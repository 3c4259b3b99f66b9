// Package a2a serves the Agent2Agent protocol over JSON-RPC: A2A 1.0 for
// requests with an `A2A-Version: 1.0` header, 0.3 for requests without
// one (spec/a2a.md). It translates, never executes: a message becomes a
// runtime.Invocation started through the server.Backend, a task is one run
// (its record kept in the store's Docs next to the task index), an
// interrupt makes the task input-required, and a follow-up message on the
// task resumes the run with a runtime.ResumeRequest.
//
// Goroutines: each task with a run in flight has one pump goroutine that
// reads the run's events, owned by the Handler; Close waits for them.
// Streams read their own queues and never hold up a run.
package a2a

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	neturl "net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentc/agentc/internal/jsonrpc"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/server"
)

// Proto is the protocol label of A2A runs and metrics.
const Proto = "a2a"

// Options configure the adapter. The card fields come from the serve
// block's a2a block (OptionsFromProgram); zero values take the defaults.
type Options struct {
	// Path is the JSON-RPC endpoint's path (default "/a2a").
	Path string
	// Name, Description and Version describe the agent in its card
	// (defaults: the workflow's name and doc string, "1.0.0").
	Name, Description, Version string
	// URL is the public URL of the JSON-RPC endpoint in the card; "" derives
	// it from each card request (scheme, Host, Path).
	URL string
	// PublicURL is the server's public base URL (--public-url): the card's
	// url is PublicURL + Path. Used when URL is not set.
	PublicURL string
	// ListenAddr is the address the server listens on: without URL and
	// PublicURL, the card's url is http://ListenAddr + Path.
	ListenAddr string
	// TrustedProxies are the clients whose X-Forwarded-Host and
	// X-Forwarded-Proto are believed; anybody else's are ignored.
	TrustedProxies []netip.Prefix
	// Skills are the tags of the card's skill.
	Skills []string
	// InputModes and OutputModes are the card's default media types
	// (default text/plain and application/json).
	InputModes, OutputModes []string
	// Runnable is the graph or agent a new task runs ("": the Runner's
	// default, the serve block's run).
	Runnable string
	// Artifacts makes a completed task's artifacts (default
	// OutputArtifacts): the extension point for the artifact service.
	Artifacts ArtifactFunc
	// Logger receives internal errors (nil: the Backend's, else none).
	Logger *slog.Logger
	// Push enables push notifications to the webhooks clients configure
	// (nil: not supported, the card says so).
	Push *PushOptions
}

// Handler serves A2A JSON-RPC at Options.Path and the agent card through
// CardHandler. It is safe for concurrent use.
type Handler struct {
	b    *server.Backend
	opts Options
	log  *slog.Logger

	base context.Context // runs' context: canceled by Close when it stops waiting
	stop context.CancelFunc

	mu     sync.Mutex
	closed bool
	live   map[string]*liveTask // by task id
	wg     sync.WaitGroup       // live tasks

	pushes *pusher // nil without Options.Push
}

// New returns the A2A adapter over b. b's Runner, Docs, Sessions and NewID
// are required.
func New(b *server.Backend, opts Options) *Handler {
	if opts.Path == "" {
		opts.Path = "/a2a"
	}
	if b.Runner != nil {
		p := b.Runner.Program()
		if opts.Name == "" {
			opts.Name = p.Workflow
		}
		if opts.Description == "" {
			opts.Description = p.Doc
		}
	}
	if opts.Name == "" {
		opts.Name = "agent"
	}
	if opts.Description == "" {
		opts.Description = opts.Name
	}
	if opts.Version == "" {
		opts.Version = "1.0.0"
	}
	if len(opts.InputModes) == 0 {
		opts.InputModes = []string{"text/plain", "application/json"}
	}
	if len(opts.OutputModes) == 0 {
		opts.OutputModes = []string{"text/plain", "application/json"}
	}
	if opts.Artifacts == nil {
		opts.Artifacts = OutputArtifacts
	}
	log := opts.Logger
	if log == nil {
		log = b.Logger
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Push != nil && opts.Push.Allow == nil {
		p := *opts.Push
		p.Allow = func(*neturl.URL) error { return errors.New("no webhook host is allowed") }
		opts.Push = &p
	}
	h := &Handler{b: b, opts: opts, log: log, live: map[string]*liveTask{}}
	h.pushes = newPusher(opts.Push, log.Warn)
	h.base, h.stop = context.WithCancel(context.Background())
	b.OnAdopt(h.adopt)
	return h
}

// Mounts are the endpoint and the public agent card, for server.Config.
func (h *Handler) Mounts() []server.Mount {
	return []server.Mount{
		{Pattern: h.Path(), Protocol: Proto, Handler: h, Error: WriteError},
		{Pattern: CardPath, Protocol: Proto, Handler: h.CardHandler(), Public: true, Error: WriteError},
	}
}

// Path is the JSON-RPC endpoint's path.
func (h *Handler) Path() string { return h.opts.Path }

// Close stops accepting messages and waits for the tasks in flight to
// reach their end; when ctx ends first it cancels their runs (the tasks
// become canceled) and waits for that to be recorded. Call it before the
// store is closed.
func (h *Handler) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
		h.stop()
		h.pushes.close(ctx) // the last notifications go out while ctx lasts
		return nil
	case <-ctx.Done():
		h.stop()
		<-done
		h.pushes.close(ctx)
		return ctx.Err()
	}
}

func (h *Handler) now() time.Time {
	if h.b.Clock == nil {
		return time.Time{}
	}
	return h.b.Clock.Now().UTC()
}

// ServeHTTP answers one JSON-RPC request. The request must be
// authenticated (server.UserFrom).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v, verr := negotiate(r)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.reply(w, v, nullID, nil, &rpcError{Code: jsonrpc.InvalidRequest, Message: "Request payload validation error: use POST", status: http.StatusMethodNotAllowed})
		return
	}
	user := server.UserFrom(r.Context())
	if user == "" {
		h.reply(w, v, nullID, nil, &rpcError{Code: jsonrpc.InvalidRequest, Message: "the request is not authenticated", status: http.StatusUnauthorized})
		return
	}
	lim := h.b.Limits.WithDefaults()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, lim.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			h.reply(w, v, nullID, nil, &rpcError{Code: jsonrpc.InvalidRequest, Message: "Request payload validation error: body larger than the server's limit", status: http.StatusRequestEntityTooLarge})
			return
		}
		h.reply(w, v, nullID, nil, parseError())
		return
	}
	req, rerr := parseRequest(body)
	if rerr != nil {
		h.reply(w, v, req.ID, nil, rerr)
		return
	}
	if verr != nil {
		h.reply(w, v, req.ID, nil, verr)
		return
	}
	h.dispatch(w, r, v, user, req)
}

// WriteError is the server.ErrorFunc of the A2A endpoint: the errors the
// server answers itself (401, 403, 408, 413, 415, 503, 500 after a panic)
// as JSON-RPC responses with a null id (the body was not read) and the
// HTTP status kept.
func WriteError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	v, verr := negotiate(r)
	if verr != nil {
		v = V10
	}
	e := &rpcError{Code: jsonrpc.InvalidRequest, Message: message, reason: strings.ToUpper(code)}
	if status >= 500 {
		e.Code = jsonrpc.InternalError
	}
	writeJSON(w, status, rpcResponse{JSONRPC: jsonrpc.Version, ID: nullID, Error: e.withDetails(v)})
}

// methods maps each version's method names to operations.
var methods = map[Version]map[string]string{
	V10: {
		"SendMessage":                      "send",
		"SendStreamingMessage":             "stream",
		"GetTask":                          "get",
		"ListTasks":                        "list",
		"CancelTask":                       "cancel",
		"SubscribeToTask":                  "subscribe",
		"CreateTaskPushNotificationConfig": "push",
		"GetTaskPushNotificationConfig":    "push",
		"ListTaskPushNotificationConfigs":  "push",
		"DeleteTaskPushNotificationConfig": "push",
		"GetExtendedAgentCard":             "extendedCard",
	},
	V03: {
		"message/send":                        "send",
		"message/stream":                      "stream",
		"tasks/get":                           "get",
		"tasks/cancel":                        "cancel",
		"tasks/resubscribe":                   "subscribe",
		"tasks/pushNotificationConfig/set":    "push",
		"tasks/pushNotificationConfig/get":    "push",
		"tasks/pushNotificationConfig/list":   "push",
		"tasks/pushNotificationConfig/delete": "push",
		"agent/getAuthenticatedExtendedCard":  "extendedCard",
	},
}

func (h *Handler) dispatch(w http.ResponseWriter, r *http.Request, v Version, user string, req rpcRequest) {
	c := &call{h: h, w: w, r: r, v: v, user: user, id: req.ID, params: req.Params}
	switch methods[v][req.Method] {
	case "send":
		c.send(false)
	case "stream":
		c.send(true)
	case "get":
		c.finish(c.getTask())
	case "list":
		c.finish(c.listTasks())
	case "cancel":
		c.finish(c.cancelTask())
	case "subscribe":
		c.subscribe()
	case "push":
		c.finish(c.push(req.Method))
	case "extendedCard":
		if v == V10 {
			c.finish(nil, unsupported("the agent card declares no extended card"))
		} else {
			c.finish(nil, &rpcError{Code: CodeExtendedCardNotConfigured, Message: "Authenticated extended card is not configured"})
		}
	default:
		c.finish(nil, methodNotFound(v, req.Method))
	}
}

// reply writes one JSON-RPC response (error details by version) and
// counts errors.
func (h *Handler) reply(w http.ResponseWriter, v Version, id []byte, result any, e *rpcError) {
	if e == nil {
		writeJSON(w, http.StatusOK, rpcResponse{JSONRPC: jsonrpc.Version, ID: id, Result: result})
		return
	}
	h.b.Metrics.Error(Proto, codeLabel(e.Code))
	status := e.status
	if status == 0 {
		status = http.StatusOK
		if e.Code == jsonrpc.InternalError {
			status = http.StatusInternalServerError
		}
	}
	writeJSON(w, status, rpcResponse{JSONRPC: jsonrpc.Version, ID: id, Error: e.withDetails(v)})
}

func codeLabel(code int) string {
	return map[int]string{
		jsonrpc.ParseError: "parse_error", jsonrpc.InvalidRequest: "invalid_request", jsonrpc.MethodNotFound: "method_not_found",
		jsonrpc.InvalidParams: "invalid_params", jsonrpc.InternalError: "internal", CodeTaskNotFound: "task_not_found",
		CodeTaskNotCancelable: "task_not_cancelable", CodePushNotSupported: "push_not_supported",
		CodeUnsupportedOperation: "unsupported_operation", CodeContentTypeNotSupported: "content_type_not_supported",
		CodeExtendedCardNotConfigured: "extended_card_not_configured", CodeVersionNotSupported: "version_not_supported",
	}[code]
}

// startError maps a Backend.Start error to the protocol's.
func (h *Handler) startError(err error) *rpcError {
	switch {
	case errors.Is(err, server.ErrOverloaded):
		return &rpcError{Code: jsonrpc.InternalError, Message: "Server overloaded: too many concurrent runs; retry later", status: http.StatusServiceUnavailable}
	case errors.Is(err, server.ErrShuttingDown), errors.Is(err, runtime.ErrClosed):
		return &rpcError{Code: jsonrpc.InternalError, Message: "The server is shutting down", status: http.StatusServiceUnavailable}
	case errors.Is(err, runtime.ErrSessionBusy):
		return unsupported("the context has a task in progress; send the next message when it has finished")
	case errors.Is(err, runtime.ErrInvalidInvocation), errors.Is(err, runtime.ErrInvalidResume):
		return invalidParams("message.parts", err.Error())
	case errors.Is(err, runtime.ErrNotResumable):
		return unsupported(err.Error())
	}
	h.log.Error("a2a: start run", "err", err)
	return internalError()
}
