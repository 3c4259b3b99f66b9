package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/inspect"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// stream sends a run's ledger events as Server-Sent Events: those after
// Last-Event-ID (or ?after), then each one the run commits. It reads the
// ledger, so it follows a run whoever drives it, and ends once the run is at
// rest (not running, and not driven by this server) with every event sent,
// when the client leaves, or after StreamLimit (spec/inspector.md).
func (h *Handler) stream(w http.ResponseWriter, r *http.Request) {
	run, ok := h.lookupRun(w, r)
	if !ok {
		return
	}
	from := r.Header.Get("Last-Event-ID")
	if from == "" {
		from = r.URL.Query().Get("after")
	}
	var after uint64
	if from != "" {
		n, err := strconv.ParseUint(from, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request", "Last-Event-ID / after is not a sequence number", nil)
			return
		}
		after = n
	}
	rc := http.NewResponseController(w)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	ctx := r.Context()
	limit := time.NewTimer(h.cfg.StreamLimit)
	defer limit.Stop()
	poll := time.NewTicker(h.cfg.Poll)
	defer poll.Stop()
	keep := time.NewTicker(h.cfg.KeepAlive)
	defer keep.Stop()
	atRest := 0
	for {
		evs, err := h.sessions.Events(ctx, run.Session, session.EventFilter{After: after, Run: run.ID})
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("ui: stream", "run", run.ID, "err", err)
				_, _ = fmt.Fprintf(w, "event: error\ndata: {\"message\":\"the ledger could not be read\"}\n\n")
				_ = rc.Flush()
			}
			return
		}
		for _, e := range evs {
			b, err := json.Marshal(event{Event: e, Summary: inspect.Summary(e)})
			if err != nil {
				continue
			}
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Kind, b); err != nil {
				return
			}
			after = e.Seq
		}
		if len(evs) > 0 {
			if rc.Flush() != nil {
				return
			}
			atRest = 0
		} else if h.atRest(r, run) {
			// Twice in a row: a resume admitted just before its first
			// commit is running, not at rest.
			if atRest++; atRest >= 2 {
				cur, _ := h.cfg.Store.GetRun(ctx, run.ID)
				_, _ = fmt.Fprintf(w, "event: end\ndata: {\"run\":%q,\"status\":%q}\n\n", run.ID, cur.Status)
				_ = rc.Flush()
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-limit.C:
			return
		case <-keep.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case <-poll.C:
		}
	}
}

// atRest reports whether run is neither running in the store nor driven by
// this server.
func (h *Handler) atRest(r *http.Request, run store.Run) bool {
	if h.cfg.Backend != nil && h.cfg.Backend.Active(run.Session.User, run.ID) {
		return false
	}
	cur, err := h.cfg.Store.GetRun(r.Context(), run.ID)
	return err == nil && cur.Status != store.RunStatus(runtime.StatusRunning)
}
