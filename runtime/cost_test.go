package runtime_test

import (
	"context"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/runtime/runtimetest"
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
  - match: {node: a2}
    text: four
    usage: {prompt_tokens: 3000000, completion_tokens: 0}
`

// Each model_response of a priced model carries its call's cost (prompt
// tokens at input, completion tokens at output, USD per million); an
// unpriced model's carries none; run_finished carries the invocation's
// usage and cost summed over its calls.
func TestModelCost(t *testing.T) {
	prog := runtimetest.CompileSource(t, "cost.agent", costSource)
	fx, err := model.LoadFixture("cost.yaml", []byte(costFixture))
	if err != nil {
		t.Fatal(err)
	}
	models := map[string]runtime.Model{}
	for _, name := range []string{"priced", "free", "zero"} {
		models[name] = model.NewScripted(runtime.ModelInfo{Name: name}, fx)
	}
	r, err := runtime.NewRunner(runtime.RunnerConfig{App: "shop", Store: memory.New(), Program: prog, Models: models,
		Funcs: vm.Builtins(), Clock: &runtimetest.Clock{}, Entropy: &runtimetest.Entropy{}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	ch, err := r.Run(context.Background(), runtime.Invocation{User: "u", Session: "s", Runnable: "team", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	costs := map[string]*float64{}
	var fin *runtime.Event
	for e := range ch {
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
