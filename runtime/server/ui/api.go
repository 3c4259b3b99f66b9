package ui

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/evolution"
	"github.com/agentc/agentc/runtime/inspect"
	"github.com/agentc/agentc/runtime/server"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

func (h *Handler) routes() {
	p := strings.TrimSuffix(APIPath, "/")
	get := func(path string, f http.HandlerFunc) { h.api.HandleFunc("GET "+p+path, f) }
	post := func(path string, f http.HandlerFunc) { h.api.HandleFunc("POST "+p+path, f) }
	get("/me", h.me)
	get("/runs", h.listRuns)
	get("/runs/{run}", h.runDetail)
	get("/runs/{run}/checkpoints", h.checkpoints)
	get("/runs/{run}/steps/{step}", h.step)
	get("/runs/{run}/stream", h.stream)
	get("/sessions", h.listSessions)
	get("/sessions/{session}", h.getSession)
	get("/sessions/{session}/events", h.events)
	get("/artifacts", h.artifacts)
	get("/artifacts/revisions", h.revisions)
	get("/artifacts/raw", h.artifactRaw)
	get("/candidates", h.candidates)
	get("/candidates/{id}", h.candidate)
	post("/runs/{run}/answer", h.answer)
	post("/runs/{run}/decide", h.decide)
	post("/runs/{run}/fork", h.fork)
	post("/runs/{run}/cancel", h.cancel)
	post("/candidates/{id}/approve", h.approve)
	post("/candidates/{id}/reject", h.reject)
	h.api.HandleFunc(APIPath, func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, r, http.StatusNotFound, "not_found", "no endpoint at "+r.URL.Path)
	})
}

// WriteError writes {"error":{"code","message"}}.
func WriteError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	writeError(w, status, code, message, nil)
}

func writeError(w http.ResponseWriter, status int, code, message string, fields inspect.FieldErrors) {
	body := map[string]any{"code": code, "message": message}
	if fields != nil {
		body["fields"] = fields
	}
	writeJSON(w, status, map[string]any{"error": body})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"could not encode the answer"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// notFound answers a lookup that found nothing the caller may see.
func notFound(w http.ResponseWriter, what string) {
	writeError(w, http.StatusNotFound, "not_found", what+" not found", nil)
}

// fail maps an error of a read or an action to a response.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var fe inspect.FieldErrors
	switch {
	case errors.As(err, &fe):
		writeError(w, http.StatusUnprocessableEntity, "invalid_value", err.Error(), fe)
	case errors.Is(err, store.ErrNotFound), errors.Is(err, server.ErrNotFound), errors.Is(err, evolution.ErrNotFound):
		notFound(w, "it was")
	case errors.Is(err, inspect.ErrInvalid), errors.Is(err, runtime.ErrInvalidResume), errors.Is(err, session.ErrBadDecision):
		writeError(w, http.StatusUnprocessableEntity, "invalid_value", err.Error(), inspect.FieldErrors{{Field: "", Message: err.Error()}})
	case errors.Is(err, runtime.ErrSessionBusy):
		writeError(w, http.StatusConflict, "session_busy", "the session already has a run in progress; retry when it has finished", nil)
	case errors.Is(err, runtime.ErrNotResumable):
		writeError(w, http.StatusConflict, "not_resumable", err.Error(), nil)
	case errors.Is(err, evolution.ErrNotPending):
		writeError(w, http.StatusConflict, "not_pending", err.Error(), nil)
	case errors.Is(err, server.ErrOverloaded):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "overloaded", "the server is running its maximum number of runs; retry later", nil)
	case errors.Is(err, server.ErrShuttingDown), errors.Is(err, runtime.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, "shutting_down", "the server is shutting down", nil)
	default:
		h.log.Error("ui: request failed", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "the store could not answer", nil)
	}
}

// reply answers v (200), or err.
func (h *Handler) reply(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// bearerIs reports whether r carries token as its bearer token (compared by
// hash, so the time taken says nothing of how much of a guess matched).
func bearerIs(r *http.Request, token string) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(strings.TrimSpace(tok))), sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// caller is who asks and what they may see.
type caller struct {
	user  string
	admin bool
}

func (h *Handler) caller(r *http.Request) caller {
	u := server.UserFrom(r.Context())
	return caller{user: u, admin: h.cfg.Admins[u]}
}

// sees reports whether c may see the session k.
func (h *Handler) sees(c caller, k store.SessionKey) bool {
	if h.cfg.App != "" && k.App != h.cfg.App {
		return false
	}
	return c.admin || k.User == c.user
}

// scope is the (app, user) a list or session request names: the served app
// (else the app parameter), the caller (an administrator may name another
// user with the user parameter).
func (h *Handler) scope(r *http.Request, c caller) (app, user string) {
	q := r.URL.Query()
	app, user = h.cfg.App, c.user
	if app == "" {
		app = q.Get("app")
	}
	if c.admin {
		user = q.Get("user")
	}
	return app, user
}

// lookupRun returns the caller's run {run}: 404 for a run that does not
// exist or that the caller may not see.
func (h *Handler) lookupRun(w http.ResponseWriter, r *http.Request) (store.Run, bool) {
	id := r.PathValue("run")
	run, err := h.cfg.Store.GetRun(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || err == nil && !h.sees(h.caller(r), run.Session) {
		notFound(w, "run "+id)
		return store.Run{}, false
	}
	if err != nil {
		h.fail(w, r, err)
		return store.Run{}, false
	}
	return run, true
}

// sessionKey is the session {session} of the request's scope; the caller
// must see it (else 404).
func (h *Handler) sessionKey(w http.ResponseWriter, r *http.Request) (store.SessionKey, bool) {
	c := h.caller(r)
	app, user := h.scope(r, c)
	if user == "" {
		user = c.user
	}
	k := store.SessionKey{App: app, User: user, Session: r.PathValue("session")}
	if r.PathValue("session") == "" {
		k.Session = r.URL.Query().Get("session")
	}
	if k.App == "" || k.Session == "" || !h.sees(c, k) {
		notFound(w, "session "+k.Session)
		return k, false
	}
	return k, true
}

// decode reads the request's JSON object into v: a JSON content type, at
// most MaxBody bytes, no unknown members.
func (h *Handler) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !(mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "send Content-Type: application/json", nil)
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBody))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("request body is larger than %d bytes", h.cfg.MaxBody), nil)
		return false
	case err != nil:
		writeError(w, http.StatusBadRequest, "invalid_json", "could not read the body: "+err.Error(), nil)
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_json", "the body is not the expected JSON object: "+err.Error(), nil)
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "invalid_json", "the body has data after its JSON object", nil)
		return false
	}
	return true
}

// intParam reads an optional non-negative integer query parameter.
func intParam(w http.ResponseWriter, r *http.Request, name string, def, max int) (int, bool) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("%s: %q is not a non-negative integer", name, s), nil)
		return 0, false
	}
	if max > 0 && n > max {
		n = max
	}
	return n, true
}

// ---- reads ----

func (h *Handler) me(w http.ResponseWriter, r *http.Request) {
	c := h.caller(r)
	writeJSON(w, http.StatusOK, map[string]any{"user": c.user, "app": h.cfg.App, "admin": c.admin, "actions": h.cfg.Backend != nil})
}

func (h *Handler) listRuns(w http.ResponseWriter, r *http.Request) {
	c := h.caller(r)
	app, user := h.scope(r, c)
	q := r.URL.Query()
	limit, ok := intParam(w, r, "limit", 50, 500)
	if !ok {
		return
	}
	if limit == 0 {
		limit = 50
	}
	f := store.RunFilter{App: app, User: user, Session: q.Get("session"), Status: store.RunStatus(q.Get("status")), Limit: limit, Cursor: q.Get("cursor")}
	if f.Session != "" && f.User == "" || f.User != "" && f.App == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "session needs user, and user needs app", nil)
		return
	}
	runs, next, err := h.in.Runs(r.Context(), f)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// The store pages in id order; newest first is the page reversed,
	// and the next page holds newer runs: list every page, newest first.
	for next != "" && len(runs) < 5000 {
		f.Cursor = next
		more, n, err := h.in.Runs(r.Context(), f)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		runs, next = append(more, runs...), n
	}
	out := runs[:0]
	for _, ri := range runs {
		if h.sees(c, store.SessionKey{App: ri.App, User: ri.User, Session: ri.Session}) {
			out = append(out, ri)
		}
	}
	if len(out) > limit {
		out = out[:limit]
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": out})
}

func (h *Handler) runDetail(w http.ResponseWriter, r *http.Request) {
	run, ok := h.lookupRun(w, r)
	if !ok {
		return
	}
	d, err := h.in.RunDetail(r.Context(), run.ID)
	h.reply(w, r, d, err)
}

func (h *Handler) checkpoints(w http.ResponseWriter, r *http.Request) {
	run, ok := h.lookupRun(w, r)
	if !ok {
		return
	}
	cps, err := h.in.Checkpoints(r.Context(), run.ID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"checkpoints": cps})
}

func (h *Handler) step(w http.ResponseWriter, r *http.Request) {
	run, ok := h.lookupRun(w, r)
	if !ok {
		return
	}
	step, err := strconv.ParseUint(r.PathValue("step"), 10, 63)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the step is not a non-negative integer", nil)
		return
	}
	d, err := h.in.Diff(r.Context(), run.ID, step)
	h.reply(w, r, d, err)
}

func (h *Handler) listSessions(w http.ResponseWriter, r *http.Request) {
	c := h.caller(r)
	app, user := h.scope(r, c)
	if app == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "app is required", nil)
		return
	}
	ss, err := h.in.Sessions(r.Context(), session.ListFilter{App: app, User: user})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := []inspect.Session{}
	for _, s := range ss {
		if h.sees(c, store.SessionKey{App: s.App, User: s.User, Session: s.Session}) {
			out = append(out, s)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
}

func (h *Handler) getSession(w http.ResponseWriter, r *http.Request) {
	k, ok := h.sessionKey(w, r)
	if !ok {
		return
	}
	s, err := h.in.Session(r.Context(), k)
	h.reply(w, r, s, err)
}

// event is a ledger event as the API sends it: the event's JSON, its seq
// and a one-line summary.
type event struct {
	*runtime.Event
	Summary string `json:"summary"`
}

// summaryMark is a rolling summary's boundary in a ledger.
type summaryMark struct {
	FilterKey string `json:"filter_key"`
	Boundary  uint64 `json:"boundary"`
	Time      string `json:"time"`
}

func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	k, ok := h.sessionKey(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	eq := inspect.EventQuery{Run: q.Get("run"), Kinds: q["kind"]}
	if err := eq.Check(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error(), nil)
		return
	}
	after, ok := intParam(w, r, "after", 0, 0)
	if !ok {
		return
	}
	limit, ok := intParam(w, r, "limit", 1000, 5000)
	if !ok {
		return
	}
	if limit == 0 {
		limit = 1000
	}
	evs, err := h.in.Events(r.Context(), k, eq)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	node := q.Get("node")
	out := []event{}
	var last uint64
	keys := map[string]bool{}
	for _, e := range evs {
		if e.Seq <= uint64(after) || node != "" && e.Node != node {
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, event{Event: e, Summary: inspect.Summary(e)})
		last = e.Seq
		keys[e.FilterKey] = true
	}
	marks := []summaryMark{}
	for fk := range keys {
		s, err := h.sessions.Summary(r.Context(), k, fk)
		if err != nil {
			continue // no summary of this filter key
		}
		marks = append(marks, summaryMark{FilterKey: fk, Boundary: s.Boundary, Time: s.Time.UTC().Format("2006-01-02T15:04:05Z07:00")})
	}
	slices.SortFunc(marks, func(a, b summaryMark) int { return strings.Compare(a.FilterKey, b.FilterKey) })
	writeJSON(w, http.StatusOK, map[string]any{"events": out, "summaries": marks, "last": last})
}

// artifactKey is the artifact a request names, in its scope; the caller
// must see its session (else 404).
func (h *Handler) artifactKey(w http.ResponseWriter, r *http.Request, needName bool) (artifact.Key, bool) {
	c := h.caller(r)
	app, user := h.scope(r, c)
	if user == "" {
		user = c.user
	}
	q := r.URL.Query()
	k := artifact.Key{App: app, User: user, Session: q.Get("session"), Name: q.Get("name")}
	if k.App == "" || needName && (k.Session == "" || k.Name == "") {
		writeError(w, http.StatusBadRequest, "invalid_request", "app, session and name are required", nil)
		return k, false
	}
	if !h.sees(c, store.SessionKey{App: k.App, User: k.User, Session: k.Session}) {
		notFound(w, "artifact "+k.Name)
		return k, false
	}
	return k, true
}

func (h *Handler) artifacts(w http.ResponseWriter, r *http.Request) {
	k, ok := h.artifactKey(w, r, false)
	if !ok {
		return
	}
	ms, err := h.in.Artifacts(r.Context(), artifact.Filter{App: k.App, User: k.User, Session: k.Session})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if ms == nil {
		ms = []artifact.Meta{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"artifacts": ms})
}

func (h *Handler) revisions(w http.ResponseWriter, r *http.Request) {
	k, ok := h.artifactKey(w, r, true)
	if !ok {
		return
	}
	ms, err := h.in.Revisions(r.Context(), k)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if len(ms) == 0 {
		notFound(w, "artifact "+k.Name)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"revisions": ms})
}

func (h *Handler) artifactRaw(w http.ResponseWriter, r *http.Request) {
	k, ok := h.artifactKey(w, r, true)
	if !ok {
		return
	}
	rev, ok := intParam(w, r, "rev", 0, 0)
	if !ok {
		return
	}
	a, err := h.in.Artifact(r.Context(), k, rev)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ct := "application/octet-stream"
	if mt, _, err := mime.ParseMediaType(a.MimeType); err == nil && (strings.HasPrefix(mt, "text/") || mt == "application/json") {
		ct = mt + "; charset=utf-8"
	}
	hd := w.Header()
	hd.Set("Content-Type", ct)
	name := k.Name[strings.LastIndex(k.Name, "/")+1:]
	hd.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	hd.Set("Content-Security-Policy", "sandbox")
	hd.Set("Content-Length", strconv.Itoa(len(a.Data)))
	_, _ = w.Write(a.Data)
}

// visibleCandidate reports whether c may see candidate cand.
func (h *Handler) visibleCandidate(c caller, cand *evolution.Candidate) bool {
	return cand != nil && h.sees(c, cand.Session)
}

func (h *Handler) candidates(w http.ResponseWriter, r *http.Request) {
	c := h.caller(r)
	status := r.URL.Query().Get("status")
	var (
		cs  []*evolution.Candidate
		err error
	)
	switch status {
	case "":
		cs, err = h.in.Pending(r.Context())
	case "all":
		cs, err = h.in.Candidates(r.Context(), "")
	default:
		cs, err = h.in.Candidates(r.Context(), status)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := []*evolution.Candidate{}
	for _, cand := range cs {
		if h.visibleCandidate(c, cand) {
			out = append(out, cand)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"candidates": out})
}

// lookupCandidate returns candidate {id} when the caller may see it (else
// 404).
func (h *Handler) lookupCandidate(w http.ResponseWriter, r *http.Request) (*evolution.Candidate, bool) {
	id := r.PathValue("id")
	cand, err := h.in.Candidate(r.Context(), id)
	if err == nil && !h.visibleCandidate(h.caller(r), cand) || errors.Is(err, evolution.ErrNotFound) || errors.Is(err, store.ErrNotFound) {
		notFound(w, "candidate "+id)
		return nil, false
	}
	if err != nil {
		h.fail(w, r, err)
		return nil, false
	}
	return cand, true
}

func (h *Handler) candidate(w http.ResponseWriter, r *http.Request) {
	if cand, ok := h.lookupCandidate(w, r); ok {
		writeJSON(w, http.StatusOK, cand)
	}
}
