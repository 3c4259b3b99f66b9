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
// when the client leaves, or after StreamLimit (spec/inspector.md). With a
// Backend each commit of the run wakes it (Backend.Changed); Poll is the
// fallback, and the only trigger without one.
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
	keep := time.NewTicker(h.cfg.KeepAlive)
	defer keep.Stop()
	atRest := 0
	for {
		// Woken by each commit of the run (with a Backend: here, or on
		// another replica), else on the poll.
		var changed <-chan struct{}
		unwatch := func() {}
		if h.cfg.Backend != nil {
			changed, unwatch = h.cfg.Backend.Changed(run.ID)
		}
		evs, err := h.sessions.RunEvents(ctx, run, session.EventFilter{After: after})
		if err != nil {
			unwatch()
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
				unwatch()
				return
			}
			after = e.Seq
		}
		if len(evs) > 0 {
			if rc.Flush() != nil {
				unwatch()
				return
			}
			atRest = 0
		} else if h.atRest(r, run) {
			// Twice in a row: a resume admitted just before its first
			// commit is running, not at rest.
			if atRest++; atRest >= 2 {
				unwatch()
				cur, _ := h.cfg.Store.GetRun(ctx, run.ID)
				_, _ = fmt.Fprintf(w, "event: end\ndata: {\"run\":%q,\"status\":%q}\n\n", run.ID, cur.Status)
				_ = rc.Flush()
				return
			}
		}
		wait := h.cfg.Poll
		if atRest > 0 || len(evs) > 0 && evs[len(evs)-1].Kind == runtime.EventRunFinished {
			// Whether it is at rest is read again soon, not on a wake-up
			// (a run at rest commits nothing).
			wait = min(wait, restRecheck)
		}
		tick := time.NewTimer(wait)
		stop := false
		select {
		case <-ctx.Done():
			stop = true
		case <-limit.C:
			stop = true
		case <-keep.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				stop = true
			}
		case <-changed:
		case <-tick.C:
		}
		tick.Stop()
		unwatch()
		if stop {
			return
		}
	}
}

// restRecheck is how soon a stream reads again whether its run is at rest
// once it may be.
const restRecheck = 250 * time.Millisecond

// atRest reports whether run is neither running in the store nor driven by
// this server.
func (h *Handler) atRest(r *http.Request, run store.Run) bool {
	if h.cfg.Backend != nil && h.cfg.Backend.Active(run.Session.User, run.ID) {
		return false
	}
	cur, err := h.cfg.Store.GetRun(r.Context(), run.ID)
	return err == nil && cur.Status != store.RunStatus(runtime.StatusRunning)
}
