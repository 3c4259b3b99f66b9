// Package tools holds the implementations of the builtin tools a program
// names with `run = builtin.NAME`: the stdlib table's Impl tools, whose
// names, types, effects and docs are the table's. Every outside dependency (clock, dialer,
// HTTP client, workspace, host allowlist) comes in through Config; nothing
// here reads the wall clock or uses a global client.
package tools

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/stdlib"
	"github.com/agentc/agentc/vm"
)

// Clock tells the current time (cmd/agentc's wallClock satisfies it).
type Clock interface{ Now() time.Time }

// DialFunc dials a network connection (net.Dialer.DialContext's shape).
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Defaults.
const (
	DefaultTimeout  = 10 * time.Second
	DefaultMaxBytes = 1 << 20
)

// Config injects the dependencies of the builtin tools.
type Config struct {
	// Workspace is the directory read_file and list_dir are confined to.
	// Empty: both tools refuse every call.
	Workspace string
	// AllowHosts lists the hosts http_get may reach: an exact host name
	// ("api.example.com", "127.0.0.1") or "*.suffix" for any subdomain of
	// suffix. Empty denies every host.
	AllowHosts []string
	// Clock serves now. Nil: now fails with unavailable.
	Clock Clock
	// Dialer dials TCP for http_get (when HTTPClient is nil) and tls_chain.
	// Nil: a net.Dialer with Timeout.
	Dialer DialFunc
	// HTTPClient, when set, performs http_get requests (its CheckRedirect
	// is replaced by the allowlist check). Nil: a private client over Dialer.
	HTTPClient *http.Client
	// RootCAs verifies https for the default client (nil: system roots).
	RootCAs *x509.CertPool
	// Timeout bounds each call (default DefaultTimeout).
	Timeout time.Duration
	// MaxBytes caps response bodies and file sizes (default DefaultMaxBytes).
	MaxBytes int64
	// LookupEnv reads the environment for declared http and exec tools:
	// env() header values when the tools are bound, and PATH for exec
	// (os.LookupEnv in cmd/agentc). Nil: nothing is set.
	LookupEnv func(name string) (string, bool)
	// UnconfinedExec runs declared exec tools without package jail. By
	// default they are confined where the kernel allows (read-only to
	// Workspace and the system folders, nothing of this process's /proc).
	UnconfinedExec bool
	// ExecHide are paths inside Workspace that confined exec tools cannot
	// read (the data directory); Workspace/.agentc and $AGENTC_DATA (via
	// LookupEnv) are always hidden.
	ExecHide []string
	// Propagate, when set, writes the trace context of ctx into the
	// headers of http_get's and `run = http` tools' requests (traceparent;
	// spec/telemetry.md). Nil: nothing is added.
	Propagate func(ctx context.Context, h http.Header)
}

func (c Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c Config) maxBytes() int64 {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return DefaultMaxBytes
}

func (c Config) dial() DialFunc {
	if c.Dialer != nil {
		return c.Dialer
	}
	d := &net.Dialer{Timeout: c.timeout()}
	return d.DialContext
}

// Builtin is one `run = builtin.NAME` tool: its entry in the stdlib table
// (name, doc, effect, input and output types: the compiler's view of it)
// and its implementation here.
type Builtin struct {
	Name   string
	Doc    string
	Effect runtime.Effect
	Input  *types.Type // a record
	Output *types.Type
	call   callFunc
}

type callFunc func(cfg Config, ctx context.Context, args json.RawMessage) (any, error)

// impls are the implementations of the stdlib table's Impl tools, by name
// (a test checks that the two name the same tools).
var impls = map[string]callFunc{
	"http_get":   decoded("http_get", httpGet),
	"http_fetch": decoded("http_fetch", httpFetch),
	"read_file":  decoded("read_file", readFile),
	"list_dir":   decoded("list_dir", listDir),
	"json_query": decoded("json_query", jsonQuery),
	"now":        now,
	"tls_chain":  decoded("tls_chain", tlsChain),
}

// decoded is the callFunc of tool name that decodes its arguments into In
// (runtime.DecodeArgs: bad arguments are a tool_error) and calls f.
func decoded[In any](name string, f func(cfg Config, ctx context.Context, in In) (any, error)) callFunc {
	return func(cfg Config, ctx context.Context, args json.RawMessage) (any, error) {
		var in In
		if err := runtime.DecodeArgs(name, args, &in); err != nil {
			return nil, err
		}
		return f(cfg, ctx, in)
	}
}

// Table returns the builtin tools, sorted by name: the stdlib table's Impl
// tools that have an implementation here. The slice is fresh on every call.
func Table() []Builtin {
	var out []Builtin
	for _, t := range stdlib.Tools() {
		if call := impls[t.Name]; t.Kind == stdlib.Impl && call != nil {
			out = append(out, Builtin{Name: t.Name, Doc: t.Doc, Effect: t.Effect, Input: t.Input, Output: t.Output, call: call})
		}
	}
	return out
}

// Builtins returns the builtin tools over cfg by name, for the tools map of
// a runtime.RunnerConfig (cmd/agentc looks builtin tools up by Impl name).
func Builtins(cfg Config) map[string]runtime.Tool {
	m := map[string]runtime.Tool{}
	for _, b := range Table() {
		m[b.Name] = &tool{b: b, cfg: cfg}
	}
	return m
}

type tool struct {
	b   Builtin
	cfg Config
}

func (t *tool) Spec() runtime.ToolSpec {
	return runtime.ToolSpec{Name: t.b.Name, Description: t.b.Doc, InputSchema: types.JSONSchema(t.b.Input)}
}

func (t *tool) Effect() runtime.Effect { return t.b.Effect }

func (t *tool) Call(ctx context.Context, req runtime.ToolRequest) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.timeout())
	defer cancel()
	res, err := t.b.call(t.cfg, ctx, req.Args)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, runtime.Errorf(vm.KindInternal, "%s: encode result: %v", t.b.Name, err)
	}
	return out, nil
}

func now(cfg Config, _ context.Context, args json.RawMessage) (any, error) {
	if cfg.Clock == nil {
		return nil, runtime.Errorf(vm.KindUnavailable, "now: no clock configured")
	}
	return cfg.Clock.Now().UTC().Format(time.RFC3339), nil
}

// Bind adds to into, for every declared `run = builtin.NAME` tool, the
// builtin NAME under the declared tool's own name, unless into already has
// an entry for that name (a scripted replay wins). Keying by the declared name
// keeps a builtin from shadowing an unrelated tool that happens to be called
// like it. It returns the builtin names it does not know, sorted.
func Bind(into map[string]runtime.Tool, declared []bytecode.Tool, cfg Config) []string {
	all := Builtins(cfg)
	var unknown []string
	for _, t := range declared {
		if t.Impl.Kind != bytecode.ImplBuiltin || into[t.Name] != nil {
			continue
		}
		if b := all[t.Impl.Builtin]; b != nil {
			into[t.Name] = b
		} else if !slices.Contains(unknown, t.Impl.Builtin) {
			unknown = append(unknown, t.Impl.Builtin)
		}
	}
	slices.Sort(unknown)
	return unknown
}
