package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/pebble"
	"github.com/agentc/agentc/vm"
)

type checkpointFlags struct {
	data    string
	json    bool
	step    int64
	set     []string
	program string
}

func newCheckpointsCmd(a *app) *cobra.Command {
	var f checkpointFlags
	cmd := &cobra.Command{
		Use:   "checkpoints list|show|fork RUN",
		Short: "Inspect a run's checkpoints and fork a run from one",
		Long: `Checkpoints reads the store agentc run writes (--data, else $AGENTC_DATA,
else ./.agentc). Every committed superstep of a run has a checkpoint: a
full snapshot of the state or a delta over the previous step.

  agentc checkpoints list RUN                 step, kind, nodes finished, time, bytes
  agentc checkpoints show RUN [--step N]      the state at step N (default: the last)
  agentc checkpoints fork RUN --step N [--set FIELD=JSON]...

Fork starts a new run in the same session from the state at step N, with
each --set applied (the value is checked against the field's type), and
prints its id. The new run waits where step N left off: continue it with
  agentc run FILE --resume NEWRUN --value JSON
where JSON answers the step's pending interrupt(s), if any (else it is
ignored: pass null). --program FILE refuses the fork when FILE's program is
not the one that ran RUN; resuming under another program is refused too.

Exit status: 0, 1 when the store cannot be read or the run or step does
not exist, 2 on usage errors (including a --set that does not fit).`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.data, "data", "", "the data directory (default $AGENTC_DATA, else ./.agentc)")
	pf.BoolVar(&f.json, "json", false, "print JSON")

	list := &cobra.Command{
		Use:   "list RUN",
		Short: "List a run's checkpoints, oldest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withRun(cmd.Context(), f.data, args[0], func(st *pebble.Store, run store.Run, prog *bytecode.Program) error {
				return listCheckpoints(cmd.Context(), a, st, run, prog, f.json)
			})
		},
	}
	show := &cobra.Command{
		Use:   "show RUN [--step N]",
		Short: "Print the state of a run at a step, as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withRun(cmd.Context(), f.data, args[0], func(st *pebble.Store, run store.Run, prog *bytecode.Program) error {
				return showCheckpoint(cmd.Context(), a, st, run, prog, f)
			})
		},
	}
	show.Flags().Int64Var(&f.step, "step", -1, "the step (default: the last)")
	fork := &cobra.Command{
		Use:   "fork RUN --step N [--set FIELD=JSON]... [--program FILE]",
		Short: "Start a new run from a run's state at a step",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.step < 0 {
				return usageErr(errors.New("--step is required"))
			}
			set := map[string]json.RawMessage{}
			for _, s := range f.set {
				name, val, ok := strings.Cut(s, "=")
				if !ok || name == "" {
					return usageErr(fmt.Errorf("--set %q: want FIELD=JSON", s))
				}
				if !json.Valid([]byte(val)) {
					return usageErr(fmt.Errorf("--set %s: %q is not valid JSON", name, val))
				}
				set[name] = json.RawMessage(val)
			}
			var hash string
			if f.program != "" {
				p, err := loadProgram(a, f.program)
				if err != nil {
					return err
				}
				if hash, err = runtime.ProgramHash(p, funcTable(p, nil)); err != nil {
					return &exitError{code: exitFail, err: err}
				}
			}
			return withRun(cmd.Context(), f.data, args[0], func(st *pebble.Store, run store.Run, prog *bytecode.Program) error {
				nr, err := runtime.Fork(cmd.Context(), st, prog, runtime.ForkRequest{
					Run: run.ID, Step: uint64(f.step), Set: set, ProgramHash: hash,
					Clock: wallClock{}, Entropy: cryptoEntropy{},
				})
				switch {
				case errors.Is(err, runtime.ErrBadEdit), errors.Is(err, runtime.ErrNotResumable):
					return usageErr(err)
				case err != nil:
					return &exitError{code: exitFail, err: err}
				}
				if f.json {
					b, _ := json.Marshal(map[string]any{"run": nr.ID, "parent_run": nr.ParentRun, "parent_step": nr.ParentStep,
						"session": nr.Session.Session, "user": nr.Session.User})
					fmt.Fprintf(a.stdout, "%s\n", b)
				} else {
					fmt.Fprintln(a.stdout, nr.ID)
				}
				fmt.Fprintf(a.stderr, "agentc: forked %s at step %d as %s (session %s, user %s)\n", run.ID, nr.ParentStep, nr.ID, nr.Session.Session, nr.Session.User)
				fmt.Fprintf(a.stderr, "continue with: agentc run FILE --resume %s --value JSON (null when nothing is pending)\n", nr.ID)
				return nil
			})
		},
	}
	fork.Flags().Int64Var(&f.step, "step", -1, "the step to fork at (required)")
	fork.Flags().StringArrayVar(&f.set, "set", nil, "FIELD=JSON: replace a state field in the fork")
	fork.Flags().StringVar(&f.program, "program", "", "refuse the fork unless FILE (.agent or .agb) is the run's program")
	cmd.AddCommand(list, show, fork)
	return cmd
}

// withRun opens the store, loads the run and its program (by the run's
// program hash) and calls fn.
func withRun(ctx context.Context, data, id string, fn func(*pebble.Store, store.Run, *bytecode.Program) error) error {
	st, err := pebble.Open(dataDir(data), nil)
	if err != nil {
		return &exitError{code: exitFail, err: err}
	}
	defer st.Close()
	run, err := st.GetRun(ctx, id)
	if err != nil {
		return &exitError{code: exitFail, err: fmt.Errorf("run %s: %w", id, err)}
	}
	b, err := st.GetProgram(ctx, run.ProgramHash)
	if err != nil {
		return &exitError{code: exitFail, err: fmt.Errorf("run %s: program %s: %w", id, run.ProgramHash, err)}
	}
	prog, err := bytecode.Decode(b)
	if err == nil {
		err = bytecode.Verify(prog)
	}
	if err != nil {
		return &exitError{code: exitFail, err: fmt.Errorf("run %s: program %s: %w", id, run.ProgramHash, err)}
	}
	return fn(st, run, prog)
}

type checkpointOut struct {
	Step  uint64    `json:"step"`
	Kind  string    `json:"kind"`
	Nodes []string  `json:"nodes"`
	Time  time.Time `json:"time"`
	Bytes int       `json:"bytes"`
}

func listCheckpoints(ctx context.Context, a *app, st *pebble.Store, run store.Run, prog *bytecode.Program, asJSON bool) error {
	var g *bytecode.Graph
	if gi := slices.IndexFunc(prog.Graphs, func(g bytecode.Graph) bool { return g.Name == run.Runnable }); gi >= 0 {
		g = &prog.Graphs[gi]
	}
	cps, err := st.ListCheckpoints(ctx, run.ID, store.CheckpointFilter{})
	if err != nil {
		return &exitError{code: exitFail, err: err}
	}
	slices.Reverse(cps) // oldest first
	evs, err := session.New(st).Events(ctx, run.Session, session.EventFilter{Run: run.ID,
		Kinds: []runtime.EventKind{runtime.EventNodeFinished, runtime.EventNodeFailed}})
	if err != nil {
		return &exitError{code: exitFail, err: err}
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
	for _, cp := range cps {
		out := checkpointOut{Step: cp.Step, Kind: cp.Kind.String(), Nodes: nodes[cp.Step], Time: cp.Time.UTC(),
			Bytes: len(cp.State) + len(cp.Frontier) + len(cp.Counters) + len(cp.Interrupts)}
		if out.Nodes == nil {
			out.Nodes = waitingOn(g, cp.Interrupts)
		}
		if asJSON {
			b, _ := json.Marshal(out)
			fmt.Fprintf(a.stdout, "%s\n", b)
			continue
		}
		ns := "-"
		if len(out.Nodes) > 0 {
			ns = strings.Join(out.Nodes, ",")
		}
		fmt.Fprintf(a.stdout, "%d\t%s\t%s\t%s\t%d bytes\n", out.Step, out.Kind, ns, out.Time.Format(time.RFC3339), out.Bytes)
	}
	return nil
}

// waitingOn names the interrupt nodes a checkpoint of a run of graph g
// waits on ("approve(waiting)"): a step that only raised interrupts
// finished no node.
func waitingOn(g *bytecode.Graph, b []byte) []string {
	out := []string{}
	if g == nil {
		return out
	}
	ins, err := vm.DecodeInterrupts(g, b)
	if err != nil {
		return out
	}
	for _, in := range ins {
		out = append(out, in.ID[strings.LastIndex(in.ID, "/")+1:]+"(waiting)")
	}
	return out
}

func showCheckpoint(ctx context.Context, a *app, st *pebble.Store, run store.Run, prog *bytecode.Program, f checkpointFlags) error {
	step := uint64(f.step)
	if f.step < 0 {
		latest, err := st.LatestCheckpoint(ctx, run.ID)
		if err != nil {
			return &exitError{code: exitFail, err: fmt.Errorf("run %s: %w", run.ID, err)}
		}
		step = latest.Step
	}
	ss, err := runtime.StateAt(ctx, st, prog, run, step)
	if err != nil {
		return &exitError{code: exitFail, err: err}
	}
	// The state, fields in schema order; hidden ($…) fields are left out.
	var state bytes.Buffer
	state.WriteByte('{')
	n := 0
	for _, fl := range ss.Fields {
		if strings.HasPrefix(fl.Name, "$") {
			continue
		}
		v, err := types.ToJSON(fl.Value)
		if err != nil {
			return &exitError{code: exitFail, err: fmt.Errorf("field %s: %w", fl.Name, err)}
		}
		if n > 0 {
			state.WriteByte(',')
		}
		n++
		k, _ := json.Marshal(fl.Name)
		state.Write(k)
		state.WriteByte(':')
		state.Write(v)
	}
	state.WriteByte('}')
	g := &prog.Graphs[ss.Graph]
	var frontier []string
	for _, n := range ss.Frontier {
		frontier = append(frontier, g.Nodes[n].Name)
	}
	var pending []string
	for _, in := range ss.Interrupts {
		pending = append(pending, in.ID)
	}
	out := struct {
		Run        string          `json:"run"`
		Step       uint64          `json:"step"`
		Kind       string          `json:"kind"`
		Frontier   []string        `json:"frontier"`
		Interrupts []string        `json:"interrupts,omitempty"`
		State      json.RawMessage `json:"state"`
	}{run.ID, ss.Step, ss.Checkpoint.Kind.String(), frontier, pending, state.Bytes()}
	if out.Frontier == nil {
		out.Frontier = []string{}
	}
	var b []byte
	if f.json {
		b, err = json.Marshal(out)
	} else {
		b, err = json.MarshalIndent(out, "", "  ")
	}
	if err != nil {
		return &exitError{code: exitFail, err: err}
	}
	fmt.Fprintf(a.stdout, "%s\n", b)
	return nil
}
