package runtime

import (
	"math"

	"github.com/agentc/agentc/compiler/bytecode"
)

// Price is what a model declares it costs (its price block), in USD per
// million tokens. Cached is read but not yet counted: Usage has no cached
// count, so every prompt token is priced at Input (spec/language.md §5).
type Price struct {
	Input, Output, Cached float64
}

// Cost returns the cost in USD of a call with usage u.
func (p *Price) Cost(u Usage) float64 {
	return (float64(u.PromptTokens)*p.Input + float64(u.CompletionTokens)*p.Output) / 1e6
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
	if !found {
		return nil
	}
	return &pr
}

// runTotals sums an invocation's model calls: their usage, and the cost of
// the priced ones.
type runTotals struct {
	usage  Usage
	cost   float64
	priced bool // some call had a price: cost is known
}

// addCall adds one model call to the invocation's totals (any goroutine).
func (a *activeRun) addCall(u Usage, cost *float64) {
	a.mu.Lock()
	a.totals.usage.PromptTokens += u.PromptTokens
	a.totals.usage.CompletionTokens += u.CompletionTokens
	if cost != nil {
		a.totals.cost += *cost
		a.totals.priced = true
	}
	a.mu.Unlock()
}

// fillTotals puts the invocation's totals on its run_finished event: usage
// when any call reported some, cost when any call was priced.
func (a *activeRun) fillTotals(fin *Event) {
	a.mu.Lock()
	t := a.totals
	a.mu.Unlock()
	if t.usage != (Usage{}) {
		u := t.usage
		fin.Usage = &u
	}
	if t.priced {
		c := t.cost
		fin.Cost = &c
	}
}
