package assemble

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/evolution"
	"github.com/agentc/agentc/runtime/history"
	"github.com/agentc/agentc/runtime/memory"
	"github.com/agentc/agentc/runtime/recall"
	"github.com/agentc/agentc/runtime/skill"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/workspace"
	"github.com/agentc/agentc/vm"
)

// replaceable reports whether tools[name] may be replaced by a service's
// tool: it is unset or a stub (a replay or the caller's tool wins).
func replaceable(tools map[string]runtime.Tool, name string) bool {
	_, stub := tools[name].(*unboundTool)
	return tools[name] == nil || stub
}

// bindContext binds session_search, session_load, memory_search and
// memory_add over cfg.Store, and adds preload recall, memory preload and
// the auto-memory extractor when the program's agents have recall or memory
// policies that ask for them; then the history service (bindHistory).
func bindContext(cfg *runtime.RunnerConfig, o Options) error {
	p, st := cfg.Program, cfg.Store
	if p == nil || st == nil || cfg.Clock == nil {
		return errors.New("bind context services: no program, store or clock")
	}
	idx := recall.NewIndex(st, cfg.Logger).Observe(cfg.Observer)
	mem := memory.New(st, cfg.Clock)
	impl := map[string]runtime.Tool{
		recall.SearchToolName: recall.NewSearchTool(idx, p), recall.LoadToolName: recall.NewLoadTool(idx, p),
		memory.SearchToolName: memory.NewSearchTool(mem), memory.AddToolName: memory.NewAddTool(mem, p),
	}
	for _, t := range p.Tools {
		if t.Impl.Kind == bytecode.ImplBuiltin && impl[t.Impl.Builtin] != nil && replaceable(cfg.Tools, t.Name) {
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
	var onRelief func(app, outcome string)
	if rm, ok := o.Metrics.(interface{ Relief(app, outcome string) }); ok {
		onRelief = rm.Relief
	}
	return bindHistory(cfg, o.Owner, o.Verified, onRelief)
}

// bindSkills binds skill_load, skill_run and the workspace tools over
// cfg.Store, with per-run workspaces under o.Workspaces, adds the skill
// overview preloader, and sets the Evolution hook when an agent has an
// evolution policy and o.Evolution is on. Skill paths are relative to
// o.Root.
func bindSkills(cfg *runtime.RunnerConfig, o Options) error {
	p, st := cfg.Program, cfg.Store
	repo := skill.NewRepository()
	mgr := &workspace.Manager{Base: o.Workspaces}
	exec := &workspace.Local{}
	skills := &skill.Tools{Repo: repo, Catalog: skill.CatalogFromProgram(p, o.Root), Docs: st, Workspaces: mgr, Exec: exec, Now: cfg.Clock.Now}
	impl := skills.All()
	cfg.Preloaders = append(cfg.Preloaders, skills) // the skill overview before an agent's first turn
	for name, t := range (&workspace.Tools{Workspaces: mgr, Exec: exec, Artifacts: artifact.New(st, cfg.Clock.Now)}).All() {
		impl[name] = t
	}
	for _, t := range p.Tools {
		if t.Impl.Kind == bytecode.ImplBuiltin && impl[t.Impl.Builtin] != nil && replaceable(cfg.Tools, t.Name) {
			cfg.Tools[t.Name] = impl[t.Impl.Builtin]
		}
	}
	if pols := evolution.PoliciesFromProgram(p, cfg.Models, o.Root); o.Evolution && len(pols) > 0 && cfg.Evolution == nil {
		cfg.Evolution = newEvolution(st, pols, repo, cfg.Clock.Now, cfg.Entropy, cfg.Logger)
	}
	return nil
}

// newEvolution is the evolution service over st, logging through the
// Runner's logger; candidate ids are "cand_" + time + entropy.
func newEvolution(st store.Store, pols map[string]evolution.Policy, repo *skill.Repository, now func() time.Time, ent vm.Entropy, log *slog.Logger) *evolution.Service {
	return evolution.New(evolution.Config{Store: st, Policies: pols, Repo: repo, Now: now, Log: log,
		NewID: func() string {
			return fmt.Sprintf("cand_%s%06x", now().UTC().Format("20060102T150405"), ent.Uint64()&0xffffff)
		}})
}

// bindHistory sets the Runner's context builder (session projection,
// compaction, pressure relief) and, when an agent has a summary policy, its
// Summary hook: one runtime/history Service over cfg.Store
// (spec/context.md). owner names the lease holder (default this process:
// host and pid); verified is Options.Verified; onRelief counts pressure
// reliefs (the server's metrics).
func bindHistory(cfg *runtime.RunnerConfig, owner string, verified bool, onRelief func(app, outcome string)) error {
	if cfg.Context != nil {
		return nil
	}
	if owner == "" {
		host, _ := os.Hostname()
		owner = fmt.Sprintf("agentc@%s:%d", host, os.Getpid())
	}
	svc, err := history.New(history.Config{Store: cfg.Store, Program: cfg.Program, Verified: verified, Models: cfg.Models, Funcs: cfg.Funcs,
		Clock: cfg.Clock, Owner: owner, Logger: cfg.Logger, OnRelief: onRelief, Observer: cfg.Observer, RecallElsewhere: RecallElsewhere(cfg.Store, cfg.Program)})
	if err != nil {
		return err
	}
	cfg.Context = svc
	if cfg.Summary == nil && svc.HasSummaries() {
		cfg.Summary = svc
	}
	return nil
}

// RecallElsewhere is history.Config.RecallElsewhere over st: whether a
// call's recall tools can reach another of the user's sessions
// (recall.ReachesElsewhere).
func RecallElsewhere(st store.Sessions, p *bytecode.Program) func(context.Context, runtime.ContextCall) bool {
	return func(ctx context.Context, call runtime.ContextCall) bool {
		return recall.ReachesElsewhere(ctx, st, p, call.Agent, call.Session)
	}
}
