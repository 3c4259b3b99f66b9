package runtime

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/vm"
)

// checkpointer adapts the VM's Checkpointer to the store for one run: raw
// hashes become hex strings, statuses store.RunStatus, a pending write's
// task is the store's node (attempt 0), and each step's commit carries the
// step's persisted events in the same synced batch.
//
// Writes that record something that already happened (a commit, a pending
// write, an effect's result) run under context.WithoutCancel: a canceled
// run stops at the VM's next cancellation point, never half way through
// recording a finished step or side effect.
type checkpointer struct {
	a *activeRun
}

// CommitStep implements vm.Checkpointer. The commit of a step that ends
// the run (completed, or waiting on an interrupt) is deferred until the VM
// returns, so that the interrupt and run_finished events and the run's
// final status go into that same batch (activeRun.finish).
func (c *checkpointer) CommitStep(ctx context.Context, rec *vm.StepRecord) error {
	a := c.a
	delta := a.stateDelta(rec)
	if delta != nil {
		a.hold(delta)
	}
	events := a.takeStep(delta)
	if rec.Status == vm.StatusCompleted || rec.Status == vm.StatusInterrupted {
		a.final, a.finalEvs = rec, events
		a.nLead = 0
		for _, e := range events {
			if e.Kind == EventRunStarted {
				a.nLead++
			}
		}
		return nil
	}
	_, err := a.commit(ctx, rec, events, "")
	a.releaseDue()
	if a.runSpan != nil {
		a.endStep(storeErrorInfo(err))
	}
	return err
}

// commit writes one step with its events; status, when set, becomes the
// run's.
func (a *activeRun) commit(ctx context.Context, rec *vm.StepRecord, events []*Event, status store.RunStatus) (store.Committed, error) {
	bs, err := encodeEvents(events)
	if err != nil {
		return store.Committed{}, err
	}
	var sp Span
	if a.runSpan != nil {
		parent := a.runCtx
		if st := a.stepObs.Load(); st != nil {
			parent = st.ctx
		}
		sp = a.startCommit(parent, len(bs))
	}
	sc := store.StepCommit{Checkpoint: toCheckpoint(rec, &a.hashes), Events: bs, Journal: rec.Journal, Status: status}
	if status != "" {
		sc.Usage = a.runUsage() // the commit that ends the invocation
	}
	a.writing()
	c, err := a.storeCommit(context.WithoutCancel(ctx), sc)
	a.written()
	if sp != nil {
		sp.End(&SpanEnd{Err: storeErrorInfo(err)})
	}
	if err == nil {
		a.r.appended(a.key, c.FirstEvent, bs)
		// Followers here read the step at once; on a shared store, the
		// store announces it to the other replicas.
		a.r.wakeRun(a.id)
	}
	return c, err
}

// PutPendingWrite implements vm.Checkpointer. The write carries the
// task's persisted events (carry.go): the resumed step will not run the
// task again, and commits them instead.
func (c *checkpointer) PutPendingWrite(ctx context.Context, run string, w vm.PendingWrite) error {
	evs, err := c.a.carryEvents(w.Task, false)
	if err != nil {
		return fmt.Errorf("runtime: pending write of %s: %w", w.Task, err)
	}
	return c.a.r.st.PutPendingWrite(context.WithoutCancel(ctx), run, w.Step, w.Task, 0, wrapCarry(w.Data, evs))
}

// LookupEffect implements vm.Checkpointer. A recorded result is replayed
// without calling the tool, so the events recorded with it go back into
// the step's buffer.
func (c *checkpointer) LookupEffect(ctx context.Context, run, effect string, attempt uint32) (vm.EffectState, error) {
	key := vm.IdempotencyKey(run, effect, attempt)
	e, err := c.a.r.st.LookupEffect(ctx, key)
	if err != nil {
		return vm.EffectState{}, err
	}
	st := vm.EffectState{Intent: e.Intent, Key: key, Done: e.Done, Result: e.Result}
	if e.Done {
		res, evs, err := unwrapCarry(e.Result)
		if err != nil {
			return vm.EffectState{}, fmt.Errorf("runtime: effect %s: %w", key, err)
		}
		if err := c.a.restoreEvents(effect, evs); err != nil {
			return vm.EffectState{}, err
		}
		st.Result = res
	}
	return st, nil
}

// PutIntent implements vm.Checkpointer.
func (c *checkpointer) PutIntent(ctx context.Context, run, effect string, attempt uint32) (string, error) {
	return c.a.r.st.PutIntent(ctx, run, effect, attempt)
}

// PutEffectResult implements vm.Checkpointer. The result carries the
// persisted events the attempt produced (carry.go), which a replay of the
// result restores.
func (c *checkpointer) PutEffectResult(ctx context.Context, key string, result []byte) error {
	var evs [][]byte
	if _, effect, _, err := store.ParseIdempotencyKey(key); err == nil {
		if evs, err = c.a.carryEvents(effect, true); err != nil {
			return fmt.Errorf("runtime: effect %s: %w", key, err)
		}
	}
	return c.a.r.st.PutEffectResult(context.WithoutCancel(ctx), key, wrapCarry(result, evs))
}

// hexHashes keeps the hex form of a run's last program and schema hashes:
// they are the same at every step (an upgrade changes them), and
// encoding them again cost two allocations per commit.
type hexHashes struct {
	program, schema       [32]byte
	programHex, schemaHex string
}

func (h *hexHashes) of(program, schema [32]byte) (string, string) {
	if h.programHex == "" || program != h.program {
		h.program, h.programHex = program, hex.EncodeToString(program[:])
	}
	if h.schemaHex == "" || schema != h.schema {
		h.schema, h.schemaHex = schema, hex.EncodeToString(schema[:])
	}
	return h.programHex, h.schemaHex
}

func toCheckpoint(rec *vm.StepRecord, hashes *hexHashes) store.Checkpoint {
	kind := store.Delta
	if rec.Full {
		kind = store.Full
	}
	program, schema := hashes.of(rec.ProgramHash, rec.SchemaHash)
	return store.Checkpoint{
		Run: rec.Run, Step: rec.Step, Kind: kind,
		State: rec.State, Frontier: rec.Frontier, Counters: rec.Counters, Interrupts: rec.Interrupts,
		ProgramHash: program, SchemaHash: schema,
		Time: rec.Time,
	}
}

func fromCheckpoint(c store.Checkpoint) (vm.StepRecord, error) {
	rec := vm.StepRecord{
		Run: c.Run, Step: c.Step, Full: c.Kind == store.Full,
		State: c.State, Frontier: c.Frontier, Counters: c.Counters, Interrupts: c.Interrupts, Time: c.Time,
	}
	if err := unhex(&rec.ProgramHash, c.ProgramHash); err != nil {
		return rec, fmt.Errorf("checkpoint %s/%d: program hash: %w", c.Run, c.Step, err)
	}
	if err := unhex(&rec.SchemaHash, c.SchemaHash); err != nil {
		return rec, fmt.Errorf("checkpoint %s/%d: schema hash: %w", c.Run, c.Step, err)
	}
	return rec, nil
}

func unhex(dst *[32]byte, s string) error {
	if hex.DecodedLen(len(s)) != len(dst) {
		return fmt.Errorf("%q is not 32 bytes of hex", s)
	}
	_, err := hex.Decode(dst[:], []byte(s))
	return err
}

// stateDelta builds the step's state_delta event: from the checkpoint's
// delta (appended elements only, never a whole list), or, when the
// checkpoint is a full snapshot, from the fields the step changed. Hidden
// fields ($…) are left out. Nil when nothing visible changed.
func (a *activeRun) stateDelta(rec *vm.StepRecord) *Event {
	changes := a.changes
	a.changes = nil
	var out []StateChange
	add := func(f int, op string, v types.Value) {
		if f < 0 || f >= len(a.fields) || strings.HasPrefix(a.fields[f].Name, "$") {
			return
		}
		b, err := types.ToJSON(v)
		if err != nil {
			a.r.log.Warn("runtime: state value has no JSON form", "run", a.id, "field", a.fields[f].Name, "err", err)
			return
		}
		out = append(out, StateChange{Field: a.fields[f].Name, Op: op, Value: b})
	}
	if rec.Full {
		for _, c := range changes {
			add(c.Field, ChangeSet, c.Value)
		}
	} else if len(rec.State) > 0 {
		ds, err := vm.DecodeDelta(rec.State, len(a.fields))
		if err != nil {
			a.r.log.Warn("runtime: malformed state delta", "run", a.id, "step", rec.Step, "err", err)
			return nil
		}
		for _, d := range ds {
			add(d.Field, d.Op.String(), d.Value)
		}
	}
	if len(out) == 0 {
		return nil
	}
	ev := a.newEvent(EventStateDelta, a.root, "", rec.Step)
	ev.Changes = out
	return ev
}
