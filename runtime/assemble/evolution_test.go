package assemble

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/evolution"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/skill"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
)

// notCandidate is a reviewer whose reply is not a candidate skill.
type notCandidate struct{}

func (notCandidate) Info() runtime.ModelInfo {
	return runtime.ModelInfo{Name: "rev", Model: "test:rev"}
}
func (notCandidate) Generate(context.Context, *runtime.ModelRequest, func(string)) (*runtime.ModelResponse, error) {
	return &runtime.ModelResponse{Text: "I think this run went fine."}, nil
}

// TestEvolutionLogsThroughTheRunnersLogger: a reviewer reply that is not a
// candidate leaves a warning in the logger the Runner was given (it was
// discarded).
func TestEvolutionLogsThroughTheRunnersLogger(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	st := memory.New()
	key := store.SessionKey{App: "app", User: "ann", Session: "s1"}
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if _, _, err := st.GetOrCreateSession(ctx, key, now); err != nil {
		t.Fatal(err)
	}
	var data [][]byte
	tc := runtime.ToolCall{ID: "c1", Name: "cert_scan", Args: json.RawMessage(`{}`)}
	for i, ev := range []*runtime.Event{
		{Kind: runtime.EventInput, Author: "user", Text: "scan it"},
		{Kind: runtime.EventModelResponse, Author: "ops", ToolCalls: []runtime.ToolCall{tc}},
		{Kind: runtime.EventToolResult, Author: "ops", ToolCall: &tc, Result: json.RawMessage(`"ok"`)},
		{Kind: runtime.EventModelResponse, Author: "ops", Text: "done"},
	} {
		ev.ID, ev.Time, ev.App, ev.User, ev.Session, ev.Run = fmt.Sprintf("ev_%d", i), now, key.App, key.User, key.Session, "run_1"
		b, err := runtime.EncodeEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, b)
	}
	if _, err := st.AppendEvents(ctx, key, data, now); err != nil {
		t.Fatal(err)
	}
	pols := map[string]evolution.Policy{"ops": {Agent: "ops", Reviewer: notCandidate{}, MinToolCalls: 1, Gates: evolution.DefaultGates,
		Scope: "app", Publish: t.TempDir()}}
	svc := newEvolution(st, pols, skill.NewRepository(), func() time.Time { return now }, &runtimetest.Entropy{},
		slog.New(slog.NewTextHandler(&logs, nil)))
	if _, err := svc.Review(ctx, runtime.PostRun{Session: key, Run: "run_1", Runnable: "ops", Status: runtime.StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "the reviewer's reply is not a candidate") {
		t.Fatalf("log: %q", logs.String())
	}
}
