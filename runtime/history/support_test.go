package history_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/history"
	"github.com/agentc/agentc/runtime/model"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/vm"
)

// newClock is the tests' clock.
func newClock() *runtimetest.Clock {
	return &runtimetest.Clock{Start: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
}

// programSrc is the test program; %SUMMARY% and %COMPACTION% are replaced
// by the policies' bodies.
const programSrc = `workflow hist

model fast { provider = openai, name = "fast-test", context_window = 8192 }
model scribe { provider = openai, name = "scribe-test", context_window = %SCRIBE_WINDOW% }

summary rolling {
%SUMMARY%
}

compaction lean {
%COMPACTION%
}

tool lookup "Looks up a host" {
  input  { q: string }
  output string
  run    = http { url = "http://lookup.invalid/{input.q}" }
  effect = read_only
}

tool fetch "Fetches a page" {
  input  { q: string }
  output string
  run    = http { url = "http://fetch.invalid/{input.q}" }
  effect = read_only
}

tool pay "Pays an invoice" {
  input  { q: string }
  output string
  run    = http { url = "http://pay.invalid/{input.q}" }
  effect = side_effect
}

agent bot llm {
  model       = fast
  instruction = "You are a test bot."
  tools       = [lookup, fetch, pay]
  summary     = rolling
  compaction  = lean
}

agent plain llm {
  model = fast
  tools = [lookup]
}

agent recaller llm {
  model       = fast
  instruction = "You answer from the session."
  tools       = [lookup, session_search, session_load]
  summary     = rolling
  compaction  = lean
}

agent elider llm {
  model   = fast
  tools   = [lookup, pay, session_search, session_load]
  summary = rolling
}

agent forgetter llm {
  model   = fast
  tools   = [lookup, pay]
  summary = rolling
}

agent keeper llm {
  model      = fast
  tools      = [lookup, fetch, session_search, session_load]
  summary    = rolling
  compaction = lean
}
`

type progOpts struct {
	summary, compaction string
	scribeWindow        string
}

func compileProgram(t testing.TB, o progOpts) *bytecode.Program {
	t.Helper()
	if o.summary == "" {
		o.summary = "  min_tokens = 0"
	}
	if o.compaction == "" {
		o.compaction = "  protect_recent = 1"
	}
	if o.scribeWindow == "" {
		o.scribeWindow = "8192"
	}
	src := strings.NewReplacer("%SUMMARY%", o.summary, "%COMPACTION%", o.compaction, "%SCRIBE_WINDOW%", o.scribeWindow).Replace(programSrc)
	return runtimetest.Compile(t, fstest.MapFS{"hist.agent": {Data: []byte(src)}}, "hist.agent")
}

func agentIndex(t testing.TB, p *bytecode.Program, name string) int {
	t.Helper()
	for i := range p.Agents {
		if p.Agents[i].Name == name {
			return i
		}
	}
	t.Fatalf("no agent %s", name)
	return -1
}

// recorder wraps a model and keeps copies of its requests.
type recorder struct {
	runtime.Model
	mu   sync.Mutex
	reqs []runtime.ModelRequest
}

func (r *recorder) Generate(ctx context.Context, req *runtime.ModelRequest, onDelta func(string)) (*runtime.ModelResponse, error) {
	c := *req
	c.Messages = slices.Clone(req.Messages)
	r.mu.Lock()
	r.reqs = append(r.reqs, c)
	r.mu.Unlock()
	return r.Model.Generate(ctx, req, onDelta)
}

func (r *recorder) requests() []runtime.ModelRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

func scripted(t testing.TB, name, yaml string) *recorder {
	t.Helper()
	fx, err := model.LoadFixture(name+".yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return &recorder{Model: model.NewScripted(runtime.ModelInfo{Name: name}, fx)}
}

// funcModel answers with a function (errors, blocking).
type funcModel struct {
	name  string
	fn    func(ctx context.Context, req *runtime.ModelRequest) (*runtime.ModelResponse, error)
	calls atomic.Int64
}

func (m *funcModel) Info() runtime.ModelInfo {
	return runtime.ModelInfo{Name: m.name, Provider: "test", Model: "test:" + m.name}
}
func (m *funcModel) Generate(ctx context.Context, req *runtime.ModelRequest, _ func(string)) (*runtime.ModelResponse, error) {
	m.calls.Add(1)
	return m.fn(ctx, req)
}

var key = store.SessionKey{App: "hist", User: "u1", Session: "s1"}

// ledger appends hand-made events to a session.
type ledger struct {
	t     testing.TB
	st    store.Store
	clock *runtimetest.Clock
	n     int
}

func newLedger(t testing.TB, st store.Store) *ledger {
	l := &ledger{t: t, st: st, clock: newClock()}
	if _, _, err := st.GetOrCreateSession(context.Background(), key, l.clock.Now()); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *ledger) append(events ...*runtime.Event) []string {
	l.t.Helper()
	var bs [][]byte
	var ids []string
	for _, e := range events {
		l.n++
		e.ID = "ev" + pad(l.n)
		e.App, e.User, e.Session = key.App, key.User, key.Session
		e.Time = l.clock.Now()
		e.Persisted = true
		b, err := runtime.EncodeEvent(e)
		if err != nil {
			l.t.Fatal(err)
		}
		bs = append(bs, b)
		ids = append(ids, e.ID)
	}
	if _, err := l.st.AppendEvents(context.Background(), key, bs, l.clock.Now()); err != nil {
		l.t.Fatal(err)
	}
	return ids
}

func pad(n int) string {
	s := "000000" + itoa(n)
	return s[len(s)-6:]
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// turn appends one run of node "bot": input, optionally a tool round, a
// final answer; it returns the run id.
func (l *ledger) turn(run, node, input string, tools []toolRound, answer string) {
	l.t.Helper()
	l.append(&runtime.Event{Kind: runtime.EventInput, Run: run, Author: "user", Text: input})
	for i, tr := range tools {
		tc := runtime.ToolCall{ID: run + "-c" + itoa(i), Name: tr.name, Args: json.RawMessage(`{"q":"x"}`)}
		l.append(&runtime.Event{Kind: runtime.EventModelResponse, Run: run, Author: "bot", Node: node, FilterKey: node, ToolCalls: []runtime.ToolCall{tc}})
		res, _ := json.Marshal(tr.result)
		l.append(&runtime.Event{Kind: runtime.EventToolResult, Run: run, Author: "bot", Node: node, FilterKey: node, ToolCall: &tc, Result: res})
	}
	l.append(&runtime.Event{Kind: runtime.EventModelResponse, Run: run, Author: "bot", Node: node, FilterKey: node, Text: answer},
		&runtime.Event{Kind: runtime.EventRunFinished, Run: run, Author: "bot", Status: runtime.StatusCompleted})
}

type toolRound struct {
	name, result string
}

// ledgerBytes returns every stored event's bytes.
func ledgerBytes(t testing.TB, st store.Store) [][]byte {
	t.Helper()
	es, err := st.ListEvents(context.Background(), key, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, len(es))
	for i, e := range es {
		out[i] = e.Data
	}
	return out
}

func newService(t testing.TB, st history.Store, p *bytecode.Program, models map[string]runtime.Model, owner string, mod func(*history.Config)) *history.Service {
	t.Helper()
	cfg := history.Config{Store: st, Program: p, Models: models, Clock: newClock(), Owner: owner}
	if mod != nil {
		mod(&cfg)
	}
	s, err := history.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func getSummary(t testing.TB, st store.Store, fk string) (store.Summary, bool) {
	t.Helper()
	s, err := st.GetSummary(context.Background(), key, fk)
	if errors.Is(err, store.ErrNotFound) {
		return store.Summary{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return s, true
}

var _ = memory.New

// funcs is the VM's table plus the functions only summary triggers call
// (cmd/agentc's funcTable does the same).
func funcs(p *bytecode.Program) map[string]vm.Func {
	f := vm.Builtins()
	for _, name := range p.Funcs {
		if _, ok := f[name]; !ok {
			f[name] = func([]types.Value) (types.Value, error) { return types.Value{}, nil }
		}
	}
	return f
}
