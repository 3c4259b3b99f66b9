package history

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/store"
)

// Appended implements runtime.LedgerTap: the events the Runner appends
// are kept decoded for the next projection of their session, not read
// back from the store.
func (s *Service) Appended(key store.SessionKey, first uint64, encoded [][]byte) {
	s.cache.Appended(key, first, encoded)
}

// Open implements runtime.ContextBuilder: it projects the call's filter key
// once and remembers the call for the post-run summary.
func (s *Service) Open(ctx context.Context, call runtime.ContextCall) (runtime.ContextView, error) {
	return s.OpenView(ctx, call)
}

// OpenView is Open with the concrete type (for harnesses that read the
// Built of each turn).
func (s *Service) OpenView(ctx context.Context, call runtime.ContextCall) (*View, error) {
	ap := s.policies(call.Agent)
	if ap.Summary != nil {
		s.notePending(call.Run, call.FilterKey, call.Agent)
		first := false
		if s.deferFirst && !s.deferSum {
			var err error
			if first, err = s.noSummary(ctx, call.Session, call.FilterKey); err != nil {
				s.log.Warn("history: deferred summary failed", "session", call.Session.String(), "filter_key", call.FilterKey, "err", err)
			}
		}
		if s.deferSum || first {
			// The summary after the previous run, made now that a call
			// needs it (Config.DeferSummary); a failure is the post-run
			// path's: logged, and the call goes on from the stored summary.
			if errs := s.summarizeKeys(ctx, call.Session, call.Run, map[string]int{call.FilterKey: call.Agent}); len(errs) > 0 {
				s.log.Warn("history: deferred summary failed", "session", call.Session.String(), "filter_key", call.FilterKey, "err", errors.Join(errs...))
			}
		}
	}
	proj, err := s.Project(ctx, call.Session, call.FilterKey, call.Run, nil)
	if err != nil {
		return nil, err
	}
	v := &View{s: s, call: call, pol: ap, proj: proj,
		counter: s.counterFor(call.Model, ap.Model), window: s.windowOf(call.Model, ap.Model),
		sessionLoad: slices.Contains(call.Tools, recallLoad)}
	if slices.ContainsFunc(call.Tools, isRecallTool) {
		v.recallElsewhere = s.elsewhere == nil || s.elsewhere(ctx, call)
	}
	return v, nil
}

// The recall tools (spec/recall.md), offered only when recall can find
// something (View.Tools).
const (
	recallSearch = "session_search"
	recallLoad   = "session_load"
)

func isRecallTool(name string) bool { return name == recallSearch || name == recallLoad }

// View is the context of one llm agent call: its projection, which a
// pressure relief may replace, and its policies.
type View struct {
	s           *Service
	call        runtime.ContextCall
	pol         AgentPolicies
	proj        *Projection
	counter     *Counter
	window      int
	sessionLoad bool
	// reliefFailed: a pressure relief of this call did not advance the
	// summary; later turns do not ask again.
	reliefFailed bool
	// recallElsewhere: the call's recall tools can find events outside
	// its session (Config.RecallElsewhere); recallOffered: a turn of the
	// call offered them, so every later turn does.
	recallElsewhere, recallOffered bool
	// tools and toolsTurn: the tools the last Build offered, and its turn.
	tools     []runtime.ToolSpec
	toolsTurn int
}

// Built is one model turn's request as the View built it.
type Built struct {
	Messages []runtime.Message
	// Tools are the tools the turn offers: the agent's, without the recall
	// tools when they could find nothing (View.Tools).
	Tools []runtime.ToolSpec
	Stats CompactionStats
	// Tokens is the request's estimated size (messages and tools).
	Tokens int
	// Relief is the pressure relief attempted before this turn (nil: none).
	Relief *Relief
}

// Relief reports one synchronous pressure relief.
type Relief struct {
	Tokens, Threshold int  // the request's size and the threshold it reached
	Advanced          bool // the summary boundary advanced
	Rebuilt           bool // the request was rebuilt from the new summary
	TokensAfter       int  // the rebuilt request's size
	Reason            string
	Err               error // the summarizer's or the store's failure (the original request was kept unless Rebuilt)
}

// Messages implements runtime.ContextView.
func (v *View) Messages(ctx context.Context, t runtime.ContextTurn) []runtime.Message {
	return v.Build(ctx, t).Messages
}

// Tools implements runtime.ContextToolView: the tools of the turn the last
// Build assembled. session_search and session_load are left out while
// recall could find nothing: the request's projection hides nothing (no
// summary note, no other key's events, no compacted result) and the
// recall scopes cannot reach another session (Config.RecallElsewhere).
// Once a turn of the call offered them, every later turn does.
func (v *View) Tools(_ context.Context, t runtime.ContextTurn) []runtime.ToolSpec {
	if v.toolsTurn != t.Turn || v.tools == nil {
		return t.Tools
	}
	return v.tools
}

// offer returns the tools of a request assembled from proj with stats.
func (v *View) offer(tools []runtime.ToolSpec, proj *Projection, st CompactionStats) []runtime.ToolSpec {
	if v.recallOffered || !slices.ContainsFunc(tools, func(t runtime.ToolSpec) bool { return isRecallTool(t.Name) }) {
		return tools
	}
	if v.recallElsewhere || proj.Summary.Text != "" || proj.Outside > 0 || st.Replaced() > 0 {
		v.recallOffered = true
		return tools
	}
	return slices.DeleteFunc(slices.Clone(tools), func(t runtime.ToolSpec) bool { return isRecallTool(t.Name) })
}

// Projection returns the projection the view currently uses.
func (v *View) Projection() *Projection { return v.proj }

// Build assembles one turn: head, the projection, tail; compaction (when
// the agent has a compaction policy); then pressure relief (when it also
// has a summary policy and the request reaches sync_ratio of the window).
// It never fails: a panic inside returns the plain concatenation.
func (v *View) Build(ctx context.Context, t runtime.ContextTurn) (b Built) {
	defer func() {
		if p := recover(); p != nil {
			v.s.log.Error("history: building a request panicked; sending the plain request", "panic", p, "stack", string(debug.Stack()))
			b = Built{Messages: runtime.JoinMessages(t.Head, v.proj.Messages, t.Tail), Tools: t.Tools}
		}
		v.tools, v.toolsTurn = b.Tools, t.Turn
	}()
	b = v.assemble(ctx, t, v.proj)
	pol := v.pol.Compaction
	if pol == nil || v.pol.Summary == nil {
		return b
	}
	threshold := Threshold(pol.SyncRatio, v.window, true)
	if b.Tokens < threshold || v.reliefFailed {
		return b
	}
	r := &Relief{Tokens: b.Tokens, Threshold: threshold}
	b.Relief = r
	if v.s.obs != nil {
		var sp runtime.Span
		ctx, sp = v.s.span(ctx, runtime.SpanRelief, v.call.Session, v.call.Run, v.call.Node, v.call.FilterKey, t.Turn)
		defer func() { sp.End(&runtime.SpanEnd{Boundary: reliefBoundary(r, v.proj), Err: spanError(r.Err)}) }()
	}
	before := v.proj.Summary.Boundary
	res, err := v.s.Summarize(ctx, SummarizeRequest{Session: v.call.Session, FilterKey: v.call.FilterKey, Agent: v.call.Agent, Run: v.call.Run,
		Force: true, Parent: b.Messages, ParentBoundary: before, ParentLastSeq: v.proj.LastSeq, ParentTools: b.Tools})
	r.Reason, r.Err = res.Reason, err
	if err != nil || !res.Advanced || res.Summary.Boundary <= before {
		v.reliefFailed = true
		if err != nil {
			v.s.log.Warn("history: pressure relief failed; the original request is sent", "session", v.call.Session.String(), "node", v.call.Node, "err", err)
			v.outcome("failed")
		} else {
			v.outcome("not_advanced")
		}
		return b
	}
	r.Advanced = true
	var override *store.Summary
	if res.PersistErr != nil {
		override = &res.Summary
		r.Err = res.PersistErr
	}
	proj, perr := v.s.Project(ctx, v.call.Session, v.call.FilterKey, v.call.Run, override)
	if perr != nil {
		r.Reason = "rebuild failed: " + perr.Error()
		v.s.log.Warn("history: rebuilding after pressure relief failed; the original request is sent", "session", v.call.Session.String(), "node", v.call.Node, "err", perr)
		v.outcome("failed")
		return b
	}
	if proj.Summary.Boundary < res.Summary.Boundary {
		// Another writer's older state: rebuilding would not relieve.
		r.Reason = "the stored boundary is behind the new summary"
		v.outcome("failed")
		return b
	}
	if res.PersistErr != nil {
		v.s.log.Warn("history: summary advanced in memory but was not stored; the request is rebuilt from it", "session", v.call.Session.String(), "node", v.call.Node, "err", res.PersistErr)
	}
	rb := v.assemble(ctx, t, proj)
	r.TokensAfter = rb.Tokens
	if rb.Tokens >= b.Tokens {
		// The summary (with its note) costs at least what it replaced:
		// sending the rebuilt request would not relieve anything.
		r.Reason = fmt.Sprintf("the rebuilt request (%d tokens) is not smaller than the original (%d)", rb.Tokens, b.Tokens)
		v.reliefFailed = true
		v.s.log.Warn("history: pressure relief rebuilt a request that is not smaller; the original request is sent", "session", v.call.Session.String(),
			"node", v.call.Node, "tokens", b.Tokens, "tokens_after", rb.Tokens)
		v.outcome("not_smaller")
		return b
	}
	v.proj = proj
	rb.Relief = r
	r.Rebuilt = true
	v.outcome("rebuilt")
	v.s.log.Info("history: pressure relief rebuilt the request", "session", v.call.Session.String(), "node", v.call.Node,
		"tokens", r.Tokens, "threshold", threshold, "tokens_after", rb.Tokens)
	return rb
}

// reliefBoundary is the summary boundary a relief rebuilt the request
// from (0: it did not).
func reliefBoundary(r *Relief, proj *Projection) uint64 {
	if !r.Rebuilt {
		return 0
	}
	return proj.Summary.Boundary
}

// outcome counts a pressure relief's outcome (Config.OnRelief).
func (v *View) outcome(what string) {
	if f := v.s.onRelief; f != nil {
		f(v.call.Session.App, what)
	}
}

// assemble joins head, the projection and tail and compacts the result.
func (v *View) assemble(ctx context.Context, t runtime.ContextTurn, proj *Projection) Built {
	msgs := runtime.JoinMessages(t.Head, proj.Messages, t.Tail)
	var b Built
	pol, recoverableOnly := v.pol.Compaction, false
	if pol == nil && !v.s.noRecallElision {
		if rp, ok := RecallElision(v.pol); ok && v.sessionLoad {
			pol, recoverableOnly = &rp, true
		}
	}
	if pol != nil {
		origins := make([]runtime.HistoryOrigin, len(msgs))
		copy(origins[len(t.Head):], proj.Origins)
		for i := len(t.Head) + len(proj.Messages); i < len(origins); i++ {
			origins[i].Run = v.call.Run
		}
		var sp runtime.Span
		if v.s.obs != nil {
			_, sp = v.s.span(ctx, runtime.SpanCompaction, v.call.Session, v.call.Run, v.call.Node, v.call.FilterKey, t.Turn)
		}
		msgs, b.Stats = Compact(msgs, origins, CompactOptions{Policy: *pol, Counter: v.counter, CurrentRun: v.call.Run,
			SessionLoad: v.sessionLoad, Rerunnable: v.rerunnable, RecoverableOnly: recoverableOnly})
		if sp != nil {
			sp.End(&runtime.SpanEnd{Count: b.Stats.Replaced()})
		}
		if b.Stats.Replaced() > 0 {
			v.s.log.Info("history: compacted tool results", "session", v.call.Session.String(), "run", v.call.Run, "node", v.call.Node,
				"turn", t.Turn, "force_cleaned", b.Stats.ForceCleaned, "elided", b.Stats.Elided, "truncated", b.Stats.Truncated,
				"tokens_saved", b.Stats.TokensSaved)
		}
	}
	b.Messages = msgs
	b.Tools = v.offer(t.Tools, proj, b.Stats)
	b.Tokens = v.counter.Messages(msgs) + v.counter.Tools(b.Tools)
	return b
}

// rerunnable reports whether the program declares tool read-only or
// idempotent.
func (v *View) rerunnable(tool string) bool {
	for i := range v.s.prog.Tools {
		if v.s.prog.Tools[i].Name == tool {
			e := v.s.prog.Tools[i].Effect
			return e == bytecode.EffectReadOnly || e == bytecode.EffectIdempotent
		}
	}
	return false
}
