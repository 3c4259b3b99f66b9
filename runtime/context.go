package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime/store"
)

// The context of an llm agent call (spec/context.md): the messages of every
// model turn are the agent's instruction (head), the session's history for
// the call's filter key, the preloaded messages, the prompt and the call's
// own turns (tail). A ContextBuilder (RunnerConfig.Context; runtime/history
// implements one with summaries, compaction and pressure relief) decides
// what the history is; without one, the Runner sends the plain projection:
// the history events of the filter key among the session's last
// PlainHistoryEvents events, mapped by HistoryMessages.

// ContextCall identifies one llm agent call for a ContextBuilder.
type ContextCall struct {
	Session store.SessionKey
	Run     string
	// Node is the call's node path relative to the runnable; it is also the
	// filter key of the call's events and of its history.
	Node      string
	FilterKey string
	// Program and Agent (an index into Program.Agents) give the agent's
	// policies (summary, compaction) and model declaration.
	Program *bytecode.Program
	Agent   int
	// Model is the agent's model; Tools the names of the tools it may call.
	Model Model
	Tools []string
}

// ContextTurn is one model turn of an agent call: Head is the agent's
// instruction, Tail the preloaded messages, the prompt and the call's
// earlier turns (assistant replies and tool results), Tools what the model
// is offered. Neither slice nor its elements may be modified.
type ContextTurn struct {
	Turn       int
	Head, Tail []Message
	Tools      []ToolSpec
}

// ContextBuilder opens the context of llm agent calls.
type ContextBuilder interface {
	// Open reads the session projection for call, once per agent call,
	// before its first model turn. An error is logged and the call goes on
	// with the instruction, preloads and prompt only: context never fails a
	// run.
	Open(ctx context.Context, call ContextCall) (ContextView, error)
}

// ContextView is the context of one agent call.
type ContextView interface {
	// Messages returns the messages of one model turn, in a new slice: head,
	// the history (possibly summarized or compacted), tail (possibly
	// compacted). It must not modify turn's slices or their elements, nor
	// fail: on any internal failure it returns the plain concatenation.
	Messages(ctx context.Context, turn ContextTurn) []Message
}

// ContextToolView is a ContextView that also chooses which of the agent's
// tools a turn offers (runtime/history leaves session_search and
// session_load out of a request whose projection hides nothing they could
// find). The llm loop calls Tools right after Messages for the same turn;
// it returns turn.Tools or a subset of it in the same order, without
// modifying turn.Tools. A tool left out of a request can still be called
// (a model may remember it): the loop runs any tool of the agent.
type ContextToolView interface {
	ContextView
	Tools(ctx context.Context, turn ContextTurn) []ToolSpec
}

// HistoryOrigin is the ledger event a history message comes from.
type HistoryOrigin struct {
	EventID string
	Seq     uint64
	Run     string
}

// InHistory reports whether ledger event e belongs to the history of
// filterKey: under the session key "" every event does; under a node's key,
// its own events (exactly that key, not its sub-agents') and the session's
// inputs (key ""). Which of them become messages is HistoryMessages' choice.
func InHistory(e *Event, filterKey string) bool {
	if filterKey == "" || e.FilterKey == filterKey {
		return true
	}
	return e.FilterKey == "" && e.Kind == EventInput
}

// HistoryMessages maps ledger events, in ledger order, to chat messages:
//
//   - input: a user message with its text; a resume with values, a user
//     message "Resume: <values as JSON>"; otherwise nothing;
//   - model_response: an assistant message with its text and tool calls
//     (nothing when it has neither);
//   - tool_result: a tool message answering its call (the result — a JSON
//     string as its text, other JSON as is — or "error (kind): message"),
//     as the llm loop sent it;
//   - every other kind (deltas, tool calls, node, state, run and summary
//     events): nothing.
//
// The result is well formed for a chat API: a tool message is kept only
// right after the assistant message (or its sibling tool messages) that
// requested its call, and tool calls without a recorded result are removed
// from their assistant message (which is dropped when nothing is left).
// origins[i] is the event of msgs[i].
func HistoryMessages(events []*Event) (msgs []Message, origins []HistoryOrigin) {
	open := -1            // index in msgs of the assistant message whose results may follow
	var pending []string  // its call ids without a result yet
	closeOpen := func() { // drop the open assistant's calls that got no result
		if open < 0 {
			return
		}
		if len(pending) > 0 {
			m := &msgs[open]
			kept := make([]ToolCall, 0, len(m.ToolCalls))
			for _, tc := range m.ToolCalls {
				if !slices.Contains(pending, tc.ID) {
					kept = append(kept, tc)
				}
			}
			if len(kept) == 0 {
				kept = nil
			}
			m.ToolCalls = kept
			if len(kept) == 0 && m.Content == "" {
				// Nothing answered and nothing said: drop it (it is last).
				msgs, origins = msgs[:open], origins[:open]
			}
		}
		open, pending = -1, nil
	}
	for _, e := range events {
		origin := HistoryOrigin{EventID: e.ID, Seq: e.Seq, Run: e.Run}
		switch e.Kind {
		case EventInput:
			text := e.Text
			if text == "" && e.Resume != nil && len(e.Resume.Values) > 0 {
				b, err := json.Marshal(e.Resume.Values)
				if err != nil {
					continue
				}
				text = "Resume: " + string(b)
			}
			if text == "" {
				continue
			}
			closeOpen()
			msgs = append(msgs, Message{Role: RoleUser, Content: text})
			origins = append(origins, origin)
		case EventModelResponse:
			if e.Text == "" && len(e.ToolCalls) == 0 {
				continue
			}
			closeOpen()
			msgs = append(msgs, Message{Role: RoleAssistant, Content: e.Text, ToolCalls: slices.Clone(e.ToolCalls)})
			origins = append(origins, origin)
			if len(e.ToolCalls) > 0 {
				open = len(msgs) - 1
				for _, tc := range e.ToolCalls {
					pending = append(pending, tc.ID)
				}
			}
		case EventToolResult:
			if e.ToolCall == nil || open < 0 {
				continue
			}
			i := slices.Index(pending, e.ToolCall.ID)
			if i < 0 {
				continue
			}
			pending = slices.Delete(pending, i, i+1)
			msgs = append(msgs, Message{Role: RoleTool, ToolCallID: e.ToolCall.ID, Name: e.ToolCall.Name, Content: ToolResultText(e)})
			origins = append(origins, origin)
		}
	}
	closeOpen()
	return msgs, origins
}

// ToolResultText is what the model reads for a tool_result event: its
// error as "error (kind): message", a JSON string result as its text, any
// other result as its JSON.
func ToolResultText(e *Event) string {
	if e.Error != nil {
		return "error (" + e.Error.Kind + "): " + e.Error.Message
	}
	if len(e.Result) > 0 && e.Result[0] == '"' {
		// the program's JSON reader: no reflection for a large result
		if v, err := types.ParseJSON(e.Result); err == nil && v.Kind() == types.ValString {
			return v.Str()
		}
	}
	return string(e.Result)
}

// LoadHistory reads the ledger events of session key after sequence after
// that belong to filterKey's history (InHistory), leaving out the input
// event of run excludeRun (the call's prompt carries it). Only events that
// can become messages (MayBeHistory) are decoded; events that do not decode
// are skipped (counted in skipped).
func LoadHistory(ctx context.Context, st store.Sessions, key store.SessionKey, filterKey string, after uint64, excludeRun string) (events []*Event, skipped int, err error) {
	all, skipped, _, err := decodeLedger(ctx, st, key, after)
	if err != nil {
		return nil, 0, err
	}
	for _, e := range all {
		if !InHistory(e, filterKey) || e.Kind == EventInput && excludeRun != "" && e.Run == excludeRun {
			continue
		}
		events = append(events, e)
	}
	return events, skipped, nil
}

// MayBeHistory reports, without decoding, whether an encoded event can
// become a history message: false only when its kind (which EncodeEvent
// writes right after the id) is certainly not input, model_response or
// tool_result.
func MayBeHistory(data []byte) bool {
	k, ok := peekKind(data)
	if !ok {
		return true
	}
	switch EventKind(k) { // compared without a copy
	case EventInput, EventModelResponse, EventToolResult:
		return true
	}
	return false
}

// peekKind reads an encoded event's kind without decoding it (EncodeEvent
// writes it right after the id), aliasing data; ok is false when it is not
// found there.
func peekKind(data []byte) (k []byte, ok bool) {
	head := data[:min(len(data), 128)]
	i := bytes.Index(head, []byte(`,"kind":"`))
	if i < 0 {
		return nil, false
	}
	rest := head[i+len(`,"kind":"`):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return nil, false
	}
	return rest[:j], true
}

// PlainHistoryEvents bounds the plain projection (no ContextBuilder): the
// history is taken from the session's last PlainHistoryEvents ledger
// events.
const PlainHistoryEvents = 256

// plainCacheSessions is how many sessions the plain projection keeps
// decoded.
const plainCacheSessions = 64

// plainContext is the context without a ContextBuilder: the history of the
// filter key among the session's last PlainHistoryEvents events, unchanged.
type plainContext struct {
	st     store.Sessions
	ledger *LedgerCache
}

type plainView struct{ history []Message }

func (p plainContext) Open(ctx context.Context, call ContextCall) (ContextView, error) {
	all, _, last, err := p.ledger.events(ctx, p.st, call.Session, 0)
	if err != nil {
		return nil, err
	}
	var events []*Event
	for _, e := range all {
		// Among the ledger's last PlainHistoryEvents events (the cache
		// may hold more).
		if last-e.Seq >= PlainHistoryEvents || !InHistory(e, call.FilterKey) || e.Kind == EventInput && e.Run == call.Run {
			continue
		}
		events = append(events, e)
	}
	msgs, _ := HistoryMessages(events)
	return plainView{history: msgs}, nil
}

func (v plainView) Messages(_ context.Context, t ContextTurn) []Message {
	return JoinMessages(t.Head, v.history, t.Tail)
}

// LedgerCache keeps the decoded ledger events of recently used sessions —
// only those that can become history messages (MayBeHistory). The ledger
// is append-only and never rewritten, so decoded events stay valid: each
// read decodes only what was appended since the last. It keeps at most
// Sessions sessions (least recently used out first) and, when Window > 0,
// only the events among each session's last Window sequence numbers. Safe
// for concurrent use; the events it returns are shared and must not be
// modified.
type LedgerCache struct {
	sessions int
	window   uint64

	mu   sync.Mutex
	m    map[store.SessionKey]*cachedLedger
	tick uint64
}

type cachedLedger struct {
	mu      sync.Mutex
	events  []*Event      // in sequence order
	told    []store.Entry // history-kind events the tap told, not decoded yet (they follow events)
	floor   uint64        // the entry holds events after it only: those up to it were never read
	last    uint64        // the last sequence number read or told
	skipped int           // events that did not decode
	used    uint64
}

// maxTold bounds the events a session's entry keeps undecoded: a session
// whose context is never read (a graph without llm calls) is dropped from
// the cache at that point, not kept growing.
const maxTold = 256

// NewLedgerCache returns a cache of at most sessions sessions (≤ 0: none is
// kept; every read decodes) holding, per session, the events among its last
// window sequence numbers (0: all).
func NewLedgerCache(sessions int, window uint64) *LedgerCache {
	return &LedgerCache{sessions: sessions, window: window, m: map[store.SessionKey]*cachedLedger{}}
}

// Events returns the decoded history-kind events of session key with Seq >
// after (within the cache's window), and how many events did not decode.
func (c *LedgerCache) Events(ctx context.Context, st store.Sessions, key store.SessionKey, after uint64) ([]*Event, int, error) {
	events, skipped, _, err := c.events(ctx, st, key, after)
	return events, skipped, err
}

// events is Events, with the last sequence number of the ledger as read
// (0: none).
func (c *LedgerCache) events(ctx context.Context, st store.Sessions, key store.SessionKey, after uint64) ([]*Event, int, uint64, error) {
	if c == nil || c.sessions <= 0 {
		if c != nil && c.window > 0 {
			start, err := c.start(ctx, st, key, after)
			if err != nil {
				return nil, 0, 0, err
			}
			after = start
		}
		events, skipped, last, err := decodeLedger(ctx, st, key, after)
		return events, skipped, max(last, after), err
	}
	c.mu.Lock()
	cl := c.m[key]
	if cl == nil {
		cl = c.insertLocked(key)
	}
	c.tick++
	cl.used = c.tick
	c.mu.Unlock()

	cl.mu.Lock()
	defer cl.mu.Unlock()
	switch {
	case cl.last == 0:
		// Nothing read or told yet: the read starts at after, or, for a
		// window, at the window's start, not at the ledger's.
		start, err := c.start(ctx, st, key, after)
		if err != nil {
			return nil, 0, 0, err
		}
		cl.floor, cl.last = start, start
	case c.window == 0 && after < cl.floor:
		// Asked for events before what the entry read: read them.
		cl.events, cl.told, cl.skipped = nil, nil, 0
		cl.floor, cl.last = after, after
	}
	if len(cl.told) > 0 {
		fresh, skipped := decodeHistory(cl.told)
		cl.told = nil
		cl.add(fresh, skipped, cl.last, c.window)
	}
	fresh, skipped, last, err := decodeLedger(ctx, st, key, cl.last)
	if err != nil {
		return nil, 0, 0, err
	}
	cl.add(fresh, skipped, last, c.window)
	i := sort.Search(len(cl.events), func(i int) bool { return cl.events[i].Seq > after })
	return slices.Clip(cl.events[i:]), cl.skipped, cl.last, nil
}

// start is where a first read of key's ledger begins: after, or, with a
// window, the window's start before the session's last sequence number
// when that is later (nothing before it is in the window). A session that
// cannot be read here is read from after: the read reports the store's
// error.
func (c *LedgerCache) start(ctx context.Context, st store.Sessions, key store.SessionKey, after uint64) (uint64, error) {
	if c.window == 0 {
		return after, nil
	}
	s, err := st.GetSession(ctx, key)
	switch {
	case err != nil:
		return after, ctx.Err()
	case s.LastSeq > c.window:
		return max(after, s.LastSeq-c.window), nil
	}
	return after, nil
}

// Appended implements LedgerTap: events that directly follow what the
// cache holds of key's ledger, or the first events of a ledger it does not
// hold yet, are kept, to be decoded when the session is next read (those
// that can become history messages: MayBeHistory); any other append (a
// gap: someone else appended in between, or the cache read past them
// already) is left to the next read, which fetches what the cache lacks.
func (c *LedgerCache) Appended(key store.SessionKey, first uint64, encoded [][]byte) {
	if c == nil || c.sessions <= 0 || first == 0 || len(encoded) == 0 {
		return
	}
	c.mu.Lock()
	cl := c.m[key]
	if cl == nil {
		if first != 1 {
			c.mu.Unlock()
			return
		}
		cl = c.insertLocked(key)
		c.tick++
		cl.used = c.tick
	}
	c.mu.Unlock()

	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.last != first-1 {
		return
	}
	for i, b := range encoded {
		if MayBeHistory(b) {
			cl.told = append(cl.told, store.Entry{Seq: first + uint64(i), Data: b})
		}
	}
	cl.last = first + uint64(len(encoded)) - 1
	if len(cl.told) > maxTold {
		// Read again from the store, if ever.
		cl.events, cl.told, cl.last, cl.skipped = nil, nil, 0, 0
	}
}

// insertLocked adds an empty entry for key, evicting the least recently
// used one when the cache is full. c.mu is held.
func (c *LedgerCache) insertLocked(key store.SessionKey) *cachedLedger {
	if len(c.m) >= c.sessions {
		var oldest store.SessionKey
		least := ^uint64(0)
		for k, v := range c.m {
			if v.used < least {
				oldest, least = k, v.used
			}
		}
		delete(c.m, oldest)
	}
	cl := &cachedLedger{}
	c.m[key] = cl
	return cl
}

// add appends the decoded events read or told up to sequence last, then
// keeps only those within window (0: all). cl.mu is held.
func (cl *cachedLedger) add(fresh []*Event, skipped int, last, window uint64) {
	cl.skipped += skipped
	cl.events = append(cl.events, fresh...)
	cl.last = max(cl.last, last)
	if window > 0 && cl.last > window {
		floor := cl.last - window
		i := sort.Search(len(cl.events), func(i int) bool { return cl.events[i].Seq > floor })
		if i > len(cl.events)/2 { // drop the old half at once, not one event per read
			cl.events = slices.Clone(cl.events[i:])
		}
	}
}

// LedgerTap is told of the events this process's Runner appends to a
// session's ledger, once they are written: first is the sequence number
// of encoded[0], the rest follow it. A ContextBuilder that keeps decoded
// ledgers implements it (runtime/history does, with a LedgerCache), so
// that a run's own events are not read back from the store for its next
// context. It must not block; it may keep encoded, which nobody modifies
// after the call.
type LedgerTap interface {
	Appended(key store.SessionKey, first uint64, encoded [][]byte)
}

// decodeLedger reads the events after a sequence number and decodes those
// that can become history messages; it returns them, how many did not
// decode, and the last sequence number read.
func decodeLedger(ctx context.Context, st store.Sessions, key store.SessionKey, after uint64) (_ []*Event, skipped int, last uint64, _ error) {
	entries, err := st.ListEvents(ctx, key, after, 0)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("runtime: read the ledger of %s: %w", key, err)
	}
	if n := len(entries); n > 0 {
		last = entries[n-1].Seq
	}
	out, skipped := decodeHistory(entries)
	return out, skipped, last, nil
}

// decodeHistory decodes the ledger entries that can become history
// messages (MayBeHistory) and counts those that do not decode.
func decodeHistory(entries []store.Entry) (out []*Event, skipped int) {
	for _, en := range entries {
		if !MayBeHistory(en.Data) {
			continue
		}
		e, err := DecodeEvent(en.Data)
		if err != nil {
			skipped++
			continue
		}
		e.Seq = en.Seq
		out = append(out, e)
	}
	return out, skipped
}

// JoinMessages returns head, history and tail in one new slice.
func JoinMessages(head, history, tail []Message) []Message {
	out := make([]Message, 0, len(head)+len(history)+len(tail))
	out = append(out, head...)
	out = append(out, history...)
	return append(out, tail...)
}
