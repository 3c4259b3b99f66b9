package agui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// A thread is an AG-UI conversation: threadId is the session id of the
// authenticated user's session (the app is the Runner's), so the same
// threadId of two users names two sessions. What a thread waits for is read
// from the ledger, never kept in memory: a restarted server resumes threads
// it never saw.

// docsColl is the store.Docs collection of this adapter: one record per
// thread (key DocPath(app, user, thread)) about its last paused run.
const docsColl = "agui.threads"

// threadRecord is what the adapter remembers of a thread's paused run
// beyond the ledger: the ids of the messages and tool calls that asked its
// interrupts, sent in the same flush as the interrupt outcome (Asked), and
// whether the client gave up its interrupts (Abandoned). A record of another
// run than the thread's latest is stale.
type threadRecord struct {
	Run       string   `json:"run"`
	Asked     []string `json:"asked,omitempty"`
	Abandoned bool     `json:"abandoned,omitempty"`
}

func (h *handler) record(ctx context.Context, key store.SessionKey) (threadRecord, error) {
	var rec threadRecord
	b, err := h.docs.GetDoc(ctx, docsColl, docKey(key))
	if errors.Is(err, store.ErrNotFound) {
		return rec, nil
	}
	if err != nil {
		return rec, fmt.Errorf("agui: thread %s: %w", key.Session, err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return threadRecord{}, nil // unreadable: as if none
	}
	return rec, nil
}

func (h *handler) putRecord(ctx context.Context, key store.SessionKey, rec threadRecord) error {
	b, err := json.Marshal(rec)
	if err == nil {
		err = h.docs.ApplyDocs(ctx, store.DocOp{Coll: docsColl, Key: docKey(key), Value: b})
	}
	if err != nil {
		return fmt.Errorf("agui: thread %s: record run %s: %w", key.Session, rec.Run, err)
	}
	return nil
}

// waiting is a paused run of a thread: its latest run, interrupted or
// waiting on side-effect decisions, not abandoned.
type waiting struct {
	run        string
	rec        threadRecord   // the thread's record when it is about run
	interrupt  *runtime.Event // the run's last interrupt event (nil: none)
	finished   *runtime.Event // the run's last run_finished
	interrupts []pendingItem
}

// pendingItem is one open interrupt or decision, with the AG-UI ids a
// request may use to answer it.
type pendingItem struct {
	id       string // AG-UI interrupt id
	callID   string // toolCallId of a frontend tool answer ("" for decisions)
	runtime  string // runtime interrupt id (graph/node) or decision id
	decision bool
}

// threadState reads what a thread's latest run waits for; nil when it waits
// for nothing (no run yet, or its latest run is not paused, or the client
// abandoned it).
func (h *handler) threadState(ctx context.Context, key store.SessionKey) (*waiting, error) {
	// A new thread has no session yet: one record read, not a scan of
	// the run index.
	if ok, err := h.sessions.Exists(ctx, key); err != nil || !ok {
		if err != nil {
			return nil, fmt.Errorf("agui: thread %s: %w", key.Session, err)
		}
		return nil, nil
	}
	// The latest run alone: a long thread costs a request no more.
	last, ok, err := h.sessions.LastRun(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("agui: thread %s: %w", key.Session, err)
	}
	if !ok {
		return nil, nil
	}
	if last.Status != store.RunInterrupted && last.Status != store.RunStatus(runtime.StatusNeedsDecision) {
		return nil, nil
	}
	rec, err := h.record(ctx, key)
	if err != nil {
		return nil, err
	}
	if rec.Run != last.ID {
		rec = threadRecord{Run: last.ID}
	}
	if rec.Abandoned {
		return nil, nil
	}
	evs, err := h.sessions.RunEvents(ctx, last, session.EventFilter{
		Kinds: []runtime.EventKind{runtime.EventInterrupt, runtime.EventRunFinished}})
	if err != nil {
		return nil, fmt.Errorf("agui: thread %s: %w", key.Session, err)
	}
	w := &waiting{run: last.ID, rec: rec}
	for _, e := range evs {
		switch e.Kind {
		case runtime.EventInterrupt:
			w.interrupt = e
		case runtime.EventRunFinished:
			// The last pause: a refused resume ends with a run_finished
			// that leaves the run waiting as it was.
			if len(e.Interrupts) > 0 || len(e.Decisions) > 0 {
				w.finished = e
			}
		}
	}
	if w.finished == nil {
		return nil, nil
	}
	intEv := w.finished.ID
	var intList []runtime.InterruptInfo
	if w.interrupt != nil {
		intEv, intList = w.interrupt.ID, w.interrupt.Interrupts
	}
	for _, in := range w.finished.Interrupts {
		it := pendingItem{id: interruptID(in.ID, intEv), runtime: in.ID}
		for i, x := range intList {
			if x.ID == in.ID {
				it.callID = interruptCallID(intEv, i)
			}
		}
		w.interrupts = append(w.interrupts, it)
	}
	for _, d := range w.finished.Decisions {
		w.interrupts = append(w.interrupts, pendingItem{id: decisionID(d.ID, w.finished.ID), runtime: d.ID, decision: true})
	}
	if len(w.interrupts) == 0 {
		return nil, nil
	}
	return w, nil
}

func docKey(key store.SessionKey) string { return store.DocPath(key.App, key.User, key.Session) }

// abandon records that the client gave up every open interrupt of run: it
// no longer blocks the thread (the run stays resumable from the CLI).
func (h *handler) abandon(ctx context.Context, key store.SessionKey, run string) error {
	rec, err := h.record(ctx, key)
	if err != nil {
		return err
	}
	if rec.Run != run {
		rec = threadRecord{Run: run}
	}
	rec.Abandoned = true
	return h.putRecord(ctx, key, rec)
}

// planError is a request that is well-formed but cannot run; it is answered
// with RUN_ERROR (code) as the stream's only event.
type planError struct {
	code, msg string
	// pending, for interrupt_pending, is the pause the request did not
	// answer: the adapter delivers it again instead of a bare RUN_ERROR.
	pending *waiting
}

func (e *planError) Error() string { return e.msg }

// plan decides what a request does on its thread: resume the paused run
// (resume entries, or tool messages answering interrupts offered as frontend
// tool calls), start a new run with the last user message, or nothing (every
// interrupt cancelled and no new message: cancelled == true).
type plan struct {
	inv       runtime.Invocation
	cancelled bool // the request only cancelled the paused run's interrupts
}

func (h *handler) plan(ctx context.Context, key store.SessionKey, in *runInput) (plan, error) {
	if h.reg.get(regKey{key.User, key.Session}) != nil {
		return plan{}, &planError{code: "thread_busy", msg: "the thread has an active run: wait for it to finish or cancel it"}
	}
	w, err := h.threadState(ctx, key)
	if err != nil {
		return plan{}, err
	}
	p := plan{inv: runtime.Invocation{User: key.User, Session: key.Session}} // returned as a value: not on the heap
	newRun := func() (plan, error) {
		text, ok := in.lastUserText()
		if !ok {
			return plan{}, &planError{code: "no_input", msg: "the last message is not a user message: nothing to run"}
		}
		files := in.Messages[len(in.Messages)-1].Files
		if strings.TrimSpace(text) == "" && len(files) == 0 {
			return plan{}, &planError{code: "no_input", msg: "the last user message has no text"}
		}
		p.inv.Input, p.inv.Files = text, files
		return p, nil
	}
	if w == nil {
		if len(in.Resume) > 0 {
			return plan{}, &planError{code: "unknown_interrupt", msg: fmt.Sprintf("thread %s has no open interrupt %q", key.Session, in.Resume[0].InterruptID)}
		}
		return newRun()
	}

	answers := map[string]resumeEntry{}
	for _, r := range in.Resume {
		answers[r.InterruptID] = r
	}
	byID := map[string]bool{}
	tools := in.toolAnswers()
	for _, it := range w.interrupts {
		byID[it.id] = true
		if _, ok := answers[it.id]; ok || it.callID == "" {
			continue
		}
		if text, ok := tools[it.callID]; ok {
			answers[it.id] = resumeEntry{InterruptID: it.id, Status: "resolved", Payload: toolPayload(text)}
		}
	}
	for _, r := range in.Resume {
		if !byID[r.InterruptID] {
			return plan{}, &planError{code: "unknown_interrupt", msg: fmt.Sprintf("interrupt %q is not open on thread %s (open: %s)", r.InterruptID, key.Session, openIDs(w))}
		}
	}
	if len(answers) == 0 && w.unseen(in) {
		// The client never got the paused run (it aborted before the
		// outcome arrived): its interrupts cannot hold the thread.
		if err := h.abandon(ctx, key, w.run); err != nil {
			return plan{}, err
		}
		return newRun()
	}
	if len(answers) == 0 {
		return plan{}, &planError{code: "interrupt_pending", pending: w,
			msg: fmt.Sprintf("thread %s waits on interrupts %s: answer them with resume entries", key.Session, openIDs(w))}
	}
	var missing []string
	resume := &runtime.ResumeRequest{Run: w.run}
	for _, it := range w.interrupts {
		a, ok := answers[it.id]
		switch {
		case !ok:
			missing = append(missing, it.id)
		case a.Status == "cancelled":
		case it.decision:
			d, err := runtime.ParseDecisionAnswer(a.Payload)
			if err != nil {
				return plan{}, &planError{code: "invalid_resume", msg: fmt.Sprintf(`interrupt %q: the payload must be {"decision": "done"|"retry"|"fail", "result"?}: %v`, it.id, err)}
			}
			if resume.Decisions == nil {
				resume.Decisions = map[string]runtime.DecisionRequest{}
			}
			resume.Decisions[it.runtime] = d
		default:
			v := a.Payload
			if v == nil {
				v = json.RawMessage("null")
			}
			if resume.Values == nil {
				resume.Values = map[string]json.RawMessage{}
			}
			resume.Values[it.runtime] = v
		}
	}
	if len(missing) > 0 {
		return plan{}, &planError{code: "resume_incomplete", msg: fmt.Sprintf("the resume does not answer interrupts %s", strings.Join(missing, ", "))}
	}
	if resume.Values == nil && resume.Decisions == nil {
		// Every open interrupt was cancelled: the paused run stops blocking
		// the thread; a new user message starts a new run.
		if err := h.abandon(ctx, key, w.run); err != nil {
			return plan{}, err
		}
		if _, ok := in.lastUserText(); !ok {
			p.cancelled = true
			return p, nil
		}
		return newRun()
	}
	p.inv.Resume = resume
	return p, nil
}

// unseen reports whether the request's history shows that its client never
// received the interrupt outcome: none of the ids that asked the interrupts
// (sent with the outcome) is in it. False when there is no record (the pause
// was not streamed by this adapter).
func (w *waiting) unseen(in *runInput) bool {
	if len(w.rec.Asked) == 0 {
		return false
	}
	have := map[string]bool{}
	for _, m := range in.Messages {
		have[m.ID] = true
		if m.ToolCallID != "" {
			have[m.ToolCallID] = true
		}
		for _, id := range m.CallIDs {
			have[id] = true
		}
	}
	for _, id := range w.rec.Asked {
		if have[id] {
			return false
		}
	}
	return true
}

// toolPayload is a frontend tool's result as a resume value: its JSON when
// it is JSON, else the text as a JSON string.
func toolPayload(text string) json.RawMessage {
	if t := strings.TrimSpace(text); t != "" && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	return jsonString(text)
}

func openIDs(w *waiting) string {
	ids := make([]string, len(w.interrupts))
	for i, it := range w.interrupts {
		ids[i] = it.id
	}
	return strings.Join(ids, ", ")
}

// registry is the adapter's active requests, for the cancel endpoint: the
// runtime run streaming on each (user, thread).
type registry struct {
	mu  sync.Mutex
	act map[regKey]*active
}

type regKey struct{ user, thread string }

type active struct {
	runID  string // the client's runId
	run    string // the runtime run id
	cancel context.CancelFunc
}

// add registers a as k's active request, unless k has one (a request
// re-sent while the first still streams the run follows it, and does not
// take its place); it reports whether a was registered.
func (r *registry) add(k regKey, a *active) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.act == nil {
		r.act = map[regKey]*active{}
	}
	if _, ok := r.act[k]; ok {
		return false
	}
	r.act[k] = a
	return true
}

func (r *registry) remove(k regKey, a *active) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.act[k] == a {
		delete(r.act, k)
	}
}

func (r *registry) get(k regKey) *active {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.act[k]
}
