package agui

// A RunAgentInput sent again with the runId of an earlier one follows the
// run that request started instead of starting another (spec/agui.md,
// "Re-sent runs").

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// CollRuns maps a thread's runId to the run its first request started:
// key DocPath(app, user, thread, runId), value a runRecord ("" run, and
// the request's claim, while it starts it: server.Reserve).
const CollRuns = "agui.runs"

type runRecord struct {
	Run   string        `json:"run,omitempty"`
	Claim *server.Claim `json:"claim,omitempty"`
}

// marshal returns r as json.Marshal writes it, without its reflection
// (two records a request).
func (r *runRecord) marshal() []byte {
	n := len(r.Run) + 16
	if c := r.Claim; c != nil {
		n += len(c.Owner) + len(c.Session) + len(c.Inv) + 72
	}
	b := append(make([]byte, 0, n), '{')
	if r.Run != "" {
		b = types.AppendJSONString(append(b, `"run":`...), r.Run, true)
	}
	if c := r.Claim; c != nil {
		if r.Run != "" {
			b = append(b, ',')
		}
		b = types.AppendJSONString(append(b, `"claim":{"owner":`...), c.Owner, true)
		b = strconv.AppendInt(append(b, `,"since":`...), c.Since, 10)
		b = types.AppendJSONString(append(b, `,"session":`...), c.Session, true)
		b = types.AppendJSONString(append(b, `,"inv":`...), c.Inv, true)
		b = append(b, '}')
	}
	return append(b, '}')
}

// RecordRun reads a CollRuns record for retention: the run its request
// started, "" while it starts it.
func RecordRun(value []byte) (string, error) {
	var r runRecord
	if err := json.Unmarshal(value, &r); err != nil {
		return "", fmt.Errorf("agui: run record: %w", err)
	}
	return r.Run, nil
}

func runKey(key store.SessionKey, runID string) string {
	return store.DocPath(key.App, key.User, key.Session, runID)
}

// reserveRun records runID (its record's key rk: runKey) for a request
// about to start a run whose invocation id is inv, or returns what its
// earlier request recorded (reserved false). An orphaned reservation (its
// request died before recording its run) is taken over: the run its
// request started, recorded now, or this request's (server.Reserve).
func (h *handler) reserveRun(ctx context.Context, key store.SessionKey, rk, runID, inv string) (runRecord, bool, error) {
	v := (&runRecord{Claim: h.b.NewClaim(key.Session, inv)}).marshal()
	res, err := h.b.Reserve(ctx, key.User, CollRuns, rk, v, func(b []byte) (bool, error) {
		var r runRecord
		err := json.Unmarshal(b, &r)
		return r.Run != "", err
	})
	switch {
	case err != nil:
		return runRecord{}, false, fmt.Errorf("agui: reserve run %s: %w", runID, err)
	case res.Reserved:
		return runRecord{}, true, nil
	case res.Run != "":
		h.settleRun(ctx, rk, res.Run)
		return runRecord{Run: res.Run}, false, nil
	}
	var prev runRecord // here: on the heap only when it is read
	if err := json.Unmarshal(res.Prev, &prev); err != nil {
		return prev, false, fmt.Errorf("agui: run record %s: %w", runID, err)
	}
	return prev, false, nil
}

// settleRun records the run the request of a runId (its record's key rk:
// runKey) started, or (run "") releases the runId when none started.
// Deferred (spec/serve.md, "Re-sent requests"): a settlement lost in a
// crash leaves the reservation's claim, which a re-sent request completes
// with the run its invocation started, or replaces when none did.
func (h *handler) settleRun(ctx context.Context, rk, run string) {
	op := store.DocOp{Coll: CollRuns, Key: rk, Delete: true, Deferred: true}
	if run != "" {
		op.Value, op.Delete = (&runRecord{Run: run}).marshal(), false
	}
	if err := h.docs.ApplyDocs(context.WithoutCancel(ctx), op); err != nil {
		h.log.Warn("agui: record a runId", "run", run, "err", err)
	}
}

// rejoin answers a request re-sent with the runId of an earlier one: the
// run's recorded events (its state as a snapshot of the latest, not again
// as deltas), then, for a run its client's departure canceled, the rest of
// the run, resumed from its last step; for a run still in flight (in
// another request, here or on another replica, or about to be taken over
// from a replica that died), the rest of it as its ledger records it
// (Backend.Follow). A request that is still starting its run is a
// RUN_ERROR run_in_progress.
func (h *handler) rejoin(ctx context.Context, r *http.Request, s stream, key store.SessionKey, in *runInput, prev runRecord, cancel context.CancelFunc) {
	fail := func(code, msg string) {
		h.b.Metrics.Error(proto, code)
		s.send(Event{Type: RunError, Timestamp: millis(h.b.Clock.Now()), Message: msg, Code: code})
	}
	if prev.Run == "" {
		fail("run_in_progress", "a request with this runId is starting its run; send it again later")
		return
	}
	rec, err := h.b.GetRun(ctx, key.User, prev.Run)
	if err != nil {
		h.log.Error("agui: read a re-sent run", "run", prev.Run, "err", err)
		fail("internal", "the run of this runId could not be read")
		return
	}
	evs, err := h.b.Sessions.Events(ctx, key, session.EventFilter{Run: prev.Run})
	if err != nil {
		h.log.Error("agui: read a re-sent run's events", "run", prev.Run, "err", err)
		fail("internal", "the run of this runId could not be read")
		return
	}
	state := h.startState(ctx, runtime.Invocation{User: key.User, Session: key.Session, Resume: &runtime.ResumeRequest{Run: prev.Run}})
	live, err := h.b.Continuation(ctx, proto, key, prev.Run, rec.Status, evs, runtime.Invocation{User: key.User, Session: key.Session,
		Resume: &runtime.ResumeRequest{Run: prev.Run}})
	if err != nil {
		code, msg := startError(err)
		fail(code, msg)
		return
	}
	// The state is in the snapshot: its deltas are not sent again.
	keep := func(e *runtime.Event) bool { return e.Kind != runtime.EventStateDelta }
	h.follow(ctx, r, s, key, in, server.Rejoin(ctx, prev.Run, evs, keep, live), state, cancel)
}
