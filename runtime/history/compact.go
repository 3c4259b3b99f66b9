package history

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentc/agentc/runtime"
)

// Compaction (spec/context.md, "Compaction") rewrites tool results in the
// copy of a request's messages, never the ledger, without a model call:
//
//   - pass 0: consumed historical results of the policy's force_clean tools
//     become the policy placeholder, whatever their size;
//   - pass 1: consumed historical results above tool_result_max_tokens become
//     the historical placeholder, except in the current request and the last
//     protect_recent requests (runs) before it;
//   - pass 2 (oversized_max_tokens > 0): any result above the limit is cut to
//     its head and tail, the current request's too when current_request
//     holds; session_load's output is never cut.
//
// keep tools are never rewritten, nor are error results. A result is
// consumed when an assistant message follows it in the request.

// CompactOptions says how to compact one request.
type CompactOptions struct {
	Policy  CompactionPolicy
	Counter *Counter
	// CurrentRun is the run of the request being built: messages whose
	// origin has this run (the call's own turns) are the current request.
	CurrentRun string
	// SessionLoad: the agent can call session_load, so placeholders say how
	// to get a result back.
	SessionLoad bool
	// Rerunnable reports whether a tool is read-only or idempotent (nil:
	// none is).
	Rerunnable func(tool string) bool
	// RecoverableOnly: pass 1 elides only results the agent can get back
	// (recoverable), as recall-backed elision does (RecallElision).
	RecoverableOnly bool
}

// CompactionStats says what compaction replaced in one request.
type CompactionStats struct {
	ForceCleaned int // pass 0 placeholders
	Elided       int // pass 1 placeholders
	Truncated    int // pass 2 head+tail cuts
	TokensSaved  int // tokens of the replaced contents minus their replacements
}

// Replaced is the number of results compaction rewrote.
func (s CompactionStats) Replaced() int { return s.ForceCleaned + s.Elided + s.Truncated }

// Compact returns a copy of msgs with tool results replaced as the policy
// says, and what it replaced. origins[i] is where msgs[i] comes from (the
// zero origin for messages not from the ledger: the instruction, preloads,
// the summary note; the call's own turns have Run = CurrentRun). msgs and
// its elements are not modified.
func Compact(msgs []runtime.Message, origins []runtime.HistoryOrigin, o CompactOptions) ([]runtime.Message, CompactionStats) {
	var st CompactionStats
	out := slices.Clone(msgs)
	if len(out) == 0 {
		return out, st
	}
	pol := o.Policy
	lastAssistant := -1
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Role == runtime.RoleAssistant {
			lastAssistant = i
			break
		}
	}
	origin := func(i int) runtime.HistoryOrigin {
		if i < len(origins) {
			return origins[i]
		}
		return runtime.HistoryOrigin{}
	}
	// The protected requests: the current run and the last ProtectRecent
	// runs before it, in order of appearance.
	protected := map[string]bool{o.CurrentRun: true}
	var runs []string
	for i := range out {
		if r := origin(i).Run; r != "" && r != o.CurrentRun && !slices.Contains(runs, r) {
			runs = append(runs, r)
		}
	}
	for i := len(runs) - 1; i >= 0 && i >= len(runs)-pol.ProtectRecent; i-- {
		protected[runs[i]] = true
	}
	candidate := func(i int) bool { return rewritable(&out[i], pol.Keep) }
	replace := func(i int, text string) {
		st.TokensSaved += o.Counter.Count(out[i].Content) - o.Counter.Count(text)
		out[i].Content = text // out[i] is a copy: the caller's message is untouched
	}
	historical := func(i int) bool {
		og := origin(i)
		return og.Run != o.CurrentRun && i < lastAssistant
	}
	// Pass 0.
	if len(pol.ForceClean) > 0 {
		for i := range out {
			if candidate(i) && historical(i) && slices.Contains(pol.ForceClean, out[i].Name) {
				replace(i, placeholder(&out[i], origin(i), "omitted by the compaction policy (force_clean)", o))
				st.ForceCleaned++
			}
		}
	}
	// Pass 1.
	if pol.ToolResultMaxTokens > 0 {
		for i := range out {
			if !candidate(i) || !historical(i) || protected[origin(i).Run] || o.RecoverableOnly && !recoverable(&out[i], origin(i), o) {
				continue
			}
			if n := o.Counter.Count(out[i].Content); n > pol.ToolResultMaxTokens {
				replace(i, placeholder(&out[i], origin(i),
					fmt.Sprintf("the result (%d tokens) is above the %d-token limit for consumed results", n, pol.ToolResultMaxTokens), o))
				st.Elided++
			}
		}
	}
	// Pass 1, recall detour: the current request's consumed results that a
	// recall call follows.
	if pol.ToolResultMaxTokens > 0 {
		detour := -1 // the last assistant message of the current request that calls a recall tool
		for i := len(out) - 1; i >= 0 && detour < 0; i-- {
			if out[i].Role == runtime.RoleAssistant && origin(i).Run == o.CurrentRun &&
				slices.ContainsFunc(out[i].ToolCalls, func(tc runtime.ToolCall) bool { return isRecallTool(tc.Name) }) {
				detour = i
			}
		}
		for i := 0; i < detour; i++ {
			og := origin(i)
			if !candidate(i) || og.Run != o.CurrentRun || isRecallTool(out[i].Name) || !recoverable(&out[i], og, o) {
				continue
			}
			if n := o.Counter.Count(out[i].Content); n > pol.ToolResultMaxTokens {
				replace(i, placeholder(&out[i], og,
					fmt.Sprintf("the result (%d tokens) was consumed before a recall call; it is above the %d-token limit for consumed results", n, pol.ToolResultMaxTokens), o))
				st.Elided++
			}
		}
	}
	// Pass 2.
	if pol.OversizedMaxTokens > 0 {
		for i := range out {
			if !candidate(i) || out[i].Name == "session_load" {
				continue
			}
			if origin(i).Run == o.CurrentRun && !pol.CurrentRequest {
				continue
			}
			if n := o.Counter.Count(out[i].Content); n > pol.OversizedMaxTokens {
				replace(i, truncate(&out[i], origin(i), n, pol.OversizedMaxTokens, o))
				st.Truncated++
			}
		}
	}
	return out, st
}

// rewritable reports whether m is a tool result compaction may rewrite:
// not a keep tool's, not an error, not already a placeholder.
func rewritable(m *runtime.Message, keep []string) bool {
	return m.Role == runtime.RoleTool && !slices.Contains(keep, m.Name) &&
		!strings.HasPrefix(m.Content, "error (") && !strings.HasPrefix(m.Content, placeholderTag)
}

// placeholderTag starts every placeholder (a placeholder is never
// compacted again).
const placeholderTag = "[elided]"

// placeholder is what replaces a consumed tool result: it says the call
// succeeded and was consumed, names the event, call and tool, and how to get
// the result back without repeating a side effect.
func placeholder(m *runtime.Message, og runtime.HistoryOrigin, reason string, o CompactOptions) string {
	var b strings.Builder
	b.WriteString(placeholderTag)
	b.WriteString(" Previous tool call succeeded and its result was already consumed; the result is left out of this request to save context.\n")
	if og.EventID != "" {
		b.WriteString("event_id: " + og.EventID + "\n")
	}
	if m.ToolCallID != "" {
		b.WriteString("tool_call_id: " + m.ToolCallID + "\n")
	}
	b.WriteString("tool_name: " + m.Name + "\n")
	b.WriteString("reason: " + reason + "\n")
	b.WriteString(recovery(m.Name, og, o))
	return b.String()
}

// recoverable reports whether a result can be got back once elided: it is
// committed (it has an event id) and the agent has session_load, or its
// tool may be called again. The running call's own results are committed
// only when its step ends, so session_load cannot read them yet.
func recoverable(m *runtime.Message, og runtime.HistoryOrigin, o CompactOptions) bool {
	return og.EventID != "" && o.SessionLoad || o.Rerunnable != nil && o.Rerunnable(m.Name)
}

// recovery says how to get a result back.
func recovery(tool string, og runtime.HistoryOrigin, o CompactOptions) string {
	if o.SessionLoad && og.EventID != "" {
		return "Use session_load with event_id (or tool_call_id) and content_offset/content_limit if the full result is needed."
	}
	if o.Rerunnable != nil && o.Rerunnable(tool) {
		return "If the full result is needed, " + tool + " is read-only or idempotent and may be called again."
	}
	return "Do not call " + tool + " again to see this result: it may have side effects. Only read-only or idempotent tools may be re-run."
}

// truncate keeps the head and tail of an oversized result, about limit
// tokens in all, with a marker naming what was cut.
func truncate(m *runtime.Message, og runtime.HistoryOrigin, tokens, limit int, o CompactOptions) string {
	s := m.Content
	keep := int(int64(len(s)) * int64(limit) / int64(tokens)) // bytes, proportionally
	head := keep * 2 / 3
	tail := keep - head
	head = runeStart(s, head)
	tailAt := runeStart(s, len(s)-tail)
	if tailAt <= head {
		return s
	}
	cut := len(s[head:tailAt])
	var ids []string
	if og.EventID != "" {
		ids = append(ids, "event_id="+og.EventID)
	}
	if m.ToolCallID != "" {
		ids = append(ids, "tool_call_id="+m.ToolCallID)
	}
	ids = append(ids, "tool_name="+m.Name)
	marker := "\n[... " + strconv.Itoa(cut) + " characters truncated from tool result; " + strings.Join(ids, "; ")
	if o.SessionLoad {
		marker += "; use session_load with content_offset/content_limit for the rest"
	}
	return s[:head] + marker + "]\n" + s[tailAt:]
}

// runeStart moves i back to the start of a UTF-8 sequence.
func runeStart(s string, i int) int {
	if i <= 0 {
		return 0
	}
	if i >= len(s) {
		return len(s)
	}
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return i
}
