// Package agui serves a runnable over AG-UI 1.0 (spec/agui.md): a POST of a
// RunAgentInput starts or resumes a run of the thread's session and answers
// with the run's events as AG-UI events over SSE.
//
// It translates and never executes: runs go through server.Backend (which
// admits them and owns the Runner), what a thread waits for is read from
// the session ledger and its state from the Runner (the run's checkpoints),
// and the user is the request's authenticated user (server.UserFrom), so a
// thread id only ever names a session of that user.
package agui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// proto is the protocol label of metrics and Backend.Start.
const proto = "agui"

// Options configure the handler. The zero value is ready to use.
type Options struct {
	// Runnable is the graph or agent a new run starts; "" selects the serve
	// block's run, else the program's only runnable (the Runner's rule).
	Runnable string
}

// New returns the AG-UI handler over b. Mount it at the configured path
// (default "/agui") and at that path + "/" (for the cancel endpoint,
// path + "/cancel"), behind the server's authentication middleware.
//
// b must have a Runner, Docs, Sessions, NewID and a Clock; New panics
// otherwise (a wiring error, found at startup).
func New(b *server.Backend, opts Options) http.Handler {
	if b == nil || b.Runner == nil || b.Docs == nil || b.Sessions == nil || b.NewID == nil || b.Clock == nil {
		panic("agui.New: the Backend needs a Runner, Docs, Sessions, NewID and a Clock")
	}
	h := &handler{b: b, opts: opts, sessions: b.Sessions, docs: b.Docs, log: b.Logger,
		translators: make(translatorCache, b.Limits.WithDefaults().MaxRuns)}
	h.latestState = func(r runRef) (map[string]json.RawMessage, bool) {
		return h.runState(r.ctx, runtime.Invocation{User: r.user, Session: r.session, Resume: &runtime.ResumeRequest{Run: r.run}})
	}
	if h.log == nil {
		h.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return h
}

type handler struct {
	b        *server.Backend
	opts     Options
	sessions *session.Service
	docs     store.Docs
	log      *slog.Logger
	reg      registry
	// translators are the translators of finished requests, reused.
	translators translatorCache
	// latestState is a translator's latest: runState of a paused run
	// (made once, not a closure per request).
	latestState func(runRef) (map[string]json.RawMessage, bool)
}

// ServeHTTP answers a run (POST <path>) or a cancel (POST <path>/cancel).
// Request counts and latency are the server's (server.Server wraps every
// mount); the adapter counts its own error codes.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/cancel") {
		h.serveCancel(w, r)
		return
	}
	h.serveRun(w, r)
}

// serveRun answers one RunAgentInput.
func (h *handler) serveRun(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.httpError(w, http.StatusMethodNotAllowed, "method_not_allowed", "POST a RunAgentInput")
		return
	}
	user := server.UserFrom(r.Context())
	if user == "" {
		h.httpError(w, http.StatusUnauthorized, "unauthorized", "the request is not authenticated")
		return
	}
	lim := h.b.Limits.WithDefaults()
	input, err := parseInput(http.MaxBytesReader(w, r.Body, lim.MaxBodyBytes))
	if err != nil {
		status := http.StatusBadRequest
		if ie := (*inputError)(nil); errors.As(err, &ie) && ie.status != 0 {
			status = ie.status
		}
		h.httpError(w, status, "invalid_input", err.Error())
		return
	}
	in := &input // not on the heap: what in is passed to keeps no pointer to it
	key := store.SessionKey{App: h.b.App(), User: user, Session: in.ThreadID}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if a := h.reg.get(regKey{user, in.ThreadID}); a != nil && a.runID == in.RunID && a.run != "" {
		// Re-sent while its first request still streams its run here:
		// it follows the run, as anywhere else.
		s := newStream(w, r, h.b.Clock, lim.WriteTimeout, cancel)
		h.rejoin(ctx, r, s, key, in, runRecord{Run: a.run}, cancel)
		return
	}
	p, err := h.plan(ctx, key, in)
	pe, _ := err.(*planError) // plan returns it as it is, never wrapped
	if err != nil && pe == nil {
		h.log.Error("agui: read thread", "thread", in.ThreadID, "user", user, "err", err)
		h.httpError(w, http.StatusInternalServerError, "internal", "the thread could not be read")
		return
	}

	s := newStream(w, r, h.b.Clock, lim.WriteTimeout, cancel)
	if pe != nil && pe.pending != nil {
		h.redeliver(r.Context(), s, key, in, pe)
		return
	}
	if pe != nil {
		h.b.Metrics.Error(proto, pe.code)
		s.send(Event{Type: RunError, Timestamp: millis(h.b.Clock.Now()), Message: pe.msg, Code: pe.code})
		return
	}
	if p.cancelled {
		ts := millis(h.b.Clock.Now())
		s.send(Event{Type: RunStarted, Timestamp: ts, ThreadID: in.ThreadID, RunID: in.RunID},
			Event{Type: RunFinished, Timestamp: ts, ThreadID: in.ThreadID, RunID: in.RunID, Outcome: &Outcome{Type: "cancelled"}})
		return
	}
	p.inv.Runnable = h.opts.Runnable
	// The client's runId is recorded with the run: the same request sent
	// again follows this run instead of starting another.
	p.inv.ID = h.b.NewID("inv_") // its run's input event names it (reserveRun)
	rk := runKey(key, in.RunID)
	if p.inv.Resume == nil && h.b.Runner.AdmitsInOneWrite() {
		// The record goes in the run's admission, naming it: no
		// reservation before, no settlement after. A refused admission
		// goes the reservation's way below, which finds an earlier
		// request's record whatever refused it: the record itself, or
		// that request's run, still busy in the thread (resumed after a
		// restart), or the run limit.
		p.inv.Records = func(run string) []store.DocOp {
			return []store.DocOp{{Coll: CollRuns, Key: rk, Value: (&runRecord{Run: run}).marshal(), IfAbsent: true}}
		}
		state := h.startState(ctx, p.inv)
		run, err := h.b.Start(ctx, proto, p.inv)
		if err == nil {
			h.follow(ctx, r, s, key, in, run, state, cancel)
			return
		}
		p.inv.Records = nil
	}
	// Else the runId is reserved before the run starts, and the run
	// recorded once started (Backend.Reserve).
	prev, reserved, err := h.reserveRun(ctx, key, rk, in.RunID, p.inv.ID)
	if err != nil {
		h.log.Error("agui: reserve runId", "thread", in.ThreadID, "user", user, "err", err)
		s.send(Event{Type: RunError, Timestamp: millis(h.b.Clock.Now()), Message: "the runId could not be recorded", Code: "internal"})
		return
	}
	if !reserved {
		h.rejoin(ctx, r, s, key, in, prev, cancel)
		return
	}
	state := h.startState(ctx, p.inv)
	run, err := h.b.Start(ctx, proto, p.inv)
	if err != nil {
		h.settleRun(r.Context(), rk, "")
		h.startFailed(s, in, user, err)
		return
	}
	h.settleRun(r.Context(), rk, run.ID)
	h.follow(ctx, r, s, key, in, run, state, cancel)
}

// startFailed answers a request whose run Backend.Start refused.
func (h *handler) startFailed(s stream, in *runInput, user string, err error) {
	code, msg := startError(err)
	if code == "internal" {
		h.log.Error("agui: start run", "thread", in.ThreadID, "user", user, "err", err)
	}
	h.b.Metrics.Error(proto, code)
	s.send(Event{Type: RunError, Timestamp: millis(h.b.Clock.Now()), Message: msg, Code: code})
}

// follow streams run to the client as AG-UI events from state on, until
// the run ends or the client is lost.
func (h *handler) follow(ctx context.Context, r *http.Request, s stream, key store.SessionKey, in *runInput, run *server.Run, state map[string]json.RawMessage, cancel context.CancelFunc) {
	act := &active{runID: in.RunID, run: run.ID, cancel: cancel}
	rk := regKey{key.User, in.ThreadID}
	// Not when a request of the thread streams the run here: a re-sent
	// one follows it, and leaving it to that request.
	own := h.reg.add(rk, act)
	defer h.reg.remove(rk, act)

	tr := h.translators.get(in.ThreadID, in.RunID, h.b.NewID, in.Tools)
	defer h.translators.put(tr) // its events are written when follow returns
	tr.latest, tr.ref = h.latestState, runRef{ctx: ctx, user: key.User, session: in.ThreadID, run: run.ID}
	// A batch of events is flushed when no further event is waiting and
	// the run is not writing to the store (server.Run.Quiet, as the OpenAI
	// stream does): a burst costs one write, not one per event.
	// Flush stops the batch's write watchdog too: every batch written is
	// flushed, at the latest when the loop ends.
	first := tr.start(h.b.Clock.Now(), state)
	ok := s.frames(first...)
	pending := len(first) > 0
	flush := func(now bool) {
		switch {
		case !pending:
		case now || !ok || run.Quiet():
			ok = s.sse.Flush() && ok
			pending = false
		case run.Writing():
			ok = s.sse.Hold() // until the write ends: nothing is sent meanwhile
		}
	}
	flush(false)
	for ok && !tr.done {
		var evs []Event
		select {
		case e, open := <-run.Events:
			if open {
				evs = tr.translate(e)
			} else {
				evs = tr.end(h.b.Clock.Now(), "internal", "the run's event stream ended before the run finished")
			}
		case <-run.WriteEnded(): // frames held for a write of the run's
			flush(false)
			continue
		case <-ctx.Done(): // the client went away, or a write timed out
			ok = false
			continue
		}
		if tr.done {
			// Settle the thread before the client can see the end: a
			// client may send its next request as soon as it reads it.
			h.settle(r.Context(), key, run.ID, tr)
			h.reg.remove(rk, act)
		}
		ok = s.frames(evs...)
		pending = pending || len(evs) > 0
		if !tr.done {
			flush(false)
		}
	}
	if tr.done && ok {
		// The last events go with the body's end, in one write
		// (server.SSE.End): the handler returns right after.
		ok = s.sse.End()
	} else {
		flush(true)
	}
	if !ok && own {
		h.lost(r.Context(), key, run)
	}
}

// settle records a paused run's interrupts as they are asked (the ids sent
// with the outcome), so that a later request can tell whether its client
// received the pause (thread.go).
func (h *handler) settle(ctx context.Context, key store.SessionKey, run string, tr *translator) {
	if !tr.paused() {
		return
	}
	if err := h.putRecord(context.WithoutCancel(ctx), key, threadRecord{Run: run, Asked: tr.asked}); err != nil {
		h.log.Warn("agui: record a paused run", "run", run, "err", err)
	}
}

// lost handles a run whose client is gone before it got RUN_FINISHED (the
// request was aborted, or a write failed): the run is canceled, its events
// are drained to its end, and if it had already stopped on interrupts the
// client never saw, they are abandoned so that they do not block the
// thread (the run stays resumable from the CLI). The thread is busy until
// this is done.
func (h *handler) lost(ctx context.Context, key store.SessionKey, run *server.Run) {
	if err := h.b.Cancel(key.User, run.ID); err != nil && !errors.Is(err, server.ErrNotFound) {
		h.log.Warn("agui: cancel run", "run", run.ID, "err", err)
	}
	for range run.Events {
	}
	ctx = context.WithoutCancel(ctx)
	rec, err := h.b.GetRun(ctx, key.User, run.ID)
	if err != nil {
		h.log.Warn("agui: read a lost run", "run", run.ID, "err", err)
		return
	}
	if rec.Status == store.RunInterrupted || rec.Status == store.RunStatus(runtime.StatusNeedsDecision) {
		if err := h.abandon(ctx, key, run.ID); err != nil {
			h.log.Warn("agui: abandon a lost run's interrupts", "run", run.ID, "err", err)
		}
	}
}

// startError maps a Backend.Start error to a RUN_ERROR code and message.
func startError(err error) (code, msg string) {
	switch {
	case errors.Is(err, server.ErrOverloaded):
		return "overloaded", "the server is running as many runs as it may; retry later"
	case errors.Is(err, server.ErrShuttingDown):
		return "shutting_down", "the server is shutting down"
	case errors.Is(err, runtime.ErrSessionBusy):
		return "thread_busy", "the thread has an active run: wait for it to finish or cancel it"
	case errors.Is(err, runtime.ErrInvalidResume):
		return "invalid_resume", err.Error()
	case errors.Is(err, runtime.ErrNotResumable):
		return "not_resumable", err.Error()
	case errors.Is(err, runtime.ErrInvalidInvocation):
		return "invalid_input", err.Error()
	case errors.Is(err, runtime.ErrUnknownRunnable):
		return "unknown_runnable", err.Error()
	case errors.Is(err, context.Canceled):
		return "cancelled", "the request was cancelled"
	}
	return "internal", "the run could not be started"
}

// cancelRequest is the body of POST <path>/cancel.
type cancelRequest struct {
	ThreadID string `json:"threadId"`
	RunID    string `json:"runId"`
}

// serveCancel cancels the authenticated user's active run on a thread (and,
// when runId is given, only if it is that request's run). The run's stream
// then ends with RUN_FINISHED whose outcome is cancelled.
func (h *handler) serveCancel(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.httpError(w, http.StatusMethodNotAllowed, "method_not_allowed", `POST {"threadId", "runId"?}`)
		return
	}
	user := server.UserFrom(r.Context())
	if user == "" {
		h.httpError(w, http.StatusUnauthorized, "unauthorized", "the request is not authenticated")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	var req cancelRequest
	if err == nil {
		err = decodeStrict(body, &req)
	}
	if err == nil {
		err = checkID("threadId", req.ThreadID)
	}
	if err != nil {
		h.httpError(w, http.StatusBadRequest, "invalid_input", fmt.Sprintf(`the body must be {"threadId", "runId"?}: %v`, err))
		return
	}
	a := h.reg.get(regKey{user, req.ThreadID})
	if a == nil || req.RunID != "" && req.RunID != a.runID || h.b.Cancel(user, a.run) != nil {
		h.httpError(w, http.StatusNotFound, "not_found", "no active run on this thread")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(map[string]string{"threadId": req.ThreadID, "runId": a.runID, "status": "cancelling"})
}

// httpError answers with a JSON error before any stream started:
// {"error": {"code", "message"}}.
func (h *handler) httpError(w http.ResponseWriter, status int, code, msg string) {
	h.b.Metrics.Error(proto, code)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]map[string]string{"error": {"code": code, "message": msg}})
}

// stream writes events as SSE, one flush per send (follow flushes a
// batch when no further event is waiting). A write that takes
// longer than timeout fails (server.SSE's watchdog on the injected clock)
// and cancels the request, as does any failed write.
// A stream is passed by value (it is the SSE's pointer).
type stream struct{ sse *server.SSE }

func newStream(w http.ResponseWriter, r *http.Request, clock server.Timers, timeout time.Duration, cancel context.CancelFunc) stream {
	s := server.NewSSE(w, r, clock, timeout)
	s.OnFail = cancel
	s.ClearWriteDeadline() // a stream outlives the server's WriteTimeout
	s.Start()
	return stream{sse: s}
}

// send writes events as one flush; false once the client cannot be written.
func (s stream) send(evs ...Event) bool {
	if s.sse.Err() != nil {
		return false
	}
	if len(evs) == 0 {
		return true
	}
	s.frames(evs...)
	return s.sse.Flush()
}

// frames writes evs without flushing them; false once the stream has
// failed.
func (s stream) frames(evs ...Event) bool {
	if s.sse.Err() != nil {
		return false
	}
	for i := range evs {
		_ = s.sse.FrameWith(evs[i].appendJSON) // events hold only valid JSON: one that did not would be left out
	}
	return s.sse.Err() == nil
}
