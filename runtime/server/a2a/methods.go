package a2a

// The operations: send (blocking, non-blocking, streaming), get, list,
// cancel and subscribe, and the translation of a message into a run's
// input or a resume.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentc/agentc/internal/jsonrpc"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/store"
)

// maxIDLen bounds client-chosen ids (a context id names a session).
const maxIDLen = 256

// badID reports whether a client-chosen id is unfit to keep: longer than
// maxIDLen, not UTF-8, or holding a NUL.
func badID(id string) bool {
	return len(id) > maxIDLen || !utf8.ValidString(id) || strings.ContainsRune(id, 0)
}

// call is one JSON-RPC request being answered.
type call struct {
	h      *Handler
	w      http.ResponseWriter
	r      *http.Request
	v      Version
	user   string
	id     json.RawMessage
	params json.RawMessage
}

// finish writes a non-streaming answer.
func (c *call) finish(result any, e *rpcError) { c.h.reply(c.w, c.v, c.id, result, e) }

// internal logs err and returns the opaque -32603.
func (c *call) internal(what string, err error) *rpcError {
	c.h.log.Error("a2a: "+what, "user", c.user, "err", err)
	return internalError()
}

type sendParams struct {
	Message       *wireMessage    `json:"message"`
	Configuration *sendConfig     `json:"configuration"`
	Metadata      json.RawMessage `json:"metadata"`
}

type sendConfig struct {
	AcceptedOutputModes        []string        `json:"acceptedOutputModes"`
	HistoryLength              *int32          `json:"historyLength"`
	ReturnImmediately          bool            `json:"returnImmediately"` // 1.0
	Blocking                   *bool           `json:"blocking"`          // 0.3
	TaskPushNotificationConfig json.RawMessage `json:"taskPushNotificationConfig"`
	PushNotificationConfig     json.RawMessage `json:"pushNotificationConfig"`
}

func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// send answers SendMessage / SendStreamingMessage (message/send,
// message/stream).
func (c *call) send(stream bool) {
	var p sendParams
	if e := decodeParams(c.params, &p); e != nil {
		c.finish(nil, e)
		return
	}
	msg, e := decodeMessage(c.v, p.Message)
	if e != nil {
		c.finish(nil, e)
		return
	}
	cfg := p.Configuration
	if cfg == nil {
		cfg = &sendConfig{}
	}
	var push *pushConfig
	if raw, field := cfg.TaskPushNotificationConfig, "configuration.taskPushNotificationConfig"; present(raw) || present(cfg.PushNotificationConfig) {
		if c.h.opts.Push == nil {
			c.finish(nil, pushNotSupported())
			return
		}
		if c.v == V03 || !present(raw) {
			raw, field = cfg.PushNotificationConfig, "configuration.pushNotificationConfig"
		}
		pc, e := c.h.decodePushConfig(c.v, raw, field)
		if e != nil {
			c.finish(nil, e)
			return
		}
		push = &pc
	}
	if cfg.HistoryLength != nil && *cfg.HistoryLength < 0 {
		c.finish(nil, invalidParams("configuration.historyLength", "historyLength must not be negative"))
		return
	}
	blocking := !cfg.ReturnImmediately
	if c.v == V03 && cfg.Blocking != nil {
		blocking = *cfg.Blocking
	}
	var lt *liveTask
	var sub *subscriber
	var started string
	if msg.TaskID != "" {
		lt, sub, e = c.continueTask(msg, push, stream)
	} else {
		lt, sub, started, e = c.newTask(msg, p.Metadata, push, stream)
	}
	if e != nil {
		c.finish(nil, e)
		return
	}
	if started != "" {
		c.rejoin(started, stream, blocking, cfg.HistoryLength)
		return
	}
	if stream {
		c.stream(sub)
		return
	}
	if blocking {
		select {
		case <-lt.done:
		case <-c.r.Context().Done():
			return // the client left; the task goes on
		}
	}
	c.finish(encodeSendResult(c.v, lt.snapshot().view(cfg.HistoryLength, true)), nil)
}

// stream writes a subscriber's updates as SSE until the stream ends (the
// task reached its end) or the client leaves.
func (c *call) stream(sub *subscriber) {
	sw := newSSEWriter(c.w, c.r, c.id)
	var t *Task
	for {
		u, ok := sub.next(c.r.Context())
		if !ok {
			break
		}
		if u.Task != nil {
			t = u.Task
		}
		if t == nil || !sw.send(encodeUpdate(c.v, t, u)) {
			break
		}
	}
	sw.start()
}

// rejoin answers a re-sent message with the task its first sending
// started: the live task's stream (or its end, when blocking), else its
// stored record.
func (c *call) rejoin(id string, stream, blocking bool, historyLength *int32) {
	if lt := c.h.liveFor(c.user, id); lt != nil {
		if stream {
			if sub := lt.subscribe(); sub != nil {
				c.stream(sub)
				return
			}
		}
		if stream || blocking {
			select {
			case <-lt.done:
			case <-c.r.Context().Done():
				return // the client left; the task goes on
			}
		}
	}
	t, e := c.load(id)
	if e == nil && c.remote(t) {
		// In flight without a pump here (another replica drives it).
		if stream {
			c.streamRemote(t)
			return
		}
		if blocking {
			t, e = c.awaitSettled(t)
		}
	}
	if e != nil {
		c.finish(nil, e)
		return
	}
	if stream {
		c.streamStored(t)
		return
	}
	c.finish(encodeSendResult(c.v, t.view(historyLength, true)), nil)
}

// streamStored streams a task that is not live: its record, and for 0.3 a
// final status update.
func (c *call) streamStored(t *Task) {
	sub := newSubscriber()
	sub.q = append(sub.q, update{Task: t})
	if c.v == V03 {
		st := t.Status
		sub.q = append(sub.q, update{Status: &st, Final: true})
	}
	sub.closed = true
	c.stream(sub)
}

// newTask starts a run for a message without a task id. A message whose
// messageId started a task before returns that task's id as started, and
// starts nothing: the messageId is reserved (IfAbsent) before the run
// starts, so two sendings of one message never both run.
func (c *call) newTask(msg Message, metadata json.RawMessage, push *pushConfig, stream bool) (lt *liveTask, sub *subscriber, started string, e *rpcError) {
	h := c.h
	ctxID := msg.ContextID
	if ctxID == "" {
		ctxID = h.b.NewID("ctx_")
	} else if badID(ctxID) {
		return nil, nil, "", invalidParams("message.contextId", fmt.Sprintf("contextId must be valid UTF-8 of at most %d bytes", maxIDLen))
	}
	if badID(msg.MessageID) {
		return nil, nil, "", invalidParams("message.messageId", fmt.Sprintf("messageId must be valid UTF-8 of at most %d bytes", maxIDLen))
	}
	input, e := inputText(msg)
	if e != nil {
		return nil, nil, "", e
	}
	files, e := inputFiles(msg)
	if e != nil {
		return nil, nil, "", e
	}
	now := h.now()
	t := &Task{ID: h.b.NewID("task_"), ContextID: ctxID, Status: taskStatus{State: stateSubmitted, Time: now},
		Created: now, Updated: now, Metadata: metadata}
	msg.TaskID, msg.ContextID = t.ID, ctxID
	t.History = []Message{msg}
	if push != nil {
		if _, e := h.addPush(t, *push); e != nil {
			return nil, nil, "", e
		}
	}
	lt, err := h.claim(c.user, t)
	if err != nil {
		return nil, nil, "", h.startError(err)
	}
	lt.setTrace(h.pushes.traceOf(c.r.Context()))
	ctx := context.WithoutCancel(c.r.Context())
	msgKey := h.messageKey(c.user, msg.MessageID)
	inv := h.b.NewID("inv_") // its run's input event names it (server.Reserve)
	rec, _ := json.Marshal(messageRecord{Task: t.ID, Claim: h.b.NewClaim(ctxID, inv)})
	res, err := h.b.Reserve(ctx, c.user, CollMessage, msgKey, rec, func(prev []byte) (bool, error) {
		_, err := h.readTask(ctx, c.user, MessageRecord(prev))
		if errors.Is(err, errTaskNotFound) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		h.release(lt)
		return nil, nil, "", c.internal("record message "+msg.MessageID, err)
	}
	if !res.Reserved {
		h.release(lt)
		prev := MessageRecord(res.Prev)
		if res.Run != "" {
			// Its request died after starting the run, before recording
			// the task: record it now; the run goes on (taken over).
			if e := c.adoptTask(res.Prev, msg, metadata, res.Run); e != nil {
				return nil, nil, "", e
			}
		}
		return nil, nil, prev, nil
	}
	unreserve := func() { _ = h.b.Docs.ApplyDocs(ctx, store.DocOp{Coll: CollMessage, Key: msgKey, Delete: true}) }
	run, err := h.b.Start(h.base, Proto, runtime.Invocation{ID: inv, User: c.user, Session: ctxID, Input: input, Runnable: h.opts.Runnable, Files: files})
	if err != nil {
		unreserve() // nothing ran: sending it again may start it
		h.release(lt)
		return nil, nil, "", h.startError(err)
	}
	t.Run = run.ID
	if err = h.b.Docs.PutTaskIndex(ctx, c.user, t.ID, run.ID); err == nil {
		err = h.save(ctx, c.user, t, true)
	}
	if err != nil {
		// Without its record the task cannot be found: stop the run.
		_ = h.b.Cancel(c.user, run.ID)
		go func() {
			for range run.Events {
			}
			h.release(lt)
		}()
		return nil, nil, "", c.internal("create task "+t.ID, err)
	}
	if stream {
		sub = lt.subscribe()
	}
	go h.pump(lt, run)
	return lt, sub, "", nil
}

// adoptTask records the task of an orphaned message record prev whose
// request started run and died before recording the task: working, in the
// claim's context, with the message as its history.
func (c *call) adoptTask(prev []byte, msg Message, metadata json.RawMessage, run string) *rpcError {
	var r messageRecord
	if err := json.Unmarshal(prev, &r); err != nil || r.Claim == nil {
		return c.internal("read message "+msg.MessageID, fmt.Errorf("a2a: message record without a claim: %v", err))
	}
	now := c.h.now()
	t := &Task{ID: r.Task, ContextID: r.Claim.Session, Run: run, Status: taskStatus{State: stateWorking, Time: now},
		Created: now, Updated: now, Metadata: metadata}
	msg.TaskID, msg.ContextID = t.ID, t.ContextID
	t.History = []Message{msg}
	ctx := context.WithoutCancel(c.r.Context())
	err := c.h.b.Docs.PutTaskIndex(ctx, c.user, t.ID, run)
	if err == nil {
		err = c.h.save(ctx, c.user, t, true)
	}
	if err != nil {
		return c.internal("create task "+t.ID, err)
	}
	return nil
}

// continueTask resumes an input-required task with the message's answer.
func (c *call) continueTask(msg Message, push *pushConfig, stream bool) (*liveTask, *subscriber, *rpcError) {
	h := c.h
	t, e := c.load(msg.TaskID)
	if e != nil {
		return nil, nil, e
	}
	if msg.ContextID != "" && msg.ContextID != t.ContextID {
		return nil, nil, invalidParams("message.contextId", fmt.Sprintf("contextId %q does not match task %s's context", msg.ContextID, t.ID))
	}
	check := func(t *Task) *rpcError {
		switch {
		case t.Status.State.terminal():
			return unsupported(fmt.Sprintf("task %s is %s: a terminal task takes no more messages", t.ID, t.Status.State))
		case t.Status.State != stateInputRequired:
			return unsupported(fmt.Sprintf("task %s is %s: send the next message when it is input-required", t.ID, t.Status.State))
		}
		return nil
	}
	if e := check(t); e != nil {
		return nil, nil, e
	}
	lt, err := h.claim(c.user, t)
	if errors.Is(err, errBusy) {
		return nil, nil, unsupported(fmt.Sprintf("task %s is working: send the next message when it is input-required", t.ID))
	}
	if err != nil {
		return nil, nil, h.startError(err)
	}
	lt.setTrace(h.pushes.traceOf(c.r.Context()))
	// Read the record again now that no one else changes it.
	ctx := context.WithoutCancel(c.r.Context())
	t, err = h.readTask(ctx, c.user, t.ID)
	if err != nil {
		h.release(lt)
		return nil, nil, c.internal("read task "+msg.TaskID, err)
	}
	lt.mu.Lock()
	lt.t = t
	lt.mu.Unlock()
	if e := check(t); e != nil {
		h.release(lt)
		return nil, nil, e
	}
	var files []runtime.InputFile
	resume, e := resumeRequest(t, msg)
	if e == nil {
		files, e = inputFiles(msg)
	}
	if e != nil {
		h.release(lt)
		return nil, nil, e
	}
	if push != nil {
		if _, e := h.addPush(t, *push); e != nil {
			h.release(lt)
			return nil, nil, e
		}
	}
	run, err := h.b.Start(h.base, Proto, runtime.Invocation{User: c.user, Session: t.ContextID, Resume: resume, Files: files})
	if err != nil {
		h.release(lt)
		return nil, nil, h.startError(err)
	}
	msg.ContextID = t.ContextID
	var sub *subscriber
	h.change(lt, func(t *Task) []update {
		t.History = append(t.History, msg)
		return nil
	})
	if stream {
		sub = lt.subscribe()
	}
	go h.pump(lt, run)
	return lt, sub, nil
}

// inputText turns a message into the run's input: the text parts, one per
// line, with data parts as JSON; a message that is one data part is that
// JSON (the Runner decodes it for a typed input field). File parts are the
// invocation's files (inputFiles), not text.
func inputText(m Message) (string, *rpcError) {
	if len(m.Parts) == 1 && m.Parts[0].Data != nil {
		return string(m.Parts[0].Data), nil
	}
	var lines []string
	for _, p := range m.Parts {
		switch {
		case p.Text != nil:
			lines = append(lines, *p.Text)
		case p.Data != nil:
			lines = append(lines, string(p.Data))
		}
	}
	return strings.Join(lines, "\n"), nil
}

// inputFiles are a message's file parts as the invocation's files (stored
// as artifacts, images given to models that take them: spec/runner.md,
// "Input files"): bytes (raw; 0.3 file.bytes) or an http(s) URL, which the
// server does not fetch; another URL is -32005.
func inputFiles(m Message) ([]runtime.InputFile, *rpcError) {
	var out []runtime.InputFile
	for _, p := range m.Parts {
		switch {
		case p.Raw != nil:
			out = append(out, runtime.InputFile{Name: p.Filename, MediaType: p.MediaType, Data: p.Raw})
		case p.URL != "":
			if !strings.HasPrefix(p.URL, "https://") && !strings.HasPrefix(p.URL, "http://") {
				return nil, contentTypeNotSupported("a file part's URL must be http or https")
			}
			out = append(out, runtime.InputFile{Name: p.Filename, MediaType: p.MediaType, URL: p.URL})
		}
	}
	if len(out) > runtime.MaxInputFiles {
		return nil, invalidParams("message.parts", fmt.Sprintf("at most %d file parts", runtime.MaxInputFiles))
	}
	return out, nil
}

// resumeRequest turns the answer in a follow-up message into the resume of
// the task's run. The answer is the message's first data part, else its
// text (JSON when it parses, else a JSON string). One pending interrupt
// takes the answer as its value; several take an object keyed by
// interrupt id (or node name); pending decisions take an object keyed by
// decision id of {"action", "value"}.
func resumeRequest(t *Task, m Message) (*runtime.ResumeRequest, *rpcError) {
	var answer json.RawMessage
	var texts []string
	for _, p := range m.Parts {
		if p.Data != nil && answer == nil {
			answer = p.Data
		}
		if p.Text != nil {
			texts = append(texts, *p.Text)
		}
	}
	if answer == nil {
		text := strings.TrimSpace(strings.Join(texts, "\n"))
		if json.Valid([]byte(text)) {
			answer = json.RawMessage(text)
		} else {
			answer, _ = json.Marshal(text)
		}
	}
	req := &runtime.ResumeRequest{Run: t.Run}
	switch {
	case len(t.Decisions) > 0:
		// runtime.DecisionAnswers: the answer every front end takes.
		ds, err := runtime.DecisionAnswers(t.Decisions, answer)
		if err != nil {
			return nil, invalidParams("message.parts", "the task waits for decisions: "+err.Error())
		}
		req.Decisions = ds
	case len(t.Interrupts) == 1:
		req.Values = map[string]json.RawMessage{t.Interrupts[0].ID: answer}
	case len(t.Interrupts) > 1:
		if err := json.Unmarshal(answer, &req.Values); err != nil || len(req.Values) == 0 {
			var ids []string
			for _, it := range t.Interrupts {
				ids = append(ids, it.ID)
			}
			return nil, invalidParams("message.parts", "the task waits for several answers: send a data part with an object keyed by interrupt id ("+strings.Join(ids, ", ")+")")
		}
	default:
		return nil, unsupported(fmt.Sprintf("task %s waits for nothing this server can answer", t.ID))
	}
	return req, nil
}

// load returns user's task as it is now: the live copy when a run is in
// flight here, else the stored record (settled first when a previous
// process left it working).
func (c *call) load(id string) (*Task, *rpcError) {
	if lt := c.h.liveFor(c.user, id); lt != nil {
		return lt.snapshot(), nil
	}
	ctx := c.r.Context()
	t, err := c.h.readTask(ctx, c.user, id)
	if errors.Is(err, errTaskNotFound) {
		return nil, taskNotFound(id)
	}
	if err != nil {
		return nil, c.internal("read task "+id, err)
	}
	if t.Status.State == stateSubmitted || t.Status.State == stateWorking {
		if t, err = c.h.recoverTask(ctx, c.user, t); err != nil {
			return nil, c.internal("recover task "+id, err)
		}
	}
	return t, nil
}

type getParams struct {
	ID            string `json:"id"`
	HistoryLength *int32 `json:"historyLength"`
}

func (c *call) getTask() (any, *rpcError) {
	var p getParams
	if e := decodeTaskParams(c.params, &p, &p.ID); e != nil {
		return nil, e
	}
	if p.HistoryLength != nil && *p.HistoryLength < 0 {
		return nil, invalidParams("historyLength", "historyLength must not be negative")
	}
	t, e := c.load(p.ID)
	if e != nil {
		return nil, e
	}
	return encodeTask(c.v, t.view(p.HistoryLength, true)), nil
}

// idParams are the params of a method that names a task and nothing else.
type idParams struct {
	ID string `json:"id"`
}

// decodeTaskParams decodes the params of a method that names a task; the
// task id (id points into p) is required.
func decodeTaskParams(raw json.RawMessage, p any, id *string) *rpcError {
	if e := decodeParams(raw, p); e != nil {
		return e
	}
	if *id == "" {
		return invalidParams("id", "id is required")
	}
	return nil
}

// cancelTask cancels a task's run (a run in flight), or a task waiting for
// input (its run stays interrupted in the store and is never resumed
// through A2A). A terminal task is -32002.
func (c *call) cancelTask() (any, *rpcError) {
	var p idParams
	if e := decodeTaskParams(c.params, &p, &p.ID); e != nil {
		return nil, e
	}
	h := c.h
	for attempt := 0; attempt < 3; attempt++ {
		t, e := c.load(p.ID)
		if e != nil {
			return nil, e
		}
		if t.Status.State.terminal() {
			if attempt > 0 && t.Status.State == stateCanceled {
				return encodeTask(c.v, t), nil
			}
			return nil, taskNotCancelable(t.ID, t.Status.State)
		}
		if c.remote(t) {
			// A run in flight without a pump here (another replica
			// drives it, or one will take it over): ask for its cancel
			// through the store and wait until it stops.
			if err := h.b.Cancel(c.user, t.Run); err != nil && !errors.Is(err, server.ErrNotFound) {
				return nil, c.internal("cancel task "+p.ID, err)
			}
			if _, e := c.awaitSettled(t); e != nil {
				return nil, e
			}
			continue
		}
		if lt := h.liveFor(c.user, p.ID); lt != nil {
			// A run in flight: cancel it and wait for the pump to record
			// the end.
			_ = h.b.Cancel(c.user, t.Run)
			select {
			case <-lt.done:
			case <-c.r.Context().Done():
				return nil, &rpcError{Code: jsonrpc.InternalError, Message: "canceled while waiting for the task to stop", status: http.StatusServiceUnavailable}
			}
			continue
		}
		lt, err := h.claim(c.user, t)
		if errors.Is(err, errBusy) {
			continue
		}
		if err != nil {
			return nil, h.startError(err)
		}
		cur, err := h.readTask(context.WithoutCancel(c.r.Context()), c.user, p.ID)
		if err != nil {
			h.release(lt)
			return nil, c.internal("read task "+p.ID, err)
		}
		lt.mu.Lock()
		lt.t = cur
		lt.mu.Unlock()
		if cur.Status.State.terminal() {
			h.release(lt)
			return nil, taskNotCancelable(cur.ID, cur.Status.State)
		}
		h.change(lt, func(t *Task) []update {
			st := taskStatus{State: stateCanceled, Time: h.now()}
			t.Status, t.Interrupts, t.Decisions = st, nil, nil
			return []update{{Status: &st, Final: true}}
		})
		out := lt.snapshot()
		h.release(lt)
		return encodeTask(c.v, out), nil
	}
	return nil, unsupported("the task kept changing while it was being canceled; try again")
}

// subscribe answers SubscribeToTask (tasks/resubscribe): the task now,
// then its updates until its run ends. A task waiting for input has no
// run in flight: the stream is the task (and, in 0.3, its final status).
func (c *call) subscribe() {
	var p idParams
	if e := decodeTaskParams(c.params, &p, &p.ID); e != nil {
		c.finish(nil, e)
		return
	}
	if lt := c.h.liveFor(c.user, p.ID); lt != nil {
		if sub := lt.subscribe(); sub != nil {
			c.stream(sub)
			return
		}
		<-lt.done // released meanwhile: its task is saved once done closes
	}
	t, e := c.load(p.ID)
	if e != nil {
		c.finish(nil, e)
		return
	}
	if t.Status.State.terminal() {
		c.finish(nil, unsupported(fmt.Sprintf("task %s is %s: there is nothing to subscribe to", t.ID, t.Status.State)))
		return
	}
	if c.remote(t) {
		c.streamRemote(t)
		return
	}
	c.streamStored(t)
}

type listParams struct {
	ContextID            string  `json:"contextId"`
	Status               string  `json:"status"`
	PageSize             *int32  `json:"pageSize"`
	PageToken            string  `json:"pageToken"`
	HistoryLength        *int32  `json:"historyLength"`
	StatusTimestampAfter *string `json:"statusTimestampAfter"`
	IncludeArtifacts     bool    `json:"includeArtifacts"`
}

type listResult struct {
	Tasks         []*task1 `json:"tasks"`
	NextPageToken string   `json:"nextPageToken"`
	PageSize      int      `json:"pageSize"`
	TotalSize     int      `json:"totalSize"`
}

// listTasks answers ListTasks (1.0): the user's tasks, most recently
// updated first, filtered, in pages whose token is the last key returned.
func (c *call) listTasks() (any, *rpcError) {
	var p listParams
	if e := decodeParams(c.params, &p); e != nil {
		return nil, e
	}
	size := 50
	if p.PageSize != nil {
		if *p.PageSize < 1 || *p.PageSize > 100 {
			return nil, invalidParams("pageSize", fmt.Sprintf("pageSize must be between 1 and 100, got %d", *p.PageSize))
		}
		size = int(*p.PageSize)
	}
	want, ok := parseState1(p.Status)
	if !ok {
		return nil, invalidParams("status", fmt.Sprintf("unknown task state %q", p.Status))
	}
	if p.HistoryLength != nil && *p.HistoryLength < 0 {
		return nil, invalidParams("historyLength", "historyLength must not be negative")
	}
	var since time.Time
	if p.StatusTimestampAfter != nil {
		var err error
		if since, err = time.Parse(time.RFC3339Nano, *p.StatusTimestampAfter); err != nil {
			return nil, invalidParams("statusTimestampAfter", "statusTimestampAfter must be an ISO 8601 timestamp")
		}
	}
	h := c.h
	prefix := h.recentPrefix(c.user)
	after := ""
	if p.PageToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(p.PageToken)
		if err != nil || !strings.HasPrefix(string(b), prefix) || len(b) == len(prefix) {
			return nil, invalidParams("pageToken", "pageToken is not one this server returned")
		}
		after = string(b)
	}
	ctx := c.r.Context()
	docs, err := h.b.Docs.ListDocs(ctx, CollRecent, prefix, "", 0)
	if err != nil {
		return nil, c.internal("list tasks", err)
	}
	type match struct{ key, task string }
	var matches []match
	for _, d := range docs {
		var e recentEntry
		if err := json.Unmarshal(d.Value, &e); err != nil {
			h.log.Warn("a2a: undecodable task index entry", "key", d.Key, "err", err)
			continue
		}
		if (p.ContextID != "" && e.Context != p.ContextID) || (want != "" && e.State != want) ||
			(!since.IsZero() && e.Time.Before(since)) {
			continue
		}
		matches = append(matches, match{d.Key, e.Task})
	}
	start := 0
	for start < len(matches) && after != "" && matches[start].key <= after {
		start++
	}
	end := min(start+size, len(matches))
	out := listResult{Tasks: []*task1{}, PageSize: size, TotalSize: len(matches)}
	for _, m := range matches[start:end] {
		t, e := c.load(m.task)
		if e != nil {
			if e.Code == CodeTaskNotFound {
				continue
			}
			return nil, e
		}
		out.Tasks = append(out.Tasks, encodeTask1(t.view(p.HistoryLength, p.IncludeArtifacts)))
	}
	if end < len(matches) {
		out.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(matches[end-1].key))
	}
	return out, nil
}
