package server

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// Metrics counts what the server does, exposed in the Prometheus text format
// by WriteTo. A nil *Metrics discards everything, so adapters call it
// unconditionally.
type Metrics struct {
	mu       sync.Mutex
	counters map[string]float64 // full series name with labels → value
	help     map[string]string  // metric name → HELP/TYPE lines
}

// NewMetrics returns an empty registry.
func NewMetrics() *Metrics {
	return &Metrics{counters: map[string]float64{}, help: map[string]string{}}
}

func (m *Metrics) add(name, typ, help string, v float64, labels ...string) {
	if m == nil {
		return
	}
	var b strings.Builder
	b.WriteString(name)
	if len(labels) > 0 {
		b.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s=%q", labels[i], labels[i+1])
		}
		b.WriteByte('}')
	}
	m.mu.Lock()
	m.counters[b.String()] += v
	if _, ok := m.help[name]; !ok {
		m.help[name] = fmt.Sprintf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	m.mu.Unlock()
}

// Request counts one HTTP request and its latency.
func (m *Metrics) Request(proto string, status int, d time.Duration) {
	m.add("agentc_http_requests_total", "counter", "HTTP requests by protocol and status.", 1, "protocol", proto, "code", fmt.Sprint(status))
	m.add("agentc_http_request_seconds_sum", "counter", "Total HTTP request time in seconds.", d.Seconds(), "protocol", proto)
	m.add("agentc_http_request_seconds_count", "counter", "HTTP requests timed.", 1, "protocol", proto)
}

// RunStarted counts a started run.
func (m *Metrics) RunStarted(proto string) {
	m.add("agentc_runs_started_total", "counter", "Runs started by protocol.", 1, "protocol", proto)
}

// RunFinished counts a finished run by status and its duration.
func (m *Metrics) RunFinished(proto, status string, d time.Duration) {
	m.add("agentc_runs_finished_total", "counter", "Runs finished by protocol and status.", 1, "protocol", proto, "status", status)
	m.add("agentc_run_seconds_sum", "counter", "Total run time in seconds.", d.Seconds(), "protocol", proto)
	m.add("agentc_run_seconds_count", "counter", "Runs timed.", 1, "protocol", proto)
}

// Rejected counts a run refused for overload.
func (m *Metrics) Rejected(proto string) {
	m.add("agentc_runs_rejected_total", "counter", "Runs refused because the server was at its run limit.", 1, "protocol", proto)
}

// Event counts one streamed event by kind.
func (m *Metrics) Event(proto, kind string) {
	m.add("agentc_events_total", "counter", "Runtime events streamed by protocol and kind.", 1, "protocol", proto, "kind", kind)
}

// Error counts a protocol error response by code.
func (m *Metrics) Error(proto, code string) {
	m.add("agentc_errors_total", "counter", "Protocol error responses by protocol and code.", 1, "protocol", proto, "code", code)
}

// WriteTo writes every series in the Prometheus text exposition format,
// sorted by name.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	if m == nil {
		return 0, nil
	}
	m.mu.Lock()
	series := make([]string, 0, len(m.counters))
	for s := range m.counters {
		series = append(series, s)
	}
	slices.Sort(series)
	var b strings.Builder
	last := ""
	for _, s := range series {
		name, _, _ := strings.Cut(s, "{")
		if name != last {
			b.WriteString(m.help[name])
			last = name
		}
		fmt.Fprintf(&b, "%s %g\n", s, m.counters[s])
	}
	m.mu.Unlock()
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}
