package bytecode

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Budgets (section 15; spec/bytecode.md "Budgets"): per runnable, the
// declared budget and the compiler's bound; and the serve block's budget.
//
//	15 budgets  = limits(serve) list(budget) .
//	   budget   = uvarint(graph) limits bound .
//	   limits   = uvarint(tokens) uvarint(modelCalls) f64(cost) .       0: not limited
//	   bound    = bool(bounded) uvarint(modelCalls) uvarint(tokens) f64(cost)
//	              uvarint(minModelCalls) str(why) .
//	   f64      = uvarint(IEEE 754 bits) .

// Limits is a declared budget; a zero field is not limited.
type Limits struct {
	Tokens     uint64  `json:"tokens,omitempty"`
	ModelCalls uint64  `json:"model_calls,omitempty"`
	Cost       float64 `json:"cost,omitempty"` // USD
}

// IsZero reports whether nothing is limited.
func (l Limits) IsZero() bool { return l == Limits{} }

// Min returns the tighter of l and o in each dimension (zero: unlimited).
func (l Limits) Min(o Limits) Limits {
	minU := func(a, b uint64) uint64 {
		if a == 0 || b != 0 && b < a {
			return b
		}
		return a
	}
	out := Limits{Tokens: minU(l.Tokens, o.Tokens), ModelCalls: minU(l.ModelCalls, o.ModelCalls), Cost: l.Cost}
	if out.Cost == 0 || o.Cost != 0 && o.Cost < out.Cost {
		out.Cost = o.Cost
	}
	return out
}

// String renders the limits as a budget block's body ("-" when none).
func (l Limits) String() string {
	var parts []string
	if l.Tokens > 0 {
		parts = append(parts, "tokens = "+strconv.FormatUint(l.Tokens, 10))
	}
	if l.Cost > 0 {
		parts = append(parts, "cost = "+strconv.FormatFloat(l.Cost, 'g', -1, 64))
	}
	if l.ModelCalls > 0 {
		parts = append(parts, "model_calls = "+strconv.FormatUint(l.ModelCalls, 10))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// Bound is what one run of a runnable uses at most, and the fewest model
// calls a run from start to end makes.
type Bound struct {
	Bounded       bool    `json:"bounded"` // ModelCalls, Tokens and Cost are upper bounds; else Why says what has none
	ModelCalls    uint64  `json:"model_calls,omitempty"`
	Tokens        uint64  `json:"tokens,omitempty"`
	Cost          float64 `json:"cost,omitempty"` // USD; calls of unpriced models count 0
	MinModelCalls uint64  `json:"min_model_calls"`
	Why           string  `json:"why,omitempty"`
}

// String renders the bound for compile reports and disassembly.
func (b Bound) String() string {
	var s string
	if b.Bounded {
		s = fmt.Sprintf("at most %d model calls, %d tokens, $%s", b.ModelCalls, b.Tokens, strconv.FormatFloat(b.Cost, 'g', 6, 64))
	} else {
		s = "unbounded (" + b.Why + ")"
	}
	return s + fmt.Sprintf("; at least %d model calls", b.MinModelCalls)
}

// Budget is one runnable's declared budget and bound.
type Budget struct {
	Graph  uint32 // Graphs index: the runnable (an agent's lowered graph)
	Limits Limits
	Bound  Bound
}

// BudgetOf returns the budget entry of graph gi, if the program has one.
func (p *Program) BudgetOf(gi int) (*Budget, bool) {
	i, ok := slices.BinarySearchFunc(p.Budgets, gi, func(b Budget, gi int) int { return cmp.Compare(int(b.Graph), gi) })
	if !ok {
		return nil, false
	}
	return &p.Budgets[i], true
}

func (w *writer) f64(x float64) { w.uv(math.Float64bits(x)) }

func (r *reader) f64() float64 { return math.Float64frombits(r.uvarint()) }

func (w *writer) limits(l Limits) {
	w.uv(l.Tokens)
	w.uv(l.ModelCalls)
	w.f64(l.Cost)
}

func (r *reader) limits() Limits {
	return Limits{Tokens: r.uvarint(), ModelCalls: r.uvarint(), Cost: r.f64()}
}

func (w *writer) budgets(p *Program) error {
	w.limits(p.ServeBudget)
	w.u(len(p.Budgets))
	for i := range p.Budgets {
		b := &p.Budgets[i]
		w.u32(b.Graph)
		w.limits(b.Limits)
		w.bool(b.Bound.Bounded)
		w.uv(b.Bound.ModelCalls)
		w.uv(b.Bound.Tokens)
		w.f64(b.Bound.Cost)
		w.uv(b.Bound.MinModelCalls)
		w.str(b.Bound.Why)
	}
	return nil
}

// budgetMin is the fewest bytes one budget entry encodes to.
const budgetMin = 1 + 3 + 1 + 3 + 1 + 1

func (r *reader) budgets(p *Program) {
	p.ServeBudget = r.limits()
	p.Budgets = list(r, budgetMin, func(r *reader, b *Budget) {
		b.Graph, b.Limits = r.u32(), r.limits()
		b.Bound.Bounded = r.bool()
		b.Bound.ModelCalls, b.Bound.Tokens, b.Bound.Cost = r.uvarint(), r.uvarint(), r.f64()
		b.Bound.MinModelCalls, b.Bound.Why = r.uvarint(), r.str()
	})
}

// budgetsEmpty is the rule by which Encode omits section 15.
func budgetsEmpty(p *Program) bool { return p.ServeBudget.IsZero() && len(p.Budgets) == 0 }

// validCost reports whether x is a finite amount ≥ 0.
func validCost(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }

// budgets checks section 15: entries name distinct graphs in ascending
// order; costs are finite and ≥ 0 (NaN fails); an unbounded entry says
// why and has no upper figures, a bounded one no reason.
func (v verifier) budgets() verifier {
	p := v.p
	check := func(what string, l Limits) {
		if !validCost(l.Cost) {
			v.errorf("%s: budget cost %v is not a finite amount ≥ 0", what, l.Cost)
		}
	}
	check("serve", p.ServeBudget)
	for i := range p.Budgets {
		b := &p.Budgets[i]
		what := fmt.Sprintf("budget %d", i)
		if int64(b.Graph) >= int64(len(p.Graphs)) {
			v.errorf("%s: graph %d out of range", what, b.Graph)
			continue
		}
		what += " (graph " + p.Graphs[b.Graph].Name + ")"
		if i > 0 && b.Graph <= p.Budgets[i-1].Graph {
			v.errorf("%s: entries must name distinct graphs in ascending order", what)
		}
		check(what, b.Limits)
		if !validCost(b.Bound.Cost) {
			v.errorf("%s: bound cost %v is not a finite amount ≥ 0", what, b.Bound.Cost)
		}
		switch {
		case b.Bound.Bounded && b.Bound.Why != "":
			v.errorf("%s: a bounded entry has no reason", what)
		case !b.Bound.Bounded && b.Bound.Why == "":
			v.errorf("%s: an unbounded entry needs a reason", what)
		case !b.Bound.Bounded && (b.Bound.ModelCalls != 0 || b.Bound.Tokens != 0 || b.Bound.Cost != 0):
			v.errorf("%s: an unbounded entry has no upper figures", what)
		case b.Bound.Bounded && b.Bound.MinModelCalls > b.Bound.ModelCalls:
			v.errorf("%s: at least %d model calls is above at most %d", what, b.Bound.MinModelCalls, b.Bound.ModelCalls)
		}
	}
	return v
}

// BudgetReport is one runnable's bound and budget as `agentc compile`
// reports them.
type BudgetReport struct {
	Runnable string  `json:"runnable"` // the graph (an agent's lowered graph has the agent's name)
	Bound    Bound   `json:"bound"`
	Budget   *Limits `json:"budget,omitempty"` // the declared one, nil when none
}

// BudgetReports returns the bound and budget of every runnable, in graph
// order.
func (p *Program) BudgetReports() []BudgetReport {
	out := make([]BudgetReport, 0, len(p.Budgets))
	for i := range p.Budgets {
		b := &p.Budgets[i]
		r := BudgetReport{Runnable: "?", Bound: b.Bound}
		if int64(b.Graph) < int64(len(p.Graphs)) {
			r.Runnable = p.Graphs[b.Graph].Name
		}
		if !b.Limits.IsZero() {
			l := b.Limits
			r.Budget = &l
		}
		out = append(out, r)
	}
	return out
}

// String renders the report on one line.
func (r BudgetReport) String() string {
	s := r.Runnable + ": " + r.Bound.String()
	if r.Budget != nil {
		s += "; budget " + r.Budget.String()
	}
	return s
}

// budgets disassembles section 15.
func (d *disasm) budgets() {
	p := d.p
	if budgetsEmpty(p) {
		return
	}
	d.printf("budgets\n")
	if !p.ServeBudget.IsZero() {
		d.printf("  serve budget %s\n", p.ServeBudget)
	}
	for _, r := range p.BudgetReports() {
		d.printf("  %s\n", r)
	}
}
