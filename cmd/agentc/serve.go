package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/server/a2a"
	"github.com/agentc/agentc/runtime/server/agui"
	"github.com/agentc/agentc/runtime/server/openai"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store/pebble"
)

type serveFlags struct {
	addr, data, app   string
	tokens            []string
	open              bool
	maxRuns           int
	maxBody           int64
	runTimeout, write time.Duration
	grace             time.Duration
	logFormat         string
}

func newServeCmd(a *app) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve FILE|OUT.agb [--addr HOST:PORT] [--data DIR] [--token TOKEN=USER]... [--open]",
		Short: "Serve a workflow over AG-UI, A2A and the OpenAI chat API",
		Long: `Serve compiles FILE (or loads verified bytecode) and serves its serve
target, else its only graph or agent, on one port: the protocols its serve
block configures (all three when it configures none: AG-UI at /agui, A2A at
/a2a, OpenAI-compatible at /v1), GET /healthz and GET /metrics (Prometheus).
State and session ledgers live in a Pebble store under --data (default
$AGENTC_DATA, else ./.agentc).

Every request needs "Authorization: Bearer TOKEN"; each token maps to a
user id (--token TOKEN=USER, repeatable, or AGENTC_TOKENS="t1=alice,t2=bob").
--open serves without authentication (user from the X-Agentc-User header,
else "anonymous"), and only on a loopback address.

Models: with OPENAI_API_KEY set, each model declaration calls an
OpenAI-compatible endpoint; without it, the models and tools replay the
fixtures of the first test block that runs the served runnable.

Settings are taken from, in order: flags, AGENTC_* environment variables
(AGENTC_ADDR, AGENTC_DATA, AGENTC_TOKENS, AGENTC_OPEN, AGENTC_MAX_RUNS,
AGENTC_MAX_BODY, AGENTC_RUN_TIMEOUT, AGENTC_WRITE_TIMEOUT), the serve:
section of agentc.yaml at the project root, the serve block, defaults.

SIGINT or SIGTERM shuts down gracefully: no new runs, running ones get
--grace to finish and are then canceled (and stay resumable), the store is
closed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return serveCommand(cmd, a, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "", "listen address (default 127.0.0.1:8080)")
	fl.StringVar(&f.data, "data", "", "the data directory (default $AGENTC_DATA, else ./.agentc)")
	fl.StringVar(&f.app, "app", "", "app name in session keys (default: the serve block's, else the workflow name)")
	fl.StringArrayVar(&f.tokens, "token", nil, "a bearer token and the user it authenticates, TOKEN=USER (repeatable)")
	fl.BoolVar(&f.open, "open", false, "serve without authentication (loopback addresses only)")
	fl.IntVar(&f.maxRuns, "max-runs", 0, "concurrent runs across all protocols (default 64)")
	fl.Int64Var(&f.maxBody, "max-body", 0, "request body limit in bytes (default 4 MiB)")
	fl.DurationVar(&f.runTimeout, "run-timeout", 0, "wall-time limit of one run (default 10m)")
	fl.DurationVar(&f.write, "write-timeout", 0, "limit of one write to a slow client (default 30s)")
	fl.DurationVar(&f.grace, "grace", 30*time.Second, "on shutdown, how long running runs may take before they are canceled")
	fl.StringVar(&f.logFormat, "log", "json", "request log format on standard error: json, text or off")
	return cmd
}

// serveSettings are the resolved settings of a server.
type serveSettings struct {
	addr, data, app string
	tokens          map[string]string
	open            bool
	limits          server.Limits
}

// yamlServe is the serve: section of agentc.yaml.
type yamlServe struct {
	Serve struct {
		Addr         string            `yaml:"addr"`
		Data         string            `yaml:"data"`
		App          string            `yaml:"app"`
		Tokens       map[string]string `yaml:"tokens"`
		Open         *bool             `yaml:"open"`
		MaxRuns      int               `yaml:"max_runs"`
		MaxBody      int64             `yaml:"max_body"`
		RunTimeout   string            `yaml:"run_timeout"`
		WriteTimeout string            `yaml:"write_timeout"`
	} `yaml:"serve"`
}

// resolveServe applies flag > AGENTC_* env > agentc.yaml > serve block >
// default to every setting; changed reports whether a flag was given.
func resolveServe(changed func(flag string) bool, f serveFlags, prog *bytecode.Program, root string) (serveSettings, error) {
	var y yamlServe
	if b, err := os.ReadFile(filepath.Join(root, "agentc.yaml")); err == nil {
		if err := yaml.Unmarshal(b, &y); err != nil {
			return serveSettings{}, fmt.Errorf("agentc.yaml: %w", err)
		}
	}
	pick := func(flag, flagVal, env, yamlVal, block, def string) string {
		if changed(flag) {
			return flagVal
		}
		if v := os.Getenv(env); v != "" {
			return v
		}
		if yamlVal != "" {
			return yamlVal
		}
		if block != "" {
			return block
		}
		return def
	}
	var blockAttrs []bytecode.Attr
	if prog.Serve != nil {
		blockAttrs = prog.Serve.Attrs
	}
	s := serveSettings{
		addr: pick("addr", f.addr, "AGENTC_ADDR", y.Serve.Addr, assemble.AttrString(prog, blockAttrs, "addr", nil), "127.0.0.1:8080"),
		data: pick("data", f.data, "AGENTC_DATA", y.Serve.Data, "", ".agentc"),
		app:  pick("app", f.app, "AGENTC_APP", y.Serve.App, assemble.AttrString(prog, blockAttrs, "app", nil), ""),
	}
	// Tokens: the first source that gives any.
	s.tokens = map[string]string{}
	switch {
	case changed("token"):
		for _, t := range f.tokens {
			m, err := server.ParseTokens(t)
			if err != nil {
				return s, usageErr(fmt.Errorf("--token: %w", err))
			}
			for k, v := range m {
				s.tokens[k] = v
			}
		}
	case os.Getenv("AGENTC_TOKENS") != "":
		m, err := server.ParseTokens(os.Getenv("AGENTC_TOKENS"))
		if err != nil {
			return s, usageErr(fmt.Errorf("AGENTC_TOKENS: %w", err))
		}
		s.tokens = m
	default:
		for k, v := range y.Serve.Tokens {
			s.tokens[k] = v
		}
	}
	openStr := ""
	if y.Serve.Open != nil {
		openStr = strconv.FormatBool(*y.Serve.Open)
	}
	openV := pick("open", strconv.FormatBool(f.open), "AGENTC_OPEN", openStr, "", "false")
	var err error
	if s.open, err = strconv.ParseBool(openV); err != nil {
		return s, usageErr(fmt.Errorf("open: %q is not a boolean", openV))
	}
	num := func(flag string, flagVal int64, env string, yamlVal int64) (int64, error) {
		yv := ""
		if yamlVal != 0 {
			yv = strconv.FormatInt(yamlVal, 10)
		}
		v := pick(flag, strconv.FormatInt(flagVal, 10), env, yv, "", "0")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, usageErr(fmt.Errorf("%s: %q is not a non-negative integer", flag, v))
		}
		return n, nil
	}
	dur := func(flag string, flagVal time.Duration, env, yamlVal string) (time.Duration, error) {
		v := pick(flag, flagVal.String(), env, yamlVal, "", "0s")
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, usageErr(fmt.Errorf("%s: %q is not a duration", flag, v))
		}
		return d, nil
	}
	n, err := num("max-runs", int64(f.maxRuns), "AGENTC_MAX_RUNS", int64(y.Serve.MaxRuns))
	if err != nil {
		return s, err
	}
	s.limits.MaxRuns = int(n)
	if s.limits.MaxBodyBytes, err = num("max-body", f.maxBody, "AGENTC_MAX_BODY", y.Serve.MaxBody); err != nil {
		return s, err
	}
	if s.limits.RunTimeout, err = dur("run-timeout", f.runTimeout, "AGENTC_RUN_TIMEOUT", y.Serve.RunTimeout); err != nil {
		return s, err
	}
	if s.limits.WriteTimeout, err = dur("write-timeout", f.write, "AGENTC_WRITE_TIMEOUT", y.Serve.WriteTimeout); err != nil {
		return s, err
	}
	return s, nil
}

// endpoint is one protocol the serve block asks for.
type endpoint struct {
	path  string
	attrs []bytecode.Attr
}

// endpoints lists the configured protocols; none configured means all
// three at their default paths.
func endpoints(p *bytecode.Program) map[bytecode.ProtocolKind]endpoint {
	out := map[bytecode.ProtocolKind]endpoint{}
	if p.Serve != nil {
		for _, pr := range p.Serve.Protocols {
			out[pr.Kind] = endpoint{path: pr.Path, attrs: pr.Attrs}
		}
	}
	if len(out) == 0 {
		out[bytecode.ProtoAGUI] = endpoint{}
		out[bytecode.ProtoA2A] = endpoint{}
		out[bytecode.ProtoOpenAI] = endpoint{}
	}
	defaults := map[bytecode.ProtocolKind]string{bytecode.ProtoAGUI: "/agui", bytecode.ProtoA2A: "/a2a", bytecode.ProtoOpenAI: "/v1"}
	for k, e := range out {
		if e.path == "" {
			e.path = defaults[k]
			out[k] = e
		}
	}
	return out
}

// newID returns prefix + a time-ordered random id.
func newID(prefix string) string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return prefix + strconv.FormatInt(time.Now().UnixMilli(), 36) + hex.EncodeToString(b[:])
}

func serveCommand(cmd *cobra.Command, a *app, file string, f serveFlags) error {
	prog, enc, err := loadVerified(a, file)
	if err != nil {
		return err
	}
	proj, err := openProject()
	if err != nil {
		return usageErr(err)
	}
	set, err := resolveServe(cmd.Flags().Changed, f, prog, proj.root)
	if err != nil {
		return err
	}
	if set.open && !server.IsLoopback(set.addr) {
		return usageErr(fmt.Errorf("--open serves without authentication and is allowed on loopback addresses only, not %s", set.addr))
	}
	if !set.open && len(set.tokens) == 0 {
		return usageErr(errors.New("no bearer tokens: give --token TOKEN=USER (or AGENTC_TOKENS=TOKEN=USER,…), or --open to serve on loopback without authentication"))
	}
	var logger *slog.Logger
	switch f.logFormat {
	case "json":
		logger = slog.New(slog.NewJSONHandler(a.stderr, nil))
	case "text":
		logger = slog.New(slog.NewTextHandler(a.stderr, nil))
	case "off":
		logger = slog.New(slog.DiscardHandler)
	default:
		return usageErr(fmt.Errorf("--log: %q is not json, text or off", f.logFormat))
	}
	opts := assembleOptions(a, prog, enc, proj.root, set.data)
	opts.App, opts.Logger = set.app, logger
	asm, err := assemble.Prepare(opts)
	if err != nil {
		return &exitError{code: exitFail, err: err}
	}
	st, err := pebble.Open(set.data, nil)
	if err != nil {
		return &exitError{code: exitFail, err: err}
	}
	r, err := asm.Runner(st)
	if err != nil {
		_ = st.Close()
		return &exitError{code: exitFail, err: err}
	}
	clock := asm.Config().Clock
	b := &server.Backend{
		Runner: r, Store: st, Program: prog, Sessions: session.New(st), Clock: clock,
		NewID: newID, Logger: logger, Limits: set.limits, Metrics: server.NewMetrics(),
	}
	mounts, closers, names, err := serveMounts(b, prog)
	if err != nil {
		_ = r.Close(context.Background())
		_ = st.Close()
		return &exitError{code: exitFail, err: err}
	}
	srv, err := server.New(server.Config{Addr: set.addr, Backend: b, Mounts: mounts, Closers: closers,
		Tokens: set.tokens, Open: set.open, Logger: logger})
	if err != nil {
		_ = r.Close(context.Background())
		_ = st.Close()
		return usageErr(err)
	}
	l, err := net.Listen("tcp", set.addr)
	if err != nil {
		_ = r.Close(context.Background())
		_ = st.Close()
		return &exitError{code: exitFail, err: fmt.Errorf("listen: %w", err)}
	}
	fmt.Fprintf(a.stderr, "agentc: serving %s on http://%s (%s; data %s)\n", r.App(), l.Addr(), strings.Join(names, ", "), set.data)
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }() // owned here: Shutdown ends it, joined below
	select {
	case err = <-served:
		_ = srv.Shutdown(context.Background())
		return &exitError{code: exitFail, err: err}
	case <-ctx.Done():
	}
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

// serveMounts builds the adapters the program's serve block configures,
// with the shutdown hooks of those that own goroutines.
func serveMounts(b *server.Backend, prog *bytecode.Program) ([]server.Mount, []func(context.Context) error, []string, error) {
	var (
		mounts  []server.Mount
		closers []func(context.Context) error
		names   []string
	)
	eps := endpoints(prog)
	if ep, ok := eps[bytecode.ProtoOpenAI]; ok {
		h := openai.New(b, openai.Options{Path: ep.path, Model: assemble.AttrString(prog, ep.attrs, "model", nil)})
		mounts = append(mounts, h.Mount())
		names = append(names, "openai "+h.Path()+" (model "+h.Model()+")")
	}
	if ep, ok := eps[bytecode.ProtoAGUI]; ok {
		h := agui.New(b, agui.Options{})
		p := "/" + strings.Trim(ep.path, "/")
		mounts = append(mounts,
			server.Mount{Pattern: p, Protocol: "agui", Handler: h},
			server.Mount{Pattern: p + "/", Protocol: "agui", Handler: h}) // {path}/cancel
		names = append(names, "agui "+p)
	}
	if _, ok := eps[bytecode.ProtoA2A]; ok {
		opts, err := a2a.OptionsFromProgram(prog, os.LookupEnv)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("serve block a2a: %w", err)
		}
		opts.Artifacts = runArtifacts(artifact.New(b.Store, b.Clock.Now))
		h := a2a.New(b, opts)
		mounts = append(mounts,
			server.Mount{Pattern: h.Path(), Protocol: a2a.Proto, Handler: h},
			server.Mount{Pattern: a2a.CardPath, Protocol: a2a.Proto, Handler: h.CardHandler(), Public: true})
		closers = append(closers, h.Close)
		names = append(names, "a2a "+h.Path())
	}
	return mounts, closers, names, nil
}

// runArtifacts makes a completed A2A task's artifacts: the run's output
// (a2a.OutputArtifacts), then every artifact revision the run saved in its
// session through the artifact service, as a text part for text/* (and JSON)
// content, else a file part with the bytes, named by the artifact's name.
func runArtifacts(svc *artifact.Service) a2a.ArtifactFunc {
	return func(ctx context.Context, req a2a.ArtifactRequest) ([]a2a.Artifact, error) {
		out, err := a2a.OutputArtifacts(ctx, req)
		if err != nil {
			return nil, err
		}
		metas, err := svc.List(ctx, artifact.Filter{App: req.App, User: req.User, Session: req.Context})
		if err != nil {
			return nil, fmt.Errorf("list artifacts of run %s: %w", req.Run, err)
		}
		for _, m := range metas {
			revs, err := svc.Revisions(ctx, artifact.Key{App: m.App, User: m.User, Session: m.Session, Name: m.Name})
			if err != nil {
				return nil, fmt.Errorf("artifact %s: %w", m.Name, err)
			}
			for _, r := range revs {
				if r.Run != req.Run {
					continue
				}
				a, err := svc.Get(ctx, artifact.Key{App: r.App, User: r.User, Session: r.Session, Name: r.Name}, r.Revision)
				if err != nil {
					return nil, fmt.Errorf("artifact %s revision %d: %w", r.Name, r.Revision, err)
				}
				part := a2a.Part{Raw: a.Data, MediaType: r.MimeType, Filename: path.Base(r.Name)}
				if strings.HasPrefix(r.MimeType, "text/") || r.MimeType == "application/json" {
					part = a2a.TextPart(string(a.Data))
				}
				out = append(out, a2a.Artifact{ArtifactID: fmt.Sprintf("%s@%d", r.Name, r.Revision), Name: r.Name,
					Description: fmt.Sprintf("%s, revision %d, saved by run %s", r.Name, r.Revision, r.Run), Parts: []a2a.Part{part}})
			}
		}
		return out, nil
	}
}
