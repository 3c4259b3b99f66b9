// Package mcpclient implements `run = mcp { ... }` tools (spec/language.md
// §7.5, spec/tools.md "MCP tools") on the official Go SDK's client: one
// client session per server per Pool (a Runner's), opened lazily on the
// first call, reopened after it drops, closed by Pool.Close.
package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	neturl "net/url"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/outbound"
	"github.com/agentc/agentc/stdlib/tools"
	"github.com/agentc/agentc/vm"
)

// DefaultTimeout bounds one call when the block sets no timeout.
const DefaultTimeout = 30 * time.Second

// IdempotencyMeta is the `_meta` key of a tools/call request that carries
// the runtime's idempotency key (idempotent and side-effect tools), as
// http tools send Idempotency-Key.
const IdempotencyMeta = "agentc/idempotencyKey"

// Config is what binding needs from the assembly.
type Config struct {
	// Root is the project root: a stdio server starts in the folder of the
	// file that declares its tool.
	Root string
	// LookupEnv resolves env() attributes written directly (nil: none set).
	LookupEnv func(string) (string, bool)
	// HTTPClient carries streamable HTTP requests (nil: a default client).
	HTTPClient *http.Client
	// Allow vets every URL a streamable HTTP server is reached at: the
	// declared one (a refused URL fails each call of its tools with
	// tool_error, without connecting) and each request's, redirects
	// included. Nil: every URL (the assembly sets the host allowlist).
	Allow func(u *neturl.URL) error
	// Version is the client version sent at initialization.
	Version string
	// Propagate, when set, writes the trace context of a call's ctx into
	// headers (traceparent; spec/telemetry.md): each tools/call carries it
	// in its params' _meta (traceparent, tracestate: the OpenTelemetry MCP
	// conventions) and, over streamable HTTP, in its request headers. Nil:
	// nothing is added.
	Propagate func(ctx context.Context, h http.Header)
}

// Pool holds the client sessions of a Runner's MCP servers, one per
// distinct server (transport and its settings).
type Pool struct {
	cfg    Config
	client *mcp.Client

	mu      sync.Mutex
	servers map[string]*server
	closed  bool

	// progress maps the progress token of each call in flight to its
	// reporter (runtime.ToolRequest.Progress); seq numbers the tokens.
	progress sync.Map
	seq      atomic.Uint64
	// artifacts saves binary results (SetArtifacts; nil: not saved).
	artifacts atomic.Pointer[artifact.Service]
}

// NewPool returns an empty pool; sessions open on first use.
func NewPool(cfg Config) *Pool {
	v := cfg.Version
	if v == "" {
		v = "dev"
	}
	p := &Pool{cfg: cfg, servers: map[string]*server{}}
	p.client = mcp.NewClient(&mcp.Implementation{Name: "agentc", Version: v}, &mcp.ClientOptions{ProgressNotificationHandler: p.onProgress})
	return p
}

// SetArtifacts sets the service binary results are saved to (the
// Runner's store; runtime/assemble sets it when the Runner opens).
func (p *Pool) SetArtifacts(s *artifact.Service) { p.artifacts.Store(s) }

// maxProgressMessage bounds a progress message passed on as an event.
const maxProgressMessage = 1024

// onProgress passes a server's progress notification to the call whose
// token it carries; others (unknown or finished calls) are dropped.
func (p *Pool) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	tok, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	f, ok := p.progress.Load(tok)
	if !ok {
		return
	}
	msg := strings.ToValidUTF8(req.Params.Message, "\uFFFD")
	if len(msg) > maxProgressMessage {
		msg = strings.ToValidUTF8(msg[:maxProgressMessage], "") + "…"
	}
	f.(*progressSink).report(runtime.ToolProgress{Progress: req.Params.Progress, Total: req.Params.Total, Message: msg})
}

// maxProgress bounds the progress reports one call passes on (a server
// cannot flood the run's event stream).
const maxProgress = 1000

// progressSink is one call's reporter; done stops it when Call returns
// (a late notification must not follow the tool's result).
type progressSink struct {
	mu   sync.Mutex
	done bool
	n    int
	f    func(runtime.ToolProgress)
}

func (s *progressSink) report(p runtime.ToolProgress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done && s.n < maxProgress {
		s.n++
		s.f(p)
	}
}

func (s *progressSink) stop() {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
}

// Close ends every session (a stdio server's process is stopped by its
// transport) and refuses further calls. It returns the first close error.
func (p *Pool) Close(context.Context) error {
	p.mu.Lock()
	p.closed = true
	servers := p.servers
	p.servers = map[string]*server{}
	p.mu.Unlock()
	keys := make([]string, 0, len(servers))
	for k := range servers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var first error
	for _, k := range keys {
		if err := servers[k].close(); err != nil && first == nil {
			first = fmt.Errorf("mcp: close %s: %w", servers[k].name, err)
		}
	}
	return first
}

var errClosed = errors.New("the runner is closed")

// server is one MCP server: how to reach it and its current session.
type server struct {
	name      string // for errors: the URL or the program
	transport func() mcp.Transport

	mu sync.Mutex // held while connecting
	cs *mcp.ClientSession
	// dead is closed when cs's connection ends (watch's goroutine).
	dead chan struct{}
	// watching ends when watch returns; close waits for it.
	watching sync.WaitGroup
}

// serverFor returns the pool's server for key, adding it.
func (p *Pool) serverFor(key, name string, transport func() mcp.Transport) (*server, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errClosed
	}
	s := p.servers[key]
	if s == nil {
		s = &server{name: name, transport: transport}
		p.servers[key] = s
	}
	return s, nil
}

// session returns a live session, connecting when there is none or the
// last one dropped.
func (p *Pool) session(ctx context.Context, s *server) (*mcp.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Close marks the pool closed before it closes s (under s.mu): a
	// session opened here after that check is still closed by Close.
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	if s.cs != nil {
		select {
		case <-s.dead:
			s.cs.Close()
			s.watching.Wait()
			s.cs = nil
		default:
			return s.cs, nil
		}
	}
	cs, err := p.client.Connect(ctx, s.transport(), nil)
	if err != nil {
		return nil, err
	}
	s.cs, s.dead = cs, make(chan struct{})
	s.watching.Add(1)
	go s.watch(cs, s.dead) // owned by s: ends when cs's connection ends (close ends it)
	return cs, nil
}

func (s *server) watch(cs *mcp.ClientSession, dead chan struct{}) {
	defer s.watching.Done()
	_ = cs.Wait()
	close(dead)
}

// drop forgets cs if it is still the current session, so the next call
// reconnects.
func (s *server) drop(cs *mcp.ClientSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs != cs {
		return
	}
	cs.Close()
	s.watching.Wait()
	s.cs = nil
}

func (s *server) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs == nil {
		return nil
	}
	err := s.cs.Close()
	s.watching.Wait()
	s.cs = nil
	// A stdio server that had to be stopped (its exit status after stdin
	// closed, or the SIGTERM TerminateDuration later) is not a failure of
	// the Runner's close.
	var exit *exec.ExitError
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.As(err, &exit) {
		err = nil
	}
	return err
}

// Bind adds to into, for every `run = mcp` tool of m's program that into
// lacks (a scripted replay wins), its implementation over pool. It fails,
// naming the tool, when an attribute does not resolve (an env() variable
// unset without a default).
func Bind(into map[string]runtime.Tool, m *vm.Machine, pool *Pool) error {
	return tools.BindKinds(into, m.Program(), func(t *bytecode.Tool) (runtime.Tool, error) {
		return newTool(m, t, pool)
	}, bytecode.ImplMCP)
}

// tool is one `run = mcp` tool.
type tool struct {
	t       *bytecode.Tool
	in, out *types.Type
	name    string // the server's tool name
	timeout time.Duration
	pool    *Pool
	srv     *server
	refused error // the declared URL is not allowed
}

func newTool(m *vm.Machine, t *bytecode.Tool, pool *Pool) (*tool, error) {
	p := m.Program()
	if int(t.Input) >= len(p.Types) || int(t.Output) >= len(p.Types) {
		return nil, fmt.Errorf("tool %s: type index out of range", t.Name)
	}
	mt := &tool{t: t, in: p.Types[t.Input], out: p.Types[t.Output], timeout: DefaultTimeout, pool: pool}
	val := func(a bytecode.Attr) (types.Value, error) {
		if v, ok, err := p.AttrValue(a, pool.cfg.LookupEnv); err != nil {
			return types.Value{}, fmt.Errorf("tool %s: %s: %w", t.Name, a.Name, err)
		} else if ok {
			return v, nil
		}
		if a.Kind != bytecode.AttrCode {
			return types.Value{}, fmt.Errorf("tool %s: %s: unsupported attribute kind %s", t.Name, a.Name, a.Kind)
		}
		v, err := m.Eval(context.Background(), int(a.Code), nil)
		if err != nil {
			return types.Value{}, fmt.Errorf("tool %s: %s: %w", t.Name, a.Name, err)
		}
		return v, nil
	}
	var url string
	var argv []string
	headers, env := map[string]string{}, map[string]string{}
	for _, a := range t.Impl.Options {
		v, err := val(a)
		if err != nil {
			return nil, err
		}
		switch a.Name {
		case "tool":
			mt.name = text(v)
		case "url":
			url = text(v)
		case "timeout":
			if v.Kind() == types.ValDuration && v.Duration() > 0 {
				mt.timeout = v.Duration()
			}
		case "command":
			if v.Kind() == types.ValList {
				for i := range v.Len() {
					argv = append(argv, text(v.Elem(i)))
				}
			}
		case "headers", "env":
			dst := headers
			if a.Name == "env" {
				dst = env
			}
			if v.Kind() == types.ValMap {
				for i := range v.Len() {
					k, e := v.MapEntry(i)
					if !e.IsNull() {
						dst[k] = text(e)
					}
				}
			}
		}
	}
	for _, a := range t.Attrs {
		if a.Name == "timeout" {
			if v, ok := p.AttrConst(a); ok && v.Kind() == types.ValDuration && v.Duration() > 0 && v.Duration() < mt.timeout {
				mt.timeout = v.Duration()
			}
		}
	}
	if mt.name == "" {
		return nil, fmt.Errorf("tool %s: mcp without a tool name", t.Name)
	}
	var err error
	switch {
	case url != "" && len(argv) == 0:
		if err := pool.allow(url); err != nil {
			mt.refused = err
			return mt, nil
		}
		mt.srv, err = pool.serverFor(serverKey("http", url, headers), url, httpTransport(url, headers, pool.cfg.HTTPClient, pool.cfg.Allow, pool.cfg.Propagate))
	case len(argv) > 0 && argv[0] != "" && url == "":
		dir := filepath.Join(pool.cfg.Root, filepath.FromSlash(fileDir(p, t)))
		mt.srv, err = pool.serverFor(serverKey("stdio", dir+"\x00"+strings.Join(argv, "\x00"), env), argv[0], stdioTransport(argv, dir, env))
	default:
		return nil, fmt.Errorf("tool %s: mcp needs exactly one of url and command", t.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	return mt, nil
}

func text(v types.Value) string {
	switch v.Kind() {
	case types.ValString:
		return v.Str()
	case types.ValSecret:
		return v.SecretText()
	}
	return ""
}

// serverKey identifies a server by its transport and settings: tools that
// name the same server share its session.
func serverKey(kind, where string, kv map[string]string) string {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(kind + "\x00" + where)
	for _, k := range keys {
		b.WriteString("\x00" + k + "=" + kv[k])
	}
	return b.String()
}

// allow is cfg.Allow's verdict on a declared URL.
func (p *Pool) allow(raw string) error {
	u, ok := outbound.HTTPURL(raw)
	if !ok {
		return &refusedError{fmt.Errorf("%q is not an http(s) URL", raw)}
	}
	if p.cfg.Allow == nil {
		return nil
	}
	if err := p.cfg.Allow(u); err != nil {
		return &refusedError{err}
	}
	return nil
}

// refusedError is a URL Config.Allow refused: a setting to change, not a
// failure to retry, so its calls fail tool_error.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

func httpTransport(url string, headers map[string]string, base *http.Client, allow func(*neturl.URL) error, prop func(context.Context, http.Header)) func() mcp.Transport {
	client := base
	if client == nil {
		client = &http.Client{}
	}
	if len(headers) > 0 || allow != nil || prop != nil {
		c := *client
		rt := c.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		if len(headers) > 0 {
			rt = headerTransport{base: rt, headers: headers}
		}
		if prop != nil {
			rt = traceTransport{base: rt, prop: prop}
		}
		if allow != nil {
			rt = allowTransport{base: rt, allow: allow}
		}
		c.Transport = rt
		client = &c
	}
	return func() mcp.Transport {
		// No SDK-level retries: a dropped stream fails the call, and the
		// pool reconnects on the next one.
		return &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client, MaxRetries: -1, DisableStandaloneSSE: true}
	}
}

// headerTransport adds the block's headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// traceTransport adds the trace context of each request's context.
type traceTransport struct {
	base http.RoundTripper
	prop func(context.Context, http.Header)
}

func (t traceTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	t.prop(r.Context(), r.Header)
	return t.base.RoundTrip(r)
}

// traceMeta adds the trace context of ctx to a request's _meta (the keys
// the OpenTelemetry MCP conventions give: traceparent, tracestate).
func traceMeta(ctx context.Context, prop func(context.Context, http.Header), meta mcp.Meta) mcp.Meta {
	h := http.Header{}
	prop(ctx, h)
	for _, k := range [...]string{"traceparent", "tracestate"} {
		if v := h.Get(k); v != "" {
			if meta == nil {
				meta = mcp.Meta{}
			}
			meta[k] = v
		}
	}
	return meta
}

// allowTransport sends only requests whose URL allow accepts: a redirect
// (followed by the client) or a session endpoint cannot leave the
// allowlist.
type allowTransport struct {
	base  http.RoundTripper
	allow func(*neturl.URL) error
}

func (a allowTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := a.allow(r.URL); err != nil {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, &refusedError{err}
	}
	return a.base.RoundTrip(r)
}

// stdioTransport starts argv in dir with only env: nothing of agentc's
// environment reaches the server (the program itself is looked up on
// agentc's PATH).
func stdioTransport(argv []string, dir string, env map[string]string) func() mcp.Transport {
	return func() mcp.Transport {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		cmd.Env = []string{}
		keys := make([]string, 0, len(env))
		for k := range env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			cmd.Env = append(cmd.Env, k+"="+env[k])
		}
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
}

// fileDir is the folder of the file that declares t, relative to the
// module root ("." at the root).
func fileDir(p *bytecode.Program, t *bytecode.Tool) string {
	if f := int(t.Span.File); f < len(p.Files) && t.Span.IsValid() {
		return path.Dir(p.Files[f])
	}
	return "."
}

func (t *tool) Spec() runtime.ToolSpec {
	return runtime.ToolSpec{Name: t.t.Name, Description: t.t.Doc, InputSchema: types.JSONSchema(t.in)}
}

func (t *tool) Effect() runtime.Effect { return runtime.Effect(t.t.Effect) }

func (t *tool) errorf(kind vm.ErrorKind, format string, args ...any) error {
	return runtime.Errorf(kind, "tool %s: %s", t.t.Name, fmt.Sprintf(format, args...))
}

// Call sends the validated input record as the arguments of tools/call.
// A session that drops before the call is answered is forgotten; a
// read-only or idempotent call is sent once more on a fresh session, any
// other fails unavailable (its outcome is unknown).
func (t *tool) Call(ctx context.Context, req runtime.ToolRequest) (json.RawMessage, error) {
	if t.refused != nil {
		return nil, t.errorf(vm.KindToolError, "server %v", t.refused)
	}
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	args := req.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	in, err := types.FromJSON(t.in, args)
	if err != nil {
		return nil, t.errorf(vm.KindToolError, "invalid arguments: %v", err)
	}
	// The record as declared: defaults applied, undeclared members gone,
	// and null members (absent optionals) not sent.
	if args, err = arguments(in); err != nil {
		return nil, t.errorf(vm.KindInternal, "encode arguments: %v", err)
	}
	params := &mcp.CallToolParams{Name: t.name, Arguments: args}
	if req.IdempotencyKey != "" && t.t.Effect != bytecode.EffectReadOnly {
		params.Meta = mcp.Meta{IdempotencyMeta: req.IdempotencyKey}
	}
	if prop := t.pool.cfg.Propagate; prop != nil {
		params.Meta = traceMeta(ctx, prop, params.Meta)
	}
	if req.Progress != nil {
		tok := "agentc-" + strconv.FormatUint(t.pool.seq.Add(1), 10)
		sink := &progressSink{f: req.Progress}
		t.pool.progress.Store(tok, sink)
		defer func() {
			sink.stop()
			t.pool.progress.Delete(tok)
		}()
		params.SetProgressToken(tok)
	}
	retry := t.t.Effect == bytecode.EffectReadOnly || t.t.Effect == bytecode.EffectIdempotent
	for attempt := 0; ; attempt++ {
		cs, err := t.pool.session(ctx, t.srv)
		if err != nil {
			return nil, t.failed(ctx, "connect to "+t.srv.name, err)
		}
		res, err := cs.CallTool(ctx, params)
		if err == nil {
			return t.result(ctx, req, res)
		}
		var rpc *jsonrpc.Error
		if errors.As(err, &rpc) {
			return nil, t.errorf(vm.KindToolError, "%s: %s", t.name, rpc.Message)
		}
		if ctx.Err() != nil {
			return nil, t.failed(ctx, "call "+t.name, err)
		}
		t.srv.drop(cs)
		if !retry || attempt > 0 {
			return nil, t.failed(ctx, "call "+t.name, err)
		}
	}
}

// failed is a transport failure's error: timeout or canceled when ctx
// ended, else unavailable.
func (t *tool) failed(ctx context.Context, what string, err error) error {
	var refused *refusedError
	switch {
	case errors.As(err, &refused):
		return t.errorf(vm.KindToolError, "%s: %v", what, refused)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return t.errorf(vm.KindTimeout, "%s: no answer within %s", what, t.timeout)
	case ctx.Err() != nil:
		return t.errorf(vm.KindCanceled, "%s: %v", what, ctx.Err())
	}
	return t.errorf(vm.KindUnavailable, "%s: %v", what, err)
}

// result converts a tools/call result: isError is a tool_error carrying
// the server's text; otherwise the structured content, else the text
// content, decoded as the output type (a string output takes the text).
// Image, audio and embedded-resource contents are saved as artifacts of
// the session (saveContents) and referenced from the result.
func (t *tool) result(ctx context.Context, req runtime.ToolRequest, res *mcp.CallToolResult) (json.RawMessage, error) {
	var txt strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			if txt.Len() > 0 {
				txt.WriteString("\n")
			}
			txt.WriteString(tc.Text)
		}
	}
	if res.IsError {
		msg := txt.String()
		if len(msg) > 1024 {
			msg = msg[:1024] + "…"
		}
		if msg == "" {
			msg = "the server reported an error"
		}
		return nil, t.errorf(vm.KindToolError, "%s: %s", t.name, strings.ToValidUTF8(msg, "\uFFFD"))
	}
	refs := t.saveContents(ctx, req, res.Content)
	for _, r := range refs {
		if txt.Len() > 0 {
			txt.WriteString("\n")
		}
		txt.WriteString(r.line())
	}
	body := []byte(txt.String())
	if res.StructuredContent != nil && (!isText(t.out) || txt.Len() == 0) {
		sc := res.StructuredContent
		if m, ok := sc.(map[string]any); ok && len(refs) > 0 {
			if _, taken := m["artifacts"]; !taken {
				c := make(map[string]any, len(m)+1)
				for k, v := range m {
					c[k] = v
				}
				c["artifacts"] = refs
				sc = c
			}
		}
		b, err := json.Marshal(sc)
		if err != nil {
			return nil, t.errorf(vm.KindInvalidOutput, "structured content: %v", err)
		}
		body = b
	}
	return tools.DecodeOutput(t.out, t.t.Name, body)
}

func isText(t *types.Type) bool {
	if t.Kind() == types.KindOptional {
		t = t.Elem()
	}
	return t.Kind() == types.KindString
}

// arguments encodes the input record without its null members: an absent
// optional argument is not sent (a server's schema need not accept null
// for a property it does not require).
func arguments(in types.Value) (json.RawMessage, error) {
	b, err := types.ToJSON(in)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range m {
		if string(v) == "null" {
			delete(m, k)
		}
	}
	return json.Marshal(m)
}
