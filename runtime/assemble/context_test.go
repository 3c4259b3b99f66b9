package assemble

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/memory"
	"github.com/agentc/agentc/runtime/recall"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/store"
	memstore "github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/stdlib"
)

// TestBindContext binds the recall and memory services for examples/chat:
// its recall and memory tools replace the stubs, its recall (preload 3) and
// memory (preload 8, auto) policies add two preloaders and the extractor.
func TestBindContext(t *testing.T) {
	cfg := compiler.Config{FS: os.DirFS("../../examples"), Universe: stdlib.Universe()}
	pkg, ds := compiler.Load(cfg, "chat/chat.agent")
	for _, d := range ds {
		if d.Severity.String() == "error" {
			t.Fatalf("load: %v", d)
		}
	}
	prog, _, ds := compiler.Compile(cfg, pkg)
	for _, d := range ds {
		if d.Severity.String() == "error" {
			t.Fatalf("compile: %v", d)
		}
	}
	rc := runtime.RunnerConfig{Program: prog, Store: memstore.New(), Clock: &runtimetest.Clock{}, Tools: map[string]runtime.Tool{}, Models: map[string]runtime.Model{}}
	stubModels(prog, rc.Models)
	for _, m := range missingTools(prog, rc.Tools) {
		if strings.HasPrefix(m, "session_") || strings.HasPrefix(m, "memory_") {
			t.Errorf("%s is reported missing", m)
		}
	}
	refuseUnbound(prog, rc.Tools)
	if err := bindContext(&rc, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := rc.Tools["session_search"].(*recall.SearchTool); !ok {
		t.Errorf("session_search is %T", rc.Tools["session_search"])
	}
	if _, ok := rc.Tools["session_load"].(*recall.LoadTool); !ok {
		t.Errorf("session_load is %T", rc.Tools["session_load"])
	}
	if _, ok := rc.Tools["memory_search"].(*memory.SearchTool); !ok {
		t.Errorf("memory_search is %T", rc.Tools["memory_search"])
	}
	if _, ok := rc.Memory.(*memory.Extractor); !ok || len(rc.Preloaders) != 2 {
		t.Errorf("memory hook %T, %d preloaders", rc.Memory, len(rc.Preloaders))
	}
	// The bound tool runs against the store: an empty history has no hits.
	out, err := rc.Tools["session_search"].Call(context.Background(), runtime.ToolRequest{
		Args: json.RawMessage(`{"query": "billing database", "scope": "current_session"}`), Agent: "assistant",
		Session: store.SessionKey{App: "chat", User: "u1", Session: "s1"}})
	if err != nil || !strings.Contains(string(out), `"hits":[]`) {
		t.Errorf("search: %s %v", out, err)
	}
}
