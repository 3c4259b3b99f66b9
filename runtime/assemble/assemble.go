// Package assemble turns a compiled program into a ready runtime.Runner:
// the one composition root of agentc run, agentc serve, agentc test, the
// benches and the tests. It binds the program's models (an
// OpenAI-compatible provider per model declaration, or a test block's
// replays), its tools (replays, the builtin tools, `run = http` and
// `run = exec` tools, stubs that fail with a tool_error for the rest), the
// VM's function table (env(), visited()), the services that need the store
// (session recall, memory, history and compaction, skills, workspaces,
// artifacts, evolution) and the policies that ask for them.
//
// Prepare does everything that needs no store (so a missing model fails
// before a store is opened); Assembly.Runner binds the store-backed
// services and makes the Runner. The program is loaded into the VM once,
// and, when Options.Verified is set, not verified again; the Runner keeps
// Options.Encoding rather than encoding the program a second time.
//
// It reads no flag and prints nothing: the process environment comes in
// through Options.Env, warnings go to Options.Warn.
package assemble

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/mcpclient"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/telemetry"
	"github.com/agentc/agentc/stdlib/tools"
	"github.com/agentc/agentc/vm"
)

// Options describe one assembly. Program is required.
type Options struct {
	Program *bytecode.Program
	// Verified says Program passed bytecode.Verify in this process
	// (compiler.Compile's program, or bytecode.Decode then Verify): it is
	// loaded with vm.NewVerified, not verified again.
	Verified bool
	// Encoding is Program's encoding when the caller has it
	// (compiler.Compile's Output.Bytes, the .agb file read); nil: the
	// Runner encodes the program.
	Encoding []byte
	// Root is the project root: fixtures, skills, read_file/list_dir and
	// `run = exec` tools are relative to it and confined to it.
	Root string
	// Env looks up the process environment (nil: os.LookupEnv):
	// OPENAI_API_KEY, OPENAI_BASE_URL, AGENTC_ALLOW_HOSTS, env() in the
	// program and in its attributes.
	Env func(string) (string, bool)
	// Clock and Entropy are the Runner's (nil: the wall clock and
	// crypto/rand).
	Clock   vm.Clock
	Entropy vm.Entropy
	// Replay is the test block whose fixtures the models and tools replay
	// (nil: none; DefaultReplay picks the one agentc run uses).
	Replay *bytecode.Test
	// Offline runs nothing but Replay's fixtures and the skill and
	// workspace tools (agentc test): no model provider, no builtin, http
	// or exec tool, no recall, memory or history service, no evolution;
	// every other model and tool fails when called.
	Offline bool
	// Models and Tools are implementations the caller provides; they win
	// over replays and everything Prepare binds.
	Models map[string]runtime.Model
	Tools  map[string]runtime.Tool
	// Context and Summary, when set, stand in for the history service's
	// context builder and summary hook (a bench measuring a variant).
	Context runtime.ContextBuilder
	Summary runtime.PostRunHook
	// Funcs is the VM's function table (nil: Funcs(Program, Visited, Env)).
	Funcs map[string]vm.Func
	// Visited implements visited() of the default function table (nil:
	// always false).
	Visited func(node string) bool
	// Workspaces is the directory per-run workspaces are made under
	// (skill_run and the workspace tools).
	Workspaces string
	// Data is the data directory; confined exec tools cannot read it
	// (tools.Config.ExecHide).
	Data string
	// Evolution enables the evolution policies (candidate skills after
	// runs); off, nothing is proposed or published.
	Evolution bool
	// App, Logger and Owner (the history lease owner; default
	// "agentc@HOST:PID") go to the Runner and its services.
	App    string
	Logger *slog.Logger
	Owner  string
	// Observer, when set, observes the Runner's work instead of what the
	// OTEL_* variables configure (a test's in-memory tracer). Metrics, when
	// set, receives the latencies and token counts of runs, nodes, model
	// and tool calls (the server's /metrics).
	Observer runtime.Observer
	Metrics  telemetry.Recorder
	// Record, when set, runs the program's declared http, exec and mcp
	// tools live even where Replay has fixtures for them, and records
	// their calls (agentc run --record DIR).
	Record *model.Recording
	// Warn receives what the assembly could not bind and what it stands in
	// for (a model replayed, a tool missing); nil: discarded.
	Warn func(msg string)
	// Upgrade is the Runner's least upgrade policy for resumed runs of
	// older programs (runtime.RunnerConfig.Upgrade).
	Upgrade runtime.Upgrade
	// Replica, when set, is this process's owner id and lease TTL as one
	// of several replicas: Runner applies it when its store is shared
	// (implements runtime.SharedStore, as PostgreSQL does), taking Shared
	// from the store; on another store it is ignored.
	Replica *runtime.Replica
}

// Assembly is a prepared program: its models, tools and functions bound.
type Assembly struct {
	o   Options
	cfg runtime.RunnerConfig
	// tracing: spans are recorded (the trace context is propagated);
	// shutdown flushes and stops the tracer provider the OTEL_* variables
	// configured (nil: none).
	tracing  bool
	shutdown func(context.Context) error
	// mcp holds the sessions of the `run = mcp` tools (nil: none bound);
	// Runner gives it the store's artifacts for binary results.
	mcp *mcpclient.Pool
}

// New prepares o and makes its Runner over st (Prepare, then Runner),
// without the tracing the OTEL_* variables configure (nothing would flush
// it; Options.Observer still applies): a caller that traces uses Prepare,
// Runner and Shutdown.
func New(st store.Store, o Options) (*runtime.Runner, error) {
	a, err := prepare(o, false)
	if err != nil {
		return nil, err
	}
	return a.Runner(st)
}

// Prepare binds the program's models, tools and functions and loads the
// program into the VM. Unless o is Offline (agentc test stays hermetic),
// the OTEL_* variables of o.Env may configure tracing (spec/telemetry.md);
// the caller then calls Shutdown after closing the Runner.
func Prepare(o Options) (*Assembly, error) { return prepare(o, !o.Offline) }

func prepare(o Options, envTracing bool) (*Assembly, error) {
	p := o.Program
	if p == nil {
		return nil, errors.New("assemble: no program")
	}
	if o.Env == nil {
		o.Env = os.LookupEnv
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	if o.Clock == nil {
		o.Clock = WallClock{}
	}
	if o.Entropy == nil {
		o.Entropy = CryptoEntropy{}
	}
	funcs := o.Funcs
	if funcs == nil {
		funcs = Funcs(p, o.Visited, o.Env)
	}
	cfg := runtime.RunnerConfig{Program: p, Funcs: funcs, Clock: o.Clock, Entropy: o.Entropy, App: o.App, Logger: o.Logger,
		Encoding: o.Encoding, Context: o.Context, Summary: o.Summary,
		Models: map[string]runtime.Model{}, Tools: map[string]runtime.Tool{}}
	var err error
	if o.Verified {
		cfg.Machine, err = vm.NewVerified(p, funcs)
	} else {
		cfg.Machine, err = vm.New(p, funcs)
	}
	if err != nil {
		return nil, fmt.Errorf("assemble: %w", err)
	}
	asm := &Assembly{o: o}
	if err := asm.observe(&cfg, envTracing); err != nil {
		return nil, err
	}
	sc := &scripted{models: map[string]runtime.Model{}, tools: map[string]runtime.Tool{}}
	if o.Replay != nil {
		if sc, err = loadFixtures(p, o.Replay, o.Root); err != nil {
			asm.Shutdown(context.Background())
			return nil, err
		}
	}
	for name, t := range sc.tools {
		if o.Record != nil && !o.Offline && liveKind(p, name) {
			continue // recorded live instead
		}
		cfg.Tools[name] = t
	}
	for name, t := range o.Tools {
		cfg.Tools[name] = t
	}
	if o.Offline {
		for name, m := range sc.models {
			cfg.Models[name] = m
		}
		for name, m := range o.Models {
			cfg.Models[name] = m
		}
		refuseUnbound(p, cfg.Tools)
		stubModels(p, cfg.Models)
		cfg.Cache = vm.NewMemCache(0) // agentc test: each process its own cache
		asm.cfg = cfg
		return asm, nil
	}
	if err := bindModels(&cfg, o, sc); err != nil {
		asm.Shutdown(context.Background())
		return nil, err
	}
	// Builtin tools no replay stands in for run for real: file tools
	// confined to the project root, http_get only to AGENTC_ALLOW_HOSTS.
	hosts := allowHosts(o.Env)
	hide := execHide(o.Data)
	var prop func(context.Context, http.Header)
	if asm.tracing {
		prop = telemetry.Inject
	}
	tools.Bind(cfg.Tools, p.Tools, tools.Config{Workspace: o.Root, AllowHosts: hosts, Clock: o.Clock, ExecHide: hide, Propagate: prop})
	if err := bindDeclared(cfg.Machine, cfg.Tools, tools.Config{Workspace: o.Root, AllowHosts: hosts, LookupEnv: o.Env, ExecHide: hide, Propagate: prop}); err != nil {
		asm.Shutdown(context.Background())
		return nil, err
	}
	if asm.mcp, err = bindMCP(&cfg, o, prop); err != nil {
		asm.Shutdown(context.Background())
		return nil, err
	}
	if o.Record != nil {
		for name, t := range cfg.Tools {
			if o.Tools[name] == nil && liveKind(p, name) {
				cfg.Tools[name] = o.Record.Wrap(name, t)
			}
		}
	}
	if miss := missingTools(p, cfg.Tools); len(miss) > 0 {
		// A call fails with a tool_error naming the tool; the run goes on
		// as far as it can without it.
		o.Warn(fmt.Sprintf("warning: no implementation in this build and no replay for tools %s; calling one fails", strings.Join(miss, ", ")))
		refuseUnbound(p, cfg.Tools)
	}
	asm.cfg = cfg
	return asm, nil
}

// observe sets cfg's Observer: Options.Observer, else spans to the tracer
// provider the OTEL_* variables configure (none when they configure
// none) and Options.Metrics.
func (a *Assembly) observe(cfg *runtime.RunnerConfig, env bool) error {
	if a.o.Observer != nil {
		cfg.Observer, a.tracing = a.o.Observer, true
		return nil
	}
	if !env {
		if a.o.Metrics != nil {
			cfg.Observer = telemetry.New(nil, a.o.Metrics, cfg.Clock.Now)
		}
		return nil
	}
	tp, err := telemetry.Configure(context.Background(), a.o.Env)
	if err != nil {
		return fmt.Errorf("assemble: %w", err)
	}
	switch {
	case tp != nil:
		cfg.Observer = telemetry.New(tp, a.o.Metrics, cfg.Clock.Now)
		a.tracing, a.shutdown = true, tp.Shutdown
	case a.o.Metrics != nil:
		cfg.Observer = telemetry.New(nil, a.o.Metrics, cfg.Clock.Now)
	}
	return nil
}

// Tracing reports whether the Runner's work is traced: the caller then
// accepts the trace context of incoming requests (telemetry.Extract).
func (a *Assembly) Tracing() bool { return a.tracing }

// Shutdown flushes the spans not yet exported and stops the tracer
// provider the assembly configured; call it after closing the Runner. It
// returns ctx's error if the flush did not finish in time.
func (a *Assembly) Shutdown(ctx context.Context) error {
	if a.shutdown == nil {
		return nil
	}
	err := a.shutdown(ctx)
	a.shutdown = nil
	if err != nil {
		return fmt.Errorf("assemble: flush traces: %w", err)
	}
	return nil
}

// bindModels sets the models of a live assembly: the caller's, else an
// OpenAI-compatible provider per declaration when OPENAI_API_KEY is set,
// else the replays (stubs for the models they lack).
func bindModels(cfg *runtime.RunnerConfig, o Options, sc *scripted) error {
	p := cfg.Program
	test := o.Replay
	given := func(md bytecode.Model) bool { return o.Models[md.Name] != nil }
	need := slices.ContainsFunc(p.Models, func(md bytecode.Model) bool { return !given(md) })
	switch key, _ := o.Env("OPENAI_API_KEY"); {
	case key != "" && (need || len(o.Models) == 0):
		ms, err := openAIModels(p, key, o.Env, cfg.Entropy)
		if err != nil {
			return err
		}
		cfg.Models = ms
		if names := sc.toolNames(); len(names) > 0 {
			o.Warn(fmt.Sprintf("tools %s replay the fixtures of test %q", strings.Join(names, ", "), test.Name))
		}
	case !need:
		// The caller provides every model (or none is declared).
	default:
		if test == nil {
			return errors.New("no OPENAI_API_KEY and no test block of this runnable to take scripted models from; set OPENAI_API_KEY")
		}
		var paths []string
		for _, fx := range test.Fixtures {
			paths = append(paths, fx.Path)
		}
		o.Warn(fmt.Sprintf("no OPENAI_API_KEY; using scripted models from test %q (fixtures %s)", test.Name, strings.Join(paths, ", ")))
		cfg.Models = sc.models
		var miss []string
		for _, md := range p.Models {
			if cfg.Models[md.Name] == nil && !given(md) {
				miss = append(miss, md.Name)
			}
		}
		if len(miss) > 0 {
			o.Warn(fmt.Sprintf("warning: test %q replays no fixture for models %s; calling one fails", test.Name, strings.Join(miss, ", ")))
		}
	}
	for name, m := range o.Models {
		cfg.Models[name] = m
	}
	if test != nil {
		stubModels(p, cfg.Models)
	}
	return nil
}

// Config returns the Runner configuration prepared so far (its Store is
// set by Runner). The maps are the assembly's own.
func (a *Assembly) Config() runtime.RunnerConfig { return a.cfg }

// Runner binds the services that keep their data in st and makes the
// Runner. It is called once per Assembly; st stays the caller's to close,
// after the Runner.
func (a *Assembly) Runner(st store.Store) (*runtime.Runner, error) {
	if st == nil {
		return nil, errors.New("assemble: no store")
	}
	cfg := a.cfg
	cfg.Store = st
	cfg.Programs = a // runs pinned to an older program (pinned.go)
	cfg.Upgrade = a.o.Upgrade
	if !a.o.Offline {
		if err := bindContext(&cfg, a.o); err != nil {
			return nil, err
		}
	}
	if err := bindSkills(&cfg, a.o); err != nil {
		return nil, err
	}
	if rep := a.o.Replica; rep != nil {
		if sh, ok := st.(runtime.SharedStore); ok {
			r := *rep
			r.Shared = sh
			if r.Owner == "" {
				r.Owner = a.NewID("replica_")
			}
			cfg.Replica = &r
		}
	}
	if a.mcp != nil {
		a.mcp.SetArtifacts(artifact.New(st, cfg.Clock.Now))
	}
	return runtime.NewRunner(cfg)
}

// DefaultReplay is the test block whose fixtures agentc run and serve
// replay: the first one that runs the program's default runnable (nil when
// none does).
func DefaultReplay(p *bytecode.Program) *bytecode.Test { return replayOf(p, p.DefaultGraph()) }

// ReplayFor is DefaultReplay for the runnable a command starts (agentc run
// --run NAME; "": the default runnable): the first test block that runs
// it, nil when none does. It fails when no runnable has that name, and
// for "" when the program has no serve block and several runnables, so
// that a person chooses one.
func ReplayFor(p *bytecode.Program, runnable string) (*bytecode.Test, error) {
	gi, ok := p.Runnable(runnable)
	switch {
	case !ok && runnable != "":
		return nil, fmt.Errorf("no graph or agent %q (runnables: %s)", runnable, strings.Join(p.Runnables(), ", "))
	case !ok && len(p.Runnables()) > 1:
		return nil, fmt.Errorf("no serve block and several runnables: choose one of %s", strings.Join(p.Runnables(), ", "))
	}
	return replayOf(p, gi), nil
}

func replayOf(p *bytecode.Program, gi int) *bytecode.Test {
	for i := range p.Tests {
		if gi >= 0 && p.RunGraph(p.Tests[i].Run) == gi {
			return &p.Tests[i]
		}
	}
	return nil
}

// liveKind reports whether the program declares name as an http, exec or
// mcp tool: one that reaches outside and can be recorded.
func liveKind(p *bytecode.Program, name string) bool {
	for i := range p.Tools {
		if t := &p.Tools[i]; t.Name == name {
			k := t.Impl.Kind
			return k == bytecode.ImplHTTP || k == bytecode.ImplExec || k == bytecode.ImplMCP
		}
	}
	return false
}
