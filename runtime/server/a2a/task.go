package a2a

// Tasks: the record kept in the store's Docs, the list index, the live
// tasks of this process (a run in flight) and the pump that turns a run's
// events into task states and stream updates.

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// Document collections (spec/a2a.md, "Task records").
const (
	// CollTask holds one record per task: key DocPath(app, user, task id),
	// value the JSON Task.
	CollTask = "a2a.task"
	// CollRecent indexes a user's tasks, most recently updated first: key
	// DocPath(app, user, inverted status time, task id), value a recentEntry.
	CollRecent = "a2a.recent"
	// CollMessage maps a user's messageId that started a task to the task:
	// key DocPath(app, user, messageId), value a messageRecord (an older
	// agentc's: the task id alone). A re-sent message (the same
	// messageId) rejoins that task (spec/a2a.md, "Re-sent messages").
	CollMessage = "a2a.message"
	// CollRunTask maps a task's run to the task, so that a replica taking
	// the run over (or a server resuming it after a restart) attaches the
	// task's pump: key the run id, value a runTask. Written with the task's
	// record.
	CollRunTask = "a2a.run"
)

// runTask is a CollRunTask value.
type runTask struct {
	User string `json:"user"`
	Task string `json:"task"`
}

// messageRecord is a CollMessage value: the task the message started, and
// its request's claim (server.Reserve).
type messageRecord struct {
	Task  string        `json:"task"`
	Claim *server.Claim `json:"claim,omitempty"`
}

// MessageRecord reads a CollMessage record: the id of the task its
// message started (or starts).
func MessageRecord(value []byte) string {
	var r messageRecord
	if len(value) > 0 && value[0] == '{' && json.Unmarshal(value, &r) == nil {
		return r.Task
	}
	return string(value)
}

// recordVersion is the version of the stored Task JSON.
const recordVersion = 1

// taskStatus is a task's current state, the agent message that goes with
// it (input-required prompts, failures) and when it was set.
type taskStatus struct {
	State   state     `json:"state"`
	Message *Message  `json:"message,omitempty"`
	Time    time.Time `json:"time"`
}

// Task is the record of one A2A task: one run (spec/a2a.md).
type Task struct {
	V         int             `json:"v"`
	ID        string          `json:"id"`
	ContextID string          `json:"contextId"`
	Run       string          `json:"run"`
	Status    taskStatus      `json:"status"`
	History   []Message       `json:"history,omitempty"`
	Artifacts []Artifact      `json:"artifacts,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	// Interrupts and Decisions are what an input-required task waits for;
	// a follow-up message answers them.
	Interrupts []runtime.InterruptInfo `json:"interrupts,omitempty"`
	Decisions  []runtime.DecisionInfo  `json:"decisions,omitempty"`
	Created    time.Time               `json:"created"`
	Updated    time.Time               `json:"updated"`
	// IndexKey is the task's current key in CollRecent.
	IndexKey string `json:"indexKey,omitempty"`
	// Push are the task's webhooks (push notifications).
	Push []pushConfig `json:"push,omitempty"`
}

// clone returns a copy whose slices a later append to t cannot change.
func (t *Task) clone() *Task {
	c := *t
	c.History = slices.Clip(t.History)
	c.Artifacts = slices.Clip(t.Artifacts)
	c.Push = slices.Clip(t.Push)
	return &c
}

// view returns the task as a response shows it: at most historyLength
// messages (nil: all; 0: none), artifacts unless dropped.
func (t *Task) view(historyLength *int32, artifacts bool) *Task {
	c := t.clone()
	if historyLength != nil {
		if n := int(*historyLength); n < len(c.History) {
			c.History = c.History[len(c.History)-n:]
		}
	}
	if !artifacts {
		c.Artifacts = nil
	}
	return c
}

// TaskRecord reads a CollTask record for retention: the run of the task
// and the key of its entry in CollRecent ("" when it has none).
func TaskRecord(value []byte) (run, indexKey string, err error) {
	var t Task
	if err := json.Unmarshal(value, &t); err != nil {
		return "", "", fmt.Errorf("a2a: task record: %w", err)
	}
	return t.Run, t.IndexKey, nil
}

// recentEntry is the value of a CollRecent key: enough to filter a list
// without reading every record.
type recentEntry struct {
	Task    string    `json:"task"`
	Context string    `json:"context"`
	State   state     `json:"state"`
	Time    time.Time `json:"time"`
}

func (h *Handler) taskKey(user, id string) string { return store.DocPath(h.b.App(), user, id) }

func (h *Handler) messageKey(user, messageID string) string {
	return store.DocPath(h.b.App(), user, messageID)
}

func (h *Handler) recentPrefix(user string) string { return store.DocPath(h.b.App(), user) }

// recentKey orders a user's tasks by status time, newest first.
func (h *Handler) recentKey(user string, t *Task) string {
	inv := uint64(math.MaxUint64)
	if ns := t.Status.Time.UnixNano(); ns > 0 {
		inv -= uint64(ns)
	}
	var b [8]byte
	for i := range b {
		b[i] = byte(inv >> (56 - 8*i))
	}
	return store.DocPath(h.b.App(), user, hex.EncodeToString(b[:]), t.ID)
}

// save writes t and moves its index entry, in one batch. create makes the
// record's put IfAbsent.
func (h *Handler) save(ctx context.Context, user string, t *Task, create bool) error {
	t.V = recordVersion
	key := h.recentKey(user, t)
	old := t.IndexKey
	t.IndexKey = key
	rec, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("a2a: encode task %s: %w", t.ID, err)
	}
	idx, err := json.Marshal(recentEntry{Task: t.ID, Context: t.ContextID, State: t.Status.State, Time: t.Status.Time})
	if err != nil {
		return fmt.Errorf("a2a: encode task index %s: %w", t.ID, err)
	}
	ops := []store.DocOp{
		{Coll: CollTask, Key: h.taskKey(user, t.ID), Value: rec, IfAbsent: create},
		{Coll: CollRecent, Key: key, Value: idx},
	}
	if create && t.Run != "" {
		rt, _ := json.Marshal(runTask{User: user, Task: t.ID})
		ops = append(ops, store.DocOp{Coll: CollRunTask, Key: t.Run, Value: rt})
	}
	if old != "" && old != key {
		ops = append(ops, store.DocOp{Coll: CollRecent, Key: old, Delete: true})
	}
	if err := h.b.Docs.ApplyDocs(ctx, ops...); err != nil {
		t.IndexKey = old
		return fmt.Errorf("a2a: save task %s: %w", t.ID, err)
	}
	return nil
}

// errTaskNotFound: no such task for this user (or app).
var errTaskNotFound = errors.New("a2a: task not found")

// readTask reads user's task record: the task index must map it to a run
// of this user, and the record must exist under this app.
func (h *Handler) readTask(ctx context.Context, user, id string) (*Task, error) {
	if id == "" || user == "" {
		return nil, errTaskNotFound
	}
	run, err := h.b.Docs.LookupTask(ctx, user, id)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalid) {
		return nil, errTaskNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("a2a: look up task %s: %w", id, err)
	}
	b, err := h.b.Docs.GetDoc(ctx, CollTask, h.taskKey(user, id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, errTaskNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("a2a: read task %s: %w", id, err)
	}
	t := &Task{}
	if err := json.Unmarshal(b, t); err != nil {
		return nil, fmt.Errorf("a2a: decode task %s: %w", id, err)
	}
	if t.V != recordVersion || t.Run != run {
		return nil, fmt.Errorf("a2a: task %s: record version %d for run %s, index says run %s", id, t.V, t.Run, run)
	}
	return t, nil
}

// ---- live tasks --------------------------------------------------------

// liveTask is a task this process is changing: a run in flight (the pump
// owns it) or a short change of a stored record (a cancel, a recovery).
// Only one exists per task id; a message for a task that has one is
// refused.
type liveTask struct {
	user string
	mu   sync.Mutex
	t    *Task
	subs []*subscriber
	// released is set by release under mu: a stream that subscribes later
	// (it found lt before release removed it) is refused.
	released bool
	done     chan struct{} // closed when the change is over and saved
	// trace is the trace context of the request that started the run in
	// flight, for its push notifications (nil: none); under mu.
	trace http.Header
}

// setTrace sets the trace context of the run lt starts (nil: none).
func (lt *liveTask) setTrace(h http.Header) {
	lt.mu.Lock()
	lt.trace = h
	lt.mu.Unlock()
}

// update is one stream event: the task itself (first), an artifact, or a
// status (Final when the stream ends after it).
type update struct {
	Task     *Task
	Artifact *Artifact
	Status   *taskStatus
	Final    bool
}

// subscriber is one stream's queue; the pump never blocks on it.
type subscriber struct {
	mu     sync.Mutex
	q      []update
	closed bool
	wake   chan struct{}
}

func newSubscriber() *subscriber { return &subscriber{wake: make(chan struct{}, 1)} }

func (s *subscriber) push(u update) {
	s.mu.Lock()
	s.q = append(s.q, u)
	s.mu.Unlock()
	s.signal()
}

func (s *subscriber) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.signal()
}

func (s *subscriber) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// next returns the next update; ok is false when the stream is over or ctx
// is done.
func (s *subscriber) next(ctx context.Context) (u update, ok bool) {
	for {
		s.mu.Lock()
		if len(s.q) > 0 {
			u = s.q[0]
			s.q = s.q[1:]
			s.mu.Unlock()
			return u, true
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return update{}, false
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return update{}, false
		}
	}
}

// errBusy: the task already has a run in flight (or is being changed).
var errBusy = errors.New("a2a: task is busy")

// claim registers a live task for id; errBusy when there is one already.
func (h *Handler) claim(user string, t *Task) (*liveTask, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, server.ErrShuttingDown
	}
	if _, ok := h.live[t.ID]; ok {
		return nil, errBusy
	}
	lt := &liveTask{user: user, t: t, done: make(chan struct{})}
	h.live[t.ID] = lt
	h.wg.Add(1) // Close waits for every live task; release is the Done
	return lt, nil
}

// release ends lt: its streams end, it leaves the registry, and waiters
// see done.
func (h *Handler) release(lt *liveTask) {
	lt.mu.Lock()
	for _, s := range lt.subs {
		s.close()
	}
	lt.subs, lt.released = nil, true
	id := lt.t.ID
	lt.mu.Unlock()
	h.mu.Lock()
	if h.live[id] == lt {
		delete(h.live, id)
	}
	h.mu.Unlock()
	close(lt.done)
	h.wg.Done()
}

// liveFor returns user's live task id, or nil.
func (h *Handler) liveFor(user, id string) *liveTask {
	h.mu.Lock()
	defer h.mu.Unlock()
	if lt := h.live[id]; lt != nil && lt.user == user {
		return lt
	}
	return nil
}

// snapshot returns a copy of lt's task.
func (lt *liveTask) snapshot() *Task {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	return lt.t.clone()
}

// subscribe returns a stream that starts with the task as it is now; nil
// when lt was released (its change is over: read the stored task instead).
func (lt *liveTask) subscribe() *subscriber {
	s := newSubscriber()
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if lt.released {
		return nil
	}
	s.q = append(s.q, update{Task: lt.t.clone()})
	lt.subs = append(lt.subs, s)
	return s
}

// change applies f to lt's task under its lock, saves it, and sends the
// updates f returns to every stream.
func (h *Handler) change(lt *liveTask, f func(t *Task) []update) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	ups := f(lt.t)
	lt.t.Updated = h.now()
	// A record that cannot be saved still reaches the streams; the error
	// is logged, and GetTask after a restart recovers the state from the
	// run (recover).
	if err := h.save(context.WithoutCancel(h.base), lt.user, lt.t, false); err != nil {
		h.log.Error("a2a: save task", "task", lt.t.ID, "err", err)
	}
	for _, s := range lt.subs {
		for _, u := range ups {
			s.push(u)
		}
	}
	h.pushes.notify(lt.t, lt.trace, ups)
}

// ---- the pump ----------------------------------------------------------

// pump reads a run's events until the channel closes, moving the task
// through working to its end (terminal or input-required), then releases
// it. It is the only writer of the task while the run is in flight.
func (h *Handler) pump(lt *liveTask, run *server.Run) {
	defer h.release(lt)
	var runErr *runtime.ErrorInfo
	var fin *runtime.Event
	for e := range run.Events {
		switch e.Kind {
		case runtime.EventRunStarted:
			h.change(lt, func(t *Task) []update {
				st := taskStatus{State: stateWorking, Time: h.now()}
				t.Status = st
				return []update{{Status: &st}}
			})
		case runtime.EventRunError:
			runErr = e.Error
		case runtime.EventRunFinished:
			fin = e
		}
	}
	if fin == nil && h.b.Runner.Replicated() {
		if h.base.Err() == nil {
			// The events stopped without an end while the handler goes
			// on: this replica lost the run's lease; the replica that
			// took the run over settles the record (its pump: adopt),
			// whether the run still goes on or already ended there.
			return
		}
		if rec, err := h.b.GetRun(context.WithoutCancel(h.base), lt.user, run.ID); err == nil && rec.Status == store.RunRunning {
			// Handed over at shutdown: another replica resumes it.
			return
		}
	}
	if fin == nil {
		// The events stopped early: the handler is closing (the run was
		// canceled and its last events dropped).
		fin = &runtime.Event{Kind: runtime.EventRunFinished, Status: runtime.StatusCanceled}
		if h.base.Err() == nil {
			fin.Status = runtime.StatusFailed
			runErr = &runtime.ErrorInfo{Kind: "internal", Message: "the run ended without reporting how"}
		}
	}
	var usage *store.RunUsage
	if rec, err := h.b.GetRun(context.WithoutCancel(h.base), lt.user, run.ID); err == nil {
		usage = &rec.Usage
	}
	h.change(lt, func(t *Task) []update { return h.finish(lt.user, t, fin, runErr, usage) })
}

// adopt attaches the pump of its task to run, the resumption of orphan o
// by this process's Backend (a replica taking the run over, or a server
// resuming it after a restart: server.Adopter), when o is a task's run and
// the task is not live here. The task's status updates and push
// notifications then go on as if its first request were still here.
func (h *Handler) adopt(o store.Run, run *server.Run) bool {
	ctx := context.WithoutCancel(h.base)
	v, err := h.b.Docs.GetDoc(ctx, CollRunTask, o.ID)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			h.log.Warn("a2a: look up the task of a resumed run", "run", o.ID, "err", err)
		}
		return false
	}
	var rt runTask
	if err := json.Unmarshal(v, &rt); err != nil || rt.User != o.Session.User || o.Session.App != h.b.App() {
		return false
	}
	t, err := h.readTask(ctx, rt.User, rt.Task)
	if err != nil || t.Run != o.ID {
		return false
	}
	lt, err := h.claim(rt.User, t)
	if err != nil {
		return false
	}
	// The run's context is not the handler's (the Backend resumed it):
	// the pump stops when the handler does, and the run's remaining
	// events are drained.
	evs := make(chan *runtime.Event)
	go func() { // owned by the run: ends with its events
		defer close(evs)
		for e := range run.Events {
			select {
			case evs <- e:
			case <-h.base.Done():
				for range run.Events {
				}
				return
			}
		}
	}()
	go h.pump(lt, &server.Run{ID: run.ID, Events: evs}) // owned by the task: ends with evs
	return true
}

// finish applies a run's end to t and returns the stream updates: the
// output artifacts, then the status (final). It is shared by the pump and
// by recovery after a restart. usage is the run record's (nil: unread).
func (h *Handler) finish(user string, t *Task, fin *runtime.Event, runErr *runtime.ErrorInfo, usage *store.RunUsage) []update {
	if usage != nil {
		setUsage(t, *usage)
	}
	now := h.now()
	st := taskStatus{Time: now}
	var ups []update
	agentMsg := func(parts ...Part) *Message {
		m := &Message{MessageID: h.b.NewID("msg_"), ContextID: t.ContextID, TaskID: t.ID, Role: "agent", Parts: parts}
		t.History = append(t.History, *m)
		return m
	}
	switch fin.Status {
	case runtime.StatusCompleted:
		arts, err := h.opts.Artifacts(context.WithoutCancel(h.base), ArtifactRequest{
			App: h.b.App(), User: user, Context: t.ContextID, Task: t.ID, Run: t.Run, Output: fin.Output})
		if err != nil {
			st.State = stateFailed
			st.Message = agentMsg(TextPart("The run completed but its output could not be delivered: " + err.Error()))
			break
		}
		st.State = stateCompleted
		for i := range arts {
			t.Artifacts = append(t.Artifacts, arts[i])
			ups = append(ups, update{Artifact: &arts[i]})
		}
		t.Interrupts, t.Decisions = nil, nil
	case runtime.StatusInterrupted:
		st.State = stateInputRequired
		if len(fin.Interrupts) == 0 && len(t.Interrupts) > 0 {
			// A resume the VM refused: the run still waits on the same
			// interrupts.
			st.Message = agentMsg(TextPart("The answer was not accepted; the task still waits for: " + prompts(t.Interrupts)))
			break
		}
		t.Interrupts, t.Decisions = fin.Interrupts, nil
		data, _ := json.Marshal(map[string]any{"interrupts": fin.Interrupts})
		st.Message = agentMsg(TextPart(prompts(fin.Interrupts)), DataPart(data))
	case runtime.StatusNeedsDecision:
		st.State = stateInputRequired
		t.Interrupts, t.Decisions = nil, fin.Decisions
		data, _ := json.Marshal(map[string]any{"decisions": fin.Decisions})
		st.Message = agentMsg(TextPart(runtime.DecisionPrompts(fin.Decisions)+"\nAnswer with a data part "+
			`{"decision": "done" | "retry" | "fail", "result"?} (several pending: an object keyed by decision id).`), DataPart(data))
	case runtime.StatusCanceled:
		st.State = stateCanceled
	default:
		st.State = stateFailed
		msg := "the run failed"
		if runErr != nil {
			msg = fmt.Sprintf("%s: %s", runErr.Kind, runErr.Message)
		}
		st.Message = agentMsg(TextPart(msg))
	}
	t.Status = st
	return append(ups, update{Status: &st, Final: true})
}

// prompts joins the prompts of interrupts, one per line.
func prompts(its []runtime.InterruptInfo) string {
	var ps []string
	for _, it := range its {
		ps = append(ps, it.Prompt)
	}
	return strings.Join(ps, "\n")
}

// recoverTask settles a stored task left submitted or working by a process
// that ended, or by a pump on another replica: its run's status (and the
// run_finished in the ledger) says how the run ended; a run still running
// is in flight (here, on another replica, or about to be resumed: by a
// replica taking it over, or by the next start of a Pebble-backed server)
// and the task stays working. It returns the task as it is now.
func (h *Handler) recoverTask(ctx context.Context, user string, t *Task) (*Task, error) {
	if run, err := h.b.GetRun(ctx, user, t.Run); err == nil && run.Status == store.RunRunning {
		// In flight: nothing to settle, and no live task to claim (a
		// stream that found one would end with its release).
		return t, nil
	}
	lt, err := h.claim(user, t)
	if errors.Is(err, errBusy) {
		if lt := h.liveFor(user, t.ID); lt != nil {
			return lt.snapshot(), nil
		}
		return t, nil
	}
	if err != nil {
		return nil, err
	}
	defer h.release(lt)
	cur, err := h.readTask(ctx, user, t.ID)
	if err != nil {
		return nil, err
	}
	lt.mu.Lock()
	lt.t = cur
	lt.mu.Unlock()
	if cur.Status.State != stateSubmitted && cur.Status.State != stateWorking {
		return cur.clone(), nil
	}
	run, err := h.b.GetRun(ctx, user, cur.Run)
	if err != nil {
		return nil, fmt.Errorf("a2a: recover task %s: %w", cur.ID, err)
	}
	fin := &runtime.Event{Kind: runtime.EventRunFinished, Status: runtime.RunStatus(run.Status)}
	var runErr *runtime.ErrorInfo
	if run.Status == store.RunRunning {
		// Driven without a pump of this handler (Backend.Recover or
		// TakeOver here, or another replica): settled when read after
		// its end.
		return cur.clone(), nil
	}
	{
		sessions := h.b.Sessions
		evs, err := sessions.Events(ctx, run.Session, session.EventFilter{Run: cur.Run,
			Kinds: []runtime.EventKind{runtime.EventRunFinished, runtime.EventRunError}})
		if err != nil {
			return nil, fmt.Errorf("a2a: recover task %s: %w", cur.ID, err)
		}
		for _, e := range evs {
			if e.Kind == runtime.EventRunError {
				runErr = e.Error
			} else {
				fin = e
			}
		}
	}
	h.change(lt, func(t *Task) []update { return h.finish(lt.user, t, fin, runErr, &run.Usage) })
	return lt.snapshot(), nil
}

// usageKey is the task metadata member that holds the run's model usage.
const usageKey = "agentc.usage"

// taskUsage is what the run's model calls used over all its invocations,
// as its record keeps it (spec/a2a.md, "Usage").
type taskUsage struct {
	PromptTokens     int      `json:"prompt_tokens"`
	CompletionTokens int      `json:"completion_tokens"`
	CachedTokens     int      `json:"cached_tokens,omitempty"`
	ModelCalls       uint64   `json:"model_calls,omitempty"`
	Cost             *float64 `json:"cost,omitempty"` // USD, when a priced model was called
}

// setUsage puts the run record's usage in the task's metadata (usageKey),
// replacing what an earlier invocation put there; a run without model
// calls adds nothing. Metadata that is not a JSON object (the client's to
// choose) is left as it is.
func setUsage(t *Task, rec store.RunUsage) {
	if rec == (store.RunUsage{}) {
		return
	}
	md := map[string]json.RawMessage{}
	if len(t.Metadata) > 0 && string(t.Metadata) != "null" {
		if err := json.Unmarshal(t.Metadata, &md); err != nil || md == nil {
			return
		}
	}
	ru := runtime.RunUsageOf(rec)
	u := taskUsage{PromptTokens: ru.Usage.PromptTokens, CompletionTokens: ru.Usage.CompletionTokens,
		CachedTokens: ru.Usage.CachedTokens, ModelCalls: ru.Calls}
	if ru.Priced {
		u.Cost = &ru.Cost
	}
	b, err := json.Marshal(u)
	if err != nil {
		return
	}
	md[usageKey] = b
	if out, err := json.Marshal(md); err == nil {
		t.Metadata = out
	}
}
