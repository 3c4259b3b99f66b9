// Package mcp serves a workflow as a Model Context Protocol server
// (spec/serve.md, "MCP"): streamable HTTP at {path} (default /mcp) behind
// the server's authentication, limits and metrics, or stdio for a desktop
// client (ServeStdio). It is built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// Each served runnable is one tool: its name is the runnable's, its
// description the runnable's doc string, its input schema the input type's
// JSON Schema (a record or map type is the arguments object itself; any
// other type is the argument "input"). A call is one run in a fresh
// session. The result is the run's output as text (a string as it is,
// other types as JSON) and as structured content {"status", "run",
// "output"}; progress notifications follow the run's node events when the
// client sent a progress token.
//
// An interrupt that every pending interrupt's schema lets a form ask for
// (flat records of primitives, or a primitive) becomes an elicitation when
// the client declared the elicitation capability: the SDK sends
// elicitation/create (or, to a client of protocol 2026-07-28, returns the
// input requests), and the answers resume the run in the same tools/call.
// Otherwise the result (isError false) says that the run waits, for what,
// and how to answer: the tool agentc_resume {"run", "value" | "values"}.
//
// Tenancy: the user of an HTTP call is the server's authenticated user
// (server.UserFrom, handed to the SDK as its token info, so that an MCP
// session is bound to the user that opened it); a stdio server has one
// user. Every run is started and looked up as that user.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/internal/jsonrpc"
	"github.com/agentc/agentc/runtime/server"
)

// Protocol is the adapter's name in logs and metrics.
const Protocol = "mcp"

// ResumeTool is the tool that answers a waiting run's interrupts. Its name
// cannot be a runnable's: New refuses a program with a runnable of that
// name.
const ResumeTool = "agentc_resume"

// SessionIdle is how long an MCP session may go without a request before
// the server forgets it (the client then initializes a new one).
const SessionIdle = 30 * time.Minute

// Options configure the adapter.
type Options struct {
	// Path is the URL path of the streamable HTTP endpoint (default "/mcp").
	Path string
	// Version is the server version reported to clients (default "dev").
	Version string
}

// Handler serves one Backend's runnables as MCP tools.
type Handler struct {
	b       *server.Backend
	path    string
	version string
	tools   []*tool
	resume  bool // some served runnable can interrupt: ResumeTool is listed
	http    http.Handler
	seq     atomic.Uint64

	mu       sync.Mutex
	requests map[string]context.Context // callHeader value → its POST's context
}

// tool is one served runnable.
type tool struct {
	name  string
	graph int
	in    inputForm
	def   *sdk.Tool
}

// inputForm says how a tool's arguments become the run's input text.
type inputForm uint8

const (
	inputNone   inputForm = iota // the runnable takes no input
	inputObject                  // the arguments object is the input (record or map)
	inputText                    // the argument "input" is a string written as it is
	inputJSON                    // the argument "input" is any JSON value of the type
)

// New builds the adapter over b: one tool per served runnable (the serve
// block's run, else every runnable of the program).
func New(b *server.Backend, opts Options) (*Handler, error) {
	if b == nil || b.Runner == nil {
		return nil, errors.New("mcp: a Backend with a Runner is required")
	}
	if opts.Path == "" {
		opts.Path = "/mcp"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	h := &Handler{b: b, path: "/" + strings.Trim(opts.Path, "/"), version: opts.Version,
		requests: map[string]context.Context{}}
	p := b.Runner.Program()
	names := p.Runnables()
	if p.Serve != nil && p.Serve.Run.Kind != 0 {
		if gi := p.RunGraph(p.Serve.Run); gi >= 0 {
			names = []string{runnableName(p, p.Serve.Run, gi)}
		}
	}
	for _, name := range names {
		if name == ResumeTool {
			return nil, fmt.Errorf("mcp: runnable %q has the name of the resume tool; rename it", name)
		}
		gi, ok := p.Runnable(name)
		if !ok {
			continue
		}
		t := newTool(p, name, gi)
		h.tools = append(h.tools, t)
		h.resume = h.resume || canInterrupt(p, gi, map[int]bool{})
	}
	if len(h.tools) == 0 {
		return nil, errors.New("mcp: the program has no graph or agent to serve")
	}
	srv := h.newServer("")
	h.http = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		Logger:              b.Logger,
		SessionTimeout:      SessionIdle,
		MaxRequestBodyBytes: b.Limits.WithDefaults().MaxBodyBytes,
		// The server's own policy applies, as to every protocol: bearer
		// tokens, or in open mode loopback Host and Origin checks. The
		// SDK's check would refuse a reverse proxy on the same host
		// (a loopback peer sending the public Host).
		DisableLocalhostProtection: true,
	})
	return h, nil
}

// runnableName is the name a run of the serve block's target names: the
// agent's, else the graph's.
func runnableName(p *bytecode.Program, r bytecode.Ref, gi int) string {
	if r.Kind == bytecode.RefAgent && int(r.Index) < len(p.Agents) {
		return p.Agents[r.Index].Name
	}
	return p.Graphs[gi].Name
}

// canInterrupt reports whether graph gi, or a graph it calls (a sub-graph,
// a composed agent's graph, a map node's body), has an interrupt node.
func canInterrupt(p *bytecode.Program, gi int, seen map[int]bool) bool {
	if gi < 0 || gi >= len(p.Graphs) || seen[gi] {
		return false
	}
	seen[gi] = true
	for _, n := range p.Graphs[gi].Nodes {
		if n.Kind == bytecode.NodeInterrupt {
			return true
		}
		callee := -1
		switch {
		case n.Call.Kind == bytecode.CallGraph:
			callee = int(n.Call.Callee)
		case n.Call.Kind == bytecode.CallAgent && int(n.Call.Callee) < len(p.Agents):
			callee = int(p.Agents[n.Call.Callee].Graph)
		}
		if canInterrupt(p, callee, seen) {
			return true
		}
	}
	return false
}

// newTool describes runnable name (graph gi) as an MCP tool.
func newTool(p *bytecode.Program, name string, gi int) *tool {
	g := &p.Graphs[gi]
	t := &tool{name: name, graph: gi}
	in := map[string]any{"type": "object", "properties": map[string]any{}}
	if g.Input != bytecode.None {
		f := p.States[g.State].Fields[g.Input]
		ft := p.Types[f.Type]
		base := ft
		if base.Kind() == types.KindOptional {
			base = base.Elem()
		}
		s := types.JSONSchema(ft)
		switch {
		case base.Kind() == types.KindString || base.Kind() == types.KindJSON || base.Kind() == types.KindMessages ||
			base.Kind() == types.KindList && types.Identical(base.Elem(), types.MessageType):
			t.in = inputText
			in = wrapped("input", map[string]any{"type": "string", "description": "the " + f.Name}, ft.Kind() != types.KindOptional)
		case s["type"] == "object":
			t.in = inputObject
			in = s
		default:
			t.in = inputJSON
			in = wrapped("input", s, !ft.Nullable())
		}
	}
	out := map[string]any{
		"status": map[string]any{"type": "string", "enum": []any{"completed", "interrupted", "needs_decision", "failed", "canceled"}},
		"run":    map[string]any{"type": "string"},
		"interrupts": map[string]any{"type": "array", "items": map[string]any{"type": "object",
			"properties": map[string]any{"id": map[string]any{"type": "string"}, "node": map[string]any{"type": "string"},
				"prompt": map[string]any{"type": "string"}, "schema": map[string]any{}}}},
	}
	if g.Output != bytecode.None {
		out["output"] = types.JSONSchema(p.Types[p.States[g.State].Fields[g.Output].Type])
	}
	doc := g.Doc
	for i := range p.Agents {
		if p.Agents[i].Name == name && p.Agents[i].Doc != "" {
			doc = p.Agents[i].Doc
		}
	}
	if doc == "" {
		doc = "Runs " + name + "."
	}
	t.def = &sdk.Tool{Name: name, Description: doc, InputSchema: in,
		OutputSchema: map[string]any{"type": "object", "properties": out, "required": []any{"status", "run"}}}
	return t
}

// wrapped is the object schema with one property.
func wrapped(name string, s map[string]any, required bool) map[string]any {
	out := map[string]any{"type": "object", "properties": map[string]any{name: s}, "additionalProperties": false}
	if required {
		out["required"] = []any{name}
	}
	return out
}

// resumeDef is ResumeTool's definition.
var resumeDef = &sdk.Tool{
	Name: ResumeTool,
	Description: "Answers the interrupts of a run that is waiting for input and continues it. " +
		"Give the run id and either value (answers every pending interrupt) or values (by interrupt id); " +
		"each must match the interrupt's JSON Schema. The result is the continued run's, as from the tool that started it.",
	InputSchema: map[string]any{"type": "object", "additionalProperties": false, "required": []any{"run"},
		"properties": map[string]any{
			"run":    map[string]any{"type": "string", "description": "the waiting run's id (run_...)"},
			"value":  map[string]any{"description": "the answer to every pending interrupt"},
			"values": map[string]any{"type": "object", "description": "answers by interrupt id", "additionalProperties": map[string]any{}},
		}},
	OutputSchema: map[string]any{"type": "object", "required": []any{"status", "run"}, "properties": map[string]any{
		"status": map[string]any{"type": "string"}, "run": map[string]any{"type": "string"},
		"output": map[string]any{}, "interrupts": map[string]any{"type": "array"}}},
}

// newServer builds an SDK server with the tools. user is the stdio
// server's one user; "" (HTTP) takes each call's user from its token info.
func (h *Handler) newServer(user string) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "agentc-" + h.b.App(), Title: h.b.App(), Version: h.version}, &sdk.ServerOptions{
		Logger:       h.b.Logger,
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
	for _, t := range h.tools {
		s.AddTool(t.def, h.callTool(t, user))
	}
	if h.resume {
		s.AddTool(resumeDef, h.callResume(user))
	}
	return s
}

// Path is the endpoint's URL path.
func (h *Handler) Path() string { return h.path }

// Tools lists the served tools' names, in order.
func (h *Handler) Tools() []string {
	out := make([]string, 0, len(h.tools)+1)
	for _, t := range h.tools {
		out = append(out, t.name)
	}
	if h.resume {
		out = append(out, ResumeTool)
	}
	return out
}

// Mount is the adapter as the server mounts it.
func (h *Handler) Mount() server.Mount {
	return server.Mount{Pattern: h.path, Protocol: Protocol, Handler: h, Error: WriteError}
}

// internalBearer replaces the client's credentials before the SDK sees the
// request: the server has authenticated it already, and the SDK's token
// check only carries the user over (verify).
const internalBearer = "Bearer agentc-authenticated"

// ServeHTTP serves the streamable HTTP transport. GET (the optional
// standalone event stream) is 405: the server sends nothing outside a
// request's own stream, and a stream held open forever would hold a
// shutdown. The authenticated user becomes the SDK's token info, which
// binds each MCP session to its user.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user := server.UserFrom(r.Context())
	switch {
	case user == "":
		h.b.Metrics.Error(Protocol, "unauthorized")
		WriteError(w, r, http.StatusUnauthorized, "unauthorized", "the request is not authenticated")
		return
	case r.Method == http.MethodGet:
		w.Header().Set("Allow", "POST, DELETE")
		WriteError(w, r, http.StatusMethodNotAllowed, "method_not_allowed", "this server has no standalone event stream; POST requests")
		return
	case r.Method != http.MethodPost && r.Method != http.MethodDelete:
		w.Header().Set("Allow", "POST, DELETE")
		WriteError(w, r, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed on "+h.path)
		return
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", internalBearer)
	if r.Method == http.MethodPost {
		// The SDK runs a call on its session's context, not the POST's:
		// the header (which it hands to the tool handler) names the POST,
		// so that a client that goes away cancels its runs (run).
		id := strconv.FormatUint(h.seq.Add(1), 36)
		r.Header.Set(callHeader, id)
		h.mu.Lock()
		h.requests[id] = r.Context()
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			delete(h.requests, id)
			h.mu.Unlock()
		}()
	}
	auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h.http).ServeHTTP(w, r)
}

// callHeader names the POST a call came in (set by ServeHTTP, over any
// value the client sent).
const callHeader = "X-Agentc-Mcp-Request"

// requestContext is the context of the POST that carried req, if it came
// over HTTP and is still in flight.
func (h *Handler) requestContext(req *sdk.CallToolRequest) (context.Context, bool) {
	if req.Extra == nil || req.Extra.Header == nil {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ctx, ok := h.requests[req.Extra.Header.Get(callHeader)]
	return ctx, ok
}

// verify is the SDK's token verifier: the token is internalBearer's, the
// user the server's middleware authenticated.
func verify(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
	user := server.UserFrom(ctx)
	if user == "" {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: user}, nil
}

// WriteError is the server.ErrorFunc of this protocol: a JSON-RPC error
// response without an id, as the streamable HTTP transport answers a
// request it refuses.
func WriteError(w http.ResponseWriter, _ *http.Request, status int, code, message string) {
	rpc := jsonrpc.InvalidRequest
	if status >= 500 {
		rpc = jsonrpc.InternalError
	}
	b := []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":`)
	b = strconv.AppendInt(b, int64(rpc), 10)
	b = append(b, `,"message":`...)
	b = strconv.AppendQuote(b, message)
	b = append(b, `,"data":{"code":`...)
	b = strconv.AppendQuote(b, code)
	b = append(b, "}}}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// ServeStdio serves the tools over newline-delimited JSON-RPC on in and out
// (a desktop client's stdio) as user, until the client closes in or ctx is
// done.
func (h *Handler) ServeStdio(ctx context.Context, user string, in io.Reader, out io.Writer) error {
	if user == "" {
		return errors.New("mcp: stdio needs a user")
	}
	t := &sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}}
	err := h.newServer(user).Run(ctx, t)
	if err != nil && (errors.Is(err, io.EOF) || ctx.Err() != nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mcp stdio: %w", err)
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func (h *Handler) newID(prefix string) string {
	if h.b.NewID != nil {
		return h.b.NewID(prefix)
	}
	return prefix + strconv.FormatUint(h.seq.Add(1), 10)
}

func (h *Handler) logger() *slog.Logger {
	if h.b.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.b.Logger
}
