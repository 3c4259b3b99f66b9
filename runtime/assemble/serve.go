package assemble

// Serving a program: the server settings (flags, environment, agentc.yaml,
// the serve block), and the protocol adapters its serve block configures.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/inspect"
	"github.com/agentc/agentc/runtime/outbound"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/server/a2a"
	"github.com/agentc/agentc/runtime/server/agui"
	"github.com/agentc/agentc/runtime/server/mcp"
	"github.com/agentc/agentc/runtime/server/openai"
	"github.com/agentc/agentc/runtime/server/ui"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/stdlib/tools"
	"github.com/agentc/agentc/vm"
)

// ServeFlags are the server settings given on agentc serve's command line.
// Set reports whether a flag was given, by its name (addr, data, app,
// token, open, max-runs, max-body, run-timeout, write-timeout, public-url,
// trusted-proxy, store, push-host, ui); nil: none was.
type ServeFlags struct {
	Addr, Data, App, Store   string
	Tokens                   []string // TOKEN=USER entries
	Open                     bool
	UI                       bool // the run inspector at /ui/
	UpgradeWaiting           bool // move resumed runs of older programs when provably compatible
	MaxRuns                  int
	MaxBody                  int64
	RunTimeout, WriteTimeout time.Duration
	PublicURL                string
	TrustedProxies           []string // IPs or CIDRs
	PushHosts                []string // webhook hosts for A2A push notifications
	LeaseTTL                 time.Duration
	Set                      func(flag string) bool
}

// ServeSettings are the resolved settings of a server.
type ServeSettings struct {
	Addr, Data, App string
	// Propagate, set when the Runner is traced (NewServed, from
	// Assembly.Tracing: telemetry.Inject), writes the trace context into
	// outgoing requests' headers: A2A push notifications.
	Propagate func(ctx context.Context, h http.Header)
	// Store is the store target (spec/storage.md, "Selecting a store"):
	// a Pebble directory (by default Data) or a postgres:// URL.
	Store  string
	Tokens map[string]string // token → user
	Open   bool
	Limits server.Limits
	// PublicURL is the server's public base URL (the A2A card's url),
	// empty for the listen address.
	PublicURL string
	// TrustedProxies are the peers whose X-Forwarded-Host/Proto count.
	TrustedProxies []netip.Prefix
	// Version is the server version protocols report (MCP serverInfo);
	// empty: "dev".
	Version string
	// PushHosts are the hosts A2A push-notification webhooks may be on
	// (AGENTC_ALLOW_HOSTS syntax); empty: push notifications are off.
	PushHosts []string
	// Retention is the retention: section of agentc.yaml; the server
	// applies its app's policy (StartRetention).
	Retention RetentionSettings
	// UI mounts the run inspector (spec/inspector.md) at /ui/.
	UI bool
	// UpgradeWaiting moves a run of an older program to the served one
	// when it resumes and vm/upgrade proves the move compatible (else it
	// continues on its own program): Options.Upgrade =
	// runtime.UpgradeIfCompatible (spec/upgrade.md).
	UpgradeWaiting bool
	// LeaseTTL is the lease of a run this replica drives on a shared
	// store: --lease-ttl, else AGENTC_LEASE_TTL, else 0 (the Runner's
	// default).
	LeaseTTL time.Duration
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
		PublicURL    string            `yaml:"public_url"`
		Proxies      []string          `yaml:"trusted_proxies"`
		PushHosts    []string          `yaml:"push_hosts"`
		UI           *bool             `yaml:"ui"`
		Upgrade      *bool             `yaml:"upgrade_waiting"`
	} `yaml:"serve"`
}

// ResolveServe applies flag > AGENTC_* environment (env; nil:
// os.LookupEnv) > the serve: section of root/agentc.yaml > prog's serve
// block > default to every setting. Its errors are the user's (a value that
// does not parse).
func ResolveServe(f ServeFlags, prog *bytecode.Program, root string, env func(string) (string, bool)) (ServeSettings, error) {
	if env == nil {
		env = os.LookupEnv
	}
	getenv := func(k string) string { v, _ := env(k); return v }
	changed := f.Set
	if changed == nil {
		changed = func(string) bool { return false }
	}
	py, err := readProjectYAML(root)
	if err != nil {
		return ServeSettings{}, err
	}
	y := py.yamlServe
	pick := func(flag, flagVal, env, yamlVal, block, def string) string {
		if changed(flag) {
			return flagVal
		}
		if v := getenv(env); v != "" {
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
	s := ServeSettings{
		Addr: pick("addr", f.Addr, "AGENTC_ADDR", y.Serve.Addr, prog.AttrString(blockAttrs, "addr", env), "127.0.0.1:8080"),
		Data: pick("data", f.Data, "AGENTC_DATA", y.Serve.Data, "", ".agentc"),
		App:  pick("app", f.App, "AGENTC_APP", y.Serve.App, prog.AttrString(blockAttrs, "app", env), ""),
	}
	if s.Store, err = pickStore(f.Store, changed("store"), py.Store, s.Data, env); err != nil {
		return s, err
	}
	if s.Retention, err = py.Retention.settings(); err != nil {
		return s, err
	}
	// Tokens: the first source that gives any.
	s.Tokens = map[string]string{}
	switch {
	case changed("token"):
		for _, t := range f.Tokens {
			m, err := server.ParseTokens(t)
			if err != nil {
				return s, fmt.Errorf("--token: %w", err)
			}
			for k, v := range m {
				s.Tokens[k] = v
			}
		}
	case getenv("AGENTC_TOKENS") != "":
		m, err := server.ParseTokens(getenv("AGENTC_TOKENS"))
		if err != nil {
			return s, fmt.Errorf("AGENTC_TOKENS: %w", err)
		}
		s.Tokens = m
	default:
		for k, v := range y.Serve.Tokens {
			s.Tokens[k] = v
		}
	}
	boolean := func(flag string, flagVal bool, env string, yamlVal *bool, def string) (bool, error) {
		yv := ""
		if yamlVal != nil {
			yv = strconv.FormatBool(*yamlVal)
		}
		v := pick(flag, strconv.FormatBool(flagVal), env, yv, "", def)
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("%s: %q is not a boolean", flag, v)
		}
		return b, nil
	}
	if s.Open, err = boolean("open", f.Open, "AGENTC_OPEN", y.Serve.Open, "false"); err != nil {
		return s, err
	}
	if s.UI, err = boolean("ui", f.UI, "AGENTC_UI", y.Serve.UI, "true"); err != nil {
		return s, err
	}
	if s.UpgradeWaiting, err = boolean("upgrade-waiting", f.UpgradeWaiting, "AGENTC_UPGRADE_WAITING", y.Serve.Upgrade, "false"); err != nil {
		return s, err
	}
	num := func(flag string, flagVal int64, env string, yamlVal int64) (int64, error) {
		yv := ""
		if yamlVal != 0 {
			yv = strconv.FormatInt(yamlVal, 10)
		}
		v := pick(flag, strconv.FormatInt(flagVal, 10), env, yv, "", "0")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s: %q is not a non-negative integer", flag, v)
		}
		return n, nil
	}
	dur := func(flag string, flagVal time.Duration, env, yamlVal string) (time.Duration, error) {
		v := pick(flag, flagVal.String(), env, yamlVal, "", "0s")
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not a duration", flag, v)
		}
		return d, nil
	}
	n, err := num("max-runs", int64(f.MaxRuns), "AGENTC_MAX_RUNS", int64(y.Serve.MaxRuns))
	if err != nil {
		return s, err
	}
	s.Limits.MaxRuns = int(n)
	if s.Limits.MaxBodyBytes, err = num("max-body", f.MaxBody, "AGENTC_MAX_BODY", y.Serve.MaxBody); err != nil {
		return s, err
	}
	if s.Limits.RunTimeout, err = dur("run-timeout", f.RunTimeout, "AGENTC_RUN_TIMEOUT", y.Serve.RunTimeout); err != nil {
		return s, err
	}
	if s.Limits.WriteTimeout, err = dur("write-timeout", f.WriteTimeout, "AGENTC_WRITE_TIMEOUT", y.Serve.WriteTimeout); err != nil {
		return s, err
	}
	if s.PublicURL, err = publicURL(pick("public-url", f.PublicURL, "AGENTC_PUBLIC_URL", y.Serve.PublicURL, "", "")); err != nil {
		return s, fmt.Errorf("--public-url: %w", err)
	}
	// A list: the flag's values, else the variable's comma-separated ones,
	// else the project file's.
	list := func(flag string, flagVal []string, env string, yamlVal []string) []string {
		if changed(flag) {
			return flagVal
		}
		if v := getenv(env); v != "" {
			return strings.Split(v, ",")
		}
		return yamlVal
	}
	proxies := list("trusted-proxy", f.TrustedProxies, "AGENTC_TRUSTED_PROXIES", y.Serve.Proxies)
	if s.TrustedProxies, err = server.ParsePrefixes(proxies); err != nil {
		return s, fmt.Errorf("--trusted-proxy: %w", err)
	}
	for _, h := range list("push-host", f.PushHosts, "AGENTC_PUSH_HOSTS", y.Serve.PushHosts) {
		if h = strings.TrimSpace(h); h != "" {
			s.PushHosts = append(s.PushHosts, h)
		}
	}
	if s.LeaseTTL, err = leaseTTL(f.LeaseTTL, changed("lease-ttl"), getenv); err != nil {
		return s, err
	}
	return s, nil
}

// leaseTTL is --lease-ttl, else AGENTC_LEASE_TTL, else 0 (the default).
func leaseTTL(flag time.Duration, set bool, getenv func(string) string) (time.Duration, error) {
	d, src := flag, "--lease-ttl"
	if !set {
		v := getenv("AGENTC_LEASE_TTL")
		if v == "" {
			return 0, nil
		}
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, fmt.Errorf("AGENTC_LEASE_TTL: %w", err)
		}
		src = "AGENTC_LEASE_TTL"
	}
	if d < 300*time.Millisecond {
		return 0, fmt.Errorf("%s %v: the lease TTL must be at least 300ms (it is renewed every TTL/3)", src, d)
	}
	return d, nil
}

// RequestLogger is the request log in format (json, text or off; empty:
// json) on w.
func RequestLogger(format string, w io.Writer) (*slog.Logger, error) {
	switch format {
	case "json", "":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "off":
		return slog.New(slog.DiscardHandler), nil
	}
	return nil, fmt.Errorf("--log: %q is not json, text or off", format)
}

// publicURL checks a public base URL: http(s), a host, no query.
func publicURL(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, ok := outbound.HTTPURL(raw)
	if !ok || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%q is not an http(s) base URL such as https://agents.example.com", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// Endpoint is one protocol the serve block asks for.
type Endpoint struct {
	Path  string
	Attrs []bytecode.Attr
}

// Endpoints lists the configured protocols; none configured means all
// four at their default paths.
func Endpoints(p *bytecode.Program) map[bytecode.ProtocolKind]Endpoint {
	out := map[bytecode.ProtocolKind]Endpoint{}
	if p.Serve != nil {
		for _, pr := range p.Serve.Protocols {
			out[pr.Kind] = Endpoint{Path: pr.Path, Attrs: pr.Attrs}
		}
	}
	if len(out) == 0 {
		out[bytecode.ProtoAGUI] = Endpoint{}
		out[bytecode.ProtoA2A] = Endpoint{}
		out[bytecode.ProtoOpenAI] = Endpoint{}
		out[bytecode.ProtoMCP] = Endpoint{}
	}
	defaults := map[bytecode.ProtocolKind]string{bytecode.ProtoAGUI: "/agui", bytecode.ProtoA2A: "/a2a", bytecode.ProtoOpenAI: "/v1", bytecode.ProtoMCP: "/mcp"}
	for k, e := range out {
		if e.Path == "" {
			e.Path = defaults[k]
			out[k] = e
		}
	}
	return out
}

// Mounts builds the adapters the program's serve block configures over b,
// with the shutdown hooks of those that own goroutines and a description
// of each ("agui /agui"). env (nil: os.LookupEnv) resolves env() in the
// block; set gives the A2A card's public URL, listen address and trusted
// proxies.
func Mounts(b *server.Backend, prog *bytecode.Program, set ServeSettings, env func(string) (string, bool)) ([]server.Mount, []func(context.Context) error, []string, error) {
	if env == nil {
		env = os.LookupEnv
	}
	var (
		mounts  []server.Mount
		closers []func(context.Context) error
		names   []string
	)
	eps := Endpoints(prog)
	if ep, ok := eps[bytecode.ProtoOpenAI]; ok {
		h := openai.New(b, openai.Options{Path: ep.Path, Model: prog.AttrString(ep.Attrs, "model", env)})
		mounts = append(mounts, h.Mount())
		names = append(names, "openai "+h.Path()+" (model "+h.Model()+")")
	}
	if ep, ok := eps[bytecode.ProtoAGUI]; ok {
		h := agui.New(b, agui.Options{})
		p := "/" + strings.Trim(ep.Path, "/")
		mounts = append(mounts,
			server.Mount{Pattern: p, Protocol: "agui", Handler: h},
			server.Mount{Pattern: p + "/", Protocol: "agui", Handler: h}) // {path}/cancel
		names = append(names, "agui "+p)
	}
	if _, ok := eps[bytecode.ProtoA2A]; ok {
		opts, err := a2a.OptionsFromProgram(prog, env)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("serve block a2a: %w", err)
		}
		opts.Artifacts = a2aArtifacts(artifact.New(b.Docs, b.Clock.Now))
		opts.PublicURL, opts.ListenAddr, opts.TrustedProxies = set.PublicURL, set.Addr, set.TrustedProxies
		if len(set.PushHosts) > 0 {
			opts.Push = &a2a.PushOptions{Allow: tools.Config{AllowHosts: set.PushHosts}.AllowURL, Propagate: set.Propagate}
		}
		h := a2a.New(b, opts)
		mounts = append(mounts, h.Mounts()...)
		closers = append(closers, h.Close)
		names = append(names, "a2a "+h.Path())
	}
	if ep, ok := eps[bytecode.ProtoMCP]; ok {
		h, err := mcp.New(b, mcp.Options{Path: ep.Path, Version: set.Version})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("serve block mcp: %w", err)
		}
		mounts = append(mounts, h.Mount())
		names = append(names, "mcp "+h.Path()+" (tools "+strings.Join(h.Tools(), ", ")+")")
	}
	return mounts, closers, names, nil
}

// UIMounts builds the run inspector's mounts (spec/inspector.md) over st:
// its API scoped to b's app and each request's user, continuing runs
// through b; admins see every user's runs. Forks take b's clock and ent.
func UIMounts(b *server.Backend, st store.Store, ent vm.Entropy, admins map[string]bool) ([]server.Mount, error) {
	if b.Clock == nil || ent == nil {
		return nil, fmt.Errorf("ui: the backend's clock and an entropy source are required")
	}
	h, err := ui.New(ui.Config{Store: st, Backend: b, App: b.App(), Admins: admins,
		Inspect: inspect.Config{Now: b.Clock.Now, Clock: b.Clock, Entropy: ent},
		MaxBody: b.Limits.WithDefaults().MaxBodyBytes, Logger: b.Logger})
	if err != nil {
		return nil, err
	}
	return h.Mounts(), nil
}

// a2aArtifacts makes a completed A2A task's artifacts: the run's output
// (a2a.OutputArtifacts), then every artifact revision the run saved in its
// session through the artifact service (not the request's own files under
// runtime.InputArtifacts), as a text part for text/* (and JSON)
// content, else a file part with the bytes, named by the artifact's name.
func a2aArtifacts(svc *artifact.Service) a2a.ArtifactFunc {
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
			if strings.HasPrefix(m.Name, runtime.InputArtifacts) {
				continue // the request's files, not the run's work
			}
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

// CheckAuth refuses settings that would serve without a sound
// authentication (spec/serve.md, "Authentication"): open with tokens, open
// on an address other than loopback, neither open nor any token.
func (s ServeSettings) CheckAuth() error {
	switch {
	case s.Open && len(s.Tokens) > 0:
		return errors.New("--open serves without authentication and takes no tokens: drop --open, or the tokens (--token, AGENTC_TOKENS, agentc.yaml)")
	case s.Open && !server.IsLoopback(s.Addr):
		return fmt.Errorf("--open serves without authentication and is allowed on loopback addresses only, not %s", s.Addr)
	case !s.Open && len(s.Tokens) == 0:
		return errors.New("no bearer tokens: give --token TOKEN=USER (or AGENTC_TOKENS=TOKEN=USER,…), or --open to serve on loopback without authentication")
	}
	return nil
}

// Upgrade is the Runner's upgrade policy the settings ask for
// (Options.Upgrade): UpgradeIfCompatible with UpgradeWaiting, else
// UpgradeNever.
func (s ServeSettings) Upgrade() runtime.Upgrade {
	if s.UpgradeWaiting {
		return runtime.UpgradeIfCompatible
	}
	return runtime.UpgradeNever
}
