package openai

// Idempotency-Key: a chat request re-sent with the key of an earlier one
// answers with that request's run instead of starting another
// (spec/serve.md, "OpenAI in detail", Idempotency-Key).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

// IdempotencyHeader names a request's idempotency key.
const IdempotencyHeader = "Idempotency-Key"

// CollIdempotency maps a user's idempotency key to what its first request
// started: key DocPath(app, user, key), value an idemRecord.
const CollIdempotency = "openai.idempotency"

// idemRecord is what a key's first request recorded.
type idemRecord struct {
	V       int    `json:"v"`
	Hash    string `json:"hash"`    // SHA-256 of the request body, hex
	Session string `json:"session"` // the session the run is in
	ID      string `json:"id"`      // the completion id (chatcmpl-…)
	Created int64  `json:"created"` // the completion's created time (Unix s)
	Run     string `json:"run,omitempty"`
	Stream  bool   `json:"stream,omitempty"`
	// Claim is the reserving request's while it starts its run
	// (server.Reserve).
	Claim *server.Claim `json:"claim,omitempty"`
}

// IdempotencyRecord reads a CollIdempotency record for retention: the run
// its request started ("" while it starts it) and when the request came.
func IdempotencyRecord(value []byte) (run string, made time.Time, err error) {
	var r idemRecord
	if err := json.Unmarshal(value, &r); err != nil {
		return "", time.Time{}, fmt.Errorf("openai: idempotency record: %w", err)
	}
	return r.Run, time.Unix(r.Created, 0).UTC(), nil
}

// validIdemKey: 1 to 255 printable ASCII characters.
func validIdemKey(k string) bool {
	if k == "" || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

func bodyHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

func (h *Handler) idemKey(user, key string) string { return store.DocPath(h.b.App(), user, key) }

// reserve records key for a request about to start a run (rec, with its
// claim: its run's invocation id is rec.ID). It returns the earlier
// request's record when the key was used before (reserved false). An
// orphaned reservation (its request died before recording its run) is
// taken over: the run its request started, recorded now, or this
// request's (server.Reserve).
func (h *Handler) reserve(ctx context.Context, user, key string, rec idemRecord) (prev *idemRecord, reserved bool, err error) {
	rec.Claim = h.b.NewClaim(rec.Session, rec.ID)
	b, _ := json.Marshal(rec)
	res, err := h.b.Reserve(ctx, user, CollIdempotency, h.idemKey(user, key), b, func(v []byte) (bool, error) {
		var r idemRecord
		err := json.Unmarshal(v, &r)
		return r.Run != "", err
	})
	if err != nil || res.Reserved {
		return nil, res.Reserved, err
	}
	var old idemRecord
	if err := json.Unmarshal(res.Prev, &old); err != nil {
		return nil, false, fmt.Errorf("openai: idempotency record %s: %w", key, err)
	}
	if res.Run != "" {
		h.settle(ctx, user, key, old, res.Run)
		old.Run, old.Claim = res.Run, nil
	}
	return &old, false, nil
}

// settle records the run the key's request started, or (run "") releases
// the key when none started.
func (h *Handler) settle(ctx context.Context, user, key string, rec idemRecord, run string) {
	var err error
	if run == "" {
		err = h.b.Docs.ApplyDocs(ctx, store.DocOp{Coll: CollIdempotency, Key: h.idemKey(user, key), Delete: true})
	} else {
		rec.Run, rec.Claim = run, nil
		b, _ := json.Marshal(rec)
		err = h.b.Docs.ApplyDocs(ctx, store.DocOp{Coll: CollIdempotency, Key: h.idemKey(user, key), Value: b})
	}
	if err != nil {
		h.logger().Error("openai: idempotency record", "run", run, "err", err)
	}
}

// rejoin answers a re-sent request from its first request's run: the
// ledger's events of a run that ended; a canceled run (its client left)
// resumed, after the events it recorded; a run in flight (in another
// request, here or on another replica, or about to be taken over from a
// replica that died) followed through its ledger to its end
// (Backend.Follow).
func (h *Handler) rejoin(w http.ResponseWriter, r *http.Request, user string, rec *idemRecord, req *chatRequest) {
	ctx := r.Context()
	if rec.Run == "" {
		w.Header().Set("Retry-After", "1")
		h.fail(w, http.StatusConflict, "invalid_request_error", "", "idempotency_in_progress", "A request with this Idempotency-Key is starting its run; retry later")
		return
	}
	run, err := h.b.GetRun(ctx, user, rec.Run)
	if err != nil {
		h.logger().Error("openai: idempotent run", "run", rec.Run, "err", err)
		h.fail(w, http.StatusInternalServerError, "server_error", "", "internal", "could not read the run of this Idempotency-Key")
		return
	}
	key := store.SessionKey{App: h.b.App(), User: user, Session: rec.Session}
	evs, err := h.sessions.Events(ctx, key, session.EventFilter{Run: rec.Run})
	if err != nil {
		h.logger().Error("openai: idempotent run events", "run", rec.Run, "err", err)
		h.fail(w, http.StatusInternalServerError, "server_error", "", "internal", "could not read the run of this Idempotency-Key")
		return
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A canceled run's client left and it was canceled with it: it
	// continues from its last step, as the client asks again.
	live, err := h.b.Continuation(rctx, Protocol, key, rec.Run, run.Status, evs, runtime.Invocation{User: user, Session: rec.Session, ID: rec.ID,
		Resume: &runtime.ResumeRequest{Run: rec.Run}, Sampling: req.sampling, ClientTools: req.clientTools})
	if err != nil {
		h.startError(w, err)
		return
	}
	hd := w.Header()
	hd.Set(SessionHeader, rec.Session)
	hd.Set(RunHeader, rec.Run)
	hd.Set("X-Request-Id", rec.ID)
	hd.Set("Idempotent-Replayed", "true")
	c := &completion{h: h, id: rec.ID, created: rec.Created, user: user, session: rec.Session}
	replay := server.Rejoin(rctx, rec.Run, evs, nil, live)
	if req.Stream {
		c.includeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		c.stream(rctx, cancel, w, r, replay)
		return
	}
	c.collect(replay)
	c.respond(ctx, w)
}
