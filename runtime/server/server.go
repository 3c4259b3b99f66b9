package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentc/agentc/internal/stack"
)

// Mount is one protocol adapter served under a URL pattern.
type Mount struct {
	// Pattern is a net/http ServeMux pattern without a method: "/v1/" (a
	// subtree) or "/.well-known/agent-card.json" (one path).
	Pattern string
	// Protocol names the adapter in logs and metrics ("openai", "agui", "a2a").
	Protocol string
	Handler  http.Handler
	// Public mounts are served without authentication (the A2A agent card).
	// Their requests carry no user.
	Public bool
	// Error writes the protocol's error shape for failures the server
	// answers itself (401, 413, 500 after a panic). Nil: WriteError's
	// generic {"error":{"code","message"}}.
	Error ErrorFunc
}

// ErrorFunc writes an error response in a protocol's shape. code is a
// short machine-readable word ("unauthorized", "body_too_large", "internal").
type ErrorFunc func(w http.ResponseWriter, r *http.Request, status int, code, message string)

// WriteError is the generic error shape: {"error":{"code","message"}}.
func WriteError(w http.ResponseWriter, _ *http.Request, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": message}})
	_, _ = w.Write(append(b, '\n'))
}

// Config configures a Server.
type Config struct {
	// Addr is the listen address ("127.0.0.1:8080").
	Addr    string
	Backend *Backend
	Mounts  []Mount
	// Tokens maps a bearer token to the user id it authenticates.
	Tokens map[string]string
	// Open serves without authentication: the user is the X-Agentc-User
	// header, else "anonymous". New refuses it unless Addr is a loopback
	// address and no Tokens are given, and Serve unless the listener is
	// loopback. An open server answers only requests for a loopback Host,
	// from no Origin or a loopback one, and state-changing requests only
	// with a JSON content type (open.go).
	Open bool
	// Closers run during Shutdown after the runs have ended and before the
	// Store is closed: adapters' own goroutines (a2a.Handler.Close).
	Closers []func(context.Context) error
	// TraceContext, when set, returns the request's context with the
	// trace context its headers carry (traceparent; telemetry.Extract),
	// so that the runs it starts are children of the caller's span.
	TraceContext func(ctx context.Context, h http.Header) context.Context
	// Store, when set, is closed by Shutdown after the Closers (the store
	// the Runner and Backend.Docs use).
	Store io.Closer
	// ShutdownGrace bounds how long Shutdown waits for responses to finish
	// writing after the runs have ended (default 5 s).
	ShutdownGrace time.Duration
	Logger        *slog.Logger // nil: Backend.Logger, else discard

	// Timeouts bound how long a client may take to send a request.
	Timeouts Timeouts
	// MaxBodyReads caps the request bodies being received at once (default
	// 128): beyond it a request is answered 503 at once, so that stalled
	// bodies cannot hold every handler.
	MaxBodyReads int
	// MaxConns caps the open connections (default 1024): a connection
	// beyond it is closed as soon as it is accepted.
	MaxConns int
}

// UserHeader names the user of a request on an open (unauthenticated)
// server.
const UserHeader = "X-Agentc-User"

// AnonymousUser is the user of an open server's request without UserHeader.
const AnonymousUser = "anonymous"

// Server serves the mounted adapters, /healthz and /metrics on one port,
// with authentication, a body-size limit, panic recovery, request logs and
// metrics in front of every adapter.
//
// Lifecycle: New, then Serve (or ListenAndServe), then Shutdown, which owns
// the order: stop accepting connections, Backend.Drain, wait for the runs
// (canceling them when ctx ends) via Runner.Close, let the responses finish,
// run Config.Closers, close the Store.
type Server struct {
	cfg     Config
	b       *Backend
	log     *slog.Logger
	tokens  map[[32]byte]string // sha256(token) → user
	handler http.Handler
	http    *http.Server

	timeouts  Timeouts
	bodySlots chan struct{} // a token per body being received

	mu       sync.Mutex
	shutdown bool
	conns    map[net.Conn]bool // open connections → has a request in flight
	active   int               // connections with a request in flight
	idleCh   chan struct{}     // closed when active drops to 0 after shutdown began
}

// connState counts the connections with a request in flight (StateActive:
// net/http marks a connection idle only once its response is written).
func (s *Server) connState(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.conns[c]
	switch st {
	case http.StateActive:
		s.conns[c] = true
		if !was {
			s.active++
		}
		return
	case http.StateIdle:
		s.conns[c] = false
	default: // closed, hijacked
		delete(s.conns, c)
	}
	if was {
		s.active--
		if s.active == 0 && s.idleCh != nil {
			close(s.idleCh)
			s.idleCh = nil
		}
	}
}

// idle returns a channel closed once no connection has a request in flight.
func (s *Server) idle() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	if s.active == 0 {
		close(ch)
	} else {
		s.idleCh = ch
	}
	return ch
}

func (s *Server) inFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// ParseTokens reads "tok1=alice,tok2=bob" (pairs separated by commas or
// newlines; spaces around tokens and users are ignored) into a token → user
// map.
func ParseTokens(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		tok, user, ok := strings.Cut(pair, "=")
		tok, user = strings.TrimSpace(tok), strings.TrimSpace(user)
		if !ok || tok == "" || user == "" {
			return nil, fmt.Errorf("token entry %q: want TOKEN=USER", redact(pair))
		}
		if prev, dup := out[tok]; dup && prev != user {
			return nil, fmt.Errorf("token %s is given to two users (%s, %s)", redact(tok), prev, user)
		}
		out[tok] = user
	}
	return out, nil
}

// redact shows a token's first characters only.
func redact(s string) string {
	if len(s) <= 4 {
		return "****"
	}
	return s[:4] + "****"
}

// New checks cfg and builds the server's handler. It refuses a server
// without tokens unless Open is set, and an open server on an address that
// is not loopback.
func New(cfg Config) (*Server, error) {
	if cfg.Backend == nil || cfg.Backend.Runner == nil {
		return nil, errors.New("server: Config.Backend with a Runner is required")
	}
	if cfg.Open && !IsLoopback(cfg.Addr) {
		return nil, fmt.Errorf("server: refusing to serve without authentication on %q: open mode is for loopback addresses only (127.0.0.1, ::1, localhost)", cfg.Addr)
	}
	if cfg.Open && len(cfg.Tokens) > 0 {
		return nil, errors.New("server: open mode serves without authentication and takes no bearer tokens: give one or the other")
	}
	if !cfg.Open && len(cfg.Tokens) == 0 {
		return nil, errors.New("server: no bearer tokens configured (AGENTC_TOKENS=token=user,… or --token token=user); to serve without authentication on loopback, use open mode")
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 5 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = cfg.Backend.Logger
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBodyReads <= 0 {
		cfg.MaxBodyReads = 128
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 1024
	}
	s := &Server{cfg: cfg, b: cfg.Backend, log: log, tokens: map[[32]byte]string{}, conns: map[net.Conn]bool{},
		timeouts: cfg.Timeouts.WithDefaults(), bodySlots: make(chan struct{}, cfg.MaxBodyReads)}
	for tok, user := range cfg.Tokens {
		s.tokens[sha256.Sum256([]byte(tok))] = user
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", s.wrap(Mount{Protocol: "http", Public: true, Handler: http.HandlerFunc(s.healthz)}))
	mux.Handle("GET /metrics", s.wrap(Mount{Protocol: "http", Handler: http.HandlerFunc(s.metrics)}))
	for _, m := range cfg.Mounts {
		if m.Handler == nil || m.Pattern == "" {
			return nil, fmt.Errorf("server: mount %q (%s) needs a pattern and a handler", m.Pattern, m.Protocol)
		}
		if err := register(mux, m.Pattern, s.wrap(m)); err != nil {
			return nil, err
		}
	}
	mux.Handle("/", s.wrap(Mount{Protocol: "http", Public: true, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, r, http.StatusNotFound, "not_found", "no endpoint at "+r.URL.Path)
	})}))
	s.handler = mux
	s.http = &http.Server{
		Addr:              cfg.Addr,
		Handler:           s.handler,
		ReadHeaderTimeout: s.timeouts.Header,
		IdleTimeout:       s.timeouts.Idle,
		MaxHeaderBytes:    64 << 10,
		ConnState:         s.connState,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// register adds a mount, turning ServeMux's panic on a conflicting pattern
// into an error.
func register(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("server: mount %q: %v", pattern, p)
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

// IsLoopback reports whether addr ("host:port", or a bare host) names a
// loopback interface only. An empty host (all interfaces) is not loopback.
func IsLoopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handler is the server's whole handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.handler }

// ListenAndServe listens on Config.Addr and serves until Shutdown.
func (s *Server) ListenAndServe() error {
	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: listen: %w", err)
	}
	return s.Serve(l)
}

// Serve serves on l until Shutdown; it returns nil after a Shutdown.
func (s *Server) Serve(l net.Listener) error {
	if s.cfg.Open && !IsLoopback(l.Addr().String()) {
		_ = l.Close()
		return fmt.Errorf("server: refusing to serve without authentication on %s (not loopback)", l.Addr())
	}
	s.log.Info("serving", "addr", l.Addr().String(), "app", s.b.App(), "open", s.cfg.Open)
	l = &limitListener{Listener: l, max: s.cfg.MaxConns, refused: func() { s.b.Metrics.Error("http", "too_many_connections") }}
	err := s.http.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops the server gracefully: it stops accepting connections and
// runs, waits for the active runs to end (canceling them when ctx is done;
// a canceled run still records its end), gives the responses
// ShutdownGrace to finish, then closes the Runner and the Store. It is
// safe to call more than once; later calls return nil.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		return nil
	}
	s.shutdown = true
	s.mu.Unlock()
	s.log.Info("shutting down", "running", s.b.Running())
	// Stop accepting: Shutdown closes the listeners at once and then waits
	// for the connections to go idle, which they do once their runs end.
	httpCtx, stopHTTP := context.WithCancel(context.Background())
	httpDone := make(chan error, 1)
	go func() { httpDone <- s.http.Shutdown(httpCtx) }() // owned here: joined below
	s.b.Drain()
	runErr := s.b.Runner.Close(ctx)
	if runErr != nil {
		s.log.Warn("runs canceled at shutdown", "err", runErr)
	}
	// The runs are over; their handlers only have their last frames to
	// write. Once no connection has a request in flight, the ones left are
	// idle or never sent a request (a client's spare keep-alive dial, which
	// http.Server.Shutdown would wait 5 s for): close them.
	grace := time.NewTimer(s.cfg.ShutdownGrace)
	var httpErr error
	select {
	case httpErr = <-httpDone:
	case <-s.idle():
		httpErr = s.http.Close()
		stopHTTP()
		<-httpDone
	case <-grace.C:
		stopHTTP()
		<-httpDone
		httpErr = errors.Join(fmt.Errorf("server: %d requests still in flight after %s", s.inFlight(), s.cfg.ShutdownGrace), s.http.Close())
	}
	grace.Stop()
	stopHTTP()
	var closeErr error
	for _, c := range s.cfg.Closers {
		closeErr = errors.Join(closeErr, c(ctx))
	}
	var stErr error
	if s.cfg.Store != nil {
		if stErr = s.cfg.Store.Close(); stErr != nil {
			stErr = fmt.Errorf("server: close store: %w", stErr)
		}
	}
	s.log.Info("stopped")
	if errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded) {
		runErr = nil // expected: the grace period ran out and runs were canceled
	}
	return errors.Join(runErr, httpErr, closeErr, stErr)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	s.b.mu.Lock()
	draining := s.b.draining
	s.b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if draining {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, `{"status":"draining","running":%d}`+"\n", s.b.Running())
		return
	}
	_, _ = fmt.Fprintf(w, `{"status":"ok","app":%q,"running":%d}`+"\n", s.b.App(), s.b.Running())
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = s.b.Metrics.WriteTo(w)
	_, _ = fmt.Fprintf(w, "# HELP agentc_runs_active Runs in flight.\n# TYPE agentc_runs_active gauge\nagentc_runs_active %d\n", s.b.Running())
}

// wrap puts authentication, the body limit, panic recovery, the request log
// and the request metrics in front of a mount's handler.
func (s *Server) wrap(m Mount) http.Handler {
	errf := m.Error
	if errf == nil {
		errf = WriteError
	}
	lim := s.b.Limits.WithDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.b.now()
		sw := &statusWriter{ResponseWriter: w}
		user := ""
		if s.cfg.TraceContext != nil {
			r = r.WithContext(s.cfg.TraceContext(r.Context(), r.Header))
		}
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("panic in handler", "protocol", m.Protocol, "path", r.URL.Path, "panic", fmt.Sprint(p))
				if !sw.wrote {
					errf(sw, r, http.StatusInternalServerError, "internal", "internal server error")
				}
			}
			d := s.b.now().Sub(start)
			s.b.Metrics.Request(m.Protocol, sw.status(), d)
			// The record is made here, without the caller's PC that
			// Logger.LogAttrs captures (a stack walk per request for a
			// source location that would always be this line).
			if h := s.log.Handler(); h.Enabled(r.Context(), slog.LevelInfo) {
				rec := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
				rec.AddAttrs(slog.String("protocol", m.Protocol), slog.String("method", r.Method), slog.String("path", r.URL.Path),
					slog.Int("status", sw.status()), slog.Int64("bytes", sw.n), slog.Duration("duration", d),
					slog.String("user", user), slog.String("remote", r.RemoteAddr))
				_ = h.Handle(r.Context(), rec)
			}
		}()
		if s.cfg.Open {
			if f := openRefusal(r); f != nil {
				s.refuse(sw, r, errf, m.Protocol, *f)
				return
			}
		}
		// Authentication and the size check read headers only: nothing of
		// the body is read for a request that is refused.
		if !m.Public {
			var ok bool
			if user, ok = s.authenticate(r); !ok {
				sw.Header().Set("WWW-Authenticate", `Bearer realm="agentc"`)
				s.refuse(sw, r, errf, m.Protocol, refusal{http.StatusUnauthorized, "unauthorized", "missing or invalid bearer token"})
				return
			}
			r = r.WithContext(WithUser(r.Context(), user))
		}
		if r.ContentLength > lim.MaxBodyBytes {
			s.refuse(sw, r, errf, m.Protocol, refusal{http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("request body is larger than %d bytes", lim.MaxBodyBytes)})
			return
		}
		switch {
		case !hasBody(r):
		case m.Public:
			// Public endpoints take no body: leave it unread and close
			// the connection after the answer.
			sw.Header().Set("Connection", "close")
			_ = http.NewResponseController(sw).SetReadDeadline(time.Now())
		default:
			body, f := s.readBody(sw, r, lim.MaxBodyBytes)
			if f != nil {
				s.refuse(sw, r, errf, m.Protocol, *f)
				return
			}
			sw.body.Reset(body)
			r.Body = &sw.body
		}
		sw.writeTimeout = lim.WriteTimeout
		// A request's goroutine is a connection's, often new (a stream
		// ends with its connection): its handler's deep calls (the body's
		// decoding, a run's admission) would grow its stack two or three
		// times (runtime.newstack was ≈ 7% of the server's CPU in
		// bench/serve against 2–5% in its baseline).
		stack.Grow()
		m.Handler.ServeHTTP(sw, r)
	})
}

// authenticate returns the request's user: the one its bearer token maps
// to, or on an open server UserHeader's value, else AnonymousUser.
func (s *Server) authenticate(r *http.Request) (string, bool) {
	if s.cfg.Open {
		if u := strings.TrimSpace(r.Header.Get(UserHeader)); u != "" && len(u) <= 128 {
			return u, true
		}
		return AnonymousUser, true
	}
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	// Looking up the token's hash keeps the comparison's timing independent
	// of how much of a guess matches a real token.
	user, ok := s.tokens[sha256.Sum256([]byte(strings.TrimSpace(tok)))]
	return user, ok
}

// statusWriter records the status and size of a response. It passes
// Flush through and unwraps for http.ResponseController (write deadlines).
type statusWriter struct {
	http.ResponseWriter
	code  int
	n     int64
	wrote bool

	// writeTimeout gives each write to the client a deadline
	// (Limits.WriteTimeout): a client that stops reading blocks one write,
	// not its handler forever. Zero: none.
	writeTimeout time.Duration

	// body is the request's body once read (wrap): the handler's
	// r.Body, with no allocation of its own.
	body bodyReader
}

// bodyReader is a request body read ahead of its handler.
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

// deadline starts a write's deadline.
func (w *statusWriter) deadline() {
	if w.writeTimeout > 0 {
		_ = http.NewResponseController(w.ResponseWriter).SetWriteDeadline(time.Now().Add(w.writeTimeout))
	}
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.code, w.wrote = http.StatusOK, true
	}
	w.deadline()
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		w.deadline()
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// SetWriteDeadline is what http.ResponseController finds before it
// unwraps: it sets the connection's deadline, and a zero one — a stream
// that bounds its writes itself (SSE.ClearWriteDeadline) — also turns the
// per-write deadline off, so its writes no longer reset it, and a past
// deadline set by a stream's watchdog stays set until the stream ends.
// Only the handler's goroutine clears it; the watchdog sets a past one.
func (w *statusWriter) SetWriteDeadline(t time.Time) error {
	if t.IsZero() {
		w.writeTimeout = 0
	}
	return http.NewResponseController(w.ResponseWriter).SetWriteDeadline(t)
}

func (w *statusWriter) status() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.code
}
