package ui

import (
	"encoding/json"
	"errors"
	"net/http"
	"sort"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/evolution"
	"github.com/agentc/agentc/runtime/inspect"
	"github.com/agentc/agentc/runtime/store"
)

// runnerFor reports whether this server can continue run (its app is the
// Backend's), answering 409 no_runner when it cannot.
func (h *Handler) runnerFor(w http.ResponseWriter, run store.Run) bool {
	if h.cfg.Backend == nil || h.cfg.Backend.App() != run.Session.App {
		writeError(w, http.StatusConflict, "no_runner", "runs cannot be continued here (agentc ui FILE continues the runs of FILE's program; agentc serve those of its app)", nil)
		return false
	}
	return true
}

// resume continues run through the Backend as its own user, with a context
// that outlives the request; the run's events are read (and dropped) by a
// goroutine the run owns: it ends when they close. The ledger and the
// stream carry them.
func (h *Handler) resume(r *http.Request, run store.Run, req *runtime.ResumeRequest) error {
	started, err := h.cfg.Backend.Start(detached(r.Context()), "ui", runtime.Invocation{
		User: run.Session.User, Session: run.Session.Session, Resume: req})
	if err != nil {
		return err
	}
	go func() {
		for range started.Events {
		}
	}()
	return nil
}

// continueRun resumes run with req when this server can (runnerFor) and
// answers 202 with the run's new status.
func (h *Handler) continueRun(w http.ResponseWriter, r *http.Request, run store.Run, req *runtime.ResumeRequest) {
	if !h.runnerFor(w, run) {
		return
	}
	if err := h.resume(r, run, req); err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"run": run.ID, "status": string(runtime.StatusRunning)})
}

// withBody is what lookup finds for the request (its run, its candidate)
// and its JSON body as a T; ok is false when either is not, the answer
// written.
func withBody[T, K any](h *Handler, w http.ResponseWriter, r *http.Request, lookup func(http.ResponseWriter, *http.Request) (K, bool)) (k K, req T, ok bool) {
	if k, ok = lookup(w, r); ok {
		ok = h.decode(w, r, &req)
	}
	return k, req, ok
}

// waitsFor reports whether run is in status (described as what), answering
// 409 not_resumable when it is not.
func waitsFor(w http.ResponseWriter, run store.Run, status runtime.RunStatus, what string) bool {
	if run.Status != store.RunStatus(status) {
		writeError(w, http.StatusConflict, "not_resumable", "run "+run.ID+" is "+string(run.Status)+", not "+what, nil)
		return false
	}
	return true
}

type answerRequest struct {
	Values map[string]json.RawMessage `json:"values"`
}

func (h *Handler) answer(w http.ResponseWriter, r *http.Request) {
	run, req, ok := withBody[answerRequest](h, w, r, h.lookupRun)
	if !ok || !waitsFor(w, run, runtime.StatusInterrupted, "waiting for an answer") {
		return
	}
	if err := h.in.CheckAnswers(r.Context(), run.ID, -1, req.Values); err != nil {
		h.fail(w, r, err)
		return
	}
	h.continueRun(w, r, run, &runtime.ResumeRequest{Run: run.ID, Values: req.Values})
}

type decideRequest struct {
	// Decisions answer by decision id (or node): runtime.DecisionAnswer,
	// {"decision": "done"|"retry"|"fail", "result"?}, as every front end
	// takes it.
	Decisions map[string]json.RawMessage `json:"decisions"`
}

func (h *Handler) decide(w http.ResponseWriter, r *http.Request) {
	run, req, ok := withBody[decideRequest](h, w, r, h.lookupRun)
	if !ok || !waitsFor(w, run, runtime.StatusNeedsDecision, "needs_decision") {
		return
	}
	if len(req.Decisions) == 0 {
		writeError(w, http.StatusUnprocessableEntity, "invalid_value", "no decisions", inspect.FieldErrors{{Field: "decisions", Message: "settle at least one side effect"}})
		return
	}
	ids := make([]string, 0, len(req.Decisions))
	for id := range req.Decisions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	answers := map[string]runtime.DecisionRequest{}
	var fe inspect.FieldErrors
	for _, id := range ids {
		d, err := runtime.ParseDecisionAnswer(req.Decisions[id])
		if err != nil {
			fe = append(fe, inspect.FieldError{Field: id, Message: err.Error()})
			continue
		}
		answers[id] = d
	}
	if len(fe) > 0 {
		h.fail(w, r, fe)
		return
	}
	resume := &runtime.ResumeRequest{Run: run.ID}
	if err := h.sessions.DecideRequests(r.Context(), resume, answers); err != nil {
		h.fail(w, r, err)
		return
	}
	h.continueRun(w, r, run, resume)
}

type forkRequest struct {
	Step     *uint64                    `json:"step"`
	Set      map[string]json.RawMessage `json:"set"`
	Continue bool                       `json:"continue"`
	Values   map[string]json.RawMessage `json:"values"`
}

type forkResponse struct {
	inspect.Forked
	Status string `json:"status"`
}

func (h *Handler) fork(w http.ResponseWriter, r *http.Request) {
	run, req, ok := withBody[forkRequest](h, w, r, h.lookupRun)
	if !ok {
		return
	}
	if req.Step == nil {
		h.fail(w, r, inspect.FieldErrors{{Field: "step", Message: "the step to fork at is required"}})
		return
	}
	ctx := r.Context()
	if err := h.in.CheckEdits(ctx, run.ID, *req.Step, req.Set); err != nil {
		h.fail(w, r, err)
		return
	}
	if req.Continue {
		if !h.runnerFor(w, run) {
			return
		}
		st, err := h.in.State(ctx, run.ID, int64(*req.Step))
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if len(st.Interrupts) > 0 || len(req.Values) > 0 {
			if err := h.in.CheckAnswers(ctx, run.ID, int64(*req.Step), req.Values); err != nil {
				h.fail(w, r, err)
				return
			}
		}
	}
	forked, err := h.in.Fork(ctx, inspect.ForkRequest{Run: run.ID, Step: *req.Step, Set: req.Set})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := forkResponse{Forked: forked, Status: string(runtime.StatusInterrupted)}
	if req.Continue {
		nr := run
		nr.ID = forked.Run
		if err := h.resume(r, nr, &runtime.ResumeRequest{Run: forked.Run, Values: req.Values}); err != nil {
			h.fail(w, r, err)
			return
		}
		out.Status = string(runtime.StatusRunning)
	}
	writeJSON(w, http.StatusCreated, out)
}

func (h *Handler) cancel(w http.ResponseWriter, r *http.Request) {
	run, _, ok := withBody[struct{}](h, w, r, h.lookupRun)
	if !ok {
		return
	}
	if h.cfg.Backend == nil || h.cfg.Backend.Cancel(run.Session.User, run.ID) != nil {
		writeError(w, http.StatusConflict, "not_running", "run "+run.ID+" is "+string(run.Status)+" and not running on this server", nil)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"run": run.ID, "status": "canceling"})
}

func (h *Handler) approve(w http.ResponseWriter, r *http.Request) {
	cand, _, ok := withBody[struct{}](h, w, r, h.lookupCandidate)
	if !ok {
		return
	}
	c, err := h.in.Approve(r.Context(), cand.ID, h.caller(r).user)
	switch {
	case errors.Is(err, evolution.ErrNotPending):
		h.fail(w, r, err)
		return
	case err != nil: // a gate that holds for people too (spec, safety)
		h.fail(w, r, inspect.FieldErrors{{Field: cand.ID, Message: err.Error()}})
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (h *Handler) reject(w http.ResponseWriter, r *http.Request) {
	cand, req, ok := withBody[struct {
		Reason string `json:"reason"`
	}](h, w, r, h.lookupCandidate)
	if !ok {
		return
	}
	c, err := h.in.Reject(r.Context(), cand.ID, h.caller(r).user, req.Reason)
	h.reply(w, r, c, err)
}
