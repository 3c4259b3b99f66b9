// Package history is agentc's context governance (spec/context.md): the
// projection of a session into an llm agent call (summary note + events
// after its boundary + the current input), compaction of tool results in
// the copy of a request, the rolling summary per filter key (a post-run
// hook and a synchronous entry point), pressure relief before a model call,
// and token counting.
//
// The ledger is never rewritten: a Service reads events and writes only
// summaries (store.PutSummary) and leases.
package history

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// Store is what a Service needs of the store.
type Store interface {
	store.Sessions
	store.Leases
}

// Config configures a Service. Store, Program, Clock and Owner are
// required.
type Config struct {
	Store   Store
	Program *bytecode.Program
	// Verified says Program passed bytecode.Verify in this process: the
	// summary triggers load it with vm.NewVerified, not verifying again.
	Verified bool
	// Models are the program's models by declared name (summarizers).
	Models map[string]runtime.Model
	// Funcs is the base function table for evaluating summary triggers
	// (nil: vm.Builtins()); the trigger functions are the Service's own.
	Funcs map[string]vm.Func
	Clock vm.Clock
	// Owner names this process in summary leases (unique per process).
	Owner string
	// LeaseTTL bounds a summary lease (default 2 minutes).
	LeaseTTL time.Duration
	Logger   *slog.Logger // nil: discard
	// NoCascade: a branch summary does not cascade to the full-session
	// summary (filter key "").
	NoCascade bool
	// NoSavingsGate: context_ratio(r) fires on the ratio alone, without
	// the savings estimate (Savings).
	NoSavingsGate bool
	// DeferSummary moves the rolling summary from after a run to the
	// start of the next agent call that projects the key (Open): a summary
	// the conversation's last run would have paid for, and never used, is
	// not made. The next call waits for the summarizer instead.
	DeferSummary bool
	// EagerFirstSummary makes a key's first summary after the run like
	// the later ones. By default the first is deferred to the next call
	// that projects the key (its Open): a conversation that ends soon
	// after its history crossed the trigger pays for no summary it never
	// uses, and a message waits for the summarizer at most once per key
	// (spec/context.md, "Deferred summary").
	EagerFirstSummary bool
	// NoRecallElision turns off recall-backed elision (RecallElision): an
	// agent with a summary policy and session_load but no compaction
	// policy gets its requests as projected, every tool result verbatim
	// (the behaviour before 2026-12-04), and the summarizer gets its
	// large tool results whole.
	NoRecallElision bool
	// RecallElsewhere reports whether the recall tools of a call can find
	// events outside its session (recall.ReachesElsewhere: the agent's
	// scopes reach the user's other sessions and there are some). A call
	// whose projection hides nothing and that cannot reach elsewhere is
	// offered no session_search or session_load (View.Tools). nil: every
	// call can (the recall tools are always offered).
	RecallElsewhere func(ctx context.Context, call runtime.ContextCall) bool
	// Counter overrides token counting (nil: CounterFor the model's id).
	Counter func(modelID string) *Counter
	// CacheSessions bounds the sessions whose decoded ledgers are kept
	// between calls (0: DefaultCacheSessions; negative: none).
	CacheSessions int
	// OnRelief, when set, counts each pressure relief by its app and
	// outcome: "rebuilt", "not_smaller" (the rebuilt request was not
	// smaller; the original was sent), "not_advanced" (the summary did not
	// advance) or "failed" (the summarizer or the rebuild failed).
	OnRelief func(app, outcome string)
	// Observer, when set, gets a span per summary update, compaction and
	// pressure relief (spec/telemetry.md); nil: none, at no cost.
	Observer runtime.Observer
}

// Service implements runtime.ContextBuilder and runtime.PostRunHook (the
// Runner's Summary hook). It is safe for concurrent use.
type Service struct {
	st         Store
	prog       *bytecode.Program
	models     map[string]runtime.Model
	clock      vm.Clock
	owner      string
	leaseTTL   time.Duration
	log        *slog.Logger
	cascade    bool
	onRelief   func(app, outcome string)
	obs        runtime.Observer
	noGate     bool
	deferSum   bool
	deferFirst bool
	// noRecallElision: Config.NoRecallElision.
	noRecallElision bool
	counter         func(string) *Counter
	elsewhere       func(context.Context, runtime.ContextCall) bool
	pols            []AgentPolicies          // by program agent index
	agents          map[string]int           // llm agent name → index
	locks           store.KeyedMutex[string] // one summary pass per session and filter key
	cache           *runtime.LedgerCache

	machine *vm.Machine // evaluates trigger chunks; nil when no policy has one
	trigMu  sync.Mutex
	trig    TriggerMetrics // the metrics of the evaluation in progress

	mu      sync.Mutex
	pending map[string]map[string]int // run → filter key → agent, recorded by Open
}

// New checks cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.Store == nil || cfg.Program == nil || cfg.Clock == nil:
		return nil, fmt.Errorf("history: Config.Store, Program and Clock are required")
	case cfg.Owner == "":
		return nil, fmt.Errorf("history: Config.Owner is required (it names this process in summary leases)")
	}
	s := &Service{st: cfg.Store, prog: cfg.Program, models: cfg.Models, clock: cfg.Clock, owner: cfg.Owner,
		leaseTTL: cfg.LeaseTTL, log: cfg.Logger, cascade: !cfg.NoCascade, onRelief: cfg.OnRelief, obs: cfg.Observer, noGate: cfg.NoSavingsGate, deferSum: cfg.DeferSummary, deferFirst: !cfg.EagerFirstSummary, counter: cfg.Counter,
		elsewhere: cfg.RecallElsewhere, noRecallElision: cfg.NoRecallElision,
		agents: map[string]int{}, pending: map[string]map[string]int{}}
	cacheSessions := cfg.CacheSessions
	if cacheSessions == 0 {
		cacheSessions = DefaultCacheSessions
	}
	s.cache = runtime.NewLedgerCache(cacheSessions, 0)
	if s.leaseTTL <= 0 {
		s.leaseTTL = 2 * time.Minute
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.counter == nil {
		s.counter = CounterFor
	}
	p := cfg.Program
	s.pols = make([]AgentPolicies, len(p.Agents))
	triggers := false
	for i := range p.Agents {
		s.pols[i] = PoliciesOf(p, i)
		if p.Agents[i].Kind == bytecode.AgentLLM {
			s.agents[p.Agents[i].Name] = i
		}
		if sp := s.pols[i].Summary; sp != nil && sp.Trigger >= 0 {
			triggers = true
		}
	}
	if triggers {
		load := vm.New
		if cfg.Verified {
			load = vm.NewVerified
		}
		m, err := load(p, s.triggerFuncs(cfg.Funcs))
		if err != nil {
			return nil, fmt.Errorf("history: load the program for summary triggers: %w", err)
		}
		s.machine = m
	}
	return s, nil
}

// triggerFuncs is base plus the trigger functions, which read the metrics
// of the evaluation in progress; a function the program names that base
// lacks fails when called.
func (s *Service) triggerFuncs(base map[string]vm.Func) map[string]vm.Func {
	if base == nil {
		base = vm.Builtins()
	}
	funcs := maps.Clone(base)
	for _, name := range s.prog.Funcs {
		if _, ok := funcs[name]; !ok {
			funcs[name] = func([]types.Value) (types.Value, error) {
				return types.Value{}, fmt.Errorf("%s is not available in a summary trigger", name)
			}
		}
	}
	num := func(v types.Value) float64 {
		if v.Kind() == types.ValInt {
			return float64(v.Int())
		}
		return v.Float()
	}
	funcs["context_ratio"] = func(args []types.Value) (types.Value, error) {
		if len(args) != 1 {
			return types.Value{}, fmt.Errorf("context_ratio takes one ratio")
		}
		return types.MakeBool(s.contextRatio(num(args[0]), s.trig)), nil
	}
	funcs["event_count"] = func(args []types.Value) (types.Value, error) {
		if len(args) != 1 {
			return types.Value{}, fmt.Errorf("event_count takes one count")
		}
		return types.MakeBool(float64(s.trig.Events) > num(args[0])), nil
	}
	funcs["token_count"] = func(args []types.Value) (types.Value, error) {
		if len(args) != 1 {
			return types.Value{}, fmt.Errorf("token_count takes one count")
		}
		return types.MakeBool(float64(s.trig.Tokens) > num(args[0])), nil
	}
	return funcs
}

// policies returns agent ai's policies (none for an unknown index).
func (s *Service) policies(ai int) AgentPolicies {
	if ai < 0 || ai >= len(s.pols) {
		return AgentPolicies{Window: DefaultWindow}
	}
	return s.pols[ai]
}

// counterFor returns the counter of a model (by its provider id).
func (s *Service) counterFor(m runtime.Model, declared string) *Counter {
	id := ModelID(s.prog, declared)
	if m != nil {
		if mid := m.Info().Model; mid != "" {
			id = mid
		}
	}
	return s.counter(id)
}

// windowOf resolves a model's window: the declaration's context_window,
// else what the model reports, else DefaultWindow.
func (s *Service) windowOf(m runtime.Model, declared string) int {
	for i := range s.prog.Models {
		if s.prog.Models[i].Name != declared {
			continue
		}
		for _, at := range s.prog.Models[i].Attrs {
			if at.Name == "context_window" {
				if n := constInt(s.prog, at, 0); n > 0 {
					return n
				}
			}
		}
	}
	if m != nil {
		if n := m.Info().ContextWindow; n > 0 {
			return n
		}
	}
	return DefaultWindow
}

// AfterRun implements runtime.PostRunHook: it updates the summary of every
// filter key whose llm agent (with a summary policy) ran in the run, then,
// when one advanced and cascading is on, the full-session summary (key "")
// under the same policy.
func (s *Service) AfterRun(ctx context.Context, job runtime.PostRun) error {
	targets := s.takePending(job.Run)
	if s.deferSum {
		return nil // the next call's Open summarizes (Config.DeferSummary)
	}
	if len(targets) == 0 {
		var err error
		if targets, err = s.scanRun(ctx, job); err != nil {
			return err
		}
	}
	if s.deferFirst {
		// A key's first summary is the next call's (Config.EagerFirstSummary).
		for k := range targets {
			if first, err := s.noSummary(ctx, job.Session, k); err != nil {
				return errorsAfterRun(job.Run, []error{err})
			} else if first {
				delete(targets, k)
			}
		}
	}
	return errorsAfterRun(job.Run, s.summarizeKeys(ctx, job.Session, job.Run, targets))
}

// noSummary reports whether filter key k of session has no stored summary.
func (s *Service) noSummary(ctx context.Context, session store.SessionKey, k string) (bool, error) {
	_, err := s.st.GetSummary(ctx, session, k)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("history: read summary %q of %s: %w", k, session, err)
	}
	return false, nil
}

// summarizeKeys updates the summary of every filter key of targets (key →
// program agent) whose agent has a summary policy, then, when one advanced
// and cascading is on, the full-session summary (key "") under the same
// policy. It returns the errors met.
func (s *Service) summarizeKeys(ctx context.Context, session store.SessionKey, run string, targets map[string]int) []error {
	keys := slices.Sorted(maps.Keys(targets))
	var errs []error
	cascadeAgent, cascadeKey := -1, ""
	var cascadeFrom SummarizeResult
	for _, k := range keys {
		ai := targets[k]
		if s.policies(ai).Summary == nil {
			continue
		}
		res, err := s.Summarize(ctx, SummarizeRequest{Session: session, FilterKey: k, Agent: ai, Run: run})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if res.PersistErr != nil {
			errs = append(errs, res.PersistErr)
		}
		if res.Advanced && res.PersistErr == nil && cascadeAgent < 0 && k != "" {
			cascadeAgent, cascadeKey, cascadeFrom = ai, k, res
		}
	}
	if s.cascade && cascadeAgent >= 0 {
		// One llm agent's session: its summary is the session's; no
		// second summarizer call.
		if copied, err := s.cascadeByCopy(ctx, session, cascadeKey, cascadeFrom); err != nil || copied {
			if err != nil {
				errs = append(errs, err)
			}
			return errs
		}
		res, err := s.Summarize(ctx, SummarizeRequest{Session: session, FilterKey: "", Agent: cascadeAgent, Run: run})
		if err != nil {
			errs = append(errs, err)
		} else if res.PersistErr != nil {
			errs = append(errs, res.PersistErr)
		}
	}
	return errs
}

func errorsAfterRun(run string, errs []error) error {
	if len(errs) > 0 {
		return fmt.Errorf("history: after run %s: %w", run, errors.Join(errs...))
	}
	return nil
}

// scanRun finds the llm agents of a run from its model_response events
// (when the run's calls were not opened through this Service).
func (s *Service) scanRun(ctx context.Context, job runtime.PostRun) (map[string]int, error) {
	entries, err := s.st.ListEvents(ctx, job.Session, store.EventsAfter(job.FirstEvent), 0)
	if err != nil {
		return nil, fmt.Errorf("history: read run %s: %w", job.Run, err)
	}
	out := map[string]int{}
	for _, en := range entries {
		if !runtime.MayBeHistory(en.Data) {
			continue // decode only what may be a model response
		}
		e, err := runtime.DecodeEvent(en.Data)
		if err != nil || e.Run != job.Run || e.Kind != runtime.EventModelResponse {
			continue
		}
		if ai, ok := s.agents[e.Author]; ok {
			out[e.FilterKey] = ai
		}
	}
	return out, nil
}

// maxPending bounds the runs remembered between Open and AfterRun.
const maxPending = 4096

func (s *Service) notePending(run, key string, ai int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.pending[run]
	if m == nil {
		if len(s.pending) >= maxPending {
			clear(s.pending)
		}
		m = map[string]int{}
		s.pending[run] = m
	}
	m[key] = ai
}

func (s *Service) takePending(run string) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.pending[run]
	delete(s.pending, run)
	return m
}

// HasSummaries reports whether an agent of the program has a summary
// policy (without one the Service's AfterRun has nothing to do).
func (s *Service) HasSummaries() bool {
	for _, ap := range s.pols {
		if ap.Summary != nil {
			return true
		}
	}
	return false
}
