package assemble

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/mcpclient"
	"github.com/agentc/agentc/runtime/memory"
	"github.com/agentc/agentc/runtime/recall"
	"github.com/agentc/agentc/stdlib"
	"github.com/agentc/agentc/stdlib/tools"
	"github.com/agentc/agentc/vm"
)

// Funcs is stdlib.Funcs() (the builtin table's) plus env() over env (nil: os.LookupEnv) and
// visited() over visited (nil: always false); any other function the
// program names without an implementation is a stub returning null.
func Funcs(p *bytecode.Program, visited func(node string) bool, env func(string) (string, bool)) map[string]vm.Func {
	funcs := stdlib.Funcs()
	funcs["env"] = func(args []types.Value) (types.Value, error) {
		if len(args) == 0 || args[0].Kind() != types.ValString {
			return types.Value{}, fmt.Errorf("env: want a variable name")
		}
		lookup := env
		if lookup == nil {
			lookup = lookupEnv
		}
		if v, ok := lookup(args[0].Str()); ok {
			return types.MakeString(v), nil
		}
		if len(args) > 1 {
			return args[1], nil
		}
		return types.MakeString(""), nil
	}
	funcs["visited"] = func(args []types.Value) (types.Value, error) {
		if visited == nil || len(args) == 0 || args[0].Kind() != types.ValString {
			return types.MakeBool(false), nil
		}
		return types.MakeBool(visited(args[0].Str())), nil
	}
	for _, name := range p.Funcs {
		if _, ok := funcs[name]; !ok {
			funcs[name] = func([]types.Value) (types.Value, error) { return types.Value{}, nil }
		}
	}
	return funcs
}

// unboundTool is what a declared tool is bound to when neither this build
// nor the test block's replay gives it an implementation (agentc test never
// touches the network; agentc run warns at start): calling it fails with a
// tool_error naming the tool and why, so the run goes on as far as it can.
type unboundTool struct {
	spec   runtime.ToolSpec
	effect runtime.Effect
	why    string
}

func (t *unboundTool) Spec() runtime.ToolSpec { return t.spec }
func (t *unboundTool) Effect() runtime.Effect { return t.effect }
func (t *unboundTool) Call(context.Context, runtime.ToolRequest) (json.RawMessage, error) {
	return nil, vm.NewError(vm.KindToolError, "tool %s has no implementation (%s) and no replay", t.spec.Name, t.why)
}

// bound reports whether tools has an implementation of t (by its name, or
// for a builtin tool by the builtin's).
func bound(t *bytecode.Tool, tools map[string]runtime.Tool) bool {
	return tools[t.Name] != nil || (t.Impl.Kind == bytecode.ImplBuiltin && tools[t.Impl.Builtin] != nil)
}

// refuseUnbound binds an unboundTool to every non-agent tool that tools
// lacks.
func refuseUnbound(p *bytecode.Program, tools map[string]runtime.Tool) {
	for i := range p.Tools {
		t := &p.Tools[i]
		if t.Impl.Kind == bytecode.ImplAgent || bound(t, tools) {
			continue
		}
		tools[t.Name] = &unboundTool{spec: runtime.ToolSpec{Name: t.Name, Description: t.Doc}, effect: runtime.Effect(t.Effect), why: implName(t)}
	}
}

// missingTools lists the non-agent tools without an implementation in
// tools, other than those the store-backed services bind.
func missingTools(p *bytecode.Program, tools map[string]runtime.Tool) []string {
	var out []string
	for i := range p.Tools {
		t := &p.Tools[i]
		if t.Impl.Kind == bytecode.ImplAgent || bound(t, tools) {
			continue
		}
		if t.Impl.Kind == bytecode.ImplBuiltin && (contextTools[t.Impl.Builtin] || skillTools[t.Impl.Builtin]) {
			continue // bound by bindContext or bindSkills once the store is open
		}
		out = append(out, t.Name+" ("+implName(t)+")")
	}
	slices.Sort(out)
	return out
}

func implName(t *bytecode.Tool) string {
	switch t.Impl.Kind {
	case bytecode.ImplBuiltin:
		return "builtin." + t.Impl.Builtin
	case bytecode.ImplHTTP:
		return "http"
	case bytecode.ImplExec:
		return "exec"
	case bytecode.ImplMCP:
		return "mcp"
	}
	return "run"
}

// bindDeclared binds the program's `run = http` and `run = exec` tools that
// into lacks (a replay wins): http reaches only hosts, exec runs confined to
// root with a scrubbed environment. An env() header that is not set fails
// the assembly.
func bindDeclared(m *vm.Machine, into map[string]runtime.Tool, cfg tools.Config) error {
	need := false
	for _, t := range m.Program().Tools {
		if (t.Impl.Kind == bytecode.ImplHTTP || t.Impl.Kind == bytecode.ImplExec) && into[t.Name] == nil {
			need = true
		}
	}
	if !need {
		return nil
	}
	if err := tools.BindDeclared(into, m, cfg); err != nil {
		return fmt.Errorf("load tools: %w", err)
	}
	return nil
}

// bindMCP binds the program's `run = mcp` tools that cfg lacks (a replay
// wins) over one mcpclient.Pool, which the Runner closes: its sessions prop (nil: tracing off) writes the trace context into its calls.
// open on first use. It returns the pool (nil when no tool needs it).
func bindMCP(cfg *runtime.RunnerConfig, o Options, prop func(context.Context, http.Header)) (*mcpclient.Pool, error) {
	need := slices.ContainsFunc(cfg.Program.Tools, func(t bytecode.Tool) bool {
		return t.Impl.Kind == bytecode.ImplMCP && cfg.Tools[t.Name] == nil
	})
	if !need {
		return nil, nil
	}
	// MCP servers over HTTP are held to the same host allowlist as
	// `run = http` tools.
	allow := tools.Config{AllowHosts: allowHosts(o.Env)}.AllowURL
	pool := mcpclient.NewPool(mcpclient.Config{Root: o.Root, LookupEnv: o.Env, Allow: allow, Propagate: prop})
	if err := mcpclient.Bind(cfg.Tools, cfg.Machine, pool); err != nil {
		_ = pool.Close(context.Background())
		return nil, fmt.Errorf("load tools: %w", err)
	}
	cfg.Closers = append(cfg.Closers, pool.Close)
	return pool, nil
}

// LockMCP connects to the MCP servers of p's `run = mcp` tools as a Runner
// would (env() from env, HTTP hosts held to AGENTC_ALLOW_HOSTS, stdio
// servers started in their declaring file's folder under root) and returns
// each declaring file's lock file: name (relative to root) and bytes
// (spec/tools.md "Pinned schemas"). The sessions are closed on return.
func LockMCP(ctx context.Context, p *bytecode.Program, root string, env func(string) (string, bool)) (map[string][]byte, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	m, err := vm.New(p, Funcs(p, nil, env))
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	allow := tools.Config{AllowHosts: allowHosts(env)}.AllowURL
	pool := mcpclient.NewPool(mcpclient.Config{Root: root, LookupEnv: env, Allow: allow})
	out, err := mcpclient.Lock(ctx, m, pool)
	if cerr := pool.Close(context.Background()); err == nil && cerr != nil {
		err = cerr
	}
	return out, err
}

// allowHosts reads AGENTC_ALLOW_HOSTS: comma-separated hosts (or *.suffix)
// that http_get, `run = http` tools and `run = mcp { url }` servers may
// reach; empty denies every host.
func allowHosts(env func(string) (string, bool)) []string {
	v, _ := env("AGENTC_ALLOW_HOSTS")
	var hosts []string
	for _, h := range strings.Split(v, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// contextTools are the builtin tools backed by the session and memory
// services: they need the store, so bindContext binds them.
var contextTools = map[string]bool{
	recall.SearchToolName: true, recall.LoadToolName: true,
	memory.SearchToolName: true, memory.AddToolName: true,
}

// skillTools are the builtin tools of skills and workspaces (spec/skills.md):
// they need the store, so bindSkills binds them.
var skillTools = map[string]bool{
	"skill_load": true, "skill_run": true, "workspace_write": true, "workspace_read": true,
	"workspace_list": true, "workspace_exec": true, "workspace_save_artifact": true,
}

// execHide is what confined exec tools may not read: the data directory,
// absolute (none when data is empty).
func execHide(data string) []string {
	if data == "" {
		return nil
	}
	if abs, err := filepath.Abs(data); err == nil {
		data = abs
	}
	return []string{data}
}
