package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentc/agentc/runtime/store"
)

// Runner overhead with a zero-latency fake model (spec/runner.md,
// "Measured"). Each op is one whole invocation; ns/event divides its time by
// the events the caller received (streamed) or the ledger received
// (persisted).

// deltaModel streams n pieces and answers.
func deltaModel(n int) *fakeModel {
	resp := &ModelResponse{Text: "done", FinishReason: "stop"}
	return &fakeModel{name: "fast", reply: func(ctx context.Context, req *ModelRequest, onDelta func(string)) (*ModelResponse, error) {
		for range n {
			onDelta("tok ")
		}
		return resp, nil
	}}
}

// loopModel asks for one tool call per turn for turns-1 turns, then answers.
func loopModel(turns int) *fakeModel {
	call := &ModelResponse{ToolCalls: []ToolCall{{ID: "c", Name: "lookup", Args: json.RawMessage(`{"host":"h"}`)}}, FinishReason: "tool_calls"}
	final := &ModelResponse{Text: "done", FinishReason: "stop"}
	return &fakeModel{name: "fast", reply: func(ctx context.Context, req *ModelRequest, onDelta func(string)) (*ModelResponse, error) {
		if req.Site.Turn < turns {
			return call, nil
		}
		return final, nil
	}}
}

func benchRuns(b *testing.B, st store.Store, opts progOpts, model *fakeModel, ledger bool) {
	p := buildProgram(b, opts)
	scan := json.RawMessage(`{"host":"h","ok":true}`)
	tool := &funcTool{name: "lookup", effect: ReadOnly, fn: func(context.Context, ToolRequest) (json.RawMessage, error) { return scan, nil }}
	f := newFixture(b, st, p, model, tool, func(c *RunnerConfig) { c.SessionPolicy = SessionWait })
	ctx := context.Background()
	events := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ch, err := f.r.Run(ctx, Invocation{User: "u", Session: fmt.Sprint("s", i%64), Input: "q"})
		if err != nil {
			b.Fatal(err)
		}
		for e := range ch {
			if !ledger || e.Persisted {
				events++
			}
			if e.Kind == EventRunFinished && e.Status != StatusCompleted {
				b.Fatalf("run ended %s", e.Status)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}

// BenchmarkStreamedEvent: events reaching the caller, most of them
// model_delta (never persisted), over an in-memory store.
func BenchmarkStreamedEvent(b *testing.B) {
	for _, n := range []int{0, 256, 1024} {
		b.Run(fmt.Sprintf("deltas=%d", n), func(b *testing.B) {
			benchRuns(b, backends[0].open(b), progOpts{noPrep: true, noLookup: true, noInterrupt: true}, deltaModel(n), false)
		})
	}
}

// BenchmarkPersistedEvent: events written to the ledger. llm-loop: one
// llm node whose 32 turns each call a tool (model_response + tool_result
// per turn), all committed with the node's step in one synced batch;
// steps: set → tool → llm, one synced commit per step.
func BenchmarkPersistedEvent(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name+"/llm-loop", func(b *testing.B) {
			benchRuns(b, be.open(b), progOpts{noPrep: true, noLookup: true, noInterrupt: true, maxTurns: 32}, loopModel(32), true)
		})
		b.Run(be.name+"/steps", func(b *testing.B) {
			benchRuns(b, be.open(b), progOpts{noInterrupt: true}, deltaModel(0), true)
		})
	}
}
