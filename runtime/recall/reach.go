package recall

import (
	"context"
	"slices"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime/store"
)

// ReachesElsewhere reports whether the recall tools of agent ai (an index
// into prog.Agents) can find events outside session key: the agent's
// policy allows other_sessions or all_sessions and the user has another
// session of the app with events. It answers history.Config.
// RecallElsewhere (spec/context.md, "Recall tools"); a store error answers
// true, so that the tools stay offered.
func ReachesElsewhere(ctx context.Context, st store.Sessions, prog *bytecode.Program, ai int, key store.SessionKey) bool {
	if !slices.ContainsFunc(PolicyOf(prog, ai).Scopes, func(s string) bool { return s == ScopeOtherSessions || s == ScopeAllSessions }) {
		return false
	}
	ss, next, err := st.ListSessions(ctx, store.SessionFilter{App: key.App, User: key.User, Limit: 8})
	if err != nil || next != "" {
		return true
	}
	return slices.ContainsFunc(ss, func(s store.Session) bool { return s.Key.Session != key.Session && s.LastSeq > 0 })
}
