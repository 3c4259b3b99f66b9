package compiler

import (
	"math"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/bytecode"
)

// The bound of each runnable: loop bounds, retries, max_turns, list
// literals, windows and prices; the cheapest path's model calls; lowered
// into section 15 with the declared budgets, round-tripped by the file
// format, checked by Verify and shown by the disassembly.
func TestBudgetBounds(t *testing.T) {
	prog, ds := compileSource(t, `
model m {
  provider       = openai
  name           = "x"
  context_window = 1000
  max_tokens     = 100
  price { input = 1, output = 10 }
}
model free { provider = openai, name = "y" }
agent writer llm { model = m, max_turns = 2 }
agent critic llm { model = free, max_turns = 3, budget { tokens = 50000 } }
agent panel parallel { agents = [writer, critic] }
agent loop cycle { agents = [writer, critic], max = 2 }
state S { q: string, draft: string = "", ok: bool = false, notes: list<string> = [] reduce append, failure: error? }
graph review(S) input q output draft {
  budget { model_calls = 40, cost = 1 }
  node write = llm writer { prompt = q } retry 1 into draft
  node judge = llm critic { prompt = draft } catch -> giveup into ok
  node each  = map x in ["a", "b", "c"] { llm writer { prompt = x } } into notes
  node giveup = set { failure = error }
  start -> write
  write -> judge
  judge -> each when ok
  judge -> write otherwise max 2 else -> end
  each -> end
  giveup -> end
}
serve { run = review, budget { cost = 0.5 } }
`)
	if prog == nil {
		t.Fatalf("does not compile: %v", ds)
	}
	// One call of m: 1000 tokens, at most 900 prompt at $1/M and 100
	// completion at $10/M = $0.0019; of free: 8192 tokens, $0.
	// writer: 2 calls; critic: 3; panel and loop: 5 and 2×5.
	// review: write, judge and each are reachable from start and from
	// the target of the max 2 edge, so each may run 1 + 2 times (the bound
	// does not know that each ends the run): write 3 × 2 attempts × 2
	// calls, judge 3 × 3, each 3 × 3 items × 2.
	want := map[string]bytecode.Bound{
		"writer": {Bounded: true, ModelCalls: 2, Tokens: 2000, Cost: 0.0038, MinModelCalls: 1},
		"critic": {Bounded: true, ModelCalls: 3, Tokens: 3 * 8192, MinModelCalls: 1},
		"panel":  {Bounded: true, ModelCalls: 5, Tokens: 2000 + 3*8192, Cost: 0.0038, MinModelCalls: 2},
		"loop":   {Bounded: true, ModelCalls: 10, Tokens: 2 * (2000 + 3*8192), Cost: 0.0076, MinModelCalls: 2},
		"review": {Bounded: true, ModelCalls: 3*2*2 + 3*3 + 3*3*2, Tokens: 3*2*2000 + 3*3*8192 + 3*3*2000, Cost: 0.0019 * (12 + 18), MinModelCalls: 1},
	}
	back := reloaded(t, prog)
	for _, p := range []*bytecode.Program{prog, back} {
		got := map[string]bytecode.BudgetReport{}
		for _, r := range p.BudgetReports() {
			got[r.Runnable] = r
		}
		for name, w := range want {
			g := got[name].Bound
			if g.Bounded != w.Bounded || g.ModelCalls != w.ModelCalls || g.Tokens != w.Tokens || g.MinModelCalls != w.MinModelCalls || !near(g.Cost, w.Cost) {
				t.Errorf("%s: bound %+v, want %+v", name, g, w)
			}
		}
		if l := got["review"].Budget; l == nil || *l != (bytecode.Limits{ModelCalls: 40, Cost: 1}) {
			t.Errorf("review budget %+v", l)
		}
		if l := got["critic"].Budget; l == nil || *l != (bytecode.Limits{Tokens: 50000}) {
			t.Errorf("critic budget %+v", l)
		}
		if got["writer"].Budget != nil {
			t.Errorf("writer has a budget: %+v", got["writer"].Budget)
		}
		if p.ServeBudget != (bytecode.Limits{Cost: 0.5}) {
			t.Errorf("serve budget %+v", p.ServeBudget)
		}
	}
	dis := bytecode.Disasm(prog)
	for _, want := range []string{"budgets\n", "  serve budget cost = 0.5\n", "  review: at most 39 model calls", "; budget cost = 1, model_calls = 40\n"} {
		if !strings.Contains(dis, want) {
			t.Errorf("disasm lacks %q:\n%s", want, dis)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

// The cheapest path: a catch route and a cached node cost nothing; an
// unbounded map or an agent tool has no upper bound.
func TestBudgetMinAndUnbounded(t *testing.T) {
	prog, ds := compileSource(t, `
model m { provider = openai, name = "x" }
agent a llm { model = m, max_turns = 1 }
tool ask { input { q: string } run = agent a effect = read_only }
agent boss llm { model = m, tools = [ask] }
state S { q: string, xs: list<string> = [], out: string = "", notes: list<string> = [] reduce append }
graph g(S) input q output out {
  node one   = llm a { prompt = q } catch -> two into out
  node two   = llm a { prompt = q } into out
  node three = llm a { prompt = q } into out
  node four  = llm a { prompt = q } cache into out
  node each  = map x in xs { llm a { prompt = x } } into notes
  start -> one
  one -> two
  two -> three
  three -> four
  four -> each
  each -> end
}
`)
	if prog == nil {
		t.Fatalf("does not compile: %v", ds)
	}
	got := map[string]bytecode.BudgetReport{}
	for _, r := range prog.BudgetReports() {
		got[r.Runnable] = r
	}
	if b := got["g"].Bound; b.Bounded || b.MinModelCalls != 2 || !strings.Contains(b.Why, "map each iterates over a list of unknown size") {
		t.Errorf("g: %+v", b)
	}
	if b := got["boss"].Bound; b.Bounded || b.MinModelCalls != 1 || !strings.Contains(b.Why, "tool ask, which runs agent a") {
		t.Errorf("boss: %+v", b)
	}
}

func TestBudgetBlockAttrs(t *testing.T) {
	var names []string
	for _, d := range BlockAttrs("budget") {
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "tokens,cost,model_calls" {
		t.Errorf("BlockAttrs(budget) = %v", names)
	}
}

// Verify refuses a damaged budgets section.
func TestBudgetVerify(t *testing.T) {
	src := `
model m { provider = openai, name = "x" }
agent a llm { model = m, budget { model_calls = 3 } }
state S { q: string, out: string = "" }
graph g(S) input q output out {
  node one = llm a { prompt = q } into out
  start -> one
  one -> end
}
`
	for _, c := range []struct {
		name string
		bad  func(p *bytecode.Program)
		want string
	}{
		{"graph out of range", func(p *bytecode.Program) { p.Budgets[0].Graph = 99 }, "graph 99 out of range"},
		{"order", func(p *bytecode.Program) { p.Budgets[0], p.Budgets[1] = p.Budgets[1], p.Budgets[0] }, "ascending order"},
		{"nan cost", func(p *bytecode.Program) { p.Budgets[0].Limits.Cost = math.NaN() }, "not a finite amount"},
		{"negative serve cost", func(p *bytecode.Program) { p.ServeBudget.Cost = -1 }, "serve: budget cost -1"},
		{"unbounded without why", func(p *bytecode.Program) { p.Budgets[0].Bound = bytecode.Bound{} }, "needs a reason"},
		{"min above max", func(p *bytecode.Program) { p.Budgets[0].Bound.MinModelCalls = 99 }, "is above at most"},
	} {
		prog, ds := compileSource(t, src)
		if prog == nil {
			t.Fatalf("does not compile: %v", ds)
		}
		if err := bytecode.Verify(prog); err != nil {
			t.Fatalf("%s: the good program fails: %v", c.name, err)
		}
		c.bad(prog)
		if err := bytecode.Verify(prog); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Verify = %v, want %q", c.name, err, c.want)
		}
	}
}

// A map over a state field with a list size (`max N`) is bounded by N
// times its body, whatever its concurrency: the G417 case of a map over an
// input becomes a proven bound, lowered with the size into section 16;
// G416 still holds against the graph's cheapest path.
func TestBudgetListSize(t *testing.T) {
	src := `
model m { provider = openai, name = "x", context_window = 1000 }
agent a llm { model = m, max_turns = 2 }
state S { qs: list<string> max 5 = [], out: list<string> max 5 = [] reduce append, first: string = "" }
graph each_one(S) input qs {
  budget { model_calls = 20 }
  node each = map q in qs concurrency 2 { llm a { prompt = q } retry 1 } into out
  start -> each
  each -> end
}
graph twice(S) input qs {
  budget { model_calls = BUDGET }
  node one  = llm a { prompt = "go" } into first
  node each = map q in qs { llm a { prompt = q } } into out
  node two  = llm a { prompt = first } into first
  start -> one
  one -> each
  each -> two
  two -> end
}
`
	prog, ds := compileSource(t, strings.Replace(src, "BUDGET", "100", 1))
	if prog == nil {
		t.Fatalf("does not compile: %v", ds)
	}
	for _, d := range ds {
		t.Errorf("unexpected diagnostic: %v", d)
	}
	got := map[string]bytecode.BudgetReport{}
	for _, r := range reloaded(t, prog).BudgetReports() {
		got[r.Runnable] = r
	}
	// each_one: 5 items × 2 attempts × 2 turns; twice: 2 + 5×2 + 2.
	if b := got["each_one"].Bound; !b.Bounded || b.ModelCalls != 20 || b.Tokens != 20*1000 || b.MinModelCalls != 0 {
		t.Errorf("each_one: %+v", b)
	}
	if b := got["twice"].Bound; !b.Bounded || b.ModelCalls != 14 || b.MinModelCalls != 2 {
		t.Errorf("twice: %+v", b)
	}
	st := prog.States[prog.Graphs[0].State]
	for _, f := range st.Fields {
		if want := map[string]uint32{"qs": 5, "out": 5}[f.Name]; f.MaxLen != want {
			t.Errorf("field %s: MaxLen %d, want %d", f.Name, f.MaxLen, want)
		}
	}
	if dis := bytecode.Disasm(prog); !strings.Contains(dis, " qs list<string> max 5 = []\n") {
		t.Errorf("disasm lacks the size:\n%s", dis)
	}
	_, ds = compileSource(t, strings.Replace(src, "BUDGET", "1", 1))
	var codes []string
	for _, d := range ds {
		codes = append(codes, string(d.Code))
	}
	if strings.Join(codes, ",") != string(BudgetBelowMinimum) {
		t.Errorf("budget 1: diagnostics %v, want one G416", ds)
	}
}

// A prompt token may be read from the provider's cache: a cached price
// dearer than input bounds the prompt; a cheaper one leaves input's bound.
func TestBudgetBoundCachedPrice(t *testing.T) {
	for _, tc := range []struct {
		price string
		want  float64
	}{
		{"input = 1, output = 10, cached = 3", (900*3 + 100*10) / 1e6},
		{"input = 1, output = 10, cached = 0.5", (900*1 + 100*10) / 1e6},
	} {
		prog, ds := compileSource(t, `
model m {
  provider       = openai
  name           = "x"
  context_window = 1000
  max_tokens     = 100
  price { `+tc.price+` }
}
agent writer llm { model = m, max_turns = 1 }
`)
		if prog == nil {
			t.Fatalf("%s: does not compile: %v", tc.price, ds)
		}
		found := false
		for _, r := range prog.BudgetReports() {
			if r.Runnable == "writer" {
				found = true
				if !near(r.Bound.Cost, tc.want) {
					t.Errorf("%s: cost bound %v, want %v", tc.price, r.Bound.Cost, tc.want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no bound for writer", tc.price)
		}
	}
}
