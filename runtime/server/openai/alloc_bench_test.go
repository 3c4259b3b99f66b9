package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/server"
)

// The bodies bench/serve sends (scenarios openai and openai-stream).
const (
	benchBody       = `{"model":"bench","messages":[{"role":"user","content":"Why does the TLS handshake fail?"}]}`
	benchStreamBody = `{"model":"bench","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Why does the TLS handshake fail?"}]}`
	benchAnswer     = "The certificate chain is incomplete: install the intermediate certificate on the load balancer."
)

func BenchmarkParse(b *testing.B) {
	for _, bc := range []struct{ name, body string }{{"plain", benchBody}, {"stream", benchStreamBody}} {
		b.Run(bc.name, func(b *testing.B) {
			body := []byte(bc.body)
			b.ReportAllocs()
			for b.Loop() {
				if _, bad := parse(body); bad != nil {
					b.Fatal(bad)
				}
			}
		})
	}
}

// benchEvents is a run as bench/serve's scripted model plays it: started,
// eight deltas, the model's response, the output's state change, finished.
func benchEvents() []*runtime.Event {
	out, _ := json.Marshal(benchAnswer)
	evs := []*runtime.Event{{Kind: runtime.EventRunStarted, Run: "run_1", Runnable: "bench"}}
	for i := 0; i < len(benchAnswer); i += 12 {
		evs = append(evs, &runtime.Event{Kind: runtime.EventModelDelta, Node: "answer", Text: benchAnswer[i:min(i+12, len(benchAnswer))]})
	}
	return append(evs,
		&runtime.Event{Kind: runtime.EventModelResponse, Node: "answer", Text: benchAnswer},
		&runtime.Event{Kind: runtime.EventStateDelta, Changes: []runtime.StateChange{{Field: "answer", Op: "set", Value: out}}},
		&runtime.Event{Kind: runtime.EventRunFinished, Run: "run_1", Status: runtime.StatusCompleted, Output: out,
			Usage: &runtime.Usage{PromptTokens: 40, CompletionTokens: 20}})
}

// discard is a ResponseWriter that keeps nothing: a fresh header per
// response, as net/http's.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Flush()                      {}

func benchHandler() *Handler {
	return &Handler{b: &server.Backend{}, model: "bench", created: 1767323045, fingerprint: "fp_8285d18bfe9a",
		answers: map[string]*answerInfo{"bench": {nodes: map[string]bool{"answer": true}, field: "answer"}}}
}

// BenchmarkRespond: a finished run's events read and answered, non-streaming
// (collect, respond).
func BenchmarkRespond(b *testing.B) {
	h, evs := benchHandler(), benchEvents()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ch := make(chan *runtime.Event, len(evs))
		for _, e := range evs {
			ch <- e
		}
		close(ch)
		c := &completion{h: h, id: "chatcmpl-01KDYAK34DY1ADN9KD5HYXYX1Z", created: h.created, user: "bench", session: "chatcmpl-01KDYAK34DY1ADN9KD5HYXYX1Z"}
		c.collect(&server.Run{ID: "run_1", Events: ch})
		c.respond(ctx, &discard{h: http.Header{}})
	}
}

// BenchmarkStream: the same run streamed with include_usage.
func BenchmarkStream(b *testing.B) {
	h, evs := benchHandler(), benchEvents()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		ch := make(chan *runtime.Event, len(evs))
		for _, e := range evs {
			ch <- e
		}
		close(ch)
		c := &completion{h: h, id: "chatcmpl-01KDYAK34DY1ADN9KD5HYXYX1Z", created: h.created, user: "bench", session: "chatcmpl-01KDYAK34DY1ADN9KD5HYXYX1Z", includeUsage: true}
		c.stream(ctx, cancel, &discard{h: http.Header{}}, nil, &server.Run{ID: "run_1", Events: ch})
	}
}
