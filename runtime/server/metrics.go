package server

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentc/agentc/runtime"
)

// Metrics counts what the server does, exposed in the Prometheus text format
// by WriteTo. A nil *Metrics discards everything, so adapters call it
// unconditionally.
type Metrics struct {
	// mu guards the maps; a series' value is its cell's, added to
	// without it (the read lock finds the cell).
	mu    sync.RWMutex
	cells map[string]*cell    // by the series' key (series.appendKey)
	help  map[string]string   // family name → HELP/TYPE lines
	users map[string]struct{} // the users that have a label value of their own
}

// cell is one series and its value, a float64's bits.
type cell struct {
	s    series
	bits atomic.Uint64
}

func (c *cell) add(v float64) {
	for {
		old := c.bits.Load()
		if c.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// MaxUserLabels is how many distinct users get series of their own in the
// token and cost counters; the calls of any later user count under the
// user label OtherUser. Users are callers' names, so without a cap a client
// could grow /metrics (and this process's memory) without end.
const MaxUserLabels = 1000

// OtherUser is the user label of the users past MaxUserLabels.
const OtherUser = "_other"

// series names one time series: a metric name and up to four label
// pairs. Counting into an existing series allocates nothing.
type series struct {
	name   string
	n      int
	labels [4][2]string
}

func (s series) String() string {
	var b strings.Builder
	b.WriteString(s.name)
	if s.n > 0 {
		b.WriteByte('{')
		for i := range s.n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(s.labels[i][0])
			b.WriteString(`="`)
			labelEscaper.WriteString(&b, s.labels[i][1])
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	return b.String()
}

// appendKey appends the series' map key to b: its name and labels, each
// with its length before it (unambiguous whatever bytes a value holds).
func (s *series) appendKey(b []byte) []byte {
	b = append(binary.AppendUvarint(b, uint64(len(s.name))), s.name...)
	for i := range s.n {
		b = append(binary.AppendUvarint(b, uint64(len(s.labels[i][0]))), s.labels[i][0]...)
		b = append(binary.AppendUvarint(b, uint64(len(s.labels[i][1]))), s.labels[i][1]...)
	}
	return b
}

// labelEscaper escapes a label value for the text exposition format.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// NewMetrics returns an empty registry.
func NewMetrics() *Metrics {
	return &Metrics{cells: map[string]*cell{}, help: map[string]string{}, users: map[string]struct{}{}}
}

// add adds v to the series name{labels} (at most four label pairs). A
// summary's series are its family's name with _sum or _count; HELP and TYPE
// are written once per family.
func (m *Metrics) add(name, typ, help string, v float64, labels ...string) {
	if m == nil {
		return
	}
	m.cellOf(name, typ, help, labels...).add(v)
}

// cellOf returns the cell of the series name{labels}, made now if it is
// new.
func (m *Metrics) cellOf(name, typ, help string, labels ...string) *cell {
	k := series{name: name}
	for i := 0; i+1 < len(labels) && k.n < len(k.labels); i += 2 {
		k.labels[k.n] = [2]string{labels[i], labels[i+1]}
		k.n++
	}
	var buf [256]byte // the key, on the stack when it fits
	key := k.appendKey(buf[:0])
	m.mu.RLock()
	c := m.cells[string(key)] // looked up without a copy of key
	m.mu.RUnlock()
	if c == nil {
		c = m.newCell(k, string(key), typ, help)
	}
	return c
}

// newCell returns the cell of series k (key: its key), made now unless
// another add made it meanwhile.
func (m *Metrics) newCell(k series, key, typ, help string) *cell {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.cells[key]; c != nil {
		return c
	}
	c := &cell{s: k}
	m.cells[key] = c
	if _, ok := m.help[k.name]; !ok {
		family := k.name
		switch typ {
		case "summary":
			family = strings.TrimSuffix(strings.TrimSuffix(k.name, "_sum"), "_count")
		case "histogram":
			family = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(k.name, "_sum"), "_count"), "_bucket")
		}
		m.help[k.name] = fmt.Sprintf("%s\x00# HELP %s %s\n# TYPE %s %s\n", family, family, help, family, typ)
	}
	return c
}

// buckets are the upper bounds (seconds) of the latency histograms, and
// their le label values.
var (
	buckets      = [...]float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
	bucketLabels = func() (out [len(buckets) + 1]string) {
		for i, b := range buckets {
			out[i] = strconv.FormatFloat(b, 'g', -1, 64)
		}
		out[len(buckets)] = "+Inf"
		return out
	}()
)

// observe adds v to the histogram family name{key=value,...} (two label
// pairs: with le, three).
func (m *Metrics) observe(family, help string, v float64, k1, v1, k2, v2 string) {
	if m == nil {
		return
	}
	for i, le := range bucketLabels {
		if i == len(buckets) || v <= buckets[i] {
			m.add(family+"_bucket", "histogram", help, 1, k1, v1, k2, v2, "le", le)
		} else {
			m.add(family+"_bucket", "histogram", help, 0, k1, v1, k2, v2, "le", le)
		}
	}
	m.add(family+"_sum", "histogram", help, v, k1, v1, k2, v2)
	m.add(family+"_count", "histogram", help, 1, k1, v1, k2, v2)
}

// Duration records how long a run, node attempt, model call or tool call
// took (telemetry.Recorder): name is the runnable, node path, provider
// model id or tool name.
func (m *Metrics) Duration(kind, app, name string, d time.Duration) {
	switch kind {
	case "run":
		m.observe("agentc_run_duration_seconds", "Run executions in seconds, by app and runnable.", d.Seconds(), "app", app, "runnable", name)
	case "node":
		m.observe("agentc_node_duration_seconds", "Node attempts in seconds, by app and node.", d.Seconds(), "app", app, "node", name)
	case "model":
		m.observe("agentc_model_duration_seconds", "Model calls in seconds, by app and model.", d.Seconds(), "app", app, "model", name)
	case "tool":
		m.observe("agentc_tool_duration_seconds", "Tool calls in seconds, by app and tool.", d.Seconds(), "app", app, "tool", name)
	}
}

// Tokens counts a model call's tokens (telemetry.Recorder): input
// (prompt, cached included), output, and cached (the prompt tokens the
// provider read from its cache, when it reported any).
func (m *Metrics) Tokens(app, model, user string, u runtime.Usage) {
	const help = "Model tokens by app, model, user and type (input, output, cached; input includes cached)."
	user = m.userLabel(user)
	m.add("agentc_model_tokens_total", "counter", help, float64(u.PromptTokens), "app", app, "model", model, "user", user, "type", "input")
	m.add("agentc_model_tokens_total", "counter", help, float64(u.CompletionTokens), "app", app, "model", model, "user", user, "type", "output")
	if u.CachedTokens > 0 {
		m.add("agentc_model_tokens_total", "counter", help, float64(u.CachedTokens), "app", app, "model", model, "user", user, "type", "cached")
	}
}

// Cost adds a priced model call's cost in USD (telemetry.Recorder).
func (m *Metrics) Cost(app, model, user string, usd float64) {
	m.add("agentc_model_cost_usd_total", "counter", "Model cost in USD by app, model and user (models with a price block).", usd,
		"app", app, "model", model, "user", m.userLabel(user))
}

// userLabel is user's label value: its name while fewer than MaxUserLabels
// users have one, OtherUser after that.
func (m *Metrics) userLabel(user string) string {
	if m == nil {
		return user
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[user]; ok {
		return user
	}
	if len(m.users) >= MaxUserLabels {
		return OtherUser
	}
	m.users[user] = struct{}{}
	return user
}

// Request counts one HTTP request and its latency.
func (m *Metrics) Request(proto string, status int, d time.Duration) {
	m.add("agentc_http_requests_total", "counter", "HTTP requests by protocol and status.", 1, "protocol", proto, "code", statusLabel(status))
	m.add("agentc_http_request_seconds_sum", "summary", "HTTP request time in seconds (to the end of the response).", d.Seconds(), "protocol", proto)
	m.add("agentc_http_request_seconds_count", "summary", "HTTP request time in seconds (to the end of the response).", 1, "protocol", proto)
}

// statusLabels are the code label values of the HTTP statuses, made once.
var statusLabels = func() (out [600]string) {
	for i := 100; i < len(out); i++ {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

// statusLabel is status's code label value.
func statusLabel(status int) string {
	if status >= 100 && status < len(statusLabels) {
		return statusLabels[status]
	}
	return strconv.Itoa(status)
}

// RunStarted counts a started run.
func (m *Metrics) RunStarted(proto string) {
	m.add("agentc_runs_started_total", "counter", "Runs started by protocol.", 1, "protocol", proto)
}

// RunFinished counts a finished run by status and its duration.
func (m *Metrics) RunFinished(proto, status string, d time.Duration) {
	m.add("agentc_runs_finished_total", "counter", "Runs finished by protocol and status.", 1, "protocol", proto, "status", status)
	m.add("agentc_run_seconds_sum", "summary", "Run time in seconds.", d.Seconds(), "protocol", proto)
	m.add("agentc_run_seconds_count", "summary", "Run time in seconds.", 1, "protocol", proto)
}

// Rejected counts a run refused for overload.
func (m *Metrics) Rejected(proto string) {
	m.add("agentc_runs_rejected_total", "counter", "Runs refused because the server was at its run limit.", 1, "protocol", proto)
}

// Event counts one streamed event by kind.
func (m *Metrics) Event(proto, kind string) {
	if c := m.eventCell(proto, kind); c != nil {
		c.add(1)
	}
}

// eventCell is Event's counter of proto and kind (nil on a nil Metrics), for
// a caller that counts many events of a kind (startedRun).
func (m *Metrics) eventCell(proto, kind string) *cell {
	if m == nil {
		return nil
	}
	return m.cellOf("agentc_events_total", "counter", "Runtime events streamed by protocol and kind.", "protocol", proto, "kind", kind)
}

// Error counts a protocol error response by code.
func (m *Metrics) Error(proto, code string) {
	m.add("agentc_errors_total", "counter", "Protocol error responses by protocol and code.", 1, "protocol", proto, "code", code)
}

// Retained counts what a retention pass deleted, by kind (run, session,
// idempotency, record).
func (m *Metrics) Retained(app, kind string, n int) {
	m.add("agentc_retention_deleted_total", "counter", "Items retention deleted, by app and kind (run, session, idempotency, record).", float64(n), "app", app, "kind", kind)
}

// RetentionFailed counts a retention pass that failed.
func (m *Metrics) RetentionFailed(app string) {
	m.add("agentc_retention_failures_total", "counter", "Retention passes that failed, by app.", 1, "app", app)
}

// Relief counts a context pressure relief by its outcome (rebuilt,
// not_smaller, not_advanced, failed; spec/context.md "Pressure relief").
func (m *Metrics) Relief(app, outcome string) {
	m.add("agentc_context_relief_total", "counter", "Synchronous context pressure reliefs, by app and outcome (rebuilt, not_smaller, not_advanced, failed).", 1, "app", app, "outcome", outcome)
}

// WriteTo writes every series in the Prometheus text exposition format,
// sorted by name, with HELP and TYPE once per metric family.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	if m == nil {
		return 0, nil
	}
	type line struct {
		text, name string
		v          float64
		sortKey    string  // the series without its le label
		le         float64 // a histogram bucket's bound (+Inf last)
	}
	m.mu.RLock()
	lines := make([]line, 0, len(m.cells))
	for _, c := range m.cells {
		k := c.s
		l := line{text: k.String(), name: k.name, v: math.Float64frombits(c.bits.Load())}
		if k.n > 0 && k.labels[k.n-1][0] == "le" {
			l.le, _ = strconv.ParseFloat(k.labels[k.n-1][1], 64)
			k.n--
		}
		l.sortKey = k.String()
		lines = append(lines, l)
	}
	help := maps.Clone(m.help)
	m.mu.RUnlock()
	slices.SortFunc(lines, func(a, b line) int {
		if c := strings.Compare(a.sortKey, b.sortKey); c != 0 {
			return c
		}
		return cmp.Compare(a.le, b.le)
	})
	var b strings.Builder
	last := ""
	for _, l := range lines {
		family, h, _ := strings.Cut(help[l.name], "\x00")
		if family != last {
			b.WriteString(h)
			last = family
		}
		b.WriteString(l.text)
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(l.v, 'g', -1, 64))
		b.WriteByte('\n')
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}
