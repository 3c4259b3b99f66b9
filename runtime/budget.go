package runtime

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// Budgets at run time (spec/runner.md, "Budgets"): a run's model calls
// are admitted against its budget — the runnable's, tightened by the serve
// block's — counted over the whole run (every invocation, sub-runs
// included), and against the budget of each call of a graph or agent that
// declares one (a graph node's sub-graph, an agent node's or llm node's
// agent), counted over that call. A call is refused once a budget's
// model_calls are made or its tokens or cost used up; a call whose usage
// takes a budget past tokens or cost fails when it returns. Either way the
// node fails with budget_exceeded, which a catch route may take and a
// retry never repeats.

// budgetScope is one budget and what the model calls under it used
// (guarded by activeRun.mu). The run's is activeRun.budget; a call's has
// the enclosing scope as parent (nil: the run's).
type budgetScope struct {
	limits bytecode.Limits
	used   RunUsage
	what   string // "the run", "graph research", "agent writer"
	parent *budgetScope
}

// RunUsage is what a run's model calls used: their number, tokens and
// cost (USD, priced models only; Priced says some call was priced).
type RunUsage struct {
	Calls  uint64
	Usage  Usage
	Cost   float64
	Priced bool
}

// add counts one call's usage and cost (calls are counted when admitted).
func (u *RunUsage) add(us Usage, cost *float64) {
	u.Usage.PromptTokens += us.PromptTokens
	u.Usage.CompletionTokens += us.CompletionTokens
	u.Usage.CachedTokens += us.CachedTokens
	if cost != nil {
		u.Cost += *cost
		u.Priced = true
	}
}

// addResponse counts a recorded model_response: one call, its usage and
// cost.
func (u *RunUsage) addResponse(e *Event) {
	u.Calls++
	if e.Usage != nil {
		u.add(*e.Usage, e.Cost)
	} else {
		u.add(Usage{}, e.Cost)
	}
}

// record is u as the run record keeps it (a negative count, which no
// provider reports, reads as 0).
func (u *RunUsage) record() *store.RunUsage {
	n := func(v int) uint64 { return uint64(max(v, 0)) }
	cost := u.Cost
	if !(cost >= 0) || math.IsInf(cost, 1) {
		cost = 0
	}
	return &store.RunUsage{ModelCalls: u.Calls, InputTokens: n(u.Usage.PromptTokens), OutputTokens: n(u.Usage.CompletionTokens),
		CachedTokens: n(u.Usage.CachedTokens), Cost: cost, Priced: u.Priced}
}

// RunUsageOf is the usage a run record keeps, as a RunUsage.
func RunUsageOf(r store.RunUsage) RunUsage {
	n := func(v uint64) int { return int(min(v, math.MaxInt)) }
	return RunUsage{Calls: r.ModelCalls, Usage: Usage{PromptTokens: n(r.InputTokens), CompletionTokens: n(r.OutputTokens),
		CachedTokens: n(r.CachedTokens)}, Cost: r.Cost, Priced: r.Priced}
}

func (u *RunUsage) tokens() uint64 {
	return uint64(max(u.Usage.PromptTokens, 0)) + uint64(max(u.Usage.CompletionTokens, 0))
}

// LedgerRunUsage sums the model_response events of run in session key's
// ledger: what the run's model calls used over all its invocations. The
// ledger is the record of a run's usage (a run_finished event carries only
// its invocation's totals, and an invocation cut off by a crash has none).
// It is read from the run's first event (store.Run.FirstEvent; 0: from the
// ledger's start).
func LedgerRunUsage(ctx context.Context, st store.Sessions, key store.SessionKey, run string, first uint64) (RunUsage, error) {
	var out RunUsage
	entries, err := st.ListEvents(ctx, key, store.EventsAfter(first), 0)
	if err != nil {
		return out, fmt.Errorf("runtime: usage of run %s: %w", run, err)
	}
	for _, en := range entries {
		if k, ok := peekKind(en.Data); ok && string(k) != string(EventModelResponse) {
			continue // decode only what may be a model response
		}
		e, err := DecodeEvent(en.Data)
		if err != nil || e.Kind != EventModelResponse || e.Run != run {
			continue
		}
		out.addResponse(e)
	}
	return out, nil
}

// setBudget takes the budget of graph gi (the runnable) and the serve
// block's.
func (a *activeRun) setBudget(gi int) {
	p := a.p.prog
	l := p.ServeBudget
	if b, ok := p.BudgetOf(gi); ok {
		l = l.Min(b.Limits)
	}
	a.budget.limits, a.budget.what = l, "the run"
}

// seedUsage counts what a resumed run used before this invocation: its
// model calls in the ledger, and those of the tasks restored from its
// pending writes (not yet in the ledger). The run record's usage at the
// end of this invocation and the run's budget both start from it.
func (a *activeRun) seedUsage(ctx context.Context) error {
	u, err := LedgerRunUsage(ctx, a.r.st, a.key, a.id, a.first)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, te := range a.tasks {
		if e := te.ev; e.Kind == EventModelResponse {
			u.addResponse(e)
		}
	}
	a.prior, a.budget.used = u, u
	return nil
}

// callScope returns the scope of a call of graph gi (a sub-graph, or an
// agent's lowered graph) under h: a new one when gi declares a budget,
// else h's. The runnable's own agent, called by its lowered graph's one
// node, is under the run's scope already.
func (h *host) callScope(gi int, what string) *budgetScope {
	if h.budget == nil && h.scope == nil && gi == h.a.gi {
		return nil
	}
	if b, ok := h.a.p.prog.BudgetOf(gi); ok && !b.Limits.IsZero() {
		return &budgetScope{limits: b.Limits, what: what, parent: h.budget}
	}
	return h.budget
}

// scopes calls f on h's scope and each enclosing one, the run's last.
func (h *host) scopes(f func(s *budgetScope) error) error {
	for s := h.budget; s != nil; s = s.parent {
		if err := f(s); err != nil {
			return err
		}
	}
	return f(&h.a.budget)
}

// admitCall admits one model call of agent against every budget it is
// under and counts it there; it refuses one with budget_exceeded.
func (h *host) admitCall(agent string) error {
	if h.budget == nil && h.a.budget.limits.IsZero() {
		return nil
	}
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	err := h.scopes(func(s *budgetScope) error {
		l, u := &s.limits, &s.used
		switch {
		case l.ModelCalls > 0 && u.Calls >= l.ModelCalls:
			return budgetError(agent, "%s has made its %d model calls (budget model_calls = %d)", s.what, u.Calls, l.ModelCalls)
		case l.Tokens > 0 && u.tokens() >= l.Tokens:
			return budgetError(agent, "%s has used %d tokens (budget tokens = %d)", s.what, u.tokens(), l.Tokens)
		case l.Cost > 0 && u.Cost >= l.Cost:
			return budgetError(agent, "%s has cost $%s (budget cost = %s)", s.what, fmtUSD(u.Cost), fmtUSD(l.Cost))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return h.scopes(func(s *budgetScope) error { s.used.Calls++; return nil })
}

// chargeCall adds a returned call's usage and cost to every budget it is
// under; a call that took one past its tokens or cost fails with
// budget_exceeded (its response is recorded, its answer not used).
func (h *host) chargeCall(agent string, us Usage, cost *float64) error {
	if h.budget == nil && h.a.budget.limits.IsZero() {
		return nil
	}
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	var first error
	_ = h.scopes(func(s *budgetScope) error {
		s.used.add(us, cost)
		l, u := &s.limits, &s.used
		switch {
		case first != nil:
		case l.Tokens > 0 && u.tokens() > l.Tokens:
			first = budgetError(agent, "%s has used %d tokens, past its budget of %d", s.what, u.tokens(), l.Tokens)
		case l.Cost > 0 && u.Cost > l.Cost:
			first = budgetError(agent, "%s has cost $%s, past its budget of $%s", s.what, fmtUSD(u.Cost), fmtUSD(l.Cost))
		}
		return nil
	})
	return first
}

func budgetError(agent, format string, args ...any) *vm.Error {
	return vm.NewError(vm.KindBudget, "agent %s: %s", agent, fmt.Sprintf(format, args...))
}

func fmtUSD(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
