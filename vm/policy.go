package vm

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

// Per-node policies (spec/language.md §12.6–12.9), applied to each call
// task (a call node, or one item of a map):
//
//   - cache: a fresh entry under hash(program, node, callee, arguments)
//     replaces the call;
//   - retry: up to Retry.MaxAttempts attempts; an error is retried when its
//     kind is listed in Retry.On (or, with no list, is retryable by
//     default); before attempt n+1 the task waits min(max, min·2^(n-1)),
//     with full jitter (a uniform draw in [0, d]) when Retry.Jitter;
//   - timeout: each attempt runs under a context canceled by the injected
//     clock after Timeout; the attempt then fails with kind timeout;
//   - effect: side_effect attempts go through the Checkpointer's intent
//     protocol (sideEffect below); idempotent and side_effect attempts
//     receive a stable idempotency key;
//   - catch is applied by the scheduler's merge.

// errAttemptTimeout is the cancellation cause of an attempt's timeout.
var errAttemptTimeout = errors.New("attempt timed out")

// attemptResult is the outcome of one attempt.
type attemptResult struct {
	w     write // the converted result for the node's into field
	err   *Error
	final bool // no further attempts (a DecideFail decision)
	stop  bool // t.out is set: an abort or a pending decision
}

// call runs task t's call under its node's policies and sets t.out.
func (r *run) call(ctx context.Context, t *task, nd *bytecode.Node, args []NamedValue, s uint64) {
	var key [32]byte
	useCache := nd.Cache && r.replay == nil
	if useCache {
		var ok bool
		if key, ok = r.cacheKey(t, nd, args); !ok {
			useCache = false
		}
	}
	if useCache {
		if e, hit := r.o.Cache.Get(ctx, key); hit && (e.Expires.IsZero() || r.now(t, s).Before(e.Expires)) {
			r.journalCall(t, s, 1, e.Value, nil, false)
			res := r.result(t, nd, e.Value, nil)
			if res.err == nil {
				t.out = outcome{kind: outOK, writes: intoWrites(t, nd, res.w)}
				return
			}
		}
	}
	maxAttempts := max(nd.Retry.MaxAttempts, 1)
	for attempt := uint32(1); ; attempt++ {
		raw, res := r.attempt(ctx, t, nd, args, s, attempt)
		if res.stop {
			return
		}
		if res.err == nil {
			t.out = outcome{kind: outOK, writes: intoWrites(t, nd, res.w)}
			if useCache {
				e := CacheEntry{Value: raw}
				if nd.CacheTTL > 0 {
					e.Expires = r.now(t, s).Add(nd.CacheTTL)
				}
				r.o.Cache.Put(ctx, key, e)
			}
			return
		}
		if res.final || attempt >= maxAttempts || res.err.Kind == KindCanceled || !retries(&nd.Retry, res.err.Kind) {
			t.out = outcome{kind: outFailed, err: res.err}
			return
		}
		if !r.backoff(ctx, t, nd, s, attempt) {
			t.out = outcome{kind: outFailed, err: &Error{Kind: KindCanceled, Message: "canceled during retry backoff", Node: t.id}}
			return
		}
	}
}

// intoWrites is the writes of a call task: none, or w in the task's own
// slot (valid until the next step's plan).
func intoWrites(t *task, nd *bytecode.Node, w write) []write {
	if nd.Into == bytecode.None {
		return nil
	}
	t.into[0] = w
	return t.into[:]
}

// retries reports whether policy p retries an error of kind k.
func retries(p *bytecode.Retry, k ErrorKind) bool {
	if len(p.On) == 0 {
		return retryableByDefault(k)
	}
	return slices.Contains(p.On, string(k))
}

// attempt makes one attempt. It returns the raw host result (for the cache)
// and the converted result.
func (r *run) attempt(ctx context.Context, t *task, nd *bytecode.Node, args []NamedValue, s uint64, attempt uint32) (types.Value, attemptResult) {
	req := CallRequest{
		Run: r.id, Step: s, Node: r.paths[t.node], NodeIndex: int(t.node), MapIndex: t.item,
		Kind: nd.Call.Kind, Callee: nd.Call.Callee, Args: args,
		Attempt: attempt, Effect: nd.Effect, Result: r.g.resultType[t.node], SubRun: t.sub,
	}
	req.Resume = t.resume
	if nd.Effect == bytecode.EffectSideEffect && r.ckpt != nil && r.replay == nil {
		return r.sideEffect(ctx, t, nd, req, s)
	}
	if nd.Effect != bytecode.EffectReadOnly {
		req.IdempotencyKey = IdempotencyKey(r.id, effectID(t.id, s), attempt)
	}
	if r.replay != nil {
		if its, ok := r.replay.suspended(s, t.id, attempt); ok {
			t.out = outcome{kind: outSuspend, susp: &Suspension{Interrupts: its}}
			return types.Value{}, attemptResult{stop: true}
		}
		if p, ok := r.replay.pauses[journalKey{s, t.id, attempt}]; ok {
			return r.pause(t, s, attempt, &p)
		}
		v, e, final := r.replay.call(ctx, s, t.id, attempt)
		res := r.result(t, nd, v, e)
		res.final = res.final || final
		return v, res
	}
	v, err := r.invoke(ctx, nd, req)
	if r.suspend(t, s, attempt, err) {
		return types.Value{}, attemptResult{stop: true}
	}
	var p *Pause
	if errors.As(err, &p) {
		return r.pause(t, s, attempt, p)
	}
	herr := r.hostError(t, nd, err)
	r.journalCall(t, s, attempt, v, herr, false)
	return v, r.result(t, nd, v, herr)
}

// suspend parks task t when the host reports that its sub-run waits on
// interrupts (suspend.go), journaling the wait; it reports whether it did.
func (r *run) suspend(t *task, s uint64, attempt uint32, err error) bool {
	var sp *Suspension
	if err == nil || !errors.As(err, &sp) || sp.Snapshot == nil && (sp.Host.IsNull() || len(sp.Interrupts) == 0) {
		return false
	}
	t.out = outcome{kind: outSuspend, susp: sp}
	if r.journaling {
		t.journal = append(t.journal, JournalEntry{Step: s, Task: t.id, Attempt: attempt, Kind: JournalSuspend, Value: suspendValue(sp.Interrupts)})
	}
	return true
}

// pause makes task t wait on the host's Pause: an interrupt of its node
// (journaled, so that a replay pauses at the same attempt). A map item
// cannot wait alone: its pause is the item's error.
func (r *run) pause(t *task, s uint64, attempt uint32, p *Pause) (types.Value, attemptResult) {
	if t.item >= 0 {
		return types.Value{}, attemptResult{final: true, err: &Error{Kind: KindInternal, Node: t.id,
			Message: "a call inside a map cannot wait for an answer from outside the run: " + p.Prompt}}
	}
	if r.journaling {
		t.journal = append(t.journal, JournalEntry{Step: s, Task: t.id, Attempt: attempt, Kind: JournalPause,
			Value: types.MakeList([]types.Value{types.MakeString(p.Prompt), types.MakeString(string(p.Data))})})
	}
	t.out = outcome{kind: outInterrupt, prompt: p.Prompt, data: p.Data}
	return types.Value{}, attemptResult{stop: true}
}

// hostError classifies a host error by the node's call kind (nil stays
// nil), once, so that the journal and effect records keep the kind.
func (r *run) hostError(t *task, nd *bytecode.Node, err error) *Error {
	if err == nil {
		return nil
	}
	return classify(err, nd.Call.Kind, t.id)
}

// invoke calls the host under the node's timeout.
func (r *run) invoke(ctx context.Context, nd *bytecode.Node, req CallRequest) (types.Value, error) {
	if r.o.Host == nil {
		return types.Value{}, &Error{Kind: KindInternal, Message: "no host to call " + req.Kind.String() + " " + r.calleeName(nd)}
	}
	if nd.Timeout <= 0 {
		return r.o.Host.Call(ctx, req)
	}
	actx, cancel := context.WithCancelCause(ctx)
	stop := r.o.Clock.AfterFunc(nd.Timeout, func() { cancel(errAttemptTimeout) })
	defer func() {
		stop()
		cancel(nil)
	}()
	v, err := r.o.Host.Call(actx, req)
	if errors.Is(context.Cause(actx), errAttemptTimeout) {
		return types.Value{}, &Error{Kind: KindTimeout, Message: "attempt " + strconv.Itoa(int(req.Attempt)) + " exceeded its timeout of " + nd.Timeout.String()}
	}
	return v, err
}

// result passes a host error on, or converts a result to the node's into
// field (a mismatch is invalid_output, which retries cover).
func (r *run) result(t *task, nd *bytecode.Node, v types.Value, herr *Error) attemptResult {
	if herr != nil {
		return attemptResult{err: herr}
	}
	if nd.Into == bytecode.None {
		return attemptResult{}
	}
	w, cerr := r.fieldWrite(int(nd.Into), v, true)
	if cerr != nil {
		return attemptResult{err: &Error{Kind: KindInvalidOutput, Message: "result does not fit " + r.g.fields[nd.Into].Name + ": " + cerr.Error(), Node: t.id, Err: cerr}}
	}
	return attemptResult{w: w}
}

func (r *run) calleeName(nd *bytecode.Node) string {
	p := r.m.prog
	c := nd.Call.Callee
	switch nd.Call.Kind {
	case bytecode.CallLLM, bytecode.CallAgent:
		return p.Agents[c].Name
	case bytecode.CallTool:
		return p.Tools[c].Name
	case bytecode.CallGraph:
		return p.Graphs[c].Name
	}
	return "?"
}

// backoffDelay is the wait before attempt+1, before jitter.
func backoffDelay(p *bytecode.Retry, attempt uint32) time.Duration {
	d := p.BackoffMin
	for i := uint32(1); i < attempt && d > 0; i++ {
		if p.BackoffMax > 0 && d >= p.BackoffMax {
			break
		}
		if d > time.Duration(1)<<61 {
			break
		}
		d *= 2
	}
	if p.BackoffMax > 0 && d > p.BackoffMax {
		d = p.BackoffMax
	}
	return d
}

// backoff waits before the next attempt; false when canceled.
func (r *run) backoff(ctx context.Context, t *task, nd *bytecode.Node, s uint64, attempt uint32) bool {
	d := backoffDelay(&nd.Retry, attempt)
	if d > 0 && nd.Retry.Jitter {
		d = time.Duration(r.random(t, s, attempt) % uint64(d+1))
	}
	if d <= 0 || r.replay != nil {
		return ctx.Err() == nil
	}
	if s, ok := r.o.Clock.(Sleeper); ok {
		return s.Sleep(ctx, d)
	}
	done := make(chan struct{})
	stop := r.o.Clock.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return true
	case <-ctx.Done():
		stop()
		return false
	}
}

// random draws from the entropy source, journaled per (task, attempt).
func (r *run) random(t *task, s uint64, attempt uint32) uint64 {
	if r.replay != nil {
		return r.replay.random(s, t.id, attempt)
	}
	x := r.o.Entropy.Uint64()
	if r.journaling {
		t.journal = append(t.journal, JournalEntry{Step: s, Task: t.id, Attempt: attempt, Kind: JournalRandom, Value: types.MakeInt(int64(x))})
	}
	return x
}

// now reads the clock for task t, journaled.
func (r *run) now(t *task, s uint64) time.Time {
	if r.replay != nil {
		return r.replay.now(s, t.id)
	}
	now := r.o.Clock.Now()
	if r.journaling {
		t.journal = append(t.journal, JournalEntry{Step: s, Task: t.id, Kind: JournalClock, Value: types.MakeInt(now.UnixNano())})
	}
	return now
}

func (r *run) journalCall(t *task, s uint64, attempt uint32, v types.Value, herr *Error, final bool) {
	if !r.journaling {
		return
	}
	e := JournalEntry{Step: s, Task: t.id, Attempt: attempt, Kind: JournalCall, Value: v, Final: final}
	if herr != nil {
		e.Value, e.Err = types.Value{}, herr
	}
	t.journal = append(t.journal, e)
}

// cacheKey hashes what a cached call depends on: the program (conservative:
// any change of bytecode invalidates), the node, the callee and the
// canonical encoding of the arguments. A secret argument disables caching.
func (r *run) cacheKey(t *task, nd *bytecode.Node, args []NamedValue) ([32]byte, bool) {
	h := sha256.New()
	var buf []byte
	buf = append(buf, "agentc cache v1\x00"...)
	buf = append(buf, r.m.hash[:]...)
	buf = append(buf, r.g.paths[t.node]...)
	buf = append(buf, 0, byte(nd.Call.Kind))
	buf = strconv.AppendUint(buf, uint64(nd.Call.Callee), 10)
	for _, a := range args {
		buf = append(buf, 0)
		buf = append(buf, a.Name...)
		buf = append(buf, 0)
		var err error
		if buf, err = types.AppendValue(buf, a.Value); err != nil {
			return [32]byte{}, false
		}
	}
	h.Write(buf)
	var k [32]byte
	h.Sum(k[:0])
	return k, true
}

// effectID names one execution of a task in its step, so that a node that
// runs again in a loop gets fresh idempotency keys while a re-executed step
// gets the same ones.
func effectID(task string, s uint64) string { return task + "@" + strconv.FormatUint(s, 10) }

// sideEffect runs a side_effect attempt through the intent protocol:
//
//  1. in the first step after a resume, look the attempt up: a recorded
//     result is replayed (never re-executed); an intent without a result
//     means an earlier process may have performed the effect, so the run
//     stops with needs_decision unless a Decision settles it;
//  2. record the intent (durable before the call) and get the key;
//  3. call the host with the key;
//  4. record the result (a value or an error), which later replays use.
func (r *run) sideEffect(ctx context.Context, t *task, nd *bytecode.Node, req CallRequest, s uint64) (types.Value, attemptResult) {
	eid := effectID(t.id, s)
	abort := func(op string, err error) (types.Value, attemptResult) {
		t.out = outcome{kind: outAbort, abort: storageError(op+" "+eid, err)}
		return types.Value{}, attemptResult{stop: true}
	}
	if s == r.resumedStep {
		st, err := r.ckpt.LookupEffect(ctx, r.id, eid, req.Attempt)
		if err != nil {
			return abort("look up effect", err)
		}
		if st.Done {
			v, herr, err := decodeEffect(st.Result)
			if err != nil {
				return abort("decode effect result", err)
			}
			r.journalCall(t, s, req.Attempt, v, herr, false)
			return v, r.result(t, nd, v, herr)
		}
		if st.Intent {
			d, ok := r.decisions[t.id]
			if !ok {
				t.out = outcome{kind: outDecision, decision: &PendingDecision{
					ID: t.id, Node: nd.Name, MapIndex: t.item, Attempt: req.Attempt, Key: st.Key}}
				return types.Value{}, attemptResult{stop: true}
			}
			switch d.Action {
			case DecideResult, DecideFail:
				var herr *Error
				v := d.Value
				if d.Action == DecideFail {
					herr, v = &Error{Kind: KindToolError, Message: "side effect abandoned by decision", Node: t.id}, types.Value{}
				}
				enc, err := encodeEffect(v, herr)
				if err != nil {
					return abort("encode effect result", err)
				}
				if err := r.ckpt.PutEffectResult(ctx, st.Key, enc); err != nil {
					return abort("record effect result", err)
				}
				r.journalCall(t, s, req.Attempt, v, herr, d.Action == DecideFail)
				res := r.result(t, nd, v, herr)
				res.final = d.Action == DecideFail
				return v, res
			}
			// DecideRerun: call again under the same key.
		}
	}
	key, err := r.ckpt.PutIntent(ctx, r.id, eid, req.Attempt)
	if err != nil {
		return abort("record intent", err)
	}
	req.IdempotencyKey = key
	v, err := r.invoke(ctx, nd, req)
	if r.suspend(t, s, req.Attempt, err) {
		// The call continues when it is woken, under a new effect id.
		return types.Value{}, attemptResult{stop: true}
	}
	if p := (*Pause)(nil); errors.As(err, &p) {
		// The answered call runs in a later step, under another effect id:
		// this intent is never looked up.
		return r.pause(t, s, req.Attempt, p)
	}
	herr := r.hostError(t, nd, err)
	if herr != nil && ctx.Err() != nil {
		// Canceled mid-call: whether the effect happened is unknown, so no
		// result is recorded and a resume will ask for a decision.
		return v, r.result(t, nd, v, herr)
	}
	enc, err := encodeEffect(v, herr)
	if err != nil {
		return abort("encode effect result", err)
	}
	if err := r.ckpt.PutEffectResult(ctx, key, enc); err != nil {
		return abort("record effect result", err)
	}
	r.journalCall(t, s, req.Attempt, v, herr, false)
	return v, r.result(t, nd, v, herr)
}
