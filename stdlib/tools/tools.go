// Package tools holds the implementations of the builtin tools a program
// names with `run = builtin.NAME`: http_get, read_file, list_dir,
// json_query, now and tls_chain. Every outside dependency (clock, dialer,
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
	"sort"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
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

// Builtin describes one builtin tool: its name (as in `builtin.NAME`), doc,
// effect, and input/output types (the compiler's view of it).
type Builtin struct {
	Name   string
	Doc    string
	Effect runtime.Effect
	Input  *types.Type // a record
	Output *types.Type
	call   func(cfg Config, ctx context.Context, args json.RawMessage) (any, error)
}

// Table returns the builtin tool descriptions, sorted by name. The table is
// fresh on every call.
func Table() []Builtin {
	str, i, b := types.StringType, types.IntType, types.BoolType
	out := []Builtin{
		{Name: "http_get", Effect: runtime.ReadOnly,
			Doc:   "GETs a URL whose host is on the allowlist; returns status, body (text, capped) and content type.",
			Input: rec(types.Field{Name: "url", Type: str}),
			Output: rec(
				types.Field{Name: "status", Type: i},
				types.Field{Name: "body", Type: str},
				types.Field{Name: "content_type", Type: str},
			), call: httpGet},
		{Name: "read_file", Effect: runtime.ReadOnly,
			Doc:    "Reads a text file of the workspace (relative path, size capped).",
			Input:  rec(types.Field{Name: "path", Type: str}),
			Output: str, call: readFile},
		{Name: "list_dir", Effect: runtime.ReadOnly,
			Doc:   "Lists a directory of the workspace (relative path, default the workspace root), sorted by name.",
			Input: rec(types.Field{Name: "path", Type: types.OptionalOf(str)}),
			Output: types.ListOf(rec(
				types.Field{Name: "name", Type: str},
				types.Field{Name: "dir", Type: b},
				types.Field{Name: "size", Type: i},
			)), call: listDir},
		{Name: "json_query", Effect: runtime.ReadOnly,
			Doc: "Selects a path such as \"a.b[0].c\" or \"$.items[0].name\" from a JSON value (json() semantics; null when absent).",
			Input: rec(
				types.Field{Name: "value", Type: types.JSONType},
				types.Field{Name: "path", Type: str},
			),
			Output: types.JSONType, call: jsonQuery},
		{Name: "now", Effect: runtime.ReadOnly,
			Doc:    "The current time, RFC 3339 (UTC).",
			Input:  rec(),
			Output: str, call: now},
		{Name: "tls_chain", Effect: runtime.ReadOnly,
			Doc: "Reads the TLS certificate chain of host:port: the subjects, leaf first, and the leaf's expiry (RFC 3339). " +
				"The handshake skips verification (InsecureSkipVerify) only so that expired or untrusted chains can be read; nothing is sent over the connection.",
			Input: rec(
				types.Field{Name: "host", Type: str},
				types.Field{Name: "port", Type: i, HasDefault: true, Default: types.MakeInt(443)},
			),
			Output: rec(
				types.Field{Name: "chain", Type: types.ListOf(str)},
				types.Field{Name: "expires", Type: str},
			), call: tlsChain},
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
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

// Impls names the builtin implementations, for compiler.Universe.Impls.
func Impls() map[string]bool {
	m := map[string]bool{}
	for _, b := range Table() {
		m[b.Name] = true
	}
	return m
}

func rec(fields ...types.Field) *types.Type {
	t, err := types.NewRecord("", fields)
	if err != nil {
		panic(err) // static table only
	}
	return t
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

// decode unmarshals args into dst; bad arguments are a tool_error.
func decode(name string, args json.RawMessage, dst any) error {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, dst); err != nil {
		return runtime.Errorf(vm.KindToolError, "%s: bad arguments: %v", name, err)
	}
	return nil
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
