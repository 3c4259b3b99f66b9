package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
)

// SearchRequest is one search of a user's history.
type SearchRequest struct {
	// Session is the current session; its app and user bound every scope.
	Session store.SessionKey
	// FilterKey is the calling llm call's filter key (its node path): its
	// summary hides events from the caller's projection, as the
	// full-session summary (key "") does; current_hidden searches both.
	FilterKey string
	// Run is the current run: its input is the question being asked, not
	// evidence, and is never a hit.
	Run      string
	Query    string
	Scope    string // one of the Scope constants
	TopK     int    // ≤ 0: 5
	MinScore float64
}

// Card is one search hit: where the event is and a short snippet, not the
// event itself (session_load reads it).
type Card struct {
	Session      string  `json:"session_id"`
	EventID      string  `json:"event_id"`
	Seq          uint64  `json:"seq"`
	Kind         string  `json:"kind"`
	Role         string  `json:"role"`
	Time         string  `json:"time,omitempty"`
	Score        float64 `json:"score"`
	Snippet      string  `json:"snippet"`
	ToolCallID   string  `json:"tool_call_id,omitempty"`
	ToolName     string  `json:"tool_name,omitempty"`
	ContentBytes int     `json:"content_bytes"`
}

// SearchResult is what session_search returns.
type SearchResult struct {
	Query string `json:"query"`
	Scope string `json:"scope"`
	Hits  []Card `json:"hits"`
	// Note explains an empty result that has a reason other than "nothing
	// matched" (no summary hides anything yet).
	Note string `json:"note,omitempty"`
}

// snippetLen is the longest snippet, in bytes.
const snippetLen = 280

// HiddenBoundary is the last event of the session that a summary hides
// from a call under filterKey: the larger boundary of the key's own summary
// (pressure relief and the post-run update advance it) and of the
// full-session summary (key "", advanced by cascade). 0: nothing is hidden.
func (x *Index) HiddenBoundary(ctx context.Context, key store.SessionKey, filterKey string) (uint64, error) {
	var b uint64
	keys := []string{""}
	if filterKey != "" {
		keys = append(keys, filterKey)
	}
	for _, k := range keys {
		sum, err := x.st.GetSummary(ctx, key, k)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("recall: read summary %q of %s: %w", k, key, err)
		}
		b = max(b, sum.Boundary)
	}
	return b, nil
}

// Search brings the scope's sessions up to date and ranks their events.
// No hits is an empty result, not an error.
func (x *Index) Search(ctx context.Context, req SearchRequest) (*SearchResult, error) {
	if x.obs == nil {
		return x.rank(ctx, req)
	}
	ctx, sp := x.span(ctx, runtime.SpanRecallSearch, req.Session, req.Run, req.FilterKey)
	res, err := x.rank(ctx, req)
	e := &runtime.SpanEnd{Err: spanError(err)}
	if res != nil {
		e.Count = len(res.Hits)
	}
	sp.End(e)
	return res, err
}

// rank is Search.
func (x *Index) rank(ctx context.Context, req SearchRequest) (*SearchResult, error) {
	key := req.Session
	res := &SearchResult{Query: req.Query, Scope: req.Scope, Hits: []Card{}}
	if req.TopK <= 0 {
		req.TopK = 5
	}
	q := parseQuery(req.Query)
	if len(q.terms) == 0 {
		res.Note = "the query has no searchable words"
		return res, nil
	}
	var boundary uint64 // current_hidden: the last event in scope
	only, skip := "", ""
	switch req.Scope {
	case ScopeCurrentHidden:
		var err error
		if boundary, err = x.HiddenBoundary(ctx, key, req.FilterKey); err != nil {
			return nil, err
		}
		if boundary == 0 {
			// Nothing is hidden from the caller: its whole session is in
			// view, so the search answers from it rather than with nothing.
			res.Note = "no summary hides any event of this session yet; the hits are from the whole current session"
			boundary = ^uint64(0)
			if _, err := x.CatchUp(ctx, key); err != nil {
				return nil, err
			}
		} else if _, err := x.catchUpTo(ctx, key, boundary); err != nil {
			return nil, err
		}
		only = key.Session
	case ScopeCurrentSess:
		if _, err := x.CatchUp(ctx, key); err != nil {
			return nil, err
		}
		only = key.Session
	case ScopeOtherSessions, ScopeAllSessions:
		if err := x.catchUpUser(ctx, key.App, key.User); err != nil {
			return nil, err
		}
		if _, err := x.CatchUp(ctx, key); err != nil { // a session without runs yet
			return nil, err
		}
		if req.Scope == ScopeOtherSessions {
			skip = key.Session
		}
	default:
		return nil, fmt.Errorf("recall: unknown scope %q", req.Scope)
	}
	hits, err := x.search(ctx, req, q, only, skip, boundary)
	rebuilt := map[string]bool{}
	for bad := (*corruptSession)(nil); errors.As(err, &bad) && !rebuilt[bad.session]; {
		// A damaged index document: rebuild that session's index from
		// the ledger and search again (each session at most once).
		rebuilt[bad.session] = true
		x.log.Warn("recall: damaged index; rebuilding the session's index", "session", bad.session, "err", err)
		if err := x.Rebuild(ctx, store.SessionKey{App: key.App, User: key.User, Session: bad.session}); err != nil {
			return nil, err
		}
		hits, err = x.search(ctx, req, q, only, skip, boundary)
	}
	if err != nil {
		return nil, err
	}
	res.Hits = append(res.Hits, hits...)
	return res, nil
}

// Rebuild drops the session's index and indexes it again from the ledger.
func (x *Index) Rebuild(ctx context.Context, key store.SessionKey) error {
	rec, err := x.st.GetSession(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("recall: rebuild %s: %w", key, err)
	}
	unlock := x.locks.Lock(key)
	defer unlock()
	if err := x.dropLocked(ctx, key); err != nil {
		return err
	}
	_, err = x.catchUpLocked(ctx, key, rec.LastSeq)
	return err
}

// search ranks the events of the sessions in scope (only, or all but
// skip; up to boundary when it is not 0) and returns their cards.
func (x *Index) search(ctx context.Context, req SearchRequest, q query, only, skip string, boundary uint64) ([]Card, error) {
	key := req.Session
	src, err := x.corpus(ctx, key.App, key.User, only, skip)
	if err != nil {
		return nil, err
	}
	var keep func(uint64) bool
	if boundary != 0 {
		keep = func(doc uint64) bool { _, seq := src.docRef(doc); return seq <= boundary }
	}
	all, err := rank(ctx, src, q, keep, eventOf, 0)
	if err != nil {
		return nil, err
	}
	// The candidates, read in BM25 order: the best candidates(TopK) events
	// of full weight — echoes and the question being asked do not use the
	// budget, so that the answers of earlier recall rounds cannot push the
	// original out — then those within nearShare of the best; at most
	// maxCandidates events are read.
	events := map[uint64]*runtime.Event{}
	weights := map[uint64]float64{}
	echoes := map[[2]string]bool{} // (session, run) → the run called a recall tool
	var cands []scored
	for counted, budget := 0, candidates(req.TopK); len(cands) < len(all) && len(cands) < maxCandidates; {
		c := all[len(cands)]
		if counted >= budget && c.score < nearShare*all[0].score {
			break
		}
		sid, seq := src.docRef(c.doc)
		sk := store.SessionKey{App: key.App, User: key.User, Session: sid}
		e, err := x.readEvent(ctx, sk, seq)
		if err != nil {
			return nil, err
		}
		w, err := x.evidenceWeight(ctx, sk, e, sid == key.Session, req.Run, echoes)
		if err != nil {
			return nil, err
		}
		events[c.doc], weights[c.doc] = e, w
		cands = append(cands, c)
		if w == 1 {
			counted++
		}
	}
	ranked, err := rerank(cands, q, func(doc uint64) ([]string, float64, error) {
		return Terms(indexText(events[doc])), weights[doc], nil
	}, req.TopK, req.MinScore)
	if err != nil {
		return nil, err
	}
	var out []Card
	for _, r := range ranked {
		sid, _ := src.docRef(r.doc)
		out = append(out, card(sid, events[r.doc], r.score, q.terms))
	}
	return out, nil
}

// echoWeight multiplies the score of an echo: the question and the
// model's text of a run that called session_search or session_load. They
// repeat what recall found (or ask for it) and rank below the originals.
const echoWeight = 0.5

// evidenceWeight weighs a candidate event: 0 for the current run's input
// (the question being asked), echoWeight for an echo, else 1. current says
// key is the current session, whose run is run; echoes caches the
// recall-run references read.
func (x *Index) evidenceWeight(ctx context.Context, key store.SessionKey, e *runtime.Event, current bool, run string, echoes map[[2]string]bool) (float64, error) {
	if e.Run == "" || e.Kind != runtime.EventInput && e.Kind != runtime.EventModelResponse {
		return 1, nil
	}
	if current && run != "" && e.Run == run && e.Kind == runtime.EventInput {
		return 0, nil
	}
	rk := [2]string{key.Session, e.Run}
	echo, seen := echoes[rk]
	if !seen {
		_, err := x.st.GetDoc(ctx, CollRefs, recallRunKey(key, e.Run))
		switch {
		case err == nil:
			echo = true
		case !errors.Is(err, store.ErrNotFound):
			return 0, fmt.Errorf("recall: read recall-run reference of %s: %w", key, err)
		}
		echoes[rk] = echo
	}
	if echo {
		return echoWeight, nil
	}
	return 1, nil
}

func card(sid string, e *runtime.Event, score float64, terms []string) Card {
	role, _ := roleOf(e.Kind)
	text := contentOf(e)
	c := Card{Session: sid, EventID: e.ID, Seq: e.Seq, Kind: string(e.Kind), Role: role, Time: timeString(e.Time),
		Score: score, Snippet: snippet(text, terms), ContentBytes: len(text)}
	if e.ToolCall != nil {
		c.ToolCallID, c.ToolName = e.ToolCall.ID, e.ToolCall.Name
	}
	return c
}

// snippet is at most snippetLen bytes of text around the first occurrence
// of the most specific query term it contains (identifiers such as
// "sn-4471-ax" first, then longer terms), with "…" where text was cut.
func snippet(text string, terms []string) string {
	// Invalid UTF-8 (a ledger holds what tools returned) becomes U+FFFD, so
	// that rune boundaries exist for the cuts below.
	text = strings.Join(strings.Fields(strings.ToValidUTF8(text, "\uFFFD")), " ")
	if len(text) <= snippetLen {
		return text
	}
	lower := strings.ToLower(text)
	byPrec := slices.Clone(terms)
	slices.SortStableFunc(byPrec, func(a, b string) int {
		ca, cb := strings.ContainsAny(a, "-_.:/#"), strings.ContainsAny(b, "-_.:/#")
		if ca != cb {
			if ca {
				return -1
			}
			return 1
		}
		return len(b) - len(a)
	})
	at := -1
	for _, t := range byPrec {
		if i := strings.Index(lower, t); i >= 0 {
			at = i
			break
		}
	}
	start := 0
	if at > snippetLen/3 && len(lower) == len(text) {
		start = at - snippetLen/3
	}
	end := min(start+snippetLen, len(text))
	if end == len(text) {
		start = max(0, end-snippetLen)
	}
	for start > 0 && start < end && !utf8.RuneStart(text[start]) {
		start++
	}
	for end < len(text) && end > start && !utf8.RuneStart(text[end]) {
		end--
	}
	out := text[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(text) {
		out += "…"
	}
	return out
}

// contentOf is an event's content as session_load returns it: the input or
// model text (and the model's tool calls), a tool's result JSON (a string
// result as is) or error, an interrupt's prompts.
func contentOf(e *runtime.Event) string {
	switch e.Kind {
	case runtime.EventToolResult:
		if e.Error != nil {
			return "error (" + e.Error.Kind + "): " + e.Error.Message
		}
		var s string
		if len(e.Result) > 0 && e.Result[0] == '"' && json.Unmarshal(e.Result, &s) == nil {
			return s
		}
		return string(e.Result)
	case runtime.EventInterrupt:
		var ps []string
		for _, in := range e.Interrupts {
			ps = append(ps, in.Prompt)
		}
		return strings.Join(ps, "\n")
	}
	return e.Text
}

// allowed reports whether scope is one of allowedScopes.
func allowed(scope string, allowedScopes []string) bool { return slices.Contains(allowedScopes, scope) }
