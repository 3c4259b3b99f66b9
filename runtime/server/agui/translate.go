package agui

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
)

// translator turns the runtime events of one request into AG-UI events
// (spec/agui.md has the table). It remembers what it emitted: every runtime
// event is translated at most once (by its id), a tool call is started once
// however many events describe it, every START it opened is closed before
// RUN_FINISHED, and nothing follows RUN_FINISHED or RUN_ERROR. AG-UI ids of
// messages and tool calls are minted fresh (newID) for every request.
type translator struct {
	threadID, runID string // the request's ids, echoed
	newID           func(prefix string) string
	tools           []tool // the request's frontend tools

	seen     map[string]bool       // runtime event ids already translated (sized for a run of a few dozen events)
	texts    map[textKey]string    // open text messages
	lastText map[taskKey]string    // the last text message of a task's current turn
	calls    map[callKey]*toolCall // tool calls started
	steps    []string              // open steps, in opening order
	members  map[string]byte       // the client document's members (patch.go)
	dirty    bool                  // a STATE_DELTA was sent since the last STATE_SNAPSHOT
	// latest reads the run's checkpointed state, for the STATE_SNAPSHOT
	// that precedes an interrupt outcome after the state changed (nil or
	// false: no snapshot is sent).
	latest func(runRef) (map[string]json.RawMessage, bool)
	ref    runRef // the run latest reads

	asked     []string       // ids of the messages and tool calls that ask the interrupts
	interrupt *runtime.Event // the run's interrupt event, if any
	runErr    *runtime.ErrorInfo
	run       string  // the runtime run id
	done      bool    // RUN_FINISHED or RUN_ERROR emitted
	outcome   string  // RUN_FINISHED's outcome type, once emitted
	out       []Event // translate's result, reused
	head      [2]Event
	fin       Outcome // RUN_FINISHED's outcome
	// arena holds the JSON of the events' raw members (text deltas,
	// patches, snapshots): appended, never overwritten while the
	// translator serves a request, so that an event keeps its bytes
	// however long it is held; a new chunk starts when one is full, and
	// the old one lives as long as the events that use it.
	arena []byte
}

// arenaChunk is the size of an arena chunk: a typical run's raw members
// fit in one.
const arenaChunk = 1024

// room returns the arena with at least n bytes free after its length.
func (t *translator) room(n int) []byte {
	if cap(t.arena)-len(t.arena) < n {
		t.arena = make([]byte, 0, max(arenaChunk, n))
	}
	return t.arena
}

// take returns the bytes appended to the arena since start (a value its
// next append cannot overwrite).
func (t *translator) take(start int) json.RawMessage {
	return t.arena[start:len(t.arena):len(t.arena)]
}

// jsonString returns s as a JSON string, as encoding/json writes it, in
// the arena.
func (t *translator) jsonString(s string) json.RawMessage {
	start := len(t.room(len(s) + len(s)/8 + 8))
	t.arena = types.AppendJSONString(t.arena, s, true)
	return t.take(start)
}

// runRef names a run of a request: what a translator's latest reads.
type runRef struct {
	ctx                context.Context // the request's
	user, session, run string
}

// taskKey names one node task: a node path and a map item (-1: none).
type taskKey struct {
	node string
	item int
}

type textKey struct {
	taskKey
	turn int
}

type callKey struct {
	taskKey
	id string // the runtime's call id
}

type toolCall struct {
	id   string // the AG-UI toolCallId
	open bool   // started, not yet ended
}

func newTranslator(threadID, runID string, newID func(string) string, tools []tool) *translator {
	return &translator{threadID: threadID, runID: runID, newID: newID, tools: tools,
		seen: make(map[string]bool, 32), texts: map[textKey]string{}, lastText: map[taskKey]string{},
		calls: map[callKey]*toolCall{}, members: map[string]byte{}}
}

// translatorCache keeps the translators of finished requests (put) for
// later ones (get): a request's translator is a finished one's, whose maps
// and buffers keep their room, so that translating a run allocates next to
// nothing. It holds at most as many as the server runs at once (a
// sync.Pool, emptied by every collection, missed one request in three
// under load).
type translatorCache chan *translator

// Bounds of what a cached translator may keep: one of a run much longer
// than most is left to the collector.
const (
	maxCachedEvents = 1024
	maxCachedArena  = 64 << 10
)

// get is newTranslator, with a cached translator when there is one.
func (c translatorCache) get(threadID, runID string, newID func(string) string, tools []tool) *translator {
	select {
	case t := <-c:
		t.threadID, t.runID, t.newID, t.tools = threadID, runID, newID, tools
		return t
	default:
		return newTranslator(threadID, runID, newID, tools)
	}
}

// put clears t for a later request. Nothing t returned may be used after:
// its events' raw members are in its arena, which is written again.
func (c translatorCache) put(t *translator) {
	if len(t.seen) > maxCachedEvents || cap(t.arena) > maxCachedArena {
		return
	}
	clear(t.seen)
	clear(t.texts)
	clear(t.lastText)
	clear(t.calls)
	clear(t.members)
	clear(t.steps[:cap(t.steps)]) // nothing of the request stays reachable
	clear(t.out[:cap(t.out)])
	*t = translator{seen: t.seen, texts: t.texts, lastText: t.lastText, calls: t.calls, members: t.members,
		steps: t.steps[:0], out: t.out[:0], arena: t.arena[:0]}
	select {
	case c <- t:
	default:
	}
}

// paused reports whether the translation ended with an interrupt outcome;
// asked then holds the ids that asked the interrupts.
func (t *translator) paused() bool { return t.outcome == "interrupt" }

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// start returns RUN_STARTED and, for a run of a graph, a STATE_SNAPSHOT of
// the state known so far (empty for a new run, the fields the run changed
// before for a resumed one), in a slice of the translator's that an append
// copies.
func (t *translator) start(at time.Time, state map[string]json.RawMessage) []Event {
	ts := millis(at)
	t.head = [2]Event{
		{Type: RunStarted, Timestamp: ts, ThreadID: t.threadID, RunID: t.runID},
		t.snapshotEvent(ts, state),
	}
	return t.head[:]
}

// snapshotEvent is the STATE_SNAPSHOT of state, which becomes the client's
// document.
func (t *translator) snapshotEvent(ts int64, state map[string]json.RawMessage) Event {
	t.dirty = false
	n := 2
	for k, v := range state {
		n += len(k) + len(v) + 4
	}
	start := len(t.room(n))
	b, err := appendState(t.arena, state)
	if err != nil || state == nil {
		b, state = append(b[:start], "{}"...), nil
	}
	t.arena = b
	clear(t.members)
	for k, v := range state {
		t.members[k] = kindOf(v)
	}
	return Event{Type: StateSnapshot, Timestamp: ts, Snapshot: t.take(start)}
}

// appendState appends state as json.Marshal writes it (the keys sorted
// and escaped, the values compacted: appendRaw), and fails where it fails.
func appendState(b []byte, state map[string]json.RawMessage) ([]byte, error) {
	var arr [16]string
	keys := arr[:0]
	for k := range state {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(types.AppendJSONString(b, k, true), ':')
		var err error
		if b, err = appendRaw(b, state[k]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func taskOf(e *runtime.Event) taskKey {
	k := taskKey{node: e.Node, item: -1}
	if e.MapIndex != nil {
		k.item = *e.MapIndex
	}
	return k
}

func (k taskKey) stepName() string {
	if k.item < 0 {
		return k.node
	}
	return k.node + "[" + strconv.Itoa(k.item) + "]"
}

// translate returns the AG-UI events for one runtime event, in a slice
// the next call reuses.
func (t *translator) translate(e *runtime.Event) []Event {
	if t.done || e.ID != "" && t.seen[e.ID] {
		return nil
	}
	if e.ID != "" {
		t.seen[e.ID] = true
	}
	ts := millis(e.Time)
	task := taskOf(e)
	out := t.out[:0]
	defer func() { t.out = out[:0] }()
	switch e.Kind {
	case runtime.EventRunStarted:
		t.run = e.Run
	case runtime.EventNodeStarted:
		if e.Node == "" {
			break
		}
		out = t.closeTask(out, task, ts) // a retry's leftovers
		name := task.stepName()
		if !slices.Contains(t.steps, name) {
			t.steps = append(t.steps, name)
			out = append(out, Event{Type: StepStarted, Timestamp: ts, StepName: name})
		}
	case runtime.EventNodeFinished, runtime.EventNodeFailed:
		if e.Node == "" {
			break
		}
		out = t.closeTask(out, task, ts)
		out = t.closeStep(out, task.stepName(), ts)
	case runtime.EventModelDelta:
		if e.Text == "" {
			break
		}
		k := textKey{task, e.Turn}
		id, open := t.texts[k]
		if !open {
			id = t.newID("msg_")
			t.texts[k] = id
			out = append(out, Event{Type: TextMessageStart, Timestamp: ts, MessageID: id, Role: "assistant"})
		}
		out = append(out, Event{Type: TextMessageContent, Timestamp: ts, MessageID: id, Delta: t.jsonString(e.Text)})
	case runtime.EventModelResponse:
		k := textKey{task, e.Turn}
		delete(t.lastText, task)
		if id, open := t.texts[k]; open {
			delete(t.texts, k)
			t.lastText[task] = id
			out = append(out, Event{Type: TextMessageEnd, Timestamp: ts, MessageID: id})
		} else if e.Text != "" {
			id := t.newID("msg_")
			t.lastText[task] = id
			out = append(out,
				Event{Type: TextMessageStart, Timestamp: ts, MessageID: id, Role: "assistant"},
				Event{Type: TextMessageContent, Timestamp: ts, MessageID: id, Delta: t.jsonString(e.Text)},
				Event{Type: TextMessageEnd, Timestamp: ts, MessageID: id})
		}
		for i := range e.ToolCalls {
			out = t.startCall(out, task, &e.ToolCalls[i], t.lastText[task], ts)
		}
	case runtime.EventToolCall:
		if e.ToolCall != nil {
			out = t.startCall(out, task, e.ToolCall, t.lastText[task], ts)
		}
	case runtime.EventToolResult:
		if e.ToolCall == nil {
			break
		}
		out = t.startCall(out, task, e.ToolCall, t.lastText[task], ts)
		c := t.calls[callKey{task, e.ToolCall.ID}]
		if c.open {
			c.open = false
			out = append(out, Event{Type: ToolCallEnd, Timestamp: ts, ToolCallID: c.id})
		}
		out = append(out, Event{Type: ToolCallResult, Timestamp: ts, MessageID: t.newID("msg_"),
			ToolCallID: c.id, Content: resultContent(e), Role: "tool"})
	case runtime.EventStateDelta:
		if e.Node != "" { // a sub-graph's own state: not the run's shared state
			break
		}
		n := 0
		for _, c := range e.Changes {
			n += len(c.Field) + len(c.Value) + 40
		}
		start := len(t.room(n))
		if t.arena = appendPatch(t.arena, t.members, e.Changes); len(t.arena) > start {
			t.dirty = true
			out = append(out, Event{Type: StateDelta, Timestamp: ts, Delta: t.take(start)})
		}
	case runtime.EventInterrupt:
		t.interrupt = e
		out = append(out, t.interruptCustom(e, ts))
	case runtime.EventRunError:
		t.runErr = e.Error
	case runtime.EventRunFinished:
		if t.run == "" {
			t.run = e.Run
		}
		out = t.closeAll(out, ts)
		out = t.finished(out, e, ts)
		t.done = true
	}
	return out
}

// startCall emits TOOL_CALL_START and TOOL_CALL_ARGS for a runtime tool call
// the first time any event names it; the call stays open until its result.
func (t *translator) startCall(out []Event, task taskKey, call *runtime.ToolCall, parent string, ts int64) []Event {
	k := callKey{task, call.ID}
	if _, ok := t.calls[k]; ok {
		return out
	}
	c := &toolCall{id: t.newID("call_"), open: true}
	t.calls[k] = c
	out = append(out, Event{Type: ToolCallStart, Timestamp: ts, ToolCallID: c.id, ToolCallName: call.Name, ParentMessageID: parent})
	args := string(call.Args)
	if isNull(call.Args) {
		args = "{}"
	}
	return append(out, Event{Type: ToolCallArgs, Timestamp: ts, ToolCallID: c.id, Delta: t.jsonString(args)})
}

// resultContent is a tool result as TOOL_CALL_RESULT content: the result's
// JSON text, or "error (kind): message".
func resultContent(e *runtime.Event) string {
	if e.Error != nil {
		return "error (" + e.Error.Kind + "): " + e.Error.Message
	}
	if isNull(e.Result) {
		return "null"
	}
	return string(e.Result)
}

// closeTask ends the open text messages and tool calls of one task, in a
// stable order.
func (t *translator) closeTask(out []Event, task taskKey, ts int64) []Event {
	var texts []textKey
	for k := range t.texts {
		if k.taskKey == task {
			texts = append(texts, k)
		}
	}
	slices.SortFunc(texts, func(a, b textKey) int { return a.turn - b.turn })
	for _, k := range texts {
		out = append(out, Event{Type: TextMessageEnd, Timestamp: ts, MessageID: t.texts[k]})
		delete(t.texts, k)
	}
	var calls []*toolCall
	for k, c := range t.calls {
		if k.taskKey == task && c.open {
			calls = append(calls, c)
		}
	}
	slices.SortFunc(calls, func(a, b *toolCall) int { return strings.Compare(a.id, b.id) })
	for _, c := range calls {
		c.open = false
		out = append(out, Event{Type: ToolCallEnd, Timestamp: ts, ToolCallID: c.id})
	}
	return out
}

func (t *translator) closeStep(out []Event, name string, ts int64) []Event {
	if i := slices.Index(t.steps, name); i >= 0 {
		t.steps = slices.Delete(t.steps, i, i+1)
		out = append(out, Event{Type: StepFinished, Timestamp: ts, StepName: name})
	}
	return out
}

// closeAll ends everything still open: text messages, tool calls, then the
// steps in reverse opening order.
func (t *translator) closeAll(out []Event, ts int64) []Event {
	var tasks []taskKey // none, almost always: nothing to allocate
	for k := range t.texts {
		tasks = append(tasks, k.taskKey)
	}
	for k, c := range t.calls {
		if c.open {
			tasks = append(tasks, k.taskKey)
		}
	}
	slices.SortFunc(tasks, func(a, b taskKey) int {
		if c := strings.Compare(a.node, b.node); c != 0 {
			return c
		}
		return a.item - b.item
	})
	for _, k := range slices.Compact(tasks) {
		out = t.closeTask(out, k, ts)
	}
	for len(t.steps) > 0 {
		out = t.closeStep(out, t.steps[len(t.steps)-1], ts)
	}
	return out
}

// finished appends the translation of run_finished to out: RUN_FINISHED
// with an outcome, or RUN_ERROR for a failed run.
func (t *translator) finished(out []Event, e *runtime.Event, ts int64) []Event {
	fin := func(o Outcome, result json.RawMessage) Event {
		t.outcome, t.fin = o.Type, o // a translator finishes once
		return Event{Type: RunFinished, Timestamp: ts, ThreadID: t.threadID, RunID: t.runID, Outcome: &t.fin, Result: result}
	}
	switch {
	case e.Status == runtime.StatusCanceled:
		return append(out, fin(Outcome{Type: "cancelled"}, nil))
	case t.runErr != nil || e.Status == runtime.StatusFailed:
		return append(out, t.errorEvent(ts))
	case e.Status == runtime.StatusCompleted:
		var result json.RawMessage
		if !isNull(e.Output) {
			result = e.Output
		}
		return append(out, fin(Outcome{Type: "success"}, result))
	case e.Status == runtime.StatusInterrupted || e.Status == runtime.StatusNeedsDecision:
		ints := t.interrupts(e)
		if len(ints) == 0 {
			return append(out, Event{Type: RunError, Timestamp: ts, Message: "the run stopped waiting on nothing it can be asked for", Code: "internal"})
		}
		// Each interrupt is asked in the conversation, in the same flush
		// as the outcome: as a call of the frontend tool named after its
		// node when the request declared one, else as an assistant message
		// with its prompt. A later request whose history has none of these
		// ids shows that its client never got the outcome (thread.go).
		for i, it := range ints {
			if it.ToolCallID != "" { // i < len(e.Interrupts): decisions have no tool
				args, _ := json.Marshal(map[string]any{"prompt": it.Message}) // strings always marshal
				out = append(out,
					Event{Type: ToolCallStart, Timestamp: ts, ToolCallID: it.ToolCallID, ToolCallName: e.Interrupts[i].Node},
					Event{Type: ToolCallArgs, Timestamp: ts, ToolCallID: it.ToolCallID, Delta: t.jsonString(string(args))},
					Event{Type: ToolCallEnd, Timestamp: ts, ToolCallID: it.ToolCallID})
				t.asked = append(t.asked, it.ToolCallID)
				continue
			}
			id := t.newID("msg_")
			out = append(out,
				Event{Type: TextMessageStart, Timestamp: ts, MessageID: id, Role: "assistant"},
				Event{Type: TextMessageContent, Timestamp: ts, MessageID: id, Delta: t.jsonString(it.Message)},
				Event{Type: TextMessageEnd, Timestamp: ts, MessageID: id})
			t.asked = append(t.asked, id)
		}
		// AG-UI: the state a resume needs precedes the interrupt outcome
		// (the client already has it when nothing changed since the last
		// snapshot): the run's checkpointed state, the same snapshot a
		// resume or a re-delivery of this pause starts with.
		if t.dirty && t.latest != nil {
			if st, ok := t.latest(t.ref); ok {
				out = append(out, t.snapshotEvent(ts, st))
			}
		}
		return append(out, fin(Outcome{Type: "interrupt", Interrupts: ints}, nil))
	}
	return append(out, Event{Type: RunError, Timestamp: ts, Message: fmt.Sprintf("the run ended with status %q", e.Status), Code: "internal"})
}

func (t *translator) errorEvent(ts int64) Event {
	ev := Event{Type: RunError, Timestamp: ts, Message: "the run failed", Code: "internal"}
	if t.runErr != nil {
		if t.runErr.Message != "" {
			ev.Message = t.runErr.Message
		}
		if t.runErr.Kind != "" {
			ev.Code = t.runErr.Kind
		}
	}
	return ev
}

// interrupts lists what a paused run waits for, as AG-UI interrupts.
func (t *translator) interrupts(e *runtime.Event) []Interrupt {
	intEv := e.ID
	var intList []runtime.InterruptInfo
	if t.interrupt != nil {
		intEv, intList = t.interrupt.ID, t.interrupt.Interrupts
	}
	var out []Interrupt
	for _, in := range e.Interrupts {
		i := slices.IndexFunc(intList, func(x runtime.InterruptInfo) bool { return x.ID == in.ID })
		it := Interrupt{ID: interruptID(in.ID, intEv), Reason: "input_required", Message: in.Prompt, ResponseSchema: in.Schema,
			Metadata: map[string]any{"agentc": map[string]any{"run": t.run, "interrupt": in.ID, "node": in.Node}}}
		if i >= 0 && hasTool(t.tools, in.Node) {
			it.Reason, it.ToolCallID = "tool_call", interruptCallID(intEv, i)
		}
		out = append(out, it)
	}
	for _, d := range e.Decisions {
		schema := d.Schema
		if schema == nil { // a run_finished recorded before decisions had schemas
			schema = runtime.DecisionSchema(nil)
		}
		msg := d.Prompt
		if msg == "" {
			msg = fmt.Sprintf("A side effect of node %s (attempt %d) may have happened: answer done with its result, retry, or fail.", d.Node, d.Attempt)
		}
		out = append(out, Interrupt{ID: decisionID(d.ID, e.ID), Reason: "agentc:decision",
			Message: msg, ResponseSchema: schema,
			Metadata: map[string]any{"agentc": map[string]any{"run": t.run, "decision": d.ID, "node": d.Node, "key": d.Key}}})
	}
	return out
}

// interruptCustom is the CUSTOM event that reports an interrupt event with
// the runtime's own ids (the outcome of RUN_FINISHED is what clients answer).
func (t *translator) interruptCustom(e *runtime.Event, ts int64) Event {
	type item struct {
		ID          string         `json:"id"`
		InterruptID string         `json:"interruptId"`
		Node        string         `json:"node"`
		Prompt      string         `json:"prompt"`
		Schema      map[string]any `json:"schema,omitempty"`
	}
	v := struct {
		Run        string `json:"run"`
		Interrupts []item `json:"interrupts"`
	}{Run: t.run, Interrupts: []item{}}
	for _, in := range e.Interrupts {
		v.Interrupts = append(v.Interrupts, item{ID: in.ID, InterruptID: interruptID(in.ID, e.ID), Node: in.Node, Prompt: in.Prompt, Schema: in.Schema})
	}
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte("{}")
	}
	return Event{Type: Custom, Timestamp: ts, Name: "agentc.interrupt", Value: b}
}

// end closes a stream whose run_finished never came (the runtime's channel
// closed early): everything open is closed and RUN_ERROR ends the run.
func (t *translator) end(at time.Time, code, msg string) []Event {
	if t.done {
		return nil
	}
	ts := millis(at)
	out := t.closeAll(nil, ts)
	t.done = true
	return append(out, Event{Type: RunError, Timestamp: ts, Message: msg, Code: code})
}

// interruptID is the AG-UI id of runtime interrupt id (graph/node) raised
// by the interrupt event ev: unique per pause, so a replayed answer never
// answers a later pause of the same node.
func interruptID(id, ev string) string { return id + "#" + ev }

// decisionID is the AG-UI id of a side-effect decision of the run_finished
// event ev.
func decisionID(id, ev string) string { return "decision:" + id + "#" + ev }

// interruptCallID is the toolCallId of the i-th interrupt of event ev when
// it is offered as a frontend tool call.
func interruptCallID(ev string, i int) string { return "call_" + ev + "_" + strconv.Itoa(i) }

// redeliver answers a request that does not answer its thread's open
// interrupts (interrupt_pending) by delivering the pause again, as the run
// that paused ended: RUN_STARTED and the state snapshot, a CUSTOM
// agentc.interrupt_pending naming every open interrupt (machine-readable:
// the ids to answer), each interrupt asked again, and RUN_FINISHED with
// the same interrupt outcome. Nothing runs. A client that never got the
// pause (a server that died before the outcome was written, a lost
// response) thus learns the ids its next request must answer
// (spec/agui.md, "Interrupts and resume").
func (h *handler) redeliver(ctx context.Context, s stream, key store.SessionKey, in *runInput, pe *planError) {
	w := pe.pending
	h.b.Metrics.Error(proto, pe.code)
	now := h.b.Clock.Now()
	ts := millis(now)
	state := h.startState(ctx, runtime.Invocation{User: key.User, Session: key.Session, Resume: &runtime.ResumeRequest{Run: w.run}})
	tr := h.translators.get(in.ThreadID, in.RunID, h.b.NewID, in.Tools)
	defer h.translators.put(tr)
	tr.run, tr.interrupt = w.run, w.interrupt
	out := tr.start(now, state)
	out = append(out, pendingCustom(w, tr.interrupts(w.finished), pe, ts))
	out = tr.finished(out, w.finished, ts)
	tr.done = true
	// The thread's record is left as it is: the asks sent here are not
	// recorded, so a client that keeps none of them is still answered with
	// the pause, never has it abandoned for it (thread.go, unseen).
	s.send(out...)
}

// pendingCustom is the CUSTOM agentc.interrupt_pending event of a
// re-delivered pause: {code, message, run, interrupts: [{interruptId,
// reason, id?, decision?, node}]}, interruptId being what a resume entry
// names.
func pendingCustom(w *waiting, ints []Interrupt, pe *planError, ts int64) Event {
	type item struct {
		InterruptID string `json:"interruptId"`
		Reason      string `json:"reason"`
		ToolCallID  string `json:"toolCallId,omitempty"`
		ID          string `json:"id,omitempty"`       // the runtime interrupt id (graph/node)
		Decision    string `json:"decision,omitempty"` // the runtime decision id
	}
	v := struct {
		Code       string `json:"code"`
		Message    string `json:"message"`
		Run        string `json:"run"`
		Interrupts []item `json:"interrupts"`
	}{Code: pe.code, Message: pe.msg, Run: w.run, Interrupts: []item{}}
	for i, it := range ints {
		x := item{InterruptID: it.ID, Reason: it.Reason, ToolCallID: it.ToolCallID}
		if i < len(w.interrupts) {
			if p := w.interrupts[i]; p.decision {
				x.Decision = p.runtime
			} else {
				x.ID = p.runtime
			}
		}
		v.Interrupts = append(v.Interrupts, x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte("{}")
	}
	return Event{Type: Custom, Timestamp: ts, Name: "agentc.interrupt_pending", Value: b}
}
