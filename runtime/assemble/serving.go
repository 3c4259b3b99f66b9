package assemble

// Running a server: agentc serve's listener, adapters, inspector,
// retention passes, replica takeover and graceful shutdown (spec/serve.md).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/inspect"
	"github.com/agentc/agentc/runtime/retention"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/server/mcp"
	"github.com/agentc/agentc/runtime/server/ui"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/dial"
	"github.com/agentc/agentc/runtime/telemetry"
)

// ServeConfigError is a server configuration server.New refuses (agentc
// serve's usage error).
type ServeConfigError struct{ Err error }

func (e *ServeConfigError) Error() string { return e.Err.Error() }
func (e *ServeConfigError) Unwrap() error { return e.Err }

// Served is a program's server, listening and ready to Run.
type Served struct {
	srv      *server.Server
	b        *server.Backend
	l        net.Listener
	store    string
	app      string
	names    []string
	say      func(string)
	shutdown func() // before Run: undoes NewServed
}

// NewServed opens o's Runner over set's store (Open), listens on set.Addr
// (the A2A card names the address actually bound, a port 0 getting one
// from the kernel) and builds what set serves: the serve block's adapters
// (Mounts), the inspector, retention passes and, on a Pebble store, the
// CLI's way in (ui.Announce); version is what protocols report. say gets
// the notes a person reads ("warning: …"). Errors of the configuration
// are *ServeConfigError.
func NewServed(ctx context.Context, o Options, prog *bytecode.Program, set ServeSettings, version string, say func(string)) (*Served, error) {
	metrics := server.NewMetrics()
	logger := o.Logger
	o.App, o.Metrics, o.Upgrade = set.App, metrics, set.Upgrade()
	if o.Replica != nil {
		o.Replica.TTL = set.LeaseTTL
	}
	asm, st, r, closeRunner, err := Open(ctx, o, set.Store)
	if err != nil {
		return nil, err
	}
	b := asm.Backend(r, st, logger, set.Limits, metrics)
	l, err := net.Listen("tcp", set.Addr)
	if err != nil {
		closeRunner()
		return nil, fmt.Errorf("listen: %w", err)
	}
	bound := set
	bound.Addr = l.Addr().String()
	bound.Version = version
	if asm.Tracing() {
		bound.Propagate = telemetry.Inject // A2A push notifications
	}
	mounts, closers, names, err := Mounts(b, prog, bound, nil)
	if err == nil && set.UI {
		var um []server.Mount
		um, err = UIMounts(b, st, asm.Config().Entropy, map[string]bool{ui.AdminUser: true})
		mounts = append(mounts, um...)
		names = append(names, "ui "+ui.PagePath)
	}
	if err != nil {
		_ = l.Close()
		closeRunner()
		return nil, err
	}
	// Retention passes run until the runs have ended, before the store
	// is closed (spec/serve.md, "Retention").
	closers = append(closers, StartRetention(st, r.App(), set.Retention, asm.Config().Clock.Now, logger, metrics))
	if p := set.Retention.Policy(r.App()); !p.IsZero() && set.Retention.Interval > 0 {
		names = append(names, "retention "+p.String()+" every "+retention.FormatAge(set.Retention.Interval))
	}
	// The last spans are flushed once the runs have ended, before the
	// store is closed.
	closers = append(closers, func(context.Context) error {
		asm.Flush(func(msg string) { logger.Warn(msg) })
		return nil
	})
	var traceCtx func(context.Context, http.Header) context.Context
	if asm.Tracing() {
		traceCtx = telemetry.Extract
	}
	removeServe := func() error { return nil }
	// The CLI's way in while this process holds a Pebble store: an admin
	// token in serve.json (0600) in the data directory (spec/inspector.md).
	if kind, _ := dial.Parse(set.Store); kind == dial.Pebble && set.UI {
		remove, err := ui.Announce(set.Store, l.Addr().String(), r.App(), set.Tokens, set.Open)
		if err != nil {
			say(fmt.Sprintf("warning: %v (agentc sessions and the other inspection commands cannot reach this server)", err))
		} else {
			// Removed before the store is unlocked (Closers run first), so
			// that it never removes the file of the next server.
			removeServe = remove
			closers = append(closers, func(context.Context) error { return remove() })
		}
	}
	srv, err := server.New(server.Config{Addr: bound.Addr, Backend: b, Mounts: mounts, Closers: closers, Store: st,
		Tokens: set.Tokens, Open: set.Open, Logger: logger, TraceContext: traceCtx})
	if err != nil {
		_ = removeServe()
		_ = l.Close()
		closeRunner()
		return nil, &ServeConfigError{err}
	}
	return &Served{srv: srv, b: b, l: l, store: set.Store, app: r.App(), names: names, say: say}, nil
}

// String is the line that announces the server.
func (s *Served) String() string {
	return fmt.Sprintf("serving %s on http://%s (%s; store %s)", s.app, s.l.Addr(), strings.Join(s.names, ", "), dial.Display(s.store))
}

// Run serves until ctx ends, then shuts down: no new runs, running ones
// get grace to finish and are then canceled (they stay resumable). While
// it serves, the runs the last process on a Pebble store left running are
// resumed (Backend.Recover), on a shared store those of a replica that
// stopped are taken over (Backend.TakeOver), and the timers of waiting
// runs fire (Backend.RunTimers).
func (s *Served) Run(ctx context.Context, grace time.Duration) error {
	s.recoverOrphans(ctx)
	takeCtx, stopTaking := context.WithCancel(ctx)
	taking := make(chan struct{})
	go func() { // owned here: stopped and joined before the shutdown
		defer close(taking)
		s.b.TakeOver(takeCtx, func(resumed []string, err error) {
			if len(resumed) > 0 {
				s.say(fmt.Sprintf("taking over %d run(s) a stopped replica left: %s", len(resumed), strings.Join(resumed, ", ")))
			}
			if err != nil {
				s.say(fmt.Sprintf("warning: runs left running, retrying: %v", err))
			}
		})
	}()
	// Timers of waiting runs fire on a goroutine owned here (a run it
	// resumes outlives its stop: the shutdown's grace applies to it).
	timerCtx, stopTimers := context.WithCancel(ctx)
	timing := make(chan struct{})
	go func() {
		defer close(timing)
		s.b.RunTimers(timerCtx)
	}()
	served := make(chan error, 1)
	go func() { served <- s.srv.Serve(s.l) }() // owned here: Shutdown ends it, joined below
	var err error
	select {
	case err = <-served:
		stopTaking()
		<-taking
		stopTimers()
		_ = s.srv.Shutdown(context.Background())
		<-timing
		return err
	case <-ctx.Done():
	}
	stopTaking()
	<-taking
	stopTimers()
	defer func() { <-timing }()
	s.say(fmt.Sprintf("shutting down (runs get %s to finish)", grace))
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err = s.srv.Shutdown(sctx)
	if serr := <-served; err == nil {
		err = serr
	}
	return err
}

// recoverOrphans resumes the runs the last process on a Pebble store left
// running (it held the store's lock, so nothing drives them now); on a
// shared store the takeover loop (Backend.TakeOver) adopts orphans
// (spec/serve.md, "Restart" and "Replicas").
func (s *Served) recoverOrphans(ctx context.Context) {
	if kind, _ := dial.Parse(s.store); kind != dial.Pebble {
		return
	}
	resumed, err := s.b.Recover(ctx)
	if len(resumed) > 0 {
		s.say(fmt.Sprintf("resuming %d run(s) the last shutdown cut off: %s", len(resumed), strings.Join(resumed, ", ")))
	}
	if err != nil {
		s.say(fmt.Sprintf("warning: runs left running, resume them later (agentc run --resume RUN): %v", err))
	}
}

// OpenInspector opens the run inspector of agentc ui over the store at
// target (every app and user shown, ui.AdminUser's view): with o, over
// o's Runner too (Open), so that the runs of o's program can be continued
// from the page; with nil, runs are read, forked and evolution candidates
// decided. close closes what it opened.
func OpenInspector(ctx context.Context, o *Options, target string) (h *ui.Handler, close func(), err error) {
	var (
		st      store.Store
		backend *server.Backend
	)
	if o != nil {
		asm, s, r, c, err := Open(ctx, *o, target)
		if err != nil {
			return nil, nil, err
		}
		st, close = s, c
		backend = asm.Backend(r, s, nil, server.Limits{}, nil)
	} else {
		if st, err = dial.Open(ctx, target); err != nil {
			return nil, nil, err
		}
		close = func() { _ = st.Close() }
	}
	h, err = ui.New(ui.Config{Store: st, Backend: backend, Admins: map[string]bool{ui.AdminUser: true},
		Inspect: inspect.Config{Clock: WallClock{}, Entropy: CryptoEntropy{}}})
	if err != nil {
		close()
		return nil, nil, err
	}
	return h, close, nil
}

// LocalUser is the user a person names (trimmed), else
// the OS user running agentc, else $USER.
func LocalUser(name string) (string, error) {
	if name = strings.TrimSpace(name); name != "" {
		return name, nil
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username, nil
	}
	if u := os.Getenv("USER"); u != "" {
		return u, nil
	}
	return "", errors.New("cannot tell the local user: give --user")
}

// Stdio is agentc mcp stdio's server: the MCP tools of agentc serve's /mcp
// over one process's standard input and output.
type Stdio struct {
	h     *mcp.Handler
	app   string
	store string
	close func()
}

// NewStdio opens o's Runner over set's store (Open) and its MCP handler;
// version is the serverInfo version. Close closes the Runner.
func NewStdio(ctx context.Context, o Options, set ServeSettings, version string) (*Stdio, error) {
	o.App = set.App
	asm, st, r, closeRunner, err := Open(ctx, o, set.Store)
	if err != nil {
		return nil, err
	}
	h, err := mcp.New(asm.Backend(r, st, o.Logger, set.Limits, nil), mcp.Options{Version: version})
	if err != nil {
		closeRunner()
		return nil, err
	}
	return &Stdio{h: h, app: r.App(), store: set.Store, close: closeRunner}, nil
}

// Describe is the line announcing the server for user.
func (s *Stdio) Describe(user string) string {
	return fmt.Sprintf("serving %s over MCP stdio as user %s (tools %s; store %s)", s.app, user, strings.Join(s.h.Tools(), ", "), dial.Display(s.store))
}

// Serve serves user's requests from in to out until in closes or ctx ends.
func (s *Stdio) Serve(ctx context.Context, user string, in io.Reader, out io.Writer) error {
	return s.h.ServeStdio(ctx, user, in, out)
}

// Close closes the Runner and the store.
func (s *Stdio) Close() { s.close() }

// ServedAt is the inspector API client of the agentc serve that holds the
// Pebble store at target (ui.Served); ok is false for any other store, or
// when no live server holds it.
func ServedAt(target string) (c *ui.Client, info ui.ServeInfo, ok bool) {
	if kind, _ := dial.Parse(target); kind != dial.Pebble {
		return nil, ui.ServeInfo{}, false
	}
	return ui.Served(target)
}
