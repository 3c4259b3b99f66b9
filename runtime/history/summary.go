package history

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// The rolling summary (spec/context.md, "Rolling summary"). One update of
// a filter key's summary:
//
//  1. takes the key's in-process lock, then its store lease (another
//     process holding it: nothing happens);
//  2. reads the stored summary and the key's events after its boundary
//     (the delta);
//  3. leaves out the newest skip_recent messages, then trailing user input
//     and assistant messages that only call tools (their round is not
//     complete: the next update takes them);
//  4. unless forced, checks min_tokens and the trigger;
//  5. asks the summarizer (the policy's model, else the agent's) with the
//     previous summary as a system note and the delta — or, for pressure
//     relief, the parent request itself when it fits the summarizer's
//     window (cache-safe fork);
//  6. on non-empty text, writes text and boundary together (PutSummary). A
//     summarizer error or empty text leaves the stored summary untouched.

// SummarizeRequest asks for one summary update.
type SummarizeRequest struct {
	Session   store.SessionKey
	FilterKey string
	// Agent is the program agent whose summary policy and model apply.
	Agent int
	// Run is the run that asked for the update ("": none), for its span.
	Run string
	// Force skips min_tokens and the trigger (pressure relief).
	Force bool
	// Parent is the request being relieved, for a cache-safe fork: when it
	// fits the summarizer's window and its projection started at the
	// current boundary (ParentBoundary), the summarizer gets the parent's
	// messages followed by the summarizing instruction, and the new boundary
	// is ParentLastSeq. nil: a standalone input.
	Parent         []runtime.Message
	ParentBoundary uint64
	ParentLastSeq  uint64
	// ParentTools are the parent request's tool specs: the fork sends them
	// as they are (a provider's cached prefix starts with the tools), with
	// tool_choice none.
	ParentTools []runtime.ToolSpec
}

// SummarizeResult says what an update did.
type SummarizeResult struct {
	// Advanced: a new summary exists (Summary). When PersistErr is set it
	// exists in memory only: the store write failed.
	Advanced   bool
	Summary    store.Summary
	Previous   store.Summary
	PersistErr error
	// Reason says why nothing advanced ("" when it did).
	Reason  string
	Fork    bool // the summarizer got the parent request's prefix
	Metrics TriggerMetrics
}

// Summarize runs one summary update synchronously. Its error is a
// summarizer or store failure; "nothing to do" is a result with a Reason.
func (s *Service) Summarize(ctx context.Context, req SummarizeRequest) (SummarizeResult, error) {
	ap := s.policies(req.Agent)
	if ap.Summary == nil {
		return SummarizeResult{Reason: "the agent has no summary policy"}, nil
	}
	var sp runtime.Span
	if s.obs != nil {
		ctx, sp = s.span(ctx, runtime.SpanSummary, req.Session, req.Run, "", req.FilterKey, 0)
	}
	var res SummarizeResult
	err := s.withSummaryLease(ctx, req.Session, req.FilterKey, func(g *leaseGuard) (err error) {
		res, err = s.summarizeLocked(ctx, req, ap, g)
		return err
	})
	if errors.Is(err, errLeaseHeld) {
		res, err = SummarizeResult{Reason: "another process holds the summary lease"}, nil
	}
	if sp != nil {
		sp.End(&runtime.SpanEnd{Boundary: advancedTo(res), Err: spanError(err)})
	}
	return res, err
}

// span opens a span of kind for the work of a history key.
func (s *Service) span(ctx context.Context, kind runtime.SpanKind, sess store.SessionKey, run, node, filterKey string, turn int) (context.Context, runtime.Span) {
	return s.obs.Start(ctx, &runtime.SpanStart{Kind: kind, App: sess.App, User: sess.User, Session: sess.Session, Run: run,
		Node: node, FilterKey: filterKey, Turn: turn, MapIndex: -1})
}

// advancedTo is the boundary a summary update advanced to (0: none).
func advancedTo(res SummarizeResult) uint64 {
	if !res.Advanced {
		return 0
	}
	return res.Summary.Boundary
}

// spanError describes a failure for a span (nil: none).
func spanError(err error) *runtime.ErrorInfo {
	if err == nil {
		return nil
	}
	return &runtime.ErrorInfo{Kind: string(vm.KindInternal), Message: err.Error()}
}

// errLeaseHeld: another process holds the summary lease of a filter key.
var errLeaseHeld = errors.New("history: summary lease held by another process")

// withSummaryLease runs f holding the in-process lock and the store lease
// of one session's filter key: the only writer of that key's boundary. The
// lease is renewed every third of its TTL while f runs (a long summarizer
// call does not lose it), and f confirms it before writing (g.confirm).
func (s *Service) withSummaryLease(ctx context.Context, sess store.SessionKey, filterKey string, f func(g *leaseGuard) error) error {
	unlock, err := s.locks.LockContext(ctx, sess.String()+"\x00"+filterKey)
	if err != nil {
		return fmt.Errorf("history: summary of %s %q: %w", sess, filterKey, err)
	}
	defer unlock()
	leaseKey := "history/summary/" + sess.App + "/" + sess.User + "/" + sess.Session + "/" + filterKey
	if _, err := s.st.AcquireLease(ctx, leaseKey, s.owner, s.leaseTTL, s.clock.Now()); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return errLeaseHeld
		}
		return fmt.Errorf("history: summary lease of %s %q: %w", sess, filterKey, err)
	}
	g := &leaseGuard{s: s, key: leaseKey}
	g.schedule()
	defer func() {
		g.close()
		if err := s.st.ReleaseLease(context.WithoutCancel(ctx), leaseKey, s.owner, s.clock.Now()); err != nil && !errors.Is(err, store.ErrConflict) {
			s.log.Warn("history: release summary lease", "session", sess.String(), "filter_key", filterKey, "err", err)
		}
	}()
	return f(g)
}

// leaseGuard keeps one summary lease alive: a timer of the Service's clock
// renews it every third of its TTL until close. Timer callbacks and close
// are serialized by mu; after close no renewal runs or is scheduled.
type leaseGuard struct {
	s    *Service
	key  string
	mu   sync.Mutex
	stop func() bool
	done bool
}

func (g *leaseGuard) schedule() { g.stop = g.s.clock.AfterFunc(g.s.leaseTTL/3, g.renew) }

func (g *leaseGuard) renew() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		return
	}
	if _, err := g.s.st.RenewLease(context.Background(), g.key, g.s.owner, g.s.leaseTTL, g.s.clock.Now()); err != nil {
		g.s.log.Warn("history: renew summary lease", "lease", g.key, "err", err)
		return // lost or failing: confirm refuses the write
	}
	g.schedule()
}

func (g *leaseGuard) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done = true
	if g.stop != nil {
		g.stop()
	}
}

// confirm renews the lease now; an error means it is no longer ours (it
// expired and another owner took it), so the caller must not write.
func (g *leaseGuard) confirm(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, err := g.s.st.RenewLease(context.WithoutCancel(ctx), g.key, g.s.owner, g.s.leaseTTL, g.s.clock.Now())
	return err
}

// cascadeByCopy advances the full-session summary (key "") to a branch
// summary that just advanced, without a summarizer call, when both would
// have summarized the same thing: the full-session summary stood at the
// branch's previous boundary and the session's history up to the new
// boundary is, message for message, the branch's (a session whose only llm
// agent is this one). It reports whether it copied.
func (s *Service) cascadeByCopy(ctx context.Context, sess store.SessionKey, branch string, adv SummarizeResult) (bool, error) {
	copied := false
	err := s.withSummaryLease(ctx, sess, "", func(g *leaseGuard) error {
		prev, err := s.st.GetSummary(ctx, sess, "")
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("history: read summary \"\" of %s: %w", sess, err)
		}
		if prev.Boundary != adv.Previous.Boundary || prev.Text != adv.Previous.Text {
			return nil
		}
		all, _, err := s.history(ctx, sess, "", prev.Boundary, "")
		if err != nil {
			return err
		}
		mine, _, err := s.history(ctx, sess, branch, prev.Boundary, "")
		if err != nil {
			return err
		}
		a, _ := runtime.HistoryMessages(eventsUpTo(all, adv.Summary.Boundary))
		b, _ := runtime.HistoryMessages(eventsUpTo(mine, adv.Summary.Boundary))
		if !sameMessages(a, b) {
			return nil
		}
		sum := adv.Summary
		sum.FilterKey = ""
		if err := g.confirm(ctx); err != nil {
			s.log.Warn("history: lost the session summary lease; not copying", "session", sess.String(), "err", err)
			return nil
		}
		if err := s.st.PutSummary(context.WithoutCancel(ctx), sess, sum); err != nil {
			return fmt.Errorf("history: copy summary %q to the session of %s: %w", branch, sess, err)
		}
		copied = true
		return nil
	})
	if errors.Is(err, errLeaseHeld) {
		return true, nil // the holder advances it
	}
	return copied, err
}

// sameMessages reports whether a and b are the same messages.
func sameMessages(a, b []runtime.Message) bool {
	return slices.EqualFunc(a, b, func(x, y runtime.Message) bool {
		return x.Role == y.Role && x.Content == y.Content && x.Name == y.Name && x.ToolCallID == y.ToolCallID &&
			slices.EqualFunc(x.ToolCalls, y.ToolCalls, func(c, d runtime.ToolCall) bool {
				return c.ID == d.ID && c.Name == d.Name && string(c.Args) == string(d.Args)
			})
	})
}

func (s *Service) summarizeLocked(ctx context.Context, req SummarizeRequest, ap AgentPolicies, g *leaseGuard) (SummarizeResult, error) {
	pol := ap.Summary
	var res SummarizeResult
	prev, err := s.st.GetSummary(ctx, req.Session, req.FilterKey)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return res, fmt.Errorf("history: read summary %q of %s: %w", req.FilterKey, req.Session, err)
	}
	res.Previous = prev
	modelName := pol.Model
	if modelName == "" {
		modelName = ap.Model
	}
	mdl := s.models[modelName]
	if mdl == nil {
		res.Reason = "no summarizer model " + strconv.Quote(modelName)
		return res, nil
	}
	counter := s.counterFor(mdl, modelName)
	window := s.windowOf(mdl, modelName)

	events, _, err := s.history(ctx, req.Session, req.FilterKey, prev.Boundary, "")
	if err != nil {
		return res, err
	}
	full, fullOrigins := runtime.HistoryMessages(events)
	n := max(0, len(full)-pol.SkipRecent)
	for n > 0 {
		m := &full[n-1]
		if m.Role == runtime.RoleUser || m.Role == runtime.RoleAssistant && len(m.ToolCalls) > 0 {
			n-- // an incomplete round: the next update takes it
			continue
		}
		break
	}
	// The boundary: just before the first message held back, else the last
	// event read. Sequence numbers have no gaps; the events between that
	// belong to other keys do not matter to this one.
	var boundary uint64
	msgs, origins := full[:n], fullOrigins[:n]
	if n < len(full) {
		boundary = fullOrigins[n].Seq - 1
		// A kept assistant message keeps only the calls answered before it.
		msgs, origins = runtime.HistoryMessages(eventsUpTo(events, boundary))
	} else if len(events) > 0 {
		boundary = events[len(events)-1].Seq
	}
	if len(msgs) == 0 {
		res.Reason = "no new events to summarize"
		return res, nil
	}
	// The trigger measures the agent's context, with the agent model's
	// counter and window.
	agentModel := s.models[ap.Model]
	ac := s.counterFor(agentModel, ap.Model)
	prevNote := 0
	if prev.Text != "" {
		prevNote = ac.Message(ptr(SummaryNote(prev)))
	}
	m := TriggerMetrics{Events: len(msgs), Tokens: ac.Messages(msgs), SummaryTokens: prevNote, Window: s.windowOf(agentModel, ap.Model),
		MaxSummaryTokens: pol.MaxSummaryTokens}
	m.Projected = m.Tokens + m.SummaryTokens
	for i := range msgs {
		if msgs[i].Role == runtime.RoleAssistant {
			m.ModelCalls++
		}
	}
	res.Metrics = m
	if !req.Force {
		if m.Tokens < pol.MinTokens {
			res.Reason = fmt.Sprintf("%d new tokens, below min_tokens %d", m.Tokens, pol.MinTokens)
			return res, nil
		}
		ok, err := s.fires(ctx, pol, m)
		if err != nil {
			return res, fmt.Errorf("history: summary trigger of policy %s: %w", pol.Name, err)
		}
		if !ok {
			res.Reason = "the trigger does not hold"
			return res, nil
		}
	}

	instruction := pol.Instruction
	if instruction == "" {
		instruction = defaultInstruction
	}
	// The summary's cap: the policy's, else one derived from the agent
	// model's window; it is also what the summarizer's window must leave.
	limit := pol.MaxSummaryTokens
	if limit <= 0 {
		limit = DefaultSummaryCap(m.Window)
	}
	instruction += " Keep the summary under " + strconv.Itoa(limit) + " tokens."
	reserve := limit
	var input []runtime.Message
	var tools []runtime.ToolSpec
	if req.Parent != nil && req.ParentBoundary == prev.Boundary && req.ParentLastSeq > prev.Boundary && pol.SkipRecent == 0 {
		ask := runtime.Message{Role: runtime.RoleUser, Content: forkInstruction + instruction}
		if counter.Messages(req.Parent)+counter.Tools(req.ParentTools)+counter.Message(&ask)+reserve <= window {
			input = append(slices.Clip(req.Parent), ask)
			tools = req.ParentTools
			boundary = req.ParentLastSeq
			res.Fork = true
		}
	}
	if input == nil {
		var cut uint64
		sent, excerpts := msgs, 0
		if !s.noRecallElision {
			sent, excerpts = SummarizerExcerpts(ap, msgs, origins, counter)
		}
		if excerpts > 0 {
			instruction += " " + excerptInstruction
		}
		if input, cut = standaloneInput(prev, sent, origins, instruction, counter, window-reserve); cut > 0 {
			boundary = cut
		}
	}
	sreq := &runtime.ModelRequest{Site: runtime.CallSite{Node: req.FilterKey + "#summary", MapIndex: -1, Turn: 1},
		Messages: input, Tools: tools, MaxTokens: limit}
	if len(tools) > 0 {
		sreq.ToolChoice = "none"
	}
	resp, err := mdl.Generate(ctx, sreq, nil)
	if err != nil {
		return res, fmt.Errorf("history: summarize %s %q: %w", req.Session, req.FilterKey, err)
	}
	text := ""
	if resp != nil {
		text = strings.TrimSpace(resp.Text)
	}
	if text == "" {
		res.Reason = "the summarizer returned no text"
		return res, nil
	}
	if err := g.confirm(ctx); err != nil {
		res.Reason = "the summary lease was lost during the summarizer call: " + err.Error()
		return res, nil
	}
	res.Advanced = true
	res.Summary = store.Summary{FilterKey: req.FilterKey, Text: text, Boundary: boundary, Time: s.clock.Now()}
	if err := s.st.PutSummary(context.WithoutCancel(ctx), req.Session, res.Summary); err != nil {
		res.PersistErr = fmt.Errorf("history: store summary %q of %s: %w", req.FilterKey, req.Session, err)
	}
	s.log.Info("history: summary advanced", "session", req.Session.String(), "filter_key", req.FilterKey,
		"from", prev.Boundary, "to", boundary, "events", m.Events, "tokens", m.Tokens, "summary_tokens", counter.Count(text), "fork", res.Fork)
	return res, nil
}

// DefaultSummaryCap is the summary length limit, in tokens, of a policy
// without max_summary_tokens: a tenth of the agent model's window, within
// [256, 4096] (the summary note stays a small part of every request).
func DefaultSummaryCap(window int) int {
	return min(4096, max(256, window/10))
}

const (
	defaultInstruction = "You maintain the rolling summary of a conversation between a user and an AI agent, tool calls included. " +
		"Write an updated summary that merges the previous summary (if any) with the new events: keep decisions, facts, names, numbers, " +
		"identifiers, results of tool calls, open questions and what remains to be done; leave out pleasantries and repetition. " +
		"Reply with the summary only, as plain prose or short bullet points."
	forkInstruction = "The conversation above is about to be compacted: its earlier part will be replaced by your summary. " +
		"Summarize everything above this message, the summary note included. "
)

// SummaryExcerptTokens is about the size of the excerpt (head and tail) of
// a large tool result a summarizer gets when the agent can load the result
// back (SummarizerExcerpts).
const SummaryExcerptTokens = 256

// excerptInstruction is added to the summarizer's instruction when its
// input holds excerpts.
const excerptInstruction = "A tool result shown only in part can be loaded back by the agent with session_load: " +
	"say what it was and name its event_id instead of restating it."

// SummarizerExcerpts returns the delta as the summarizer of an agent with
// session_load gets it (spec/context.md, "Recall-backed elision"): every
// committed tool result above the agent's consumed-result limit
// (tool_result_max_tokens, else DefaultToolResultMaxTokens) is cut to its
// head and tail, about SummaryExcerptTokens, with a marker naming its
// event_id — the recall index returns the whole result, so the summary
// need only say what it was and where. keep tools, error results,
// placeholders and recall's own results stay whole. Agents without
// session_load get msgs as they are. It reports how many results it cut.
func SummarizerExcerpts(ap AgentPolicies, msgs []runtime.Message, origins []runtime.HistoryOrigin, c *Counter) ([]runtime.Message, int) {
	if !ap.SessionLoad {
		return msgs, 0
	}
	limit := DefaultToolResultMaxTokens
	var keep []string
	if ap.Compaction != nil {
		keep = ap.Compaction.Keep
		if ap.Compaction.ToolResultMaxTokens > 0 {
			limit = ap.Compaction.ToolResultMaxTokens
		}
	}
	var out []runtime.Message
	cut := 0
	for i := range msgs {
		m := &msgs[i]
		if !rewritable(m, keep) || i >= len(origins) || origins[i].EventID == "" || isRecallTool(m.Name) {
			continue
		}
		n := c.Count(m.Content)
		if n <= limit {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		out[i].Content = truncate(m, origins[i], n, SummaryExcerptTokens, CompactOptions{SessionLoad: true})
		cut++
	}
	if out == nil {
		return msgs, 0
	}
	return out, cut
}

// standaloneInput is the bounded summarizer input: the instruction, the
// previous summary, and as many delta messages as fit in budget tokens (at
// least one, cut to fit). It returns the input and, when not every message
// fit, the boundary it covers (else 0).
func standaloneInput(prev store.Summary, msgs []runtime.Message, origins []runtime.HistoryOrigin, instruction string, c *Counter, budget int) ([]runtime.Message, uint64) {
	var b strings.Builder
	if prev.Text != "" {
		b.WriteString("Previous summary (events up to #" + strconv.FormatUint(prev.Boundary, 10) + "):\n" + prev.Text + "\n\n")
	}
	b.WriteString("New events:\n")
	used := c.Count(instruction) + c.Count(b.String()) + 2*messageOverhead + replyOverhead
	var boundary uint64
	for i := range msgs {
		line := transcriptLine(&msgs[i], origins[i])
		n := c.Count(line)
		if used+n > budget {
			if i > 0 {
				boundary = origins[i].Seq - 1
				break
			}
			// One message larger than the whole budget: its head and tail.
			keep := max(64, budget-used)
			line = truncate(&runtime.Message{Content: line, Name: msgs[i].Name}, origins[i], n, keep, CompactOptions{})
			n = c.Count(line)
		}
		b.WriteString(line)
		used += n
	}
	return []runtime.Message{{Role: runtime.RoleSystem, Content: instruction}, {Role: runtime.RoleUser, Content: b.String()}}, boundary
}

// transcriptLine renders one history message for the summarizer.
func transcriptLine(m *runtime.Message, og runtime.HistoryOrigin) string {
	var b strings.Builder
	b.WriteString("[#" + strconv.FormatUint(og.Seq, 10) + "] ")
	switch m.Role {
	case runtime.RoleTool:
		b.WriteString("tool " + m.Name + " (call " + m.ToolCallID + ") returned: " + m.Content)
	case runtime.RoleAssistant:
		b.WriteString("assistant: " + m.Content)
		for _, tc := range m.ToolCalls {
			b.WriteString("\n  calls " + tc.Name + " (call " + tc.ID + ") with " + string(tc.Args))
		}
	default:
		b.WriteString(string(m.Role) + ": " + m.Content)
	}
	b.WriteString("\n")
	return b.String()
}

// eventsUpTo returns the events with Seq ≤ last.
func eventsUpTo(events []*runtime.Event, last uint64) []*runtime.Event {
	i := 0
	for i < len(events) && events[i].Seq <= last {
		i++
	}
	return events[:i]
}

func ptr[T any](v T) *T { return &v }

// TriggerMetrics are what summary triggers look at.
type TriggerMetrics struct {
	Events        int // history messages since the last summary
	Tokens        int // their tokens
	SummaryTokens int // the current summary note's tokens
	Projected     int // the projected history: Tokens + SummaryTokens
	Window        int // the agent model's window
	ModelCalls    int // assistant messages since the last summary
	// MaxSummaryTokens is the policy's limit (0: none).
	MaxSummaryTokens int
}

// Threshold returns the token threshold of ratio r of window: r × window,
// at least MinThreshold (and at most the window when capped).
func Threshold(r float64, window int, capped bool) int {
	if window <= 0 {
		window = DefaultWindow
	}
	t := max(int(r*float64(window)), MinThreshold)
	if capped {
		t = min(t, window)
	}
	return t
}

// ContextRatioHolds reports whether the projected history reaches ratio r
// of the window (at least MinThreshold tokens). A ratio outside (0, 1]
// never holds.
func ContextRatioHolds(r float64, m TriggerMetrics) bool {
	if r <= 0 || r > 1 {
		return false
	}
	return m.Projected >= Threshold(r, m.Window, false)
}

// Savings estimates, in tokens, what summarizing now saves and costs.
//
// The summary replaces the delta and the previous note in every later
// request by a new note of about NewSummaryTokens. How many later requests
// there will be is unknown; the estimate assumes the conversation goes on
// for as many model calls as the delta holds (a conversation that has lasted
// n calls is expected to last about n more). The cost is the summarizer
// call: its input (previous note, delta, instruction) and its output.
func Savings(m TriggerMetrics) (savings, cost int) {
	next := NewSummaryTokens(m)
	perCall := m.Tokens + m.SummaryTokens - next
	savings = perCall * max(1, m.ModelCalls)
	cost = m.SummaryTokens + m.Tokens + instructionTokens + next
	return savings, cost
}

// instructionTokens approximates the summarizer's instruction.
const instructionTokens = 100

// NewSummaryTokens estimates a new summary's size: the previous note plus an
// eighth of the delta, within [64, MaxSummaryTokens or
// DefaultSummaryCap(Window)].
func NewSummaryTokens(m TriggerMetrics) int {
	limit := m.MaxSummaryTokens
	if limit <= 0 {
		limit = DefaultSummaryCap(m.Window)
	}
	return min(max(m.SummaryTokens+m.Tokens/8, 64), limit)
}

// fires evaluates the policy's trigger on m. context_ratio(r) holds when
// the ratio is reached and, unless Config.NoSavingsGate, the estimated
// savings exceed the summary's cost (Savings).
func (s *Service) fires(ctx context.Context, pol *SummaryPolicy, m TriggerMetrics) (bool, error) {
	if pol.Trigger < 0 || s.machine == nil {
		return s.contextRatio(DefaultContextRatio, m), nil
	}
	s.trigMu.Lock()
	defer s.trigMu.Unlock()
	s.trig = m
	v, err := s.machine.Eval(ctx, pol.Trigger, nil)
	if err != nil {
		return false, err
	}
	if v.Kind() != types.ValBool {
		return false, fmt.Errorf("trigger is %s, not a bool", v)
	}
	return v.Bool(), nil
}

func (s *Service) contextRatio(r float64, m TriggerMetrics) bool {
	if !ContextRatioHolds(r, m) {
		return false
	}
	if s.noGate {
		return true
	}
	sv, cost := Savings(m)
	return sv > cost
}
