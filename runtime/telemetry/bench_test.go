package telemetry_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/runtimetest"
	memstore "github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/runtime/telemetry"
)

// discard is a Recorder that keeps nothing.
type discard struct{}

func (discard) Duration(string, string, string, time.Duration) {}
func (discard) Tokens(string, string, string, runtime.Usage)   {}
func (discard) Cost(string, string, string, float64)           {}

// BenchmarkRun: one op is a run of examples/support to its interrupt (3
// model calls, 3 tool calls, 4 supersteps, 20 spans) over the in-memory
// store: off (no Observer: the Runner's nil checks only), metrics (a
// Recorder, no spans) and traces (the SDK with a batching span processor
// and an exporter that drops the spans). Compare off with the parent
// commit's BenchmarkPersistedEvent for no instrumentation at all
// (spec/telemetry.md, "Measured").
func BenchmarkRun(b *testing.B) {
	prog := runtimetest.Compile(b, os.DirFS("../../examples"), "support/support.agent")
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	for _, c := range []struct {
		name string
		obs  runtime.Observer
	}{
		{"off", nil},
		{"metrics", telemetry.New(nil, discard{}, nil)},
		{"traces", telemetry.New(tp, nil, nil)},
	} {
		b.Run(c.name, func(b *testing.B) {
			r, err := assemble.New(memstore.New(), assemble.Options{Program: prog, Verified: true, Root: "../../examples",
				Env: func(string) (string, bool) { return "", false }, Replay: assemble.DefaultReplay(prog), Offline: true, Observer: c.obs})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close(context.Background())
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				ch, err := r.Run(context.Background(), runtime.Invocation{User: "u", Session: fmt.Sprint("s", i), Input: "TLS errors on prod"})
				if err != nil {
					b.Fatal(err)
				}
				for e := range ch {
					if e.Kind == runtime.EventRunFinished && e.Status != runtime.StatusInterrupted {
						b.Fatalf("run ended %s", e.Status)
					}
				}
			}
		})
	}
}
