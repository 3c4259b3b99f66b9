package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/retention"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/server/ui"
	"github.com/agentc/agentc/runtime/store/dial"
	"github.com/agentc/agentc/runtime/telemetry"
	"github.com/agentc/agentc/runtime/workspace"
)

type serveFlags struct {
	assemble.ServeFlags
	grace     time.Duration
	logFormat string
}

func newServeCmd(a *app) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve FILE|OUT.agb [--addr HOST:PORT] [--data DIR|--store URL] [--token TOKEN=USER]... [--open]",
		Short: "Serve a workflow over AG-UI, A2A, the OpenAI chat API and MCP",
		Long: `Serve compiles FILE (or loads verified bytecode) and serves its serve
target, else its only graph or agent, on one port: the protocols its serve
block configures (all four when it configures none: AG-UI at /agui, A2A at
/a2a, OpenAI-compatible at /v1, MCP streamable HTTP at /mcp), GET /healthz
and GET /metrics (Prometheus).
State and session ledgers live in the store --store selects (a postgres://
URL, or a Pebble directory; default $AGENTC_STORE, else store: in
agentc.yaml, else the Pebble store in the data directory --data,
$AGENTC_DATA, ./.agentc).

Every request needs "Authorization: Bearer TOKEN"; each token maps to a
user id (--token TOKEN=USER, repeatable, or AGENTC_TOKENS="t1=alice,t2=bob").
--open serves without authentication (user from the X-Agentc-User header,
else "anonymous"), only on a loopback address, only to requests for a
loopback Host from no Origin or a loopback one, and POSTs
only with Content-Type: application/json; it takes no tokens.

The A2A agent card's url is --public-url + the A2A path (set it behind a
TLS terminator or proxy), else the listen address; X-Forwarded-Host/Proto
are believed only from --trusted-proxy addresses. A2A push notifications
are on when --push-host names the hosts webhooks may be on (AGENTC_ALLOW_HOSTS
syntax; a client's webhook elsewhere is refused).

Models: with OPENAI_API_KEY set, each model declaration calls an
OpenAI-compatible endpoint; without it, the models and tools replay the
fixtures of the first test block that runs the served runnable.

Settings are taken from, in order: flags, AGENTC_* environment variables
(AGENTC_ADDR, AGENTC_DATA, AGENTC_TOKENS, AGENTC_OPEN, AGENTC_MAX_RUNS,
AGENTC_MAX_BODY, AGENTC_RUN_TIMEOUT, AGENTC_WRITE_TIMEOUT, AGENTC_PUBLIC_URL,
AGENTC_TRUSTED_PROXIES, AGENTC_PUSH_HOSTS), the serve:
section of agentc.yaml at the project root, the serve block, defaults.

Traces (OpenTelemetry, OTLP over HTTP or gRPC) are off unless the standard
variables configure them (OTEL_TRACES_EXPORTER=otlp, OTEL_EXPORTER_OTLP_ENDPOINT,
OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_SERVICE_NAME; spec/telemetry.md); a request's
traceparent then makes its run a child of the caller's span.

On a PostgreSQL store several replicas may serve one app: each owns the
runs it drives through a lease (--lease-ttl, AGENTC_LEASE_TTL, default 10s)
and takes over the runs of a replica that died within 2× the TTL.

SIGINT or SIGTERM shuts down gracefully: no new runs, running ones get
--grace to finish and are then canceled (and stay resumable; on PostgreSQL
they are handed over to another replica, which resumes them), the store is
closed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return serveCommand(cmd, a, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Addr, "addr", "", "listen address (default 127.0.0.1:8080)")
	fl.StringVar(&f.Data, "data", "", dataHelp)
	fl.StringVar(&f.Store, "store", "", storeHelp)
	fl.StringVar(&f.App, "app", "", "app name in session keys (default: the serve block's, else the workflow name)")
	fl.StringArrayVar(&f.Tokens, "token", nil, "a bearer token and the user it authenticates, TOKEN=USER (repeatable)")
	fl.BoolVar(&f.Open, "open", false, "serve without authentication (loopback addresses only)")
	fl.IntVar(&f.MaxRuns, "max-runs", 0, "concurrent runs across all protocols (default 64)")
	fl.Int64Var(&f.MaxBody, "max-body", 0, "request body limit in bytes (default 4 MiB)")
	fl.DurationVar(&f.RunTimeout, "run-timeout", 0, "wall-time limit of one run (default 10m)")
	fl.DurationVar(&f.WriteTimeout, "write-timeout", 0, "limit of one write to a slow client (default 30s)")
	fl.DurationVar(&f.grace, "grace", 30*time.Second, "on shutdown, how long running runs may take before they are canceled")
	fl.StringVar(&f.logFormat, "log", "json", "request log format on standard error: json, text or off")
	fl.StringVar(&f.PublicURL, "public-url", "", "the server's public base URL, for the A2A agent card (default: the listen address)")
	fl.StringArrayVar(&f.TrustedProxies, "trusted-proxy", nil, "a proxy (IP or CIDR) whose X-Forwarded-Host/Proto are believed (repeatable)")
	fl.DurationVar(&f.LeaseTTL, "lease-ttl", 0, "on a PostgreSQL store, the lease of a run this replica drives; another replica takes a dead replica's runs over within 2× it (default $AGENTC_LEASE_TTL, else 10s)")
	fl.BoolVar(&f.UI, "ui", true, "serve the run inspector at /ui/ (spec/inspector.md)")
	fl.BoolVar(&f.UpgradeWaiting, "upgrade-waiting", false, "move a run of an older program to this one when it resumes, if agentc upgrade-check proves it compatible (spec/upgrade.md)")
	fl.StringArrayVar(&f.PushHosts, "push-host", nil, "a host (host, host:port, host:*, *.suffix) A2A push-notification webhooks may be on (repeatable; none: push is off)")
	return cmd
}

func serveCommand(cmd *cobra.Command, a *app, file string, f serveFlags) error {
	prog, enc, proj, err := loadInProject(a, file)
	if err != nil {
		return err
	}
	f.Set = cmd.Flags().Changed
	set, err := assemble.ResolveServe(f.ServeFlags, prog, proj.Root, nil)
	if err != nil {
		return usageErr(err)
	}
	if err := set.CheckAuth(); err != nil {
		return usageErr(err)
	}
	if err := assemble.ExecConfinement(prog, workspace.Confinement(), set.Tokens, set.Open, nil, a.warn); err != nil {
		return usageErr(err)
	}
	logger, err := assemble.RequestLogger(f.logFormat, a.stderr)
	if err != nil {
		return usageErr(err)
	}
	opts := assembleOptions(a, prog, enc, proj.Root, set.Data)
	opts.Replica.TTL = set.LeaseTTL
	metrics := server.NewMetrics()
	opts.App, opts.Logger, opts.Metrics, opts.Upgrade = set.App, logger, metrics, set.Upgrade()
	asm, st, r, closeRunner, err := assemble.Open(cmd.Context(), opts, set.Store)
	if err != nil {
		return failErr(err)
	}
	clock := asm.Config().Clock
	b := asm.Backend(r, st, logger, set.Limits, metrics)
	// Listen first: the A2A card names the address actually bound (a
	// --addr with port 0 gets one from the kernel).
	l, err := net.Listen("tcp", set.Addr)
	if err != nil {
		closeRunner()
		return &exitError{code: exitFail, err: fmt.Errorf("listen: %w", err)}
	}
	bound := set
	bound.Addr = l.Addr().String()
	bound.Version = agentcVersion()
	mounts, closers, names, err := assemble.Mounts(b, prog, bound, nil)
	if err == nil && set.UI {
		var um []server.Mount
		um, err = assemble.UIMounts(b, st, asm.Config().Entropy, map[string]bool{ui.AdminUser: true})
		mounts = append(mounts, um...)
		names = append(names, "ui "+ui.PagePath)
	}
	if err != nil {
		_ = l.Close()
		closeRunner()
		return &exitError{code: exitFail, err: err}
	}
	// Retention passes run until the runs have ended, before the store
	// is closed (spec/serve.md, "Retention").
	closers = append(closers, assemble.StartRetention(st, r.App(), set.Retention, clock.Now, logger, metrics))
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
			fmt.Fprintf(a.stderr, "agentc: warning: %v (agentc sessions and the other inspection commands cannot reach this server)\n", err)
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
		return usageErr(err)
	}
	fmt.Fprintf(a.stderr, "agentc: serving %s on http://%s (%s; store %s)\n", r.App(), l.Addr(), strings.Join(names, ", "), dial.Display(set.Store))
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	recoverOrphans(ctx, a, b, set.Store)
	takeCtx, stopTaking := context.WithCancel(ctx)
	taking := make(chan struct{})
	go func() { // owned here: stopped and joined before the shutdown
		defer close(taking)
		b.TakeOver(takeCtx, func(resumed []string, err error) {
			if len(resumed) > 0 {
				fmt.Fprintf(a.stderr, "agentc: taking over %d run(s) a stopped replica left: %s\n", len(resumed), strings.Join(resumed, ", "))
			}
			if err != nil {
				fmt.Fprintf(a.stderr, "agentc: warning: runs left running, retrying: %v\n", err)
			}
		})
	}()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }() // owned here: Shutdown ends it, joined below
	select {
	case err = <-served:
		stopTaking()
		<-taking
		_ = srv.Shutdown(context.Background())
		return &exitError{code: exitFail, err: err}
	case <-ctx.Done():
	}
	stopTaking()
	<-taking
	fmt.Fprintf(a.stderr, "agentc: shutting down (runs get %s to finish)\n", f.grace)
	sctx, cancel := context.WithTimeout(context.Background(), f.grace)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-served; err == nil {
		err = serr
	}
	if err != nil {
		return &exitError{code: exitFail, err: err}
	}
	return nil
}

// recoverOrphans resumes the runs the last process on a Pebble store left
// running (it held the store's lock, so nothing drives them now); on a
// shared store the takeover loop (Backend.TakeOver) adopts orphans
// (spec/serve.md, "Restart" and "Replicas").
func recoverOrphans(ctx context.Context, a *app, b *server.Backend, target string) {
	if kind, _ := dial.Parse(target); kind != dial.Pebble {
		return
	}
	resumed, err := b.Recover(ctx)
	if len(resumed) > 0 {
		fmt.Fprintf(a.stderr, "agentc: resuming %d run(s) the last shutdown cut off: %s\n", len(resumed), strings.Join(resumed, ", "))
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "agentc: warning: runs left running, resume them later (agentc run --resume RUN): %v\n", err)
	}
}
