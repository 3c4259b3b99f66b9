package inspect

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// RunInfo is a run as a list shows it: where it belongs, where it stands,
// what it cost.
type RunInfo struct {
	ID          string    `json:"id"`
	App         string    `json:"app"`
	User        string    `json:"user"`
	Session     string    `json:"session"`
	Runnable    string    `json:"runnable"`
	Status      string    `json:"status"`
	ProgramHash string    `json:"program_hash"`
	ParentRun   string    `json:"parent_run"`
	ParentStep  uint64    `json:"parent_step"`
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
	Totals
}

func runInfo(r store.Run) RunInfo {
	return RunInfo{ID: r.ID, App: r.Session.App, User: r.Session.User, Session: r.Session.Session, Runnable: r.Runnable,
		Status: string(r.Status), ProgramHash: r.ProgramHash, ParentRun: r.ParentRun, ParentStep: r.ParentStep,
		Created: r.Created.UTC(), Updated: r.Updated.UTC(), Totals: totalsOf(r)}
}

// Runs lists one page of the runs f selects, newest first within the page
// (the store lists by run id, which is time-ordered), with their totals
// (from their records),
// and the cursor of the next page ("" at the end).
func (in *Inspector) Runs(ctx context.Context, f store.RunFilter) ([]RunInfo, string, error) {
	runs, next, err := in.cfg.Store.ListRuns(ctx, f)
	if err != nil {
		return nil, "", err
	}
	out := make([]RunInfo, len(runs))
	for i, r := range runs {
		out[i] = runInfo(r)
	}
	slices.Reverse(out)
	return out, next, nil
}

// Node states of a run's graph (RunDetail).
const (
	NodeIdle     = "idle"
	NodeCurrent  = "current"  // in the frontier of a running run
	NodeFinished = "finished" // finished at least once
	NodeFailed   = "failed"   // its last attempt failed
	NodeWaiting  = "waiting"  // a pending interrupt
)

// GraphNode is a node of a run's picture with where the run stands at it.
type GraphNode struct {
	Name    string `json:"name"`
	Caption string `json:"caption"`
	Shape   string `json:"shape"`
	State   string `json:"state"`
}

// GraphEdge is an arrow of a run's picture.
type GraphEdge struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Label  string `json:"label"`
	Dashed bool   `json:"dashed"`
}

// Graph is the picture `agentc graph` draws (bytecode.PictureOf) with each
// node's state.
type Graph struct {
	Name  string      `json:"name"`
	Nodes []GraphNode `json:"nodes"`
	Edges []GraphEdge `json:"edges"`
}

// RunDetail is one run with its graph and where it stands.
type RunDetail struct {
	Run        RunInfo                 `json:"run"`
	Graph      Graph                   `json:"graph"`
	Step       uint64                  `json:"step"`
	Frontier   []string                `json:"frontier"`
	Interrupts []runtime.InterruptInfo `json:"interrupts"`
	Decisions  []runtime.DecisionInfo  `json:"decisions"`
	Timers     []runtime.TimerInfo     `json:"timers,omitempty"` // the deadlines a waiting run has
	Error      *runtime.ErrorInfo      `json:"error,omitempty"`
	Output     json.RawMessage         `json:"output,omitempty"`
}

// RunDetail returns run id with its graph (from its own program), node
// states, pending interrupts (with the JSON Schema of each answer) and
// decisions.
func (in *Inspector) RunDetail(ctx context.Context, id string) (*RunDetail, error) {
	run, prog, err := in.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	gi := slices.IndexFunc(prog.Graphs, func(g bytecode.Graph) bool { return g.Name == run.Runnable })
	if gi < 0 {
		return nil, fmt.Errorf("run %s runs %q, which its program does not have", run.ID, run.Runnable)
	}
	pic, err := bytecode.PictureOf(prog, gi)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID, err)
	}
	out := &RunDetail{Run: runInfo(run), Frontier: []string{}, Interrupts: []runtime.InterruptInfo{}, Decisions: []runtime.DecisionInfo{}}
	states := map[string]string{}
	evs, err := in.sessions.RunEvents(ctx, run, session.EventFilter{Kinds: []runtime.EventKind{
		runtime.EventNodeFinished, runtime.EventNodeFailed, runtime.EventRunError, runtime.EventRunFinished}})
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID, err)
	}
	// A fork's history before its step is its parent's (and theirs).
	parent, upTo := run.ParentRun, run.ParentStep
	for depth := 0; parent != "" && depth < 16; depth++ {
		pr, err := in.cfg.Store.GetRun(ctx, parent)
		if err != nil {
			break
		}
		pevs, err := in.sessions.RunEvents(ctx, pr, session.EventFilter{Kinds: []runtime.EventKind{
			runtime.EventNodeFinished, runtime.EventNodeFailed}})
		if err != nil {
			return nil, fmt.Errorf("run %s: parent %s: %w", run.ID, pr.ID, err)
		}
		for _, e := range pevs {
			if e.Step <= upTo && states[e.Node] == "" {
				states[e.Node] = map[runtime.EventKind]string{runtime.EventNodeFinished: NodeFinished, runtime.EventNodeFailed: NodeFailed}[e.Kind]
			}
		}
		parent, upTo = pr.ParentRun, min(upTo, pr.ParentStep)
	}
	for _, e := range evs {
		switch e.Kind {
		case runtime.EventNodeFinished:
			states[e.Node] = NodeFinished
		case runtime.EventNodeFailed:
			states[e.Node] = NodeFailed
		case runtime.EventRunError:
			out.Error = e.Error
		case runtime.EventRunFinished:
			out.Decisions, out.Output, out.Timers = e.Decisions, e.Output, e.Timers
			if e.Status != runtime.StatusFailed && e.Status != runtime.StatusCanceled {
				out.Error = nil
			}
		}
	}
	if out.Decisions == nil || run.Status != store.RunStatus(runtime.StatusNeedsDecision) {
		out.Decisions = []runtime.DecisionInfo{}
	}
	if run.Status != store.RunStatus(runtime.StatusInterrupted) {
		out.Timers = nil
	}
	if latest, err := in.cfg.Store.LatestCheckpoint(ctx, run.ID); err == nil {
		ss, err := runtime.StateAt(ctx, in.cfg.Store, prog, run, latest.Step)
		if err != nil {
			return nil, err
		}
		g := &ss.Program.Graphs[ss.Graph] // a moved run's checkpoint is its new program's
		out.Step = ss.Step
		states["start"] = NodeFinished
		for _, n := range ss.Frontier {
			out.Frontier = append(out.Frontier, g.Nodes[n].Name)
			if run.Status == store.RunStatus(runtime.StatusRunning) && states[g.Nodes[n].Name] == "" {
				states[g.Nodes[n].Name] = NodeCurrent
			}
		}
		if run.Status == store.RunStatus(runtime.StatusInterrupted) {
			out.Interrupts = pendingInfos(ss.Program, g, ss.Interrupts)
			for _, p := range out.Interrupts {
				top, _, _ := strings.Cut(p.Node, "/") // a sub-run's interrupt: its calling node waits
				states[top] = NodeWaiting
			}
			for _, tm := range out.Timers {
				top, _, _ := strings.Cut(tm.Node, "/")
				states[top] = NodeWaiting
			}
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("run %s: %w", run.ID, err)
	}
	if run.Status == store.RunStatus(runtime.StatusCompleted) {
		states["end"] = NodeFinished
	}
	out.Graph = Graph{Name: pic.Name, Nodes: make([]GraphNode, len(pic.Nodes)), Edges: make([]GraphEdge, len(pic.Edges))}
	for i, n := range pic.Nodes {
		st := states[n.Name]
		if st == "" {
			st = NodeIdle
		}
		out.Graph.Nodes[i] = GraphNode{Name: n.Name, Caption: n.Caption, Shape: n.Shape.String(), State: st}
	}
	for i, e := range pic.Edges {
		out.Graph.Edges[i] = GraphEdge{From: pic.Nodes[e.From].Name, To: pic.Nodes[e.To].Name, Label: e.Label, Dashed: e.Dashed}
	}
	return out, nil
}

// pendingInfos describes a checkpoint's pending interrupts with the JSON
// Schema of each answer (the interrupt node's resume type).
func pendingInfos(prog *bytecode.Program, g *bytecode.Graph, pending []runtime.PendingInterrupt) []runtime.InterruptInfo {
	out := []runtime.InterruptInfo{}
	for _, p := range pending {
		info := runtime.InterruptInfo{ID: p.ID, Prompt: p.Prompt, Node: strings.TrimPrefix(p.ID, g.Name+"/")}
		if t := resumeType(prog, g, p); t != nil {
			info.Schema = types.JSONSchema(t)
		}
		out = append(out, info)
	}
	return out
}

// resumeType is the type that answers pending interrupt p of graph g (nil
// when the record names no interrupt node of g).
func resumeType(prog *bytecode.Program, _ *bytecode.Graph, p runtime.PendingInterrupt) *types.Type {
	return vm.InterruptType(prog, p)
}

// FieldError is one problem of a request's values: an answer (Field is the
// interrupt id, then the JSON path inside the value), a fork edit (the
// state field) or a decision (its id).
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// FieldErrors is a request refused for its values, one entry per problem;
// it is ErrInvalid.
type FieldErrors []FieldError

func (fe FieldErrors) Error() string {
	parts := make([]string, len(fe))
	for i, f := range fe {
		parts[i] = f.Field + ": " + f.Message
	}
	return strings.Join(parts, "; ")
}

// Is makes FieldErrors ErrInvalid.
func (fe FieldErrors) Is(target error) bool { return target == ErrInvalid }

// CheckAnswers checks answers to the interrupts run id waits on at step
// (step < 0: its last step), by id or bare node name, against each
// interrupt's type, as the Runner will (types.FromJSON): FieldErrors lists
// every answer that does not fit or names no pending interrupt, and each
// pending interrupt when none is answered.
func (in *Inspector) CheckAnswers(ctx context.Context, id string, step int64, values map[string]json.RawMessage) error {
	run, prog, err := in.Run(ctx, id)
	if err != nil {
		return err
	}
	gi := slices.IndexFunc(prog.Graphs, func(g bytecode.Graph) bool { return g.Name == run.Runnable })
	if gi < 0 {
		return fmt.Errorf("run %s runs %q, which its program does not have", run.ID, run.Runnable)
	}
	ss, err := in.stateAt(ctx, prog, run, step)
	if err != nil {
		return err
	}
	g := &ss.Program.Graphs[ss.Graph]
	var fe FieldErrors
	for _, key := range slices.Sorted(maps.Keys(values)) {
		full, i := runtime.AnswerTarget(run.Runnable, key, ss.Interrupts, func(p runtime.PendingInterrupt) string { return p.ID })
		if i < 0 {
			fe = append(fe, FieldError{Field: key, Message: "no such pending interrupt"})
			continue
		}
		t := resumeType(ss.Program, g, ss.Interrupts[i])
		if t == nil {
			continue
		}
		if _, err := types.FromJSON(t, values[key]); err != nil {
			path, msg, ok := strings.Cut(err.Error(), ": ")
			if !ok || !strings.HasPrefix(path, "$") {
				path, msg = "$", err.Error()
			}
			fe = append(fe, FieldError{Field: full + " " + path, Message: msg})
		}
	}
	if len(values) == 0 {
		for _, p := range ss.Interrupts {
			fe = append(fe, FieldError{Field: p.ID, Message: "the run waits for an answer: " + p.Prompt})
		}
	}
	if len(fe) > 0 {
		return fe
	}
	return nil
}

// CheckEdits checks fork edits of run id at step against the state's
// field types and list sizes, as runtime.Fork will: FieldErrors lists every edit that
// names no field or does not fit.
func (in *Inspector) CheckEdits(ctx context.Context, id string, step uint64, set map[string]json.RawMessage) error {
	run, prog, err := in.Run(ctx, id)
	if err != nil {
		return err
	}
	ss, err := runtime.StateAt(ctx, in.cfg.Store, prog, run, step)
	if err != nil {
		return err
	}
	var fe FieldErrors
	for _, name := range slices.Sorted(maps.Keys(set)) {
		i := slices.IndexFunc(ss.Fields, func(f runtime.StateField) bool { return f.Name == name })
		if i < 0 || strings.HasPrefix(name, "$") {
			fe = append(fe, FieldError{Field: name, Message: "the state has no such field"})
			continue
		}
		v, err := types.FromJSON(ss.Fields[i].Type, set[name])
		if err != nil {
			fe = append(fe, FieldError{Field: name, Message: fmt.Sprintf("does not fit %s: %v", ss.Fields[i].Type, err)})
		} else if err := prog.States[prog.Graphs[ss.Graph].State].Fields[i].CheckSize(v); err != nil {
			fe = append(fe, FieldError{Field: name, Message: err.Error()})
		}
	}
	if len(fe) > 0 {
		return fe
	}
	return nil
}

// Change is one field that differs between two steps' states. Op is
// "added" (it became non-null), "removed" (it became null) or "changed".
type Change struct {
	Field  string          `json:"field"`
	Op     string          `json:"op"`
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// StepDiff is a run's state at a step and how it differs from the step
// before (Previous nil at the first step).
type StepDiff struct {
	State
	Previous *uint64  `json:"previous"`
	Changes  []Change `json:"changes"`
}

// Diff returns run id's state at step and its changes against the step
// before (every non-null field added at the run's first step).
func (in *Inspector) Diff(ctx context.Context, id string, step uint64) (*StepDiff, error) {
	cur, err := in.State(ctx, id, int64(step))
	if err != nil {
		return nil, err
	}
	out := &StepDiff{State: *cur, Changes: []Change{}}
	before := map[string]json.RawMessage{}
	if step > 0 {
		cps, err := in.cfg.Store.ListCheckpoints(ctx, id, store.CheckpointFilter{})
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", id, err)
		}
		prevStep, found := uint64(0), false
		for _, cp := range cps {
			if cp.Step < step && (!found || cp.Step > prevStep) {
				prevStep, found = cp.Step, true
			}
		}
		if found {
			prev, err := in.State(ctx, id, int64(prevStep))
			if err != nil {
				return nil, err
			}
			out.Previous = &prevStep
			if err := json.Unmarshal(prev.State, &before); err != nil {
				return nil, fmt.Errorf("run %s step %d: %w", id, prevStep, err)
			}
		}
	}
	after := map[string]json.RawMessage{}
	if err := json.Unmarshal(cur.State, &after); err != nil {
		return nil, fmt.Errorf("run %s step %d: %w", id, step, err)
	}
	isNull := func(b json.RawMessage) bool { return len(b) == 0 || string(b) == "null" }
	for _, name := range fieldOrder(cur.State) {
		b, a := before[name], after[name]
		switch {
		case isNull(b) && isNull(a), bytes.Equal(b, a):
			continue
		case isNull(b):
			out.Changes = append(out.Changes, Change{Field: name, Op: "added", Before: json.RawMessage("null"), After: a})
		case isNull(a):
			out.Changes = append(out.Changes, Change{Field: name, Op: "removed", Before: b, After: json.RawMessage("null")})
		default:
			out.Changes = append(out.Changes, Change{Field: name, Op: "changed", Before: b, After: a})
		}
	}
	return out, nil
}

// fieldOrder lists the members of a JSON object in their order.
func fieldOrder(obj json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	var names []string
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return names
		}
		k, _ := t.(string)
		names = append(names, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return names
		}
	}
	return names
}

// ---- a run's steps: checkpoints, state at a step, forks, replays ----

// Checkpoint is one committed step of a run.
type Checkpoint struct {
	Step uint64 `json:"step"`
	Kind string `json:"kind"` // full or delta
	// Nodes are the nodes that finished at the step ("n[2]" for a map
	// instance, "n(failed)" for a failure); for a step that only raised
	// interrupts, the interrupt nodes it waits on ("approve(waiting)").
	Nodes []string  `json:"nodes"`
	Time  time.Time `json:"time"`
	Bytes int       `json:"bytes"` // the record's size: state, frontier, counters, interrupts
}

// Checkpoints lists run id's checkpoints, oldest first.
func (in *Inspector) Checkpoints(ctx context.Context, id string) ([]Checkpoint, error) {
	run, prog, err := in.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	gi := slices.IndexFunc(prog.Graphs, func(g bytecode.Graph) bool { return g.Name == run.Runnable })
	cps, err := in.cfg.Store.ListCheckpoints(ctx, run.ID, store.CheckpointFilter{})
	if err != nil {
		return nil, err
	}
	slices.Reverse(cps) // oldest first
	evs, err := in.sessions.RunEvents(ctx, run, session.EventFilter{
		Kinds: []runtime.EventKind{runtime.EventNodeFinished, runtime.EventNodeFailed}})
	if err != nil {
		return nil, err
	}
	nodes := map[uint64][]string{}
	for _, e := range evs {
		n := e.Node
		if e.MapIndex != nil {
			n = fmt.Sprintf("%s[%d]", n, *e.MapIndex)
		}
		if e.Kind == runtime.EventNodeFailed {
			n += "(failed)"
		}
		if !slices.Contains(nodes[e.Step], n) {
			nodes[e.Step] = append(nodes[e.Step], n)
		}
	}
	out := make([]Checkpoint, 0, len(cps))
	progs := map[string]*bytecode.Program{}
	for _, cp := range cps {
		c := Checkpoint{Step: cp.Step, Kind: cp.Kind.String(), Nodes: nodes[cp.Step], Time: cp.Time.UTC(),
			Bytes: len(cp.State) + len(cp.Frontier) + len(cp.Counters) + len(cp.Interrupts)}
		if c.Nodes == nil {
			p, pgi := prog, gi
			if h := cp.ProgramHash; h != "" && h != hex.EncodeToString(prog.Hash[:]) {
				// Written after the run moved to another program (spec/upgrade.md).
				if progs[h] == nil {
					if progs[h], err = runtime.ProgramByHash(ctx, in.cfg.Store, h); err != nil {
						return nil, fmt.Errorf("run %s: checkpoint %d: %w", run.ID, cp.Step, err)
					}
				}
				p = progs[h]
				pgi = slices.IndexFunc(p.Graphs, func(g bytecode.Graph) bool { return g.Name == run.Runnable })
			}
			c.Nodes = waitingOn(p, pgi, cp.Interrupts)
		}
		out = append(out, c)
	}
	return out, nil
}

// waitingOn names the interrupt nodes a checkpoint of a run of graph gi
// waits on ("approve(waiting)"): a step that only raised interrupts
// finished no node.
func waitingOn(prog *bytecode.Program, gi int, b []byte) []string {
	out := []string{}
	if gi < 0 {
		return out
	}
	ins, err := vm.DecodeInterrupts(prog, gi, b)
	if err != nil {
		return out
	}
	for _, in := range ins {
		out = append(out, in.ID[strings.LastIndex(in.ID, "/")+1:]+"(waiting)")
	}
	return out
}

// State is a run's state at a committed step.
type State struct {
	Run        string   `json:"run"`
	Step       uint64   `json:"step"`
	Kind       string   `json:"kind"`                 // the step's checkpoint: full or delta
	Frontier   []string `json:"frontier"`             // the nodes of the next step
	Interrupts []string `json:"interrupts,omitempty"` // the pending interrupts' ids
	// State holds the fields by name, in schema order; hidden ($…) fields
	// are left out.
	State json.RawMessage `json:"state"`
}

// State returns run id's state at step (step < 0: its last step), rebuilt
// from the checkpoint chain (runtime.StateAt, the VM's own reading).
func (in *Inspector) State(ctx context.Context, id string, step int64) (*State, error) {
	run, prog, err := in.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	ss, err := in.stateAt(ctx, prog, run, step)
	if err != nil {
		return nil, err
	}
	state, err := stateJSON(ss.Fields)
	if err != nil {
		return nil, err
	}
	g := &ss.Program.Graphs[ss.Graph]
	out := &State{Run: run.ID, Step: ss.Step, Kind: ss.Checkpoint.Kind.String(), Frontier: []string{}, State: state}
	for _, n := range ss.Frontier {
		out.Frontier = append(out.Frontier, g.Nodes[n].Name)
	}
	for _, p := range ss.Interrupts {
		out.Interrupts = append(out.Interrupts, p.ID)
	}
	return out, nil
}

// stateAt is run's state at step (step < 0: its last step).
func (in *Inspector) stateAt(ctx context.Context, prog *bytecode.Program, run store.Run, step int64) (*runtime.StepState, error) {
	if step < 0 {
		return runtime.LatestStateAt(ctx, in.cfg.Store, prog, run)
	}
	return runtime.StateAt(ctx, in.cfg.Store, prog, run, uint64(step))
}

// stateJSON is a JSON object of the visible fields, in schema order.
func stateJSON(fields []runtime.StateField) (json.RawMessage, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, fl := range fields {
		if strings.HasPrefix(fl.Name, "$") {
			continue
		}
		v, err := types.ToJSON(fl.Value)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", fl.Name, err)
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		k, _ := json.Marshal(fl.Name)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ParseSets reads fork edits written FIELD=JSON (ErrInvalid when one is not).
func ParseSets(sets []string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for _, s := range sets {
		name, val, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return nil, invalid(fmt.Errorf("--set %q: want FIELD=JSON", s))
		}
		if !json.Valid([]byte(val)) {
			return nil, invalid(fmt.Errorf("--set %s: %q is not valid JSON", name, val))
		}
		out[name] = json.RawMessage(val)
	}
	return out, nil
}

// ForkRequest forks run Run at step Step with the fields of Set replaced
// (each value checked against its field's type). A non-empty ProgramHash
// refuses the fork unless it is the run's program.
type ForkRequest struct {
	Run         string                     `json:"run"`
	Step        uint64                     `json:"step"`
	Set         map[string]json.RawMessage `json:"set,omitempty"`
	ProgramHash string                     `json:"program_hash,omitempty"`
}

// Forked is the run a fork started.
type Forked struct {
	ParentRun  string `json:"parent_run"`
	ParentStep uint64 `json:"parent_step"`
	Run        string `json:"run"`
	Session    string `json:"session"`
	User       string `json:"user"`
}

// Fork starts a new run in the run's session from its state at req.Step
// (runtime.Fork); it waits where that step left off. An edit that names no
// field or does not fit, and a fork under another program, are ErrInvalid.
func (in *Inspector) Fork(ctx context.Context, req ForkRequest) (Forked, error) {
	_, prog, err := in.Run(ctx, req.Run)
	if err != nil {
		return Forked{}, err
	}
	nr, err := runtime.Fork(ctx, in.cfg.Store, prog, runtime.ForkRequest{
		Run: req.Run, Step: req.Step, Set: req.Set, ProgramHash: req.ProgramHash,
		Clock: in.cfg.Clock, Entropy: in.cfg.Entropy,
	})
	switch {
	case errors.Is(err, runtime.ErrBadEdit), errors.Is(err, runtime.ErrNotResumable):
		return Forked{}, invalid(err)
	case err != nil:
		return Forked{}, err
	}
	return Forked{ParentRun: nr.ParentRun, ParentStep: nr.ParentStep, Run: nr.ID, Session: nr.Session.Session, User: nr.Session.User}, nil
}

// Replay is the outcome of re-executing a run offline from its journal.
type Replay struct {
	Diverged   []string `json:"diverged"` // how the states differ (empty when identical)
	DivergedAt uint64   `json:"diverged_at"`
	Identical  bool     `json:"identical"`
	Run        string   `json:"run"`
	Step       uint64   `json:"step"`      // the last step the replay reached
	WantStep   uint64   `json:"want_step"` // the run's last committed step
}

// Replay re-executes run id from its journal under its own program
// (runtime.ReplayRun, with the function table funcs builds for it) and
// compares the state it reaches with the run's last checkpoint.
func (in *Inspector) Replay(ctx context.Context, id string, funcs func(*bytecode.Program) map[string]vm.Func) (*Replay, error) {
	run, prog, err := in.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	res, err := runtime.ReplayRun(ctx, in.cfg.Store, prog, funcs(prog), run)
	if err != nil {
		return nil, err
	}
	return &Replay{Run: run.ID, Identical: res.Identical, Step: res.Step, WantStep: res.WantStep,
		DivergedAt: res.DivergedAt, Diverged: res.Diverged}, nil
}
