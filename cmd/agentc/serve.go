package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentc/agentc/runtime/assemble"
)

type serveFlags struct {
	assemble.ServeFlags
	grace     time.Duration
	logFormat string
}

func newServeCmd(a *app) *cobra.Command {
	cmd, f := command(&cobra.Command{
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
	}, func(cmd *cobra.Command, args []string, f *serveFlags) error {
		return serveCommand(cmd, a, args[0], *f)
	})
	fl := cmd.Flags()
	fl.StringVar(&f.Addr, "addr", "", "listen address (default 127.0.0.1:8080)")
	addServeStore(fl, &f.ServeFlags)
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
	ctx, stop := whileServing(cmd.Context())
	defer stop()
	tuneGCForServer(a)
	prog, enc, proj, err := loadInProject(a, file)
	if err != nil {
		return err
	}
	f.Set = cmd.Flags().Changed
	sv, err := assemble.StartServe(cmd.Context(), f.ServeFlags, prog, enc, proj.Root, f.logFormat, a.stderr, agentcVersion(), a.warn)
	if err != nil {
		return serveErr(err)
	}
	fmt.Fprintf(a.stderr, "agentc: %s\n", sv)
	return serveUntilStopped(ctx, func(ctx context.Context) error { return sv.Run(ctx, f.grace) })
}

// serveErr is the exit of a server that did not start: 2 for its
// settings (*assemble.ServeConfigError), else 1.
func serveErr(err error) error {
	var confErr *assemble.ServeConfigError
	if errors.As(err, &confErr) {
		return usageErr(err)
	}
	return failErr(err)
}

// addServeStore adds --data, --store and --app, the store and app of a
// served program, to fl.
func addServeStore(fl *pflag.FlagSet, f *assemble.ServeFlags) {
	fl.StringVar(&f.Data, "data", "", dataHelp)
	fl.StringVar(&f.Store, "store", "", storeHelp)
	fl.StringVar(&f.App, "app", "", "app name in session keys (default: the serve block's, else the workflow name)")
}
