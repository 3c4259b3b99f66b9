package runtime_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/vm"
)

const costSource = `
model priced {
  provider = openai
  name     = "p"
  price { input = 2, output = 10, cached = 1 }
}
model free { provider = openai, name = "f" }
model zero { provider = openai, name = "z", price { input = 0 } }
agent a llm { model = priced }
agent b llm { model = free }
agent c llm { model = zero }
agent a2 llm { model = priced }
agent team chain { agents = [a, b, c, a2] }
state S { q: string, first: string = "", ok: bool = false, second: string = "" }
graph review(S) input q output second {
  node one = llm a { prompt = q } into first
  node ask = interrupt "Go on?" returns bool into ok
  node two = llm a2 { prompt = first } into second
  start -> one
  one -> ask
  ask -> two
  two -> end
}
`

const costFixture = `version: 1
replies:
  - match: {node: a}
    text: one
    usage: {prompt_tokens: 1000, completion_tokens: 500}
  - match: {node: b}
    text: two
    usage: {prompt_tokens: 40, completion_tokens: 4}
  - match: {node: c}
    text: three
    usage: {prompt_tokens: 7, completion_tokens: 3}
  - match: {node: one}
    text: draft
    usage: {prompt_tokens: 500000, completion_tokens: 0, cached_tokens: 400000}
  - match: {node: two}
    text: final
    usage: {prompt_tokens: 0, completion_tokens: 100000}
  - match: {node: a2}
    text: four
    usage: {prompt_tokens: 3000000, completion_tokens: 0}
`

// costRunner is a Runner of costSource over a memory store, its models
// scripted by costFixture.
func costRunner(t *testing.T) *runtime.Runner {
	t.Helper()
	r, _ := scriptedRunner(t, "shop", costSource, costFixture, "priced", "free", "zero")
	return r
}

// scriptedRunner is a Runner of app over src and a memory store (also
// returned), the models named scripted by fixture.
func scriptedRunner(t *testing.T, app, src, fixture string, models ...string) (*runtime.Runner, store.Store) {
	t.Helper()
	prog := runtimetest.CompileSource(t, app+".agent", src)
	fx, err := model.LoadFixture(app+".yaml", []byte(fixture))
	if err != nil {
		t.Fatal(err)
	}
	ms := map[string]runtime.Model{}
	for _, name := range models {
		ms[name] = model.NewScripted(runtime.ModelInfo{Name: name}, fx)
	}
	st := memory.New()
	r, err := runtime.NewRunner(runtime.RunnerConfig{App: app, Store: st, Program: prog, Models: ms,
		Funcs: vm.Builtins(), Clock: &runtimetest.Clock{}, Entropy: &runtimetest.Entropy{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r, st
}

func collect(t *testing.T, r *runtime.Runner, inv runtime.Invocation) []*runtime.Event {
	t.Helper()
	ch, err := r.Run(context.Background(), inv)
	if err != nil {
		t.Fatal(err)
	}
	var evs []*runtime.Event
	for e := range ch {
		evs = append(evs, e)
	}
	return evs
}

// Each model_response of a priced model carries its call's cost (prompt
// tokens at input, completion tokens at output, USD per million); an
// unpriced model's carries none; run_finished carries the invocation's
// usage and cost summed over its calls.
func TestModelCost(t *testing.T) {
	r := costRunner(t)
	evs := collect(t, r, runtime.Invocation{User: "u", Session: "s", Runnable: "team", Input: "go"})
	costs := map[string]*float64{}
	var fin *runtime.Event
	for _, e := range evs {
		switch e.Kind {
		case runtime.EventModelResponse:
			costs[e.Node] = e.Cost
		case runtime.EventRunFinished:
			fin = e
		}
	}
	want := map[string]*float64{"a": new(0.007), "b": nil, "c": new(0.0), "a2": new(6.0)}
	if len(costs) != len(want) {
		t.Fatalf("model_response costs %v, want nodes of %v", costs, want)
	}
	for node, w := range want {
		got, ok := costs[node]
		switch {
		case !ok:
			t.Errorf("no model_response of %s", node)
		case (got == nil) != (w == nil):
			t.Errorf("%s: cost %v, want %v", node, got, w)
		case got != nil && *got != *w:
			t.Errorf("%s: cost %v, want %v", node, *got, *w)
		}
	}
	if fin == nil || fin.Status != runtime.StatusCompleted {
		t.Fatalf("run_finished %+v", fin)
	}
	if fin.Usage == nil || *fin.Usage != (runtime.Usage{PromptTokens: 3001047, CompletionTokens: 507}) {
		t.Errorf("run_finished usage %+v", fin.Usage)
	}
	if fin.Cost == nil || *fin.Cost != 0.007+6 {
		t.Errorf("run_finished cost %v, want %v", fin.Cost, 0.007+6)
	}
}

// A resumed run's run_finished counts the calls of its own invocation: the
// call before the interrupt is in the first invocation's total, the one
// after it in the resumption's.
//
// The run record keeps the run's total: after each invocation, what every
// invocation so far used.
func TestModelCostPerInvocation(t *testing.T) {
	r, st := scriptedRunner(t, "shop", costSource, costFixture, "priced", "free", "zero")
	record := func(run string, want store.RunUsage) {
		t.Helper()
		got, err := st.GetRun(context.Background(), run)
		if err != nil || got.Usage != want {
			t.Fatalf("run record usage %+v, %v; want %+v", got.Usage, err, want)
		}
	}
	fin := func(evs []*runtime.Event) *runtime.Event {
		t.Helper()
		e := evs[len(evs)-1]
		if e.Kind != runtime.EventRunFinished {
			t.Fatalf("last event %s", e.Kind)
		}
		return e
	}
	first := fin(collect(t, r, runtime.Invocation{User: "u", Session: "s", Runnable: "review", Input: "q"}))
	// 100,000 uncached prompt tokens at 2 and 400,000 cached at 1 per million.
	if first.Status != runtime.StatusInterrupted || first.Cost == nil || *first.Cost != 0.6 ||
		first.Usage == nil || *first.Usage != (runtime.Usage{PromptTokens: 500000, CachedTokens: 400000}) {
		t.Fatalf("first invocation: status %s cost %v usage %v", first.Status, first.Cost, first.Usage)
	}
	record(first.Run, store.RunUsage{ModelCalls: 1, InputTokens: 500000, CachedTokens: 400000, Cost: 0.6, Priced: true})
	second := fin(collect(t, r, runtime.Invocation{User: "u", Session: "s", Resume: &runtime.ResumeRequest{Run: first.Run,
		Values: map[string]json.RawMessage{"review/ask": json.RawMessage("true")}}}))
	if second.Status != runtime.StatusCompleted || second.Cost == nil || *second.Cost != 1 ||
		second.Usage == nil || *second.Usage != (runtime.Usage{CompletionTokens: 100000}) {
		t.Fatalf("resumption: status %s cost %v usage %v err %+v", second.Status, second.Cost, second.Usage, second.Error)
	}
	record(first.Run, store.RunUsage{ModelCalls: 2, InputTokens: 500000, OutputTokens: 100000, CachedTokens: 400000, Cost: 1.6, Priced: true})
}

// Cached prompt tokens cost the cached price when the block declares one,
// the input price otherwise; a provider's cached count above its prompt
// count is capped at the prompt.
func TestPriceCost(t *testing.T) {
	u := runtime.Usage{PromptTokens: 1_000_000, CompletionTokens: 1_000_000, CachedTokens: 600_000}
	for _, tc := range []struct {
		name  string
		price runtime.Price
		u     runtime.Usage
		want  float64
	}{
		{"cached declared", runtime.Price{Input: 2, Output: 10, Cached: 0.5, HasCached: true}, u, 0.8 + 0.3 + 10},
		{"cached declared as 0", runtime.Price{Input: 2, Output: 10, HasCached: true}, u, 0.8 + 10},
		{"cached not declared", runtime.Price{Input: 2, Output: 10}, u, 2 + 10},
		{"no cache hits", runtime.Price{Input: 2, Output: 10, Cached: 0.5, HasCached: true},
			runtime.Usage{PromptTokens: 1_000_000}, 2},
		{"cached above prompt", runtime.Price{Input: 2, Cached: 0.5, HasCached: true},
			runtime.Usage{PromptTokens: 1_000_000, CachedTokens: 5_000_000}, 0.5},
	} {
		if got := tc.price.Cost(tc.u); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: cost %v, want %v", tc.name, got, tc.want)
		}
	}
}
