package recall

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentc/agentc/runtime"
)

// evidenceMarker names the markers around recalled evidence.
const evidenceMarker = "recalled_history"

// maxPreload bounds the hits one preload injects.
const maxPreload = 10

// Preloader is preload recall: before an llm agent's first model turn it
// searches the user's other sessions of the app with the call's prompt and
// returns the best hits (the agent's recall policy `preload`; 0 = off) as
// one evidence message. It implements runtime.Preloader.
type Preloader struct{ x *Index }

// NewPreloader returns preload recall over x.
func NewPreloader(x *Index) *Preloader { return &Preloader{x: x} }

// Preload implements runtime.Preloader.
func (p *Preloader) Preload(ctx context.Context, req runtime.PreloadRequest) ([]runtime.Message, error) {
	pol := PolicyOf(req.Program, req.Agent)
	if AgentPolicy(req.Program, req.Agent, recallKind) == nil || pol.Preload <= 0 || strings.TrimSpace(req.Query) == "" {
		return nil, nil
	}
	res, err := p.x.Search(ctx, SearchRequest{Session: req.Session, Query: req.Query, Scope: ScopeOtherSessions, Run: req.Run,
		TopK: min(pol.Preload, maxPreload), MinScore: pol.MinScore})
	if err != nil {
		return nil, fmt.Errorf("recall: preload: %w", err)
	}
	if len(res.Hits) == 0 {
		return nil, nil
	}
	// Recalled history is untrusted: a user message, never a system one
	// (spec/recall.md, "Preload recall").
	return []runtime.Message{{Role: runtime.RoleUser, Content: EvidenceMessage(
		"Possibly relevant excerpts recalled from the user's other sessions", res.Hits)}}, nil
}

// EvidenceMessage renders cards as a block of evidence: a heading, the
// evidence note, one line per card (session, event id, time, role, snippet),
// inside <recalled_history> markers that the cards cannot close or open:
// every form of the marker in a card's line (its snippet, and its session
// id, which a client may choose) is neutralized (runtime.NeutralizeMarkers:
// case, spacing, width and compatibility forms, zero-width characters).
func EvidenceMessage(heading string, hits []Card) string {
	var b strings.Builder
	b.WriteString(heading)
	b.WriteString(". ")
	b.WriteString(EvidenceNote)
	b.WriteString(" Use session_load with session_id and event_id for the full events.\n<recalled_history>\n")
	for _, h := range hits {
		line := fmt.Sprintf("- session %s, event %s, %s, %s (score %.2f): %s", h.Session, h.EventID, h.Time, h.Role, h.Score, h.Snippet)
		b.WriteString(runtime.NeutralizeMarkers(line, evidenceMarker))
		b.WriteByte('\n')
	}
	b.WriteString("</recalled_history>")
	return b.String()
}
