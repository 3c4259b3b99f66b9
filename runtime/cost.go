package runtime

import (
	"math"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/store"
)

// Price is what a model declares it costs (its price block), in USD per
// million tokens (spec/language.md §5). HasCached is whether the block
// declares cached: without it, cached prompt tokens cost Input like the
// others.
type Price struct {
	Input, Output, Cached float64
	HasCached             bool
}

// Cost returns the cost in USD of a call with usage u: the prompt tokens
// the provider read from its cache (at most the prompt) at Cached when
// declared, the other prompt tokens at Input, completion tokens at Output.
func (p *Price) Cost(u Usage) float64 {
	cached := min(max(u.CachedTokens, 0), u.PromptTokens)
	cachedRate := p.Input
	if p.HasCached {
		cachedRate = p.Cached
	}
	return (float64(u.PromptTokens-cached)*p.Input + float64(cached)*cachedRate +
		float64(u.CompletionTokens)*p.Output) / 1e6
}

// priceOf reads the price.* attributes of a model descriptor; nil when it
// declares none. A price that is not a finite number ≥ 0 (the compiler
// refuses one; a hand-made program may hold one) reads as 0.
func priceOf(p *bytecode.Program, md *bytecode.Model) *Price {
	var pr Price
	found := false
	for _, f := range []struct {
		name string
		dst  *float64
	}{{"price.input", &pr.Input}, {"price.output", &pr.Output}, {"price.cached", &pr.Cached}} {
		at, ok := bytecode.FindAttr(md.Attrs, f.name)
		if !ok {
			continue
		}
		found = true
		if x, ok := p.AttrNumber(at); ok && x >= 0 && !math.IsInf(x, 1) {
			*f.dst = x
		}
	}
	_, pr.HasCached = bytecode.FindAttr(md.Attrs, "price.cached")
	if !found {
		return nil
	}
	return &pr
}

// addCall adds one model call to the invocation's totals (any goroutine).
func (a *activeRun) addCall(u Usage, cost *float64) {
	a.mu.Lock()
	a.totals.Calls++
	a.totals.add(u, cost)
	a.mu.Unlock()
}

// fillTotals puts the invocation's totals on its run_finished event: usage
// when any call reported some, cost when any call was priced.
func (a *activeRun) fillTotals(fin *Event) {
	a.mu.Lock()
	t := a.totals
	a.mu.Unlock()
	if t.Usage != (Usage{}) {
		u := t.Usage
		fin.Usage = &u
	}
	if t.Priced {
		c := t.Cost
		fin.Cost = &c
	}
}

// runUsage is what the run record keeps at the end of this invocation: what
// the earlier invocations used (seeded on resume) and this one's calls.
func (a *activeRun) runUsage() *store.RunUsage {
	a.mu.Lock()
	u := a.prior
	u.Calls += a.totals.Calls
	u.add(a.totals.Usage, nil)
	u.Cost += a.totals.Cost
	u.Priced = u.Priced || a.totals.Priced
	a.mu.Unlock()
	return u.record()
}
