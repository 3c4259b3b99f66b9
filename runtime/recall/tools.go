package recall

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/stdlib"
	"github.com/agentc/agentc/vm"
)

// Tool names.
const (
	SearchToolName = "session_search"
	LoadToolName   = "session_load"
)

// spec is a recall tool's spec from the stdlib table.
func spec(name string) runtime.ToolSpec {
	d := stdlib.LookupTool(name)
	return runtime.ToolSpec{Name: d.Name, Description: d.Doc, InputSchema: d.InputSchema()}
}

// tool is what both recall tools share: the tool's name in the stdlib
// table, the index and the program whose agents' recall policies apply.
type tool struct {
	name string
	x    *Index
	prog *bytecode.Program
}

// Spec implements runtime.Tool.
func (t *tool) Spec() runtime.ToolSpec { return spec(t.name) }

// Effect implements runtime.Tool.
func (t *tool) Effect() runtime.Effect { return stdlib.LookupTool(t.name).Effect }

func (t tool) policy(req runtime.ToolRequest) Policy {
	return PolicyOf(t.prog, AgentIndex(t.prog, req.Agent))
}

// toolErr is a tool_error with a message the model can act on.
func toolErr(format string, args ...any) error {
	return vm.NewError(vm.KindToolError, format, args...)
}

// SearchTool is session_search.
type SearchTool struct{ tool }

// NewSearchTool returns session_search over x; prog (may be nil) supplies
// the calling agent's recall policy.
func NewSearchTool(x *Index, prog *bytecode.Program) *SearchTool {
	return &SearchTool{tool{name: SearchToolName, x: x, prog: prog}}
}

// Call implements runtime.Tool.
func (t *SearchTool) Call(ctx context.Context, req runtime.ToolRequest) (json.RawMessage, error) {
	var args struct {
		Query    string   `json:"query"`
		Scope    *string  `json:"scope"`
		TopK     *int     `json:"top_k"`
		MinScore *float64 `json:"min_score"`
	}
	if err := runtime.DecodeArgsStrict(SearchToolName, req.Args, &args); err != nil {
		return nil, err
	}
	pol := t.policy(req)
	if !pol.Search {
		return nil, toolErr("session_search is turned off by this agent's recall policy (search = false)")
	}
	if strings.TrimSpace(args.Query) == "" {
		return nil, toolErr("session_search: query is empty")
	}
	scope := pol.Scopes[0]
	if args.Scope != nil && *args.Scope != "" {
		scope = *args.Scope
	}
	if !validScope(scope) || !allowed(scope, pol.Scopes) {
		return nil, toolErr("session_search: scope %q is not allowed; use one of %s", scope, strings.Join(pol.Scopes, ", "))
	}
	topK := pol.TopK
	if args.TopK != nil {
		if *args.TopK < 1 || *args.TopK > 10 {
			return nil, toolErr("session_search: top_k %d is outside 1..10", *args.TopK)
		}
		topK = *args.TopK
	}
	minScore := pol.MinScore
	if args.MinScore != nil {
		if *args.MinScore < 0 || *args.MinScore > 1 {
			return nil, toolErr("session_search: min_score %g is outside [0, 1]", *args.MinScore)
		}
		minScore = *args.MinScore
	}
	if err := checkSession(req); err != nil {
		return nil, err
	}
	res, err := t.x.Search(ctx, SearchRequest{Session: req.Session, FilterKey: req.Node, Run: req.Run, Query: args.Query, Scope: scope, TopK: topK, MinScore: minScore})
	if err != nil {
		return nil, toolErr("session_search failed: %v", err)
	}
	return json.Marshal(res)
}

func checkSession(req runtime.ToolRequest) error {
	if req.Session.App == "" || req.Session.User == "" || req.Session.Session == "" {
		return toolErr("%s needs a session (the call carries none)", "recall")
	}
	return nil
}

// LoadTool is session_load.
type LoadTool struct{ tool }

// NewLoadTool returns session_load over x; prog (may be nil) supplies the
// calling agent's recall policy (load_window).
func NewLoadTool(x *Index, prog *bytecode.Program) *LoadTool {
	return &LoadTool{tool{name: LoadToolName, x: x, prog: prog}}
}

// Call implements runtime.Tool.
func (t *LoadTool) Call(ctx context.Context, req runtime.ToolRequest) (json.RawMessage, error) {
	var args struct {
		SessionID     *string `json:"session_id"`
		EventID       *string `json:"event_id"`
		ToolCallID    *string `json:"tool_call_id"`
		Before        *int    `json:"before"`
		After         *int    `json:"after"`
		ContentOffset *int    `json:"content_offset"`
		ContentLimit  *int    `json:"content_limit"`
	}
	if err := runtime.DecodeArgsStrict(LoadToolName, req.Args, &args); err != nil {
		return nil, err
	}
	if err := checkSession(req); err != nil {
		return nil, err
	}
	pol := t.policy(req)
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return strings.TrimSpace(*p)
	}
	lr := LoadRequest{Session: req.Session, Run: req.Run, Target: str(args.SessionID), EventID: str(args.EventID), ToolCallID: str(args.ToolCallID),
		Before: pol.LoadWindow, After: pol.LoadWindow, MaxSide: pol.LoadWindow}
	if lr.Target == "current" {
		lr.Target = ""
	}
	if lr.EventID == "" && lr.ToolCallID == "" {
		return nil, toolErr("session_load needs event_id or tool_call_id")
	}
	if args.Before != nil {
		lr.Before = *args.Before
	}
	if args.After != nil {
		lr.After = *args.After
	}
	if lr.Before < 0 || lr.After < 0 {
		return nil, toolErr("session_load: before and after must not be negative")
	}
	if args.ContentOffset != nil {
		if *args.ContentOffset < 0 {
			return nil, toolErr("session_load: content_offset must not be negative")
		}
		lr.ContentOffset = *args.ContentOffset
	}
	if args.ContentLimit != nil {
		if *args.ContentLimit < 1 {
			return nil, toolErr("session_load: content_limit must be at least 1")
		}
		lr.ContentLimit = min(*args.ContentLimit, MaxContentLimit)
	}
	w, err := t.x.Load(ctx, lr)
	if errors.Is(err, ErrAnchorNotFound) {
		return nil, toolErr("session_load: %v; search again with session_search", strings.TrimPrefix(err.Error(), "recall: "))
	}
	if err != nil {
		return nil, toolErr("session_load failed: %v", err)
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, toolErr("session_load: encode result: %v", err)
	}
	return b, nil
}
