package main

// The savings experiment: the prompt tokens a conversation costs under
// each context configuration, measured by driving the real runtime
// (runtime.Runner with a runtime/history Service as its context builder
// and, through a thin wrapper, its Summary hook) with deterministic
// scripted models.
//
// For every conversation length (runs per session) the generator makes N
// conversations with varied sizes: user messages of 6–65 words, one answer
// size per conversation (300–1,200 bytes), a tool round (inventory_dump,
// 8–16 KiB) on 20–60% of the runs; a long conversation has a tool round
// every run until its history reaches -long-tokens. Every configuration
// runs the same conversations, each in its own store, Runner, Service,
// clock and entropy, so the workers' order changes no count. The driver
// waits for each run's post-run summary (the Runner's worker calls the
// hook) before starting the next run, as a user's next message would
// after a pause.
//
// Counting: every agent call's prompt tokens as sent (the request's
// messages and tool specs, history.CounterFor(-count model)), and every
// summarizer call's prompt and completion. A configuration's cost is its
// agent prompt tokens plus its summarizer tokens; savings are measured
// against the full-history prompt tokens of the same conversations, and a
// conversation whose cost exceeds full history's has negative savings.
// Agent completions have the same size in every configuration and are left
// out.
//
// The models: the agent reads its run's tag ("[c3 t7]") in the prompt,
// calls inventory_dump first when the plan says so, and answers with a
// fixed-size text. The last run asks for a serial number planted in the
// first run; in a recall configuration, when the request no longer shows
// it (a summary replaced that run), the agent calls session_search once
// (default scope, current_hidden) and session_load on the first hit, then
// answers — recall on demand, not on every question. The summarizer
// answers 128 + input/12 tokens, at most 768 (or max_summary_tokens).
//
// Configurations: full (no policy; the Service projects every event),
// summary (the default trigger, context_ratio(0.5) with the savings gate),
// summary+compaction, every-2-turns (event_count(3), min_tokens 0),
// summary+recall, summary+compaction+recall, and three probes: summary
// without the cascade to the full-session key, summary without the savings
// gate, and a lazy summary made only by pressure relief at half the window
// (no post-run summary); further probes: deferred and eager first
// summaries, summary+recall without recall-backed elision, a returning
// user.
//
// Profile: the last run's prompt tokens of every configuration are split
// by part of the request (tool specs, system, summary note, history text,
// history tool results, prompt, the call's own tool results, recall
// traffic), printed for the longest row: where a policy's tokens go.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/agentc/agentc/bench/internal/benchsrc"
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/history"
	"github.com/agentc/agentc/runtime/recall"
	"github.com/agentc/agentc/runtime/store"
	memstore "github.com/agentc/agentc/runtime/store/memory"
)

// savingsConfig configures the savings experiment.
type savingsConfig struct {
	Lengths       []int  `json:"lengths"`       // runs per conversation, one row each
	Conversations int    `json:"conversations"` // per length
	Long          int    `json:"long_conversations"`
	LongTokens    int    `json:"long_tokens"`    // full-history tokens a long conversation reaches
	Window        int    `json:"context_window"` // the agent model's declared window
	Seed          uint64 `json:"seed"`
	Store         string `json:"store"`
	Model         string `json:"count_model"` // the model id tokens are counted for
	Workers       int    `json:"-"`
}

// variant is one context configuration.
type variant struct {
	Name       string
	Summary    string // the summary policy's body; "" = no summary policy
	Compaction bool
	// CompactionBody is the compaction policy's body ("": protect_recent = 1).
	CompactionBody string
	Recall         bool // the agent has session_search and session_load
	NoGate         bool // history.Config.NoSavingsGate
	NoCascade      bool // history.Config.NoCascade
	Defer          bool // history.Config.DeferSummary
	EagerFirst     bool // history.Config.EagerFirstSummary
	NoElision      bool // history.Config.NoRecallElision
	// Returning: the user has other sessions the recall scopes reach
	// (history.Config.RecallElsewhere answers true), so the recall tools
	// are offered in every request.
	Returning bool
}

// variants are the configurations, full history first (the baseline).
var variants = []variant{
	{Name: "full"},
	{Name: "summary", Summary: "model = scribe"},
	{Name: "summary+compaction", Summary: "model = scribe", Compaction: true},
	// More than 3 history messages since the summary: after two plain
	// turns (user + answer each) or one turn with a tool round; min_tokens
	// 0 so that the count alone decides, as an every-N-turns trigger does.
	{Name: "every-2-turns", Summary: "model = scribe\n  trigger = event_count(3)\n  min_tokens = 0", NoGate: true},
	{Name: "summary+recall", Summary: "model = scribe", Recall: true},
	{Name: "summary+compaction+recall", Summary: "model = scribe", Compaction: true, Recall: true},
	// Probes, not configurations the issue asks for. The default trigger
	// without the cascade to the full-session key "" (history.Config.
	// NoCascade): a one-agent program's branch summary and "" summary
	// cover the same delta, so the cascade doubles every summary's cost.
	{Name: "summary, no cascade", Summary: "model = scribe", NoCascade: true},
	// The default trigger without the savings gate (history.Config.
	// NoSavingsGate): where its figures equal summary's, the gate changed
	// no decision.
	{Name: "summary, no gate", Summary: "model = scribe", NoGate: true},
	// A lazy summary: none after a run (the trigger never holds), pressure
	// relief at half the window instead, compaction otherwise off — a
	// summary made only when a model call is about to send the history,
	// never after a conversation's last run.
	{Name: "lazy (sync at 0.5)", Summary: "model = scribe\n  trigger = event_count(1000000000)",
		Compaction: true, CompactionBody: "tool_result_max_tokens = 1000000000\n  protect_recent = 0\n  sync_ratio = 0.5"},
	// The default trigger, the summary deferred from after a run to the
	// next call that needs it (history.Config.DeferSummary): none is made
	// after a conversation's last run. Its summaries count as "sync".
	{Name: "summary, deferred", Summary: "model = scribe", Defer: true},
	{Name: "summary+recall, deferred", Summary: "model = scribe", Recall: true, Defer: true},
	// The first summary after the run too (history.Config.
	// EagerFirstSummary; the default before 2026-12-04): every summary is
	// made after a run, also one the conversation's last run pays for and
	// nobody reads.
	{Name: "summary, eager first", Summary: "model = scribe", EagerFirst: true},
	{Name: "summary+recall, eager first", Summary: "model = scribe", Recall: true, EagerFirst: true},
	{Name: "summary+compaction+recall, eager first", Summary: "model = scribe", Compaction: true, Recall: true, EagerFirst: true},
	// Without recall-backed elision (history.Config.NoRecallElision; the
	// behaviour before 2026-12-04): a summary+recall agent without a
	// compaction policy sends every tool result verbatim, and its
	// summarizer gets them whole.
	{Name: "summary+recall, no elision", Summary: "model = scribe", Recall: true, NoElision: true},
	// A returning user: other sessions reachable, so the recall tools ride
	// on every request, hidden history or not.
	{Name: "summary+compaction+recall, returning user", Summary: "model = scribe", Compaction: true, Recall: true, Returning: true},
}

// SavingsReport is the savings section of the JSON document.
type SavingsReport struct {
	Config  savingsConfig `json:"config"`
	Configs []string      `json:"configurations"`
	Rows    []SavingsRow  `json:"rows"`
	Seconds float64       `json:"seconds"`
}

// SavingsRow is one conversation length.
type SavingsRow struct {
	Length        string `json:"length"` // runs per conversation, or "long"
	Runs          int    `json:"runs"`   // total runs of the row's conversations
	Conversations int    `json:"conversations"`
	// HistoryTokens is the full-history prompt of the last model call,
	// averaged over the conversations (how long they got).
	HistoryTokens int             `json:"history_tokens"`
	Configs       []ConfigFigures `json:"configurations"`
}

// ConfigFigures are one configuration's figures on one row.
type ConfigFigures struct {
	Config string `json:"config"`
	// Completed conversations (every run ended completed).
	Completed    int `json:"completed"`
	ModelCalls   int `json:"model_calls"`
	PromptTokens int `json:"prompt_tokens"`
	SummaryCalls int `json:"summary_calls"`
	// CascadeCalls are the summary calls for the full-session key ""
	// (spec/context.md, cascade); SyncCalls those of pressure relief.
	CascadeCalls int `json:"cascade_calls"`
	SyncCalls    int `json:"sync_calls"`
	// AfterLastRun are the summary calls made after a conversation's last
	// run: paid for, never used.
	AfterLastRun  int `json:"summary_calls_after_last_run"`
	SummaryPrompt int `json:"summary_prompt_tokens"`
	// SummaryShare is the summarizer's share of the configuration's cost
	// (its prompt and completion tokens over those plus the agent's prompt
	// tokens).
	SummaryShare      float64 `json:"summary_share"`
	SummaryCompletion int     `json:"summary_completion_tokens"`
	// Savings: 1 − (prompt + summary tokens) / full history's prompt
	// tokens, over the row's totals.
	Savings float64 `json:"savings"`
	// Negative: share of conversations whose cost exceeds full history's.
	Negative float64 `json:"negative_share"`
	// LastRunSavings compares the last run's prompt tokens (the question at
	// the end, with its recall turns) with full history's last run.
	LastRunPrompt  int     `json:"last_run_prompt_tokens"`
	LastRunSavings float64 `json:"last_run_savings"`
	// RecallAsked: conversations whose last run called session_search
	// (the planted fact was no longer in the request); RecallFound: those
	// whose session_load returned the fact (recall configurations).
	RecallAsked int `json:"recall_asked,omitempty"`
	RecallFound int `json:"recall_found,omitempty"`
	// LastRunProfile splits the last run's prompt tokens by part of the
	// request (profileParts), summed over the row's conversations.
	LastRunProfile map[string]int `json:"last_run_profile"`
}

// convResult is what one conversation cost under one configuration.
type convResult struct {
	completed                    bool
	calls, prompt, lastRunPrompt int
	lastCallPrompt               int
	sumCalls, cascade, sync      int
	wasted                       int // summary calls after the last run
	sumPrompt, sumCompletion     int
	recallFound, recallAsked     bool
	// profile: the last run's prompt tokens by part (profileParts).
	profile [nParts]int
}

// The parts of a request the last-run profile tells apart.
const (
	partTools    = iota // the tool specs offered
	partHead            // system messages (the agent's instruction)
	partSummary         // the summary note
	partHistText        // history user and assistant messages
	partHistTool        // history tool results
	partPrompt          // the run's input
	partOwnTool         // the call's own results of the agent's tools
	partRecall          // the call's recall turns: calls and results
	partOwnOther        // the call's other assistant turns, request overhead
	nParts
)

// profileParts names the parts, in order.
var profileParts = [nParts]string{"tools", "system", "summary", "history text", "history tool results", "prompt", "own tool results", "recall traffic", "other"}

// profileRequest splits a request's tokens into parts; pi is its prompt.
func profileRequest(c *history.Counter, req *runtime.ModelRequest, pi int, into *[nParts]int) {
	into[partTools] += c.Tools(req.Tools)
	total := c.Messages(req.Messages)
	sum := 0
	for i := range req.Messages {
		m := &req.Messages[i]
		n := c.Message(m)
		sum += n
		part := partOwnOther
		switch {
		case m.Role == runtime.RoleSystem:
			part = partHead
		case i < pi && m.Role == runtime.RoleUser && strings.HasPrefix(m.Content, "[summary]"):
			part = partSummary
		case i < pi && m.Role == runtime.RoleTool:
			part = partHistTool
		case i < pi:
			part = partHistText
		case i == pi:
			part = partPrompt
		case m.Role == runtime.RoleTool && (m.Name == recall.SearchToolName || m.Name == recall.LoadToolName):
			part = partRecall
		case m.Role == runtime.RoleTool:
			part = partOwnTool
		case slices.ContainsFunc(m.ToolCalls, func(tc runtime.ToolCall) bool {
			return tc.Name == recall.SearchToolName || tc.Name == recall.LoadToolName
		}):
			part = partRecall
		}
		into[part] += n
	}
	into[partOwnOther] += total - sum
}

func (r convResult) cost() int { return r.prompt + r.sumPrompt + r.sumCompletion }

// plan is one conversation: its runs' inputs and what the model does.
type plan struct {
	id        int
	turns     []turnPlan
	answer    int // answer size in bytes
	factHost  string
	factValue string
	seed      uint64
}

type turnPlan struct {
	input     string
	toolBytes int // > 0: the model calls inventory_dump first
	toolSeed  uint64
}

const savingsApp, savingsUser = "savings", "u1"

// makePlan generates conversation id with runs runs; runs ≤ 0 makes a long
// one: a tool round every run until the history reaches longTokens.
func makePlan(seed uint64, id, runs, longTokens int, c *history.Counter) *plan {
	r := rand.New(rand.NewPCG(seed, uint64(id)*0x9e3779b97f4a7c15+uint64(runs)))
	g := &gen{r: r}
	p := &plan{id: id, answer: 300 + r.IntN(900), seed: r.Uint64() >> 12}
	host := hostNames[r.IntN(len(hostNames))] + fmt.Sprint("-", r.IntN(50))
	p.factHost, p.factValue = host, fmt.Sprintf("SN-%04d-%c%c", r.IntN(10000), 'A'+rune(r.IntN(26)), 'A'+rune(r.IntN(26)))
	toolShare := 0.2 + 0.4*r.Float64()
	long := runs <= 0
	tokens := 0
	for t := 0; long && tokens < longTokens || !long && t < runs; t++ {
		in := fmt.Sprintf("[c%d t%d] %s", id, t, g.sentence(6+r.IntN(60)))
		if t == 0 {
			in += fmt.Sprintf(" The replacement disk for %s has serial number %s.", p.factHost, p.factValue)
		}
		tp := turnPlan{input: in}
		if long || r.Float64() < toolShare {
			tp.toolBytes, tp.toolSeed = 8<<10+r.IntN(8<<10), r.Uint64()>>12
		}
		if long {
			tokens += c.Count(in) + p.answer/4 + 20
			if tp.toolBytes > 0 {
				tokens += c.Count(inventoryText(tp.toolSeed, tp.toolBytes)) + 30
			}
		}
		p.turns = append(p.turns, tp)
	}
	last := &p.turns[len(p.turns)-1]
	last.input += " What was the serial number of the replacement disk for " + p.factHost + "?"
	return p
}

// inventoryText is the deterministic dump inventory_dump returns.
func inventoryText(seed uint64, size int) string {
	r := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	var b strings.Builder
	for b.Len() < size {
		fmt.Fprintf(&b, "inventory: host node-%04d asset tag AT-%05d rack r%02d status %s %s\n", r.IntN(10000), r.IntN(100000), r.IntN(40),
			words[r.IntN(len(words))], words[r.IntN(len(words))])
	}
	return b.String()
}

// wordsText is n words drawn from r.
func wordsText(r *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = words[r.IntN(len(words))]
	}
	return strings.Join(ws, " ")
}

// programSource is the program of a configuration: one llm agent with the
// configuration's policies, and the summarizer model.
func programSource(v variant, window int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `workflow savings

model fast { provider = openai, name = "gpt-4o-mini", context_window = %d }
model scribe { provider = openai, name = "gpt-4o-mini", context_window = 128000 }

tool inventory_dump "Dumps a host's inventory" {
  input  { host: string, bytes: int, seed: int }
  output string
  run    = http { url = "http://inventory.invalid/{input.host}" }
  effect = read_only
}
`, window)
	if v.Summary != "" {
		fmt.Fprintf(&b, "\nsummary rolling {\n  %s\n}\n", v.Summary)
	}
	if v.Compaction {
		body := cmp.Or(v.CompactionBody, "protect_recent = 1")
		fmt.Fprintf(&b, "\ncompaction lean {\n  %s\n}\n", body)
	}
	tools := "inventory_dump"
	if v.Recall {
		tools += ", session_search, session_load"
	}
	fmt.Fprintf(&b, `
agent assistant llm {
  model       = fast
  instruction = "You are an operations assistant. Answer the user's questions about hosts, disks and inventory; use inventory_dump for inventories."
  tools       = [%s]
`, tools)
	if v.Summary != "" {
		b.WriteString("  summary     = rolling\n")
	}
	if v.Compaction {
		b.WriteString("  compaction  = lean\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// stepClock is a deterministic clock: every reading one second after the
// previous; its timers never fire.
type stepClock struct {
	start time.Time
	n     atomic.Int64
}

func (c *stepClock) Now() time.Time { return c.start.Add(time.Duration(c.n.Add(1)) * time.Second) }
func (c *stepClock) AfterFunc(time.Duration, func()) func() bool {
	return func() bool { return true }
}

// seqEntropy is a deterministic entropy source.
type seqEntropy struct{ n atomic.Uint64 }

func (e *seqEntropy) Uint64() uint64 { return e.n.Add(1) * 0x9E3779B97F4A7C15 }

// meter counts what one conversation's model calls send.
type meter struct {
	c      *history.Counter
	mu     sync.Mutex
	res    convResult
	run    int  // the run in progress
	last   int  // the last run's index
	inHook bool // the post-run hook is running (else a summary is pressure relief)
}

// agentModel is the scripted agent: it reads the run's tag in the prompt
// and calls inventory_dump first when the plan says so; on the last run of
// a recall configuration it calls session_search, then session_load on the
// first hit; otherwise it answers with a fixed-size text.
type agentModel struct {
	p *plan
	m *meter
}

func (a *agentModel) Info() runtime.ModelInfo {
	return runtime.ModelInfo{Name: "fast", Provider: "bench", Model: "bench:fast"}
}

func (a *agentModel) Generate(_ context.Context, req *runtime.ModelRequest, _ func(string)) (*runtime.ModelResponse, error) {
	n := a.m.c.Messages(req.Messages) + a.m.c.Tools(req.Tools)
	a.m.mu.Lock()
	a.m.res.calls++
	a.m.res.prompt += n
	a.m.res.lastCallPrompt = n
	if a.m.run == a.m.last {
		a.m.res.lastRunPrompt += n
	}
	a.m.mu.Unlock()
	if len(req.Messages) == 0 {
		return nil, errors.New("bench model: empty request")
	}
	// The prompt is the last user message; the call's own turns follow it.
	pi := len(req.Messages) - 1
	for pi >= 0 && req.Messages[pi].Role != runtime.RoleUser {
		pi--
	}
	var c, t int
	if pi < 0 {
		return nil, errors.New("bench model: no user message")
	}
	if a.m.run == a.m.last {
		a.m.mu.Lock()
		profileRequest(a.m.c, req, pi, &a.m.res.profile)
		a.m.mu.Unlock()
	}
	if _, err := fmt.Sscanf(req.Messages[pi].Content, "[c%d t%d]", &c, &t); err != nil || t < 0 || t >= len(a.p.turns) {
		return nil, fmt.Errorf("bench model: prompt without a run tag: %.60q", req.Messages[pi].Content)
	}
	tp := a.p.turns[t]
	offered := func(name string) bool {
		return slices.ContainsFunc(req.Tools, func(s runtime.ToolSpec) bool { return s.Name == name })
	}
	id := func(k int) string { return fmt.Sprintf("call_c%d_t%d_%d", c, t, k) }
	own := req.Messages[pi+1:]
	// The question at the end asks for the fact planted in the first run:
	// when the request no longer shows it (a summary replaced that run),
	// the model searches the hidden history once and loads the first hit.
	recallRun := t == len(a.p.turns)-1 && offered(recall.SearchToolName) && !shows(req.Messages[:pi+1], a.p.factValue)
	switch {
	case len(own) == 0 && tp.toolBytes > 0:
		args, _ := json.Marshal(map[string]any{"host": a.p.factHost, "bytes": tp.toolBytes, "seed": tp.toolSeed})
		return &runtime.ModelResponse{ToolCalls: []runtime.ToolCall{{ID: id(0), Name: "inventory_dump", Args: args}}, FinishReason: "tool_calls"}, nil
	case recallRun && !calledTool(own, recall.SearchToolName):
		a.m.mu.Lock()
		a.m.res.recallAsked = true
		a.m.mu.Unlock()
		args, _ := json.Marshal(map[string]any{"query": "serial number of the replacement disk for " + a.p.factHost})
		return &runtime.ModelResponse{ToolCalls: []runtime.ToolCall{{ID: id(1), Name: recall.SearchToolName, Args: args}}, FinishReason: "tool_calls"}, nil
	case recallRun && !calledTool(own, recall.LoadToolName):
		var res recall.SearchResult
		if err := json.Unmarshal([]byte(own[len(own)-1].Content), &res); err == nil && len(res.Hits) > 0 {
			args, _ := json.Marshal(map[string]any{"session_id": res.Hits[0].Session, "event_id": res.Hits[0].EventID})
			return &runtime.ModelResponse{ToolCalls: []runtime.ToolCall{{ID: id(2), Name: recall.LoadToolName, Args: args}}, FinishReason: "tool_calls"}, nil
		}
	}
	if recallRun && len(own) > 0 && own[len(own)-1].Role == runtime.RoleTool && strings.Contains(own[len(own)-1].Content, a.p.factValue) &&
		calledTool(own, recall.LoadToolName) {
		a.m.mu.Lock()
		a.m.res.recallFound = true
		a.m.mu.Unlock()
	}
	r := rand.New(rand.NewPCG(a.p.seed, uint64(t)))
	text := wordsText(r, a.p.answer/8) // about answer bytes
	return &runtime.ModelResponse{Text: text, FinishReason: "stop"}, nil
}

// shows reports whether a message's content contains s.
func shows(msgs []runtime.Message, s string) bool {
	return slices.ContainsFunc(msgs, func(m runtime.Message) bool { return strings.Contains(m.Content, s) })
}

// calledTool reports whether the call's own turns asked for tool name.
func calledTool(own []runtime.Message, name string) bool {
	for _, m := range own {
		for _, tc := range m.ToolCalls {
			if tc.Name == name {
				return true
			}
		}
	}
	return false
}

// scribeModel is the summarizer: a summary of 128 + input/12 tokens, at
// most the request's MaxTokens or 768 (a real summarizer's reply grows with
// its input but far less than it).
type scribeModel struct{ m *meter }

func (s *scribeModel) Info() runtime.ModelInfo {
	return runtime.ModelInfo{Name: "scribe", Provider: "bench", Model: "bench:scribe"}
}

func (s *scribeModel) Generate(_ context.Context, req *runtime.ModelRequest, _ func(string)) (*runtime.ModelResponse, error) {
	in := s.m.c.Messages(req.Messages)
	limit := 768
	if req.MaxTokens > 0 {
		limit = min(limit, req.MaxTokens)
	}
	want := min(128+in/12, limit)
	r := rand.New(rand.NewPCG(uint64(in), 7))
	text := wordsText(r, want) // one token per word, about
	out := s.m.c.Count(text)
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.m.res.sumCalls++
	s.m.res.sumPrompt += in
	s.m.res.sumCompletion += out
	if strings.HasPrefix(req.Site.Node, "#") {
		s.m.res.cascade++
	}
	if !s.m.inHook {
		s.m.res.sync++
	} else if s.m.run == s.m.last {
		s.m.res.wasted++
	}
	return &runtime.ModelResponse{Text: text, FinishReason: "stop"}, nil
}

// inventoryTool is inventory_dump: a deterministic dump of about bytes
// bytes.
type inventoryTool struct{}

func (inventoryTool) Spec() runtime.ToolSpec {
	return runtime.ToolSpec{Name: "inventory_dump", Description: "Dumps a host's inventory"}
}
func (inventoryTool) Effect() runtime.Effect { return runtime.ReadOnly }
func (inventoryTool) Call(_ context.Context, req runtime.ToolRequest) (json.RawMessage, error) {
	var args struct {
		Host  string `json:"host"`
		Bytes int    `json:"bytes"`
		Seed  uint64 `json:"seed"`
	}
	if err := json.Unmarshal(req.Args, &args); err != nil {
		return nil, fmt.Errorf("inventory_dump: %w", err)
	}
	return json.Marshal(inventoryText(args.Seed, min(args.Bytes, 64<<10)))
}

// doneHook forwards to the Service's AfterRun on the Runner's post-run
// worker and reports each job, so that the driver waits for a run's
// summary before the next run (deterministic counts).
type doneHook struct {
	svc  *history.Service
	m    *meter
	done chan error
}

func (h *doneHook) AfterRun(ctx context.Context, job runtime.PostRun) error {
	h.m.mu.Lock()
	h.m.inHook = true
	h.m.mu.Unlock()
	err := h.svc.AfterRun(ctx, job)
	h.m.mu.Lock()
	h.m.inHook = false
	h.m.mu.Unlock()
	h.done <- err
	return err
}

// openSavingsStore opens a store for one conversation.
func openSavingsStore(kind string) (store.Store, func(), error) {
	if kind == "pebble" {
		return openStore(kind)
	}
	return memstore.New(), func() {}, nil
}

// runConversation drives one conversation through a Runner under one
// configuration.
func runConversation(ctx context.Context, cfg savingsConfig, v variant, prog *bytecode.Program, p *plan) (convResult, error) {
	st, done, err := openSavingsStore(cfg.Store)
	if err != nil {
		return convResult{}, fmt.Errorf("open store: %w", err)
	}
	defer done()
	m := &meter{c: history.CounterFor(cfg.Model), last: len(p.turns) - 1}
	models := map[string]runtime.Model{"fast": &agentModel{p: p, m: m}, "scribe": &scribeModel{m: m}}
	clock := &stepClock{start: time.Date(2026, 9, 1, 8, 0, 0, 0, time.UTC)}
	// The builtin functions plus a null stub for every other function the
	// program names (the summary triggers are the Service's own).
	funcs := assemble.Funcs(prog, nil, nil)
	elsewhere := assemble.RecallElsewhere(st, prog)
	if v.Returning {
		elsewhere = func(context.Context, runtime.ContextCall) bool { return true }
	}
	svc, err := history.New(history.Config{Store: st, Program: prog, Models: models, Funcs: funcs, Clock: clock, Owner: "bench",
		NoSavingsGate: v.NoGate, NoCascade: v.NoCascade, NoRecallElision: v.NoElision, DeferSummary: v.Defer, EagerFirstSummary: v.EagerFirst, Counter: func(string) *history.Counter { return m.c },
		RecallElsewhere: elsewhere})
	if err != nil {
		return convResult{}, err
	}
	// Assembled as agentc assembles a program (session_search and
	// session_load, when the variant lists them, over the store), with the
	// history service of the variant under measurement and an empty
	// environment.
	o := assemble.Options{Program: prog, Verified: true, Models: models, Tools: map[string]runtime.Tool{"inventory_dump": inventoryTool{}},
		Funcs: funcs, Clock: clock, Entropy: &seqEntropy{}, App: savingsApp, Context: svc,
		Env: func(string) (string, bool) { return "", false }}
	var hook *doneHook
	if svc.HasSummaries() {
		hook = &doneHook{svc: svc, m: m, done: make(chan error, 1)}
		o.Summary = hook
	}
	r, err := assemble.New(st, o)
	if err != nil {
		return convResult{}, err
	}
	defer r.Close(context.WithoutCancel(ctx))
	completed := true
	for t, tp := range p.turns {
		m.mu.Lock()
		m.run = t
		m.mu.Unlock()
		ch, err := r.Run(ctx, runtime.Invocation{User: savingsUser, Session: fmt.Sprintf("c%04d", p.id), Runnable: "assistant", Input: tp.input})
		if err != nil {
			return convResult{}, fmt.Errorf("conversation %d run %d: %w", p.id, t, err)
		}
		var last *runtime.Event
		for e := range ch {
			last = e
		}
		if last == nil || last.Status != runtime.StatusCompleted {
			completed = false
			if last != nil && last.Error != nil {
				return convResult{}, fmt.Errorf("conversation %d run %d (%s): %s: %s", p.id, t, v.Name, last.Error.Kind, last.Error.Message)
			}
		}
		if hook != nil {
			select {
			case err := <-hook.done:
				if err != nil {
					return convResult{}, fmt.Errorf("conversation %d run %d (%s): summary: %w", p.id, t, v.Name, err)
				}
			case <-time.After(2 * time.Minute):
				return convResult{}, fmt.Errorf("conversation %d run %d (%s): the summary hook did not run", p.id, t, v.Name)
			case <-ctx.Done():
				return convResult{}, ctx.Err()
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	res := m.res
	res.completed = completed
	return res, nil
}

// savings runs the experiment.
func savings(ctx context.Context, cfg savingsConfig) (*SavingsReport, error) {
	start := time.Now()
	rep := &SavingsReport{Config: cfg}
	progs := make([]*bytecode.Program, len(variants))
	for i, v := range variants {
		p, err := benchsrc.Compile("savings.agent", programSource(v, cfg.Window))
		if err != nil {
			return nil, fmt.Errorf("configuration %s: %w", v.Name, err)
		}
		progs[i] = p
		rep.Configs = append(rep.Configs, v.Name)
	}
	c := history.CounterFor(cfg.Model)
	type rowPlans struct {
		label string
		plans []*plan
	}
	var rows []rowPlans
	id := 0
	for _, n := range cfg.Lengths {
		rp := rowPlans{label: fmt.Sprint(n)}
		for range cfg.Conversations {
			rp.plans = append(rp.plans, makePlan(cfg.Seed, id, n, 0, c))
			id++
		}
		rows = append(rows, rp)
	}
	if cfg.Long > 0 {
		rp := rowPlans{label: "long"}
		for range cfg.Long {
			rp.plans = append(rp.plans, makePlan(cfg.Seed, id, 0, cfg.LongTokens, c))
			id++
		}
		rows = append(rows, rp)
	}
	// Every (conversation, configuration) is an independent job with its
	// own store, clock and entropy: the order the workers take them in
	// does not change any count.
	type job struct{ row, conv, v int }
	var jobs []job
	results := make([][][]convResult, len(rows))
	for ri, rp := range rows {
		results[ri] = make([][]convResult, len(rp.plans))
		for ci := range rp.plans {
			results[ri][ci] = make([]convResult, len(variants))
			for vi := range variants {
				jobs = append(jobs, job{ri, ci, vi})
			}
		}
	}
	// Longest first, so that the last job to start is a short one.
	slices.SortStableFunc(jobs, func(a, b job) int {
		return cmp.Compare(len(rows[b.row].plans[b.conv].turns), len(rows[a.row].plans[a.conv].turns))
	})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		first error
		next  atomic.Int64
		wg    sync.WaitGroup
	)
	for range max(1, cfg.Workers) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(jobs) || ctx.Err() != nil {
					return
				}
				j := jobs[i]
				res, err := runConversation(ctx, cfg, variants[j.v], progs[j.v], rows[j.row].plans[j.conv])
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
					return
				}
				results[j.row][j.conv][j.v] = res
			}
		})
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	for ri, rp := range rows {
		row := SavingsRow{Length: rp.label, Conversations: len(rp.plans)}
		full := results[ri]
		hist := 0
		for ci, p := range rp.plans {
			row.Runs += len(p.turns)
			hist += full[ci][0].lastCallPrompt
		}
		row.HistoryTokens = hist / max(1, len(rp.plans))
		for vi, v := range variants {
			f := ConfigFigures{Config: v.Name}
			fullCost, fullLast, neg := 0, 0, 0
			for ci := range rp.plans {
				r, base := full[ci][vi], full[ci][0]
				if r.completed {
					f.Completed++
				}
				f.ModelCalls += r.calls
				f.PromptTokens += r.prompt
				f.SummaryCalls += r.sumCalls
				f.CascadeCalls += r.cascade
				f.SyncCalls += r.sync
				f.AfterLastRun += r.wasted
				f.SummaryPrompt += r.sumPrompt
				f.SummaryCompletion += r.sumCompletion
				f.LastRunPrompt += r.lastRunPrompt
				fullCost += base.cost()
				fullLast += base.lastRunPrompt
				if r.cost() > base.cost() {
					neg++
				}
				if r.recallAsked {
					f.RecallAsked++
				}
				if r.recallFound {
					f.RecallFound++
				}
				if f.LastRunProfile == nil {
					f.LastRunProfile = map[string]int{}
				}
				for i, n := range r.profile {
					f.LastRunProfile[profileParts[i]] += n
				}
			}
			if fullCost > 0 {
				f.Savings = round(1 - float64(f.PromptTokens+f.SummaryPrompt+f.SummaryCompletion)/float64(fullCost))
				if total := f.PromptTokens + f.SummaryPrompt + f.SummaryCompletion; total > 0 {
					f.SummaryShare = round(float64(f.SummaryPrompt+f.SummaryCompletion) / float64(total))
				}
			}
			if fullLast > 0 {
				f.LastRunSavings = round(1 - float64(f.LastRunPrompt)/float64(fullLast))
			}
			f.Negative = round(float64(neg) / float64(max(1, len(rp.plans))))
			row.Configs = append(row.Configs, f)
		}
		rep.Rows = append(rep.Rows, row)
	}
	rep.Seconds = round(time.Since(start).Seconds())
	return rep, nil
}

// defaultWorkers is the workers of the savings experiment.
func defaultWorkers() int { return min(goruntime.GOMAXPROCS(0), 4) }

func printSavings(w io.Writer, rep *SavingsReport) {
	c := rep.Config
	fmt.Fprintf(w, "savings: %d conversations per length, %d long (≥ %d tokens); agent window %d; tokens counted for %s (%s); %s store; %.1fs\n",
		c.Conversations, c.Long, c.LongTokens, c.Window, c.Model, history.CounterFor(c.Model).Encoding(), c.Store, rep.Seconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "runs\tconvs\thistory\tconfiguration\tdone\tprompt tokens\tsummary calls (\"\"/sync/after last)\tsummary tokens\tsummarizer share\tsavings\tnegative\tlast-run savings\trecall found/asked\t")
	for _, r := range rep.Rows {
		for i, f := range r.Configs {
			lead := "\t\t\t"
			if i == 0 {
				lead = fmt.Sprintf("%s\t%d\t%d\t", r.Length, r.Conversations, r.HistoryTokens)
			}
			found := "-"
			if strings.Contains(f.Config, "recall") {
				found = fmt.Sprintf("%d/%d", f.RecallFound, f.RecallAsked)
			}
			fmt.Fprintf(tw, "%s%s\t%d/%d\t%d\t%d (%d/%d/%d)\t%d\t%.1f%%\t%.1f%%\t%.0f%%\t%.1f%%\t%s\t\n", lead, f.Config, f.Completed, r.Conversations,
				f.PromptTokens, f.SummaryCalls, f.CascadeCalls, f.SyncCalls, f.AfterLastRun, f.SummaryPrompt+f.SummaryCompletion,
				100*f.SummaryShare, 100*f.Savings, 100*f.Negative, 100*f.LastRunSavings, found)
		}
	}
	tw.Flush()
	// Where the last run's prompt tokens go, on the longest row.
	if len(rep.Rows) == 0 {
		return
	}
	r := rep.Rows[len(rep.Rows)-1]
	fmt.Fprintf(w, "last-run prompt tokens by part, runs %s (share of the configuration's last run):\n", r.Length)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "configuration\tlast run\t")
	for _, p := range profileParts {
		fmt.Fprintf(tw, "%s\t", p)
	}
	fmt.Fprintln(tw)
	for _, f := range r.Configs {
		fmt.Fprintf(tw, "%s\t%d\t", f.Config, f.LastRunPrompt)
		for _, p := range profileParts {
			fmt.Fprintf(tw, "%d (%.0f%%)\t", f.LastRunProfile[p], 100*float64(f.LastRunProfile[p])/float64(max(1, f.LastRunPrompt)))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}
