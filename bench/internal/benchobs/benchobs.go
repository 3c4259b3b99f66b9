// Package benchobs gives the bench harnesses the Runner's three
// instrumentation settings (spec/telemetry.md): "off" (no Observer: the
// hook's nil checks only), "metrics" (what agentc serve runs without
// OTEL_*: the /metrics recorder behind the hook) and "traces" (spans built,
// batched and exported over OTLP/HTTP, as OTEL_EXPORTER_OTLP_ENDPOINT
// configures them, to a receiver on loopback that reads and drops them).
package benchobs

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/telemetry"
)

// Modes are the settings New accepts.
const Modes = "off, metrics, traces"

// Setup is one instrumentation setting: the Observer to assemble with (nil
// for off) and Close, which flushes and stops what it started.
type Setup struct {
	Observer runtime.Observer
	close    []func(context.Context) error
}

// Close flushes the spans and stops the receiver.
func (s *Setup) Close(ctx context.Context) error {
	var first error
	for _, c := range s.close {
		if err := c(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// New returns the setting mode; rec is the metrics recorder of "metrics"
// and "traces" (nil: none).
func New(ctx context.Context, mode string, rec telemetry.Recorder) (*Setup, error) {
	s := &Setup{}
	switch mode {
	case "", "off":
		return s, nil
	case "metrics":
		s.Observer = telemetry.New(nil, rec, time.Now)
		return s, nil
	case "traces":
	default:
		return nil, fmt.Errorf("benchobs: unknown mode %q (%s)", mode, Modes)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = srv.Serve(l) }() // owned by s: Close shuts it down
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + l.Addr().String(), "OTEL_SERVICE_NAME": "agentc-bench"}
	tp, err := telemetry.Configure(ctx, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	s.Observer = telemetry.New(tp, rec, time.Now)
	s.close = append(s.close, tp.Shutdown, srv.Shutdown)
	return s, nil
}
