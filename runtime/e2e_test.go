package runtime_test

// An end-to-end run of examples/expense through the real pipeline: the
// compiler, the Runner over Pebble, and the scripted models and tools of
// runtime/model replaying the example's fixtures. It resumes the run twice:
// once for the submitter's confirmation, once for the two approvers (two
// interrupts waiting at the same time).

import (
	"context"
	"encoding/json"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/pebble"
	"github.com/agentc/agentc/stdlib"
	"github.com/agentc/agentc/vm"
)

type e2eClock struct{ n atomic.Int64 }

func (c *e2eClock) Now() time.Time {
	return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(c.n.Add(1)) * time.Millisecond)
}
func (c *e2eClock) AfterFunc(time.Duration, func()) func() bool { return func() bool { return true } }

type e2eEntropy struct{ n atomic.Uint64 }

func (e *e2eEntropy) Uint64() uint64 { return e.n.Add(1) * 0x9E3779B97F4A7C15 }

func compileExample(t *testing.T, dir, file string) *bytecode.Program {
	t.Helper()
	cfg := compiler.Config{FS: os.DirFS("../examples"), Root: ".", Universe: stdlib.Universe()}
	pkg, ds := compiler.Load(cfg, path.Join(dir, file))
	if n, _ := diag.CountErrors(ds); n > 0 {
		t.Fatalf("the example does not load: %v", ds)
	}
	prog, _, ds := compiler.Compile(cfg, pkg)
	if prog == nil {
		t.Fatalf("the example does not compile: %v", ds)
	}
	return prog
}

func TestExpenseEndToEnd(t *testing.T) {
	prog := compileExample(t, "expense", "expense.agent")
	read := func(name string) []byte {
		b, err := os.ReadFile("../examples/expense/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	models := map[string]runtime.Model{}
	for name, file := range map[string]string{"fast": "clerk.yaml", "strong": "auditor.yaml"} {
		fx, err := model.LoadFixture(file, read(file))
		if err != nil {
			t.Fatal(err)
		}
		models[name] = model.NewScripted(runtime.ModelInfo{Name: name}, fx)
	}
	tools := map[string]runtime.Tool{}
	for _, tl := range prog.Tools {
		fx, err := model.LoadToolFixture(tl.Name+".yaml", read(tl.Name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		tools[tl.Name] = model.NewScriptedTool(runtime.ToolSpec{Name: tl.Name}, runtime.Effect(tl.Effect), fx)
	}
	st, err := pebble.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The stdlib table is wired by cmd/agentc; the functions only http
	// templates and test expectations use are stubs here.
	funcs := vm.Builtins()
	for _, name := range prog.Funcs {
		if _, ok := funcs[name]; !ok {
			funcs[name] = func([]types.Value) (types.Value, error) { return types.Value{}, nil }
		}
	}
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog, Models: models, Tools: tools, Funcs: funcs,
		Clock: &e2eClock{}, Entropy: &e2eEntropy{}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	ctx := context.Background()
	run := func(inv runtime.Invocation) []*runtime.Event {
		t.Helper()
		ch, err := r.Run(ctx, inv)
		if err != nil {
			t.Fatal(err)
		}
		var evs []*runtime.Event
		for e := range ch {
			evs = append(evs, e)
		}
		return evs
	}
	finished := func(evs []*runtime.Event) *runtime.Event {
		t.Helper()
		fin := evs[len(evs)-1]
		if fin.Kind != runtime.EventRunFinished {
			t.Fatalf("last event %s", fin.Kind)
		}
		for _, e := range evs {
			if e.Kind == runtime.EventRunError {
				t.Fatalf("run_error %+v", e.Error)
			}
		}
		return fin
	}

	// A small claim is paid without asking anyone.
	fin := finished(run(runtime.Invocation{User: "ana", Session: "small", Input: "Taxi from the airport to the customer, 42.50 EUR, travel, sales team"}))
	if fin.Status != runtime.StatusCompleted || string(fin.Output) != `"approved"` {
		t.Fatalf("small claim: %s %s", fin.Status, fin.Output)
	}

	// A large claim waits for the submitter, then for both approvers.
	evs := run(runtime.Invocation{User: "li", Session: "large", Input: "Conference ticket for KubeCon, 2400 EUR, training, platform team"})
	fin = finished(evs)
	if fin.Status != runtime.StatusInterrupted || len(fin.Interrupts) != 1 || fin.Interrupts[0].Node != "confirm" ||
		!strings.Contains(fin.Interrupts[0].Prompt, "2400") {
		t.Fatalf("large claim: %s %+v", fin.Status, fin.Interrupts)
	}
	runID := fin.Run
	fin = finished(run(runtime.Invocation{User: "li", Session: "large", Resume: &runtime.ResumeRequest{Run: runID,
		Values: map[string]json.RawMessage{"confirm": json.RawMessage(`"yes"`)}}}))
	if fin.Status != runtime.StatusInterrupted || len(fin.Interrupts) != 2 {
		t.Fatalf("after confirm: %s %+v", fin.Status, fin.Interrupts)
	}
	fin = finished(run(runtime.Invocation{User: "li", Session: "large", Resume: &runtime.ResumeRequest{Run: runID,
		Values: map[string]json.RawMessage{
			"manager": json.RawMessage(`{"decision":"approve","note":"Budgeted in Q3."}`),
			"finance": json.RawMessage(`{"decision":"approve"}`),
		}}}))
	if fin.Status != runtime.StatusCompleted || string(fin.Output) != `"approved"` {
		t.Fatalf("after approvals: %s %s", fin.Status, fin.Output)
	}

	// The ledger through the session service.
	svc := session.New(st)
	key := store.SessionKey{App: r.App(), User: "li", Session: "large"}
	ledger, err := svc.Events(ctx, key, session.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var payment string
	inputs, finishes := 0, 0
	for _, e := range ledger {
		switch e.Kind {
		case runtime.EventInput:
			inputs++
		case runtime.EventRunFinished:
			finishes++
		case runtime.EventToolResult:
			if e.ToolCall.Name == "pay_out" {
				payment = string(e.Result)
			}
		case runtime.EventModelDelta:
			t.Errorf("model_delta in the ledger")
		}
	}
	if inputs != 3 || finishes != 3 || payment != `"pay_0002"` {
		t.Fatalf("ledger: %d inputs, %d run_finished, payment %s", inputs, finishes, payment)
	}
	info, err := svc.Get(ctx, key)
	if err != nil || len(info.Runs) != 1 || info.Runs[0].Status != store.RunCompleted {
		t.Fatalf("session: %+v %v", info, err)
	}
}
