package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync/atomic"
	"testing"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/pebble"
	"github.com/agentc/agentc/vm"
)

// failingCommits fails the first step commit whose events include a
// tool_result of tool, as a process killed before that batch was written
// would: the step's pending writes are durable, its checkpoint and events
// are not.
type failingCommits struct {
	store.Store
	tool   string
	failed atomic.Bool
}

var errInjected = errors.New("injected: the process died before this commit")

func (s *failingCommits) CommitStep(ctx context.Context, c store.StepCommit) (store.Committed, error) {
	if !s.failed.Load() {
		for _, b := range c.Events {
			if e, err := runtime.DecodeEvent(b); err == nil && e.Kind == runtime.EventToolResult && e.Author == s.tool {
				s.failed.Store(true)
				return store.Committed{}, errInjected
			}
		}
	}
	return s.Store.CommitStep(ctx, c)
}

// TestLedgerKeepsEventsOfPendingWrites is issue 13's problem 3: the scan
// node of examples/support runs cert_scan for two hosts in parallel; the
// process dies after both finished (their pending writes are durable) but
// before the step committed. The resumed step does not call cert_scan
// again, and the ledger must still hold both results, once each.
func TestLedgerKeepsEventsOfPendingWrites(t *testing.T) {
	prog := compileExample(t, "support", "support.agent")
	read := func(name string) []byte {
		b, err := os.ReadFile("../examples/support/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	fx, err := model.LoadFixture("expired.yaml", read("expired.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	models := map[string]runtime.Model{"fast": model.NewScripted(runtime.ModelInfo{Name: "fast"}, fx)}
	tools := map[string]runtime.Tool{}
	calls := map[string]*atomic.Int32{}
	for _, tl := range prog.Tools {
		if tl.Name != "cert_scan" && tl.Name != "log_dump" {
			// recall and skill tools: the scripted model never calls them
			tools[tl.Name] = stubTool{name: tl.Name}
			continue
		}
		tfx, err := model.LoadToolFixture(tl.Name+".yaml", read(tl.Name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		n := &atomic.Int32{}
		calls[tl.Name] = n
		tools[tl.Name] = countingTool{Tool: model.NewScriptedTool(runtime.ToolSpec{Name: tl.Name}, runtime.Effect(tl.Effect), tfx), n: n}
	}
	pst, err := pebble.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pst.Close()
	st := &failingCommits{Store: pst, tool: "cert_scan"}
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
	run := func(inv runtime.Invocation) *runtime.Event {
		t.Helper()
		ch, err := r.Run(ctx, inv)
		if err != nil {
			t.Fatal(err)
		}
		var fin *runtime.Event
		for e := range ch {
			fin = e
		}
		return fin
	}
	fin := run(runtime.Invocation{User: "u", Session: "s", Input: "prod.example.com fails with x509: certificate signed by unknown authority"})
	if !st.failed.Load() || fin.Status != runtime.StatusFailed {
		t.Fatalf("the scan step's commit was not cut off: failed=%v, status %s", st.failed.Load(), fin.Status)
	}
	if n := calls["cert_scan"].Load(); n != 2 {
		t.Fatalf("cert_scan ran %d times before the crash, want 2", n)
	}
	fin = run(runtime.Invocation{User: "u", Session: "s", Resume: &runtime.ResumeRequest{Run: fin.Run}})
	if fin.Status != runtime.StatusInterrupted {
		t.Fatalf("resumed run ended %s", fin.Status)
	}
	if n := calls["cert_scan"].Load(); n != 2 {
		t.Errorf("cert_scan ran %d times, want 2: the resumed step re-ran finished tasks", n)
	}
	entries, err := pst.ListEvents(ctx, store.SessionKey{App: r.App(), User: "u", Session: "s"}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]int{}
	ids := map[string]bool{}
	for _, en := range entries {
		e, err := runtime.DecodeEvent(en.Data)
		if err != nil {
			t.Fatal(err)
		}
		if ids[e.ID] {
			t.Errorf("event %s (%s) recorded twice", e.ID, e.Kind)
		}
		ids[e.ID] = true
		if e.Kind == runtime.EventToolResult && e.Author == "cert_scan" {
			results[e.ToolCall.ID]++
		}
	}
	if len(results) != 2 {
		t.Errorf("cert_scan results in the ledger: %v, want one for each of the 2 hosts", results)
	}
	for id, n := range results {
		if n != 1 {
			t.Errorf("result %s recorded %d times", id, n)
		}
	}
}

type countingTool struct {
	runtime.Tool
	n *atomic.Int32
}

func (c countingTool) Call(ctx context.Context, req runtime.ToolRequest) (json.RawMessage, error) {
	c.n.Add(1)
	return c.Tool.Call(ctx, req)
}

type stubTool struct{ name string }

func (s stubTool) Spec() runtime.ToolSpec { return runtime.ToolSpec{Name: s.name} }
func (s stubTool) Effect() runtime.Effect { return runtime.ReadOnly }
func (s stubTool) Call(context.Context, runtime.ToolRequest) (json.RawMessage, error) {
	return nil, errors.New(s.name + ": not available in this test")
}
