package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/vm"
)

// toolInfo is what the host knows about one program tool.
type toolInfo struct {
	name    string
	decl    *bytecode.Tool
	in, out *types.Type
	impl    Tool // nil: a `run = agent` tool the Runner runs itself
	spec    ToolSpec
	confirm bool // `confirm = true`: an llm loop asks before each call (confirm.go)
}

// agentInfo is what the llm loop knows about one program agent.
type agentInfo struct {
	decl        *bytecode.Agent
	model       Model
	tools       []int          // program tool indexes, in declaration order
	byName      map[string]int // tool name → program tool index
	specs       []ToolSpec
	maxTurns    int
	temperature *float64
	topP        *float64
	seed        *int64
	maxTokens   int
	confirmFx   bool            // confirm_side_effects: ask before each side_effect tool call
	price       *Price          // the model's declared price; nil: none
	index       int             // in Program.Agents
	toolNames   []string        // the names of tools, in order
	fallbacks   []fallbackModel // models called when the model is unavailable (fallback.go)
	imageInput  bool            // the model takes images (image_input; files.go)
}

// bind resolves the program's models and tools against the given
// implementations; everything an agent or a tool node needs must be there.
func (pr *program) bind(models map[string]Model, tools map[string]Tool) error {
	p := pr.prog
	pr.tools = make([]toolInfo, len(p.Tools))
	for i := range p.Tools {
		t := &p.Tools[i]
		ti := toolInfo{name: t.Name, decl: t, in: p.Types[t.Input], out: p.Types[t.Output], impl: tools[t.Name]}
		if ti.impl == nil && t.Impl.Kind == bytecode.ImplBuiltin {
			ti.impl = tools[t.Impl.Builtin]
		}
		ti.spec = ToolSpec{Name: t.Name, Description: t.Doc, InputSchema: types.JSONSchema(ti.in)}
		if v, ok := p.ConstAttr(t.Attrs, "confirm"); ok && v.Kind() == types.ValBool {
			ti.confirm = v.Bool()
		}
		pr.tools[i] = ti
	}
	missingModels, missingTools := map[string]bool{}, map[string]bool{}
	needTool := func(ti int) {
		if t := &pr.tools[ti]; t.impl == nil && t.decl.Impl.Kind != bytecode.ImplAgent {
			missingTools[t.name] = true
		}
	}
	pr.agents = make([]agentInfo, len(p.Agents))
	for i := range p.Agents {
		ag := &p.Agents[i]
		ai := agentInfo{decl: ag, byName: map[string]int{}, maxTurns: int(ag.MaxTurns), index: i}
		if ai.maxTurns <= 0 {
			ai.maxTurns = DefaultMaxTurns
		}
		if v, ok := p.ConstAttr(ag.Attrs, "confirm_side_effects"); ok && v.Kind() == types.ValBool {
			ai.confirmFx = v.Bool()
		}
		if ag.Kind == bytecode.AgentLLM && ag.Model >= 0 {
			md := &p.Models[ag.Model]
			if ai.model = models[md.Name]; ai.model == nil {
				missingModels[md.Name] = true
			}
			if at, ok := bytecode.FindAttr(md.Attrs, "temperature"); ok {
				if f, ok := p.AttrNumber(at); ok {
					ai.temperature = &f
				}
			}
			if at, ok := bytecode.FindAttr(md.Attrs, "top_p"); ok {
				if f, ok := p.AttrNumber(at); ok {
					ai.topP = &f
				}
			}
			if _, ok := bytecode.FindAttr(md.Attrs, "seed"); ok {
				n := int64(p.AttrInt(md.Attrs, "seed", 0))
				ai.seed = &n
			}
			ai.maxTokens = p.AttrInt(md.Attrs, "max_tokens", ai.maxTokens)
			ai.price = priceOf(p, md)
			if at, ok := bytecode.FindAttr(md.Attrs, "image_input"); ok {
				v, _ := p.AttrConst(at)
				ai.imageInput = v.Kind() == types.ValBool && v.Bool()
			}
			pr.bindFallbacks(&ai, models, func(name string) { missingModels[name] = true })
		}
		if ag.Kind == bytecode.AgentLLM {
			for _, ti := range ag.Tools {
				ai.tools = append(ai.tools, int(ti))
				ai.byName[pr.tools[ti].name] = int(ti)
				ai.specs = append(ai.specs, pr.tools[ti].spec)
				ai.toolNames = append(ai.toolNames, pr.tools[ti].name)
				needTool(int(ti))
			}
		}
		pr.agents[i] = ai
	}
	for gi := range p.Graphs {
		for _, n := range p.Graphs[gi].Nodes {
			if n.Call.Kind == bytecode.CallTool {
				needTool(int(n.Call.Callee))
			}
		}
	}
	if len(missingModels)+len(missingTools) == 0 {
		return nil
	}
	var parts []string
	if len(missingModels) > 0 {
		parts = append(parts, "models "+strings.Join(slices.Sorted(maps.Keys(missingModels)), ", "))
	}
	if len(missingTools) > 0 {
		parts = append(parts, "tools "+strings.Join(slices.Sorted(maps.Keys(missingTools)), ", "))
	}
	return fmt.Errorf("runtime: the program needs implementations of %s", strings.Join(parts, " and "))
}

// host is the run's vm.Host: it dispatches tool nodes to Tool.Call, llm
// nodes to the llm loop (llmloop.go), and agent and graph nodes to sub-runs
// of the same Machine. Inside a sub-run, scope is the calling task of the
// run's own graph, to which every event of the sub-run is attributed.
type host struct {
	a     *activeRun
	scope *taskScope
	// Inside a sub-run: the VM path prefix of its nodes, the caller's
	// relative path that replaces it, and the caller's map item.
	prefix, base string
	item         int
	// budget is the innermost budget of a graph or agent call the host's
	// work is under (nil: only the run's; budget.go).
	budget *budgetScope
}

// rel maps a VM node path to the path events and call sites use: relative
// to the runnable, and inside a sub-run the caller's path followed by the
// callee's graph and node ("fan/sub/ask", the item index kept apart).
func (h *host) rel(path string) string {
	if h.scope == nil {
		return h.a.rel(path)
	}
	if len(path) > len(h.prefix) && path[len(h.prefix)] == '/' && strings.HasPrefix(path, h.prefix) {
		// The VM path under the caller is "<callee graph>/<node>"; node
		// paths name nodes, not graphs: "caller/node" (spec/fixtures.md).
		rest := path[len(h.prefix)+1:]
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			rest = rest[i+1:]
		}
		return h.base + "/" + rest
	}
	return h.a.rel(path)
}

// taskScope is the task of the run's graph that an event belongs to: its
// node and map item (the ledger's order within a step) and step.
type taskScope struct {
	node, item int
	step       uint64
}

// callCtx is one call as the host sees it.
type callCtx struct {
	sc      *taskScope
	run     string
	path    string // the VM node path ("graph/node", "graph/a/sub/b")
	vmItem  int    // the VM's map index of this call, or -1
	node    string // the path relative to the runnable: events and call sites
	item    int    // map item index for events and call sites (the caller's inside a sub-run), or -1
	step    uint64
	attempt uint32
	idem    string         // idempotency key of the attempt ("" for read-only calls)
	resume  *vm.CallResume // the answer to this call's pause (clienttools.go)
	sub     *vm.SubResume  // a parked sub-run (or paused loop) to continue (vm.CallRequest.SubRun)
}

// mapIndex returns the item index for events (nil outside a map).
func (c *callCtx) mapIndex() *int {
	if c.item < 0 {
		return nil
	}
	i := c.item
	return &i
}

// taskID is the VM task's path: node, or node/item.
func (c *callCtx) taskID() string {
	if c.vmItem < 0 {
		return c.path
	}
	return c.path + "/" + strconv.Itoa(c.vmItem)
}

// Call implements vm.Host.
func (h *host) Call(ctx context.Context, req vm.CallRequest) (types.Value, error) {
	h.a.release() // the step's node_started go out before the call runs
	sc := h.scope
	if sc == nil {
		sc = &taskScope{node: req.NodeIndex, item: req.MapIndex, step: req.Step}
	}
	item := req.MapIndex
	if item < 0 && h.scope != nil {
		item = h.item
	}
	c := &callCtx{sc: sc, run: req.Run, path: req.Node, vmItem: req.MapIndex, node: h.rel(req.Node), item: item,
		step: sc.step, attempt: req.Attempt, idem: req.IdempotencyKey, resume: req.Resume, sub: req.SubRun}
	if obs := h.a.r.obs; obs != nil {
		return h.observeCall(ctx, obs, c, req)
	}
	return h.dispatch(ctx, c, req)
}

// dispatch performs call c of req.
func (h *host) dispatch(ctx context.Context, c *callCtx, req vm.CallRequest) (types.Value, error) {
	switch req.Kind {
	case bytecode.CallTool:
		return h.toolNode(ctx, c, &h.a.p.tools[req.Callee], req.Args)
	case bytecode.CallLLM, bytecode.CallAgent:
		return h.agent(ctx, c, int(req.Callee), textArg(req.Args, "prompt"), req.Result)
	case bytecode.CallGraph:
		return h.subRun(ctx, c, int(req.Callee), "graph "+h.a.p.prog.Graphs[req.Callee].Name, vm.Options{Fields: req.Args})
	}
	return types.Value{}, vm.NewError(vm.KindInternal, "unknown call kind %s", req.Kind)
}

// textArg returns the named argument as text ("" when absent).
func textArg(args []vm.NamedValue, name string) string {
	for _, a := range args {
		if a.Name == name {
			b, _ := types.AppendText(nil, a.Value)
			return string(b)
		}
	}
	return ""
}

// agent runs agent ai on prompt: an llm agent's model ⇄ tool loop, or a
// composition's lowered graph as a sub-run.
func (h *host) agent(ctx context.Context, c *callCtx, ai int, prompt string, result *types.Type) (types.Value, error) {
	ag := &h.a.p.agents[ai]
	if ag.decl.Kind == bytecode.AgentLLM {
		if ag.decl.Graph >= 0 {
			if s := h.callScope(int(ag.decl.Graph), "agent "+ag.decl.Name); s != h.budget {
				inner := *h
				inner.budget = s
				return inner.llm(ctx, c, ag, prompt, result)
			}
		}
		return h.llm(ctx, c, ag, prompt, result)
	}
	if ag.decl.Graph < 0 {
		return types.Value{}, vm.NewError(vm.KindInternal, "agent %s has no graph", ag.decl.Name)
	}
	return h.subRun(ctx, c, int(ag.decl.Graph), "agent "+ag.decl.Name, vm.Options{Input: types.MakeString(prompt)})
}

// subRun runs graph gi of the same Machine for the calling task, in memory
// (its result is journaled by the calling node), with node paths under the
// caller's, and returns the graph's output. what names the call in budget
// errors ("graph G", "agent A").
func (h *host) subRun(ctx context.Context, c *callCtx, gi int, what string, opts vm.Options) (types.Value, error) {
	a := h.a
	graph := a.p.prog.Graphs[gi].Name
	opts.RunID = c.run
	opts.PathPrefix = c.taskID()
	child := &host{a: a, scope: c.sc, prefix: c.taskID(), base: c.node, item: c.item, budget: h.callScope(gi, what)}
	opts.Host = child
	opts.Clock, opts.Entropy, opts.Cache = a.r.clock, a.r.ent, a.r.cache
	opts.Workers = a.r.opts.VMWorkers
	opts.MaxSteps = a.r.opts.MaxSteps
	opts.Emit = func(e vm.Event) { child.onVM(c, graph, e) }
	var res *vm.Result
	var err error
	if c.sub != nil && c.sub.From != nil {
		// A parked sub-run woken by an answer continues from its snapshot.
		res, err = a.p.m.Resume(ctx, gi, vm.ResumeInput{From: c.sub.From, Answers: c.sub.Answers}, opts)
	} else {
		res, err = a.p.m.Run(ctx, gi, opts)
	}
	if err != nil {
		return types.Value{}, err
	}
	switch res.Status {
	case vm.StatusCompleted:
		return res.Output, nil
	case vm.StatusInterrupted:
		// The calling task parks; the interrupts are the parent's, by
		// their path ids (spec/runner.md, "Interrupts in sub-runs").
		return types.Value{}, &vm.Suspension{Snapshot: res.Snapshot, Interrupts: res.Interrupts}
	}
	return types.Value{}, vm.NewError(vm.KindInternal, "%s stopped with status %s inside node %s: pending decisions inside sub-graphs and agents are not supported yet",
		graph, res.Status, c.node)
}

// toolNode runs a tool node: the arguments become the tool's input record
// (checked against its type), the result is decoded as its output type.
func (h *host) toolNode(ctx context.Context, c *callCtx, ti *toolInfo, args []vm.NamedValue) (types.Value, error) {
	a := h.a
	keys := make([]string, len(args))
	vals := make([]types.Value, len(args))
	for i, arg := range args {
		keys[i], vals[i] = arg.Name, arg.Value
	}
	m, err := types.MakeMap(keys, vals)
	if err != nil {
		return types.Value{}, vm.NewError(vm.KindToolError, "arguments of tool %s: %v", ti.name, err)
	}
	raw, err := types.ToJSON(m)
	if err != nil {
		return types.Value{}, vm.NewError(vm.KindToolError, "arguments of tool %s: %v", ti.name, err)
	}
	in, err := types.FromJSON(ti.in, raw)
	if err != nil {
		return types.Value{}, vm.NewError(vm.KindToolError, "arguments of tool %s: %v", ti.name, err)
	}
	canon, err := types.ToJSON(in)
	if err != nil {
		return types.Value{}, vm.NewError(vm.KindToolError, "arguments of tool %s: %v", ti.name, err)
	}
	id := c.taskID() + "@" + strconv.FormatUint(c.step, 10)
	if c.attempt > 1 {
		id += "#" + strconv.FormatUint(uint64(c.attempt), 10)
	}
	call := &ToolCall{ID: id, Name: ti.name, Args: canon}
	ev := a.newEvent(EventToolCall, ti.name, c.node, c.step)
	ev.MapIndex, ev.ToolCall = c.mapIndex(), call
	a.emitTask(c.sc, ev)

	res := a.newEvent(EventToolResult, ti.name, c.node, c.step)
	res.MapIndex, res.ToolCall = c.mapIndex(), call
	tctx := ctx
	var sp Span
	if obs := a.r.obs; obs != nil {
		tctx, sp = h.startTool(ctx, obs, c, ti.name, call.ID, 0)
	}
	out, err := h.callTool(tctx, c, ti, ToolRequest{CallID: call.ID, Args: canon, IdempotencyKey: c.idem})
	var v types.Value
	if err == nil {
		if v, err = types.FromJSON(ti.out, out); err != nil {
			err = &vm.Error{Kind: vm.KindInvalidOutput, Message: fmt.Sprintf("tool %s returned output that does not fit %s: %v", ti.name, ti.out, err), Err: err}
		} else if res.Result, err = types.ToJSON(v); err != nil {
			err = vm.NewError(vm.KindInvalidOutput, "tool %s: %v", ti.name, err)
		}
	}
	if err != nil {
		res.Result, res.Error = nil, errorInfo(err, c.node, vm.KindToolError)
		a.emitTask(c.sc, res)
		if sp != nil {
			sp.End(&SpanEnd{EventID: res.ID, Err: res.Error})
		}
		return types.Value{}, err
	}
	a.emitTask(c.sc, res)
	if sp != nil {
		sp.End(&SpanEnd{EventID: res.ID})
	}
	return v, nil
}

// callTool calls a tool's implementation (or runs its agent), turning a
// panic into an `internal` error: a panicking tool fails its node.
func (h *host) callTool(ctx context.Context, c *callCtx, ti *toolInfo, req ToolRequest) (out json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			h.a.r.log.Error("runtime: tool panicked", "tool", ti.name, "run", c.run, "node", c.node, "panic", p, "stack", string(debug.Stack()))
			out, err = nil, &vm.Error{Kind: vm.KindInternal, Message: fmt.Sprintf("tool %s panicked: %v", ti.name, p)}
		}
	}()
	req.Session, req.Run, req.Node = h.a.key, c.run, c.node
	req.Progress = func(p ToolProgress) {
		author := req.Agent
		if author == "" {
			author = ti.name
		}
		ev := h.a.newEvent(EventToolProgress, author, c.node, c.step)
		ev.MapIndex, ev.ToolCall, ev.Progress = c.mapIndex(), &ToolCall{ID: req.CallID, Name: ti.name}, &p
		h.a.emitTask(c.sc, ev)
	}
	if ti.impl != nil {
		return ti.impl.Call(ctx, req)
	}
	if ti.decl.Impl.Kind == bytecode.ImplAgent {
		return h.agentTool(ctx, c, ti, req)
	}
	return nil, vm.NewError(vm.KindUnavailable, "tool %s has no implementation", ti.name)
}

// agentTool runs a `run = agent NAME` tool: the input record is the
// agent's prompt (a single string field as is, otherwise canonical JSON);
// its answer is decoded as the tool's output type.
func (h *host) agentTool(ctx context.Context, c *callCtx, ti *toolInfo, req ToolRequest) (json.RawMessage, error) {
	prompt := string(req.Args)
	if ti.in.Kind() == types.KindRecord && ti.in.NumFields() == 1 && ti.in.Field(0).Type.Kind() == types.KindString {
		var one map[string]string
		if err := json.Unmarshal(req.Args, &one); err == nil {
			prompt = one[ti.in.Field(0).Name]
		}
	}
	sub := *c
	sub.path, sub.vmItem, sub.node = c.taskID()+"/"+ti.name, -1, c.node+"/"+ti.name
	sub.resume, sub.sub = nil, nil // the caller's paused state is not the agent's
	if req.IdempotencyKey != "" {
		sub.idem = req.IdempotencyKey
	}
	v, err := h.agent(ctx, &sub, int(ti.decl.Impl.Agent), prompt, ti.out)
	var sp *vm.Suspension
	if errors.As(err, &sp) {
		// A tool call cannot pause its caller (spec/language.md §7.8).
		return nil, vm.NewError(vm.KindToolError, "agent %s stopped to wait (%v), which a tool call cannot do", ti.name, sp)
	}
	if err != nil {
		return nil, err
	}
	return types.ToJSON(v)
}
