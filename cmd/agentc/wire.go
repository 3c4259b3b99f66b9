package main

// The composition root: a compiled program and the process environment
// become a runtime.RunnerConfig (models, tools, functions, clock, entropy).

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/evolution"
	"github.com/agentc/agentc/runtime/history"
	"github.com/agentc/agentc/runtime/memory"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/runtime/recall"
	"github.com/agentc/agentc/runtime/skill"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/workspace"
	"github.com/agentc/agentc/stdlib"
	"github.com/agentc/agentc/stdlib/tools"
	"github.com/agentc/agentc/vm"
)

// wallClock is the real clock.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }
func (wallClock) AfterFunc(d time.Duration, f func()) func() bool {
	t := time.AfterFunc(d, f)
	return t.Stop
}

// cryptoEntropy draws from crypto/rand.
type cryptoEntropy struct{}

func (cryptoEntropy) Uint64() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// loadProgram compiles FILE (.agent) or decodes and verifies FILE (.agb).
func loadProgram(a *app, file string) (*bytecode.Program, error) {
	if strings.HasSuffix(file, ".agb") {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, usageErr(fmt.Errorf("read %s: %w", file, err))
		}
		p, err := bytecode.Decode(b)
		if err != nil {
			return nil, &exitError{code: exitFail, err: fmt.Errorf("%s: %w", file, err)}
		}
		if err := bytecode.Verify(p); err != nil {
			return nil, &exitError{code: exitFail, err: fmt.Errorf("%s: %w", file, err)}
		}
		return p, nil
	}
	return compileFile(a, file)
}

// refName is the name of a graph or agent reference.
func refName(p *bytecode.Program, r bytecode.Ref) string {
	switch r.Kind {
	case bytecode.RefGraph:
		if int(r.Index) < len(p.Graphs) {
			return p.Graphs[r.Index].Name
		}
	case bytecode.RefAgent:
		if int(r.Index) < len(p.Agents) {
			return p.Agents[r.Index].Name
		}
	case bytecode.RefModel:
		if int(r.Index) < len(p.Models) {
			return p.Models[r.Index].Name
		}
	case bytecode.RefTool:
		if int(r.Index) < len(p.Tools) {
			return p.Tools[r.Index].Name
		}
	}
	return ""
}

// scripted holds the scripted models and tools of one test block.
type scripted struct {
	models map[string]runtime.Model
	tools  map[string]runtime.Tool
}

// loadFixtures reads a test block's replays, relative to root.
func loadFixtures(p *bytecode.Program, t *bytecode.Test, root string) (*scripted, error) {
	s := &scripted{models: map[string]runtime.Model{}, tools: map[string]runtime.Tool{}}
	for _, f := range t.Fixtures {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, fmt.Errorf("test %q: fixture: %w", t.Name, err)
		}
		name := refName(p, f.Target)
		switch f.Target.Kind {
		case bytecode.RefModel:
			fx, err := model.LoadFixture(f.Path, data)
			if err != nil {
				return nil, fmt.Errorf("test %q: %w", t.Name, err)
			}
			s.models[name] = model.NewScripted(runtime.ModelInfo{Name: name, Provider: "scripted", Model: "scripted:" + f.Path}, fx)
		case bytecode.RefTool:
			fx, err := model.LoadToolFixture(f.Path, data)
			if err != nil {
				return nil, fmt.Errorf("test %q: %w", t.Name, err)
			}
			tl := &p.Tools[f.Target.Index]
			s.tools[name] = model.NewScriptedTool(runtime.ToolSpec{Name: name, Description: tl.Doc}, runtime.Effect(tl.Effect), fx)
		}
	}
	return s, nil
}

// attrString returns a string attribute's value: a constant, or an env()
// reference read from the process environment, else its default.
func attrString(p *bytecode.Program, attrs []bytecode.Attr, name string) string {
	for _, at := range attrs {
		if at.Name != name {
			continue
		}
		switch at.Kind {
		case bytecode.AttrConst:
			if int(at.Const) < len(p.Consts) && p.Consts[at.Const].Kind() == types.ValString {
				return p.Consts[at.Const].Str()
			}
		case bytecode.AttrEnv:
			if v, ok := os.LookupEnv(at.Env.Var); ok {
				return v
			}
			if at.Env.HasDefault {
				return at.Env.Default
			}
		}
	}
	return ""
}

// openAIModels builds an OpenAI-compatible provider per declared model.
func openAIModels(p *bytecode.Program, key string, ent vm.Entropy) (map[string]runtime.Model, error) {
	out := map[string]runtime.Model{}
	for i := range p.Models {
		md := &p.Models[i]
		base := os.Getenv("OPENAI_BASE_URL")
		if base == "" {
			base = attrString(p, md.Attrs, "base_url")
		}
		id := attrString(p, md.Attrs, "name")
		if id == "" {
			id = md.Name
		}
		m, err := model.NewOpenAI(model.OpenAIConfig{
			Name: md.Name, Model: id, BaseURL: base, APIKey: key, MaxRetries: 3,
			Rand: func() float64 { return float64(ent.Uint64()>>11) / (1 << 53) },
			Now:  time.Now,
		})
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", md.Name, err)
		}
		out[md.Name] = m
	}
	return out, nil
}

// funcTable is stdlib.Funcs() plus env() over the process environment and
// visited() over visitedFn (nil: always false); any other function the
// program names without an implementation is a stub returning null.
func funcTable(p *bytecode.Program, visitedFn func(node string) bool) map[string]vm.Func {
	funcs := stdlib.Funcs()
	funcs["env"] = func(args []types.Value) (types.Value, error) {
		if len(args) == 0 || args[0].Kind() != types.ValString {
			return types.Value{}, fmt.Errorf("env: want a variable name")
		}
		if v, ok := os.LookupEnv(args[0].Str()); ok {
			return types.MakeString(v), nil
		}
		if len(args) > 1 {
			return args[1], nil
		}
		return types.MakeString(""), nil
	}
	funcs["visited"] = func(args []types.Value) (types.Value, error) {
		if visitedFn == nil || len(args) == 0 || args[0].Kind() != types.ValString {
			return types.MakeBool(false), nil
		}
		return types.MakeBool(visitedFn(args[0].Str())), nil
	}
	for _, name := range p.Funcs {
		if _, ok := funcs[name]; !ok {
			funcs[name] = func([]types.Value) (types.Value, error) { return types.Value{}, nil }
		}
	}
	return funcs
}

// testInput is a test block's input as invocation text.
func testInput(p *bytecode.Program, t *bytecode.Test) (string, error) {
	if t.Input < 0 || int(t.Input) >= len(p.Consts) {
		return "", nil
	}
	v := p.Consts[t.Input]
	if v.Kind() == types.ValString {
		return v.Str(), nil
	}
	b, err := types.ToJSON(v)
	return string(b), err
}

// unimplementedTool stands in for a tool with no implementation in this
// build; calling it fails with a tool_error naming it.
type unimplementedTool struct {
	spec   runtime.ToolSpec
	effect runtime.Effect
	why    string
}

func (t *unimplementedTool) Spec() runtime.ToolSpec { return t.spec }
func (t *unimplementedTool) Effect() runtime.Effect { return t.effect }
func (t *unimplementedTool) Call(context.Context, runtime.ToolRequest) (json.RawMessage, error) {
	return nil, vm.NewError(vm.KindToolError, "tool %s has no implementation (%s) and no replay", t.spec.Name, t.why)
}

// stubTools adds an unimplementedTool for every non-agent tool that tools
// lacks.
func stubTools(p *bytecode.Program, tools map[string]runtime.Tool) {
	for _, t := range p.Tools {
		if t.Impl.Kind == bytecode.ImplAgent || tools[t.Name] != nil || (t.Impl.Kind == bytecode.ImplBuiltin && tools[t.Impl.Builtin] != nil) {
			continue
		}
		tools[t.Name] = &unimplementedTool{spec: runtime.ToolSpec{Name: t.Name, Description: t.Doc}, effect: runtime.Effect(t.Effect), why: implName(t)}
	}
}

// missingTools lists the non-agent tools without an implementation in tools.
func missingTools(p *bytecode.Program, tools map[string]runtime.Tool) []string {
	var out []string
	for _, t := range p.Tools {
		if t.Impl.Kind == bytecode.ImplAgent || tools[t.Name] != nil || (t.Impl.Kind == bytecode.ImplBuiltin && tools[t.Impl.Builtin] != nil) {
			continue
		}
		if t.Impl.Kind == bytecode.ImplBuiltin && contextTools[t.Impl.Builtin] {
			continue // bound by bindContext once the store is open
		}
		if t.Impl.Kind == bytecode.ImplBuiltin && skillTools[t.Impl.Builtin] {
			continue // bound by bindSkills once the store is open
		}
		out = append(out, t.Name+" ("+implName(t)+")")
	}
	slices.Sort(out)
	return out
}

func implName(t bytecode.Tool) string {
	switch t.Impl.Kind {
	case bytecode.ImplBuiltin:
		return "builtin." + t.Impl.Builtin
	case bytecode.ImplHTTP:
		return "http"
	case bytecode.ImplExec:
		return "exec"
	}
	return "run"
}

// bindDeclared binds the program's `run = http` and `run = exec` tools that
// into lacks (a replay wins): http reaches only AGENTC_ALLOW_HOSTS, exec runs
// confined to root with a scrubbed environment. An env() header that is not
// set fails the load.
func bindDeclared(p *bytecode.Program, funcs map[string]vm.Func, into map[string]runtime.Tool, root string) error {
	need := false
	for _, t := range p.Tools {
		if (t.Impl.Kind == bytecode.ImplHTTP || t.Impl.Kind == bytecode.ImplExec) && into[t.Name] == nil {
			need = true
		}
	}
	if !need {
		return nil
	}
	m, err := vm.New(p, funcs)
	if err != nil {
		return fmt.Errorf("load tools: %w", err)
	}
	return tools.BindDeclared(into, m, tools.Config{Workspace: root, AllowHosts: allowHosts(), LookupEnv: os.LookupEnv})
}

// unscriptedModel stands in for a model a test does not replay; calling it
// fails with a model_error naming it.
type unscriptedModel struct{ name string }

func (m *unscriptedModel) Info() runtime.ModelInfo {
	return runtime.ModelInfo{Name: m.name, Provider: "none", Model: "none:" + m.name}
}

func (m *unscriptedModel) Generate(context.Context, *runtime.ModelRequest, func(string)) (*runtime.ModelResponse, error) {
	return nil, vm.NewError(vm.KindModelError, "model %s has no replay in this test", m.name)
}

// stubModels adds an unscriptedModel for every declared model models lacks.
func stubModels(p *bytecode.Program, models map[string]runtime.Model) {
	for _, md := range p.Models {
		if models[md.Name] == nil {
			models[md.Name] = &unscriptedModel{name: md.Name}
		}
	}
}

// toolNames lists the scripted tools, sorted (none for a nil s).
func (s *scripted) toolNames() []string {
	if s == nil {
		return nil
	}
	var out []string
	for name := range s.tools {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// contextTools are the builtin tools backed by the session and memory
// services: they need the store, so bindContext binds them.
var contextTools = map[string]bool{
	recall.SearchToolName: true, recall.LoadToolName: true,
	memory.SearchToolName: true, memory.AddToolName: true,
}

// bindContext binds session_search, session_load, memory_search and
// memory_add over cfg.Store (replacing stubs; a replay wins), and adds
// preload recall, memory preload and the auto-memory extractor when the
// program's agents have recall or memory policies that ask for them. Call it
// once cfg.Store, Models and Tools are set, before runtime.NewRunner.
func bindContext(cfg *runtime.RunnerConfig) error {
	p, st := cfg.Program, cfg.Store
	if p == nil || st == nil || cfg.Clock == nil {
		return fmt.Errorf("bind context services: no program, store or clock")
	}
	if cfg.Tools == nil {
		cfg.Tools = map[string]runtime.Tool{}
	}
	idx := recall.NewIndex(st, cfg.Logger)
	mem := memory.New(st, cfg.Clock)
	impl := map[string]runtime.Tool{
		recall.SearchToolName: recall.NewSearchTool(idx, p), recall.LoadToolName: recall.NewLoadTool(idx, p),
		memory.SearchToolName: memory.NewSearchTool(mem), memory.AddToolName: memory.NewAddTool(mem, p),
	}
	for _, t := range p.Tools {
		if t.Impl.Kind != bytecode.ImplBuiltin || impl[t.Impl.Builtin] == nil {
			continue
		}
		if _, stub := cfg.Tools[t.Name].(*unimplementedTool); cfg.Tools[t.Name] == nil || stub {
			cfg.Tools[t.Name] = impl[t.Impl.Builtin]
		}
	}
	var recallPreload, memoryPreload bool
	for i := range p.Agents {
		if recall.AgentPolicy(p, i, bytecode.PolicyRecall) != nil && recall.PolicyOf(p, i).Preload > 0 {
			recallPreload = true
		}
		pol, ok := memory.PolicyOf(p, i)
		if !ok {
			continue
		}
		memoryPreload = memoryPreload || pol.Preload != 0
		if pol.Mode != memory.ModeAuto || cfg.Memory != nil {
			continue
		}
		// One extractor per program: the first agent with auto memory
		// names its model, instruction and max_memories.
		m := cfg.Models[pol.Model]
		if m == nil {
			return fmt.Errorf("agent %s: memory extractor model %s has no implementation", p.Agents[i].Name, pol.Model)
		}
		x, err := memory.NewExtractor(memory.ExtractorConfig{Service: mem, Ledger: st, Docs: st, Model: m,
			Instruction: pol.Instruction, MaxMemories: pol.MaxMemories, Logger: cfg.Logger})
		if err != nil {
			return err
		}
		cfg.Memory = x
	}
	if recallPreload {
		cfg.Preloaders = append(cfg.Preloaders, recall.NewPreloader(idx))
	}
	if memoryPreload {
		cfg.Preloaders = append(cfg.Preloaders, memory.NewPreloader(mem))
	}
	return bindHistory(cfg)
}

// skillTools are the builtin tools of skills and workspaces (spec/skills.md):
// they need the store, so bindSkills binds them.
var skillTools = map[string]bool{
	"skill_load": true, "skill_run": true, "workspace_write": true, "workspace_read": true,
	"workspace_list": true, "workspace_exec": true, "workspace_save_artifact": true,
}

// bindSkills binds skill_load, skill_run and the workspace tools over
// cfg.Store (replacing stubs; a replay wins), with per-run workspaces under
// workspaces, and sets the Evolution hook when an agent has an evolution
// policy (evolve false leaves it off: agentc test publishes nothing). Paths
// in the program are relative to root. Call it once cfg.Store, Models and
// Tools are set, before runtime.NewRunner.
func bindSkills(cfg *runtime.RunnerConfig, root, workspaces string, evolve bool) error {
	p, st := cfg.Program, cfg.Store
	if p == nil || st == nil {
		return fmt.Errorf("bind skills: no program or store")
	}
	if cfg.Tools == nil {
		cfg.Tools = map[string]runtime.Tool{}
	}
	repo := skill.NewRepository()
	mgr := &workspace.Manager{Base: workspaces}
	exec := &workspace.Local{}
	skills := &skill.Tools{Repo: repo, Catalog: skill.CatalogFromProgram(p, root), Docs: st, Workspaces: mgr, Exec: exec, Now: cfg.Clock.Now}
	impl := skills.All()
	cfg.Preloaders = append(cfg.Preloaders, skills) // the skill overview before an agent's first turn
	for name, t := range (&workspace.Tools{Workspaces: mgr, Exec: exec, Artifacts: artifact.New(st, cfg.Clock.Now)}).All() {
		impl[name] = t
	}
	for _, t := range p.Tools {
		if t.Impl.Kind != bytecode.ImplBuiltin || impl[t.Impl.Builtin] == nil {
			continue
		}
		if _, stub := cfg.Tools[t.Name].(*unimplementedTool); cfg.Tools[t.Name] == nil || stub {
			cfg.Tools[t.Name] = impl[t.Impl.Builtin]
		}
	}
	if pols := evolution.PoliciesFromProgram(p, cfg.Models, root); evolve && len(pols) > 0 && cfg.Evolution == nil {
		cfg.Evolution = newEvolution(st, pols, repo, cfg.Clock.Now, cfg.Entropy)
	}
	return nil
}

// newEvolution is the evolution service over st; candidate ids are
// "cand_" + time + entropy.
func newEvolution(st store.Store, pols map[string]evolution.Policy, repo *skill.Repository, now func() time.Time, ent vm.Entropy) *evolution.Service {
	return evolution.New(evolution.Config{Store: st, Policies: pols, Repo: repo, Now: now,
		NewID: func() string {
			return fmt.Sprintf("cand_%s%06x", now().UTC().Format("20060102T150405"), ent.Uint64()&0xffffff)
		}})
}

// bindHistory sets the Runner's context builder (session projection,
// compaction, pressure relief) and, when an agent has a summary policy, its
// Summary hook: one runtime/history Service over cfg.Store (spec/context.md).
// The lease owner names this process (host and pid). Call it once
// cfg.Store, Models and Funcs are set; it keeps a Context or Summary already
// set.
func bindHistory(cfg *runtime.RunnerConfig) error {
	if cfg.Context != nil {
		return nil
	}
	host, _ := os.Hostname()
	svc, err := history.New(history.Config{Store: cfg.Store, Program: cfg.Program, Models: cfg.Models, Funcs: cfg.Funcs,
		Clock: cfg.Clock, Owner: fmt.Sprintf("agentc@%s:%d", host, os.Getpid()), Logger: cfg.Logger})
	if err != nil {
		return err
	}
	cfg.Context = svc
	if cfg.Summary == nil && svc.HasSummaries() {
		cfg.Summary = svc
	}
	return nil
}
