package vm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

var errCrash = errors.New("simulated crash")

// crashStore is a MemStore whose process "dies" at its at'th durable call:
// that call fails (after persisting, with after) and so does every later
// one, until revive.
type crashStore struct {
	*MemStore
	mu      sync.Mutex
	calls   int
	at      int
	after   bool
	crashed bool
	only    string // crash only on this method ("" = any)
}

func (c *crashStore) crash(method string) (fail, persist bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed {
		return true, false
	}
	if c.only != "" && method != c.only {
		return false, true
	}
	c.calls++
	if c.at > 0 && c.calls == c.at {
		c.crashed = true
		return true, c.after
	}
	return false, true
}

func (c *crashStore) revive(at int, after bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.crashed, c.calls, c.at, c.after = false, 0, at, after
}

func (c *crashStore) CommitStep(ctx context.Context, rec *StepRecord) error {
	fail, persist := c.crash("CommitStep")
	if persist {
		if err := c.MemStore.CommitStep(ctx, rec); err != nil {
			return err
		}
	}
	if fail {
		return errCrash
	}
	return nil
}

func (c *crashStore) PutPendingWrite(ctx context.Context, run string, w PendingWrite) error {
	fail, persist := c.crash("PutPendingWrite")
	if persist {
		if err := c.MemStore.PutPendingWrite(ctx, run, w); err != nil {
			return err
		}
	}
	if fail {
		return errCrash
	}
	return nil
}

func (c *crashStore) PutIntent(ctx context.Context, run, effect string, attempt uint32) (string, error) {
	fail, persist := c.crash("PutIntent")
	key := ""
	if persist {
		var err error
		if key, err = c.MemStore.PutIntent(ctx, run, effect, attempt); err != nil {
			return "", err
		}
	}
	if fail {
		return "", errCrash
	}
	return key, nil
}

func (c *crashStore) PutEffectResult(ctx context.Context, key string, result []byte) error {
	fail, persist := c.crash("PutEffectResult")
	if persist {
		if err := c.MemStore.PutEffectResult(ctx, key, result); err != nil {
			return err
		}
	}
	if fail {
		return errCrash
	}
	return nil
}

func TestCrashAfterPendingWrite(t *testing.T) {
	b := newGraph(t, fld("hits", listStr, ptr(vl()), bytecode.ReduceAppend))
	for _, n := range []string{"a", "b", "c"} {
		b.call(n, "t"+n, "hits", "q", b.constChunk(vs(n)))
	}
	b.join("j", bytecode.JoinAll, "a", "b", "c")
	for _, n := range []string{"a", "b", "c"} {
		b.edge("start", n)
		b.edge(n, "j")
	}
	b.edge("j", "end")
	m := b.machine()
	var mu sync.Mutex
	done := map[string]int{}
	release := make(chan struct{})
	f := func(ctx context.Context, req CallRequest) (types.Value, error) {
		name := m.prog.Tools[req.Callee].Name
		if name != "ta" { // a finishes first; b and c wait for the crash
			select {
			case <-release:
			case <-ctx.Done():
				return types.Value{}, ctx.Err()
			}
		}
		mu.Lock()
		done[name]++
		mu.Unlock()
		return vs(name), nil
	}
	host := &toolHost{m: m, fs: map[string]func(context.Context, CallRequest) (types.Value, error){"ta": f, "tb": f, "tc": f}}
	store := &crashStore{MemStore: NewMemStore(), only: "PutPendingWrite", at: 1, after: true}
	_, err := m.Run(bg, 0, Options{RunID: "r", Host: host, Checkpointer: store})
	if !errors.Is(err, errCrash) {
		t.Fatalf("run: %v, want the crash", err)
	}
	pending := store.Pending("r")
	if len(pending) != 1 || pending[0].Task != "g/a" {
		t.Fatalf("pending writes %v", pending)
	}
	close(release)
	store.revive(0, false)
	res, err := m.Resume(bg, 0, ResumeInput{Chain: store.Chain("r"), Pending: pending}, Options{Host: host, Checkpointer: store})
	if err != nil || res.Status != StatusCompleted {
		t.Fatalf("resume: %v %v", res, err)
	}
	if got := fieldOf(t, m, res, "hits").String(); got != `["ta", "tb", "tc"]` {
		t.Errorf("hits %s", got)
	}
	if done["ta"] != 1 || done["tb"] != 1 || done["tc"] != 1 {
		t.Errorf("calls %v: a finished node ran again, or an unfinished one did not", done)
	}
}

func sideEffectGraph(t *testing.T, effect bytecode.Effect) *Machine {
	b := newGraph(t, fld("receipt", strT, ptr(vs("")), 0), fld("n", intT, ptr(vi(0)), bytecode.ReduceSum))
	n := b.call("send", "mail", "receipt", "q", b.constChunk(vs("hello")))
	b.graph().Nodes[n].Effect = effect
	b.p.Tools[0].Effect = effect
	b.set("after", "n", b.constChunk(vi(1)))
	b.chain("send", "after")
	return b.machine()
}

type effectHost struct {
	mu   sync.Mutex
	keys map[string]int
}

func (h *effectHost) Call(ctx context.Context, req CallRequest) (types.Value, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.keys[req.IdempotencyKey]++
	return vs("sent with " + req.IdempotencyKey), nil
}

func (h *effectHost) total() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.keys {
		n += c
	}
	return n
}

func TestSideEffectExactlyOnce(t *testing.T) {
	m := sideEffectGraph(t, bytecode.EffectSideEffect)
	host := &effectHost{keys: map[string]int{}}
	// The process dies after the effect's result is recorded but before
	// the step commits: the resumed step replays the result.
	store := &crashStore{MemStore: NewMemStore(), only: "CommitStep", at: 2}
	if _, err := m.Run(bg, 0, Options{RunID: "r", Host: host, Checkpointer: store}); !errors.Is(err, errCrash) {
		t.Fatalf("run: %v", err)
	}
	store.revive(0, false)
	res, err := m.Resume(bg, 0, ResumeInput{Chain: store.Chain("r"), Pending: store.Pending("r")}, Options{Host: host, Checkpointer: store})
	if err != nil || res.Status != StatusCompleted {
		t.Fatalf("resume: %v %v", res, err)
	}
	if host.total() != 1 || fieldOf(t, m, res, "receipt").Str() != "sent with r:g/send@1:1" {
		t.Errorf("effect ran %d times: %v; receipt %s", host.total(), host.keys, fieldOf(t, m, res, "receipt"))
	}
}

func TestNeedsDecision(t *testing.T) {
	for _, tc := range []struct {
		name    string
		d       *Decision
		calls   int
		receipt string
		status  Status
	}{
		{"undecided", nil, 1, "", StatusNeedsDecision},
		{"rerun", &Decision{Action: DecideRerun}, 2, "sent with r:g/send@1:1", StatusCompleted},
		{"result", &Decision{Action: DecideResult, Value: vs("it happened")}, 1, "it happened", StatusCompleted},
		{"fail", &Decision{Action: DecideFail}, 1, "", StatusFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := sideEffectGraph(t, bytecode.EffectSideEffect)
			host := &effectHost{keys: map[string]int{}}
			// The process dies after the call, before its result is recorded.
			store := &crashStore{MemStore: NewMemStore(), only: "PutEffectResult", at: 1}
			if _, err := m.Run(bg, 0, Options{RunID: "r", Host: host, Checkpointer: store}); !errors.Is(err, errCrash) {
				t.Fatalf("run: %v", err)
			}
			store.revive(0, false)
			in := ResumeInput{Chain: store.Chain("r"), Pending: store.Pending("r")}
			res, err := m.Resume(bg, 0, in, Options{Host: host, Checkpointer: store})
			if err != nil || res.Status != StatusNeedsDecision || len(res.Decisions) != 1 {
				t.Fatalf("resume: %+v %v", res, err)
			}
			if d := res.Decisions[0]; d.ID != "g/send" || d.Key != "r:g/send@1:1" || d.Attempt != 1 {
				t.Errorf("decision %+v", d)
			}
			if tc.d != nil {
				in.Decisions = map[string]Decision{"g/send": *tc.d}
				res, err = m.Resume(bg, 0, in, Options{Host: host, Checkpointer: store})
			}
			if res.Status != tc.status || host.total() != tc.calls || fieldOf(t, m, res, "receipt").Str() != tc.receipt {
				t.Errorf("status %s (%v), %d calls, receipt %q", res.Status, err, host.total(), fieldOf(t, m, res, "receipt"))
			}
		})
	}
	// An idempotent node is re-run with the same key instead.
	m := sideEffectGraph(t, bytecode.EffectIdempotent)
	host := &effectHost{keys: map[string]int{}}
	store := &crashStore{MemStore: NewMemStore(), only: "CommitStep", at: 2}
	m.Run(bg, 0, Options{RunID: "r", Host: host, Checkpointer: store})
	store.revive(0, false)
	res, err := m.Resume(bg, 0, ResumeInput{Chain: store.Chain("r")}, Options{Host: host, Checkpointer: store})
	if err != nil || res.Status != StatusCompleted || host.keys["r:g/send@1:1"] != 2 {
		t.Errorf("idempotent: %v %v %v", res, err, host.keys)
	}
}

// fullGraph exercises everything the journal must capture: a retried flaky
// tool with jitter, a map, a cache, an interrupt.
func fullGraph(t testing.TB) *Machine {
	b := newGraph(t, fld("xs", listInt, ptr(vl(vi(1), vi(2), vi(3))), 0),
		fld("out", listInt, ptr(vl()), bytecode.ReduceAppend), fld("flaky", intT, ptr(vi(0)), 0),
		fld("ok", boolT, ptr(vb(false)), 0), fld("n", intT, ptr(vi(0)), bytecode.ReduceSum))
	b.mapNode("m", "rnd", "out", b.loadChunk("xs"), 2)
	f := b.call("f", "flaky", "flaky", "q", b.constChunk(vs("x")))
	b.graph().Nodes[f].Retry = bytecode.Retry{MaxAttempts: 4, BackoffMin: time.Millisecond, BackoffMax: time.Second, Jitter: true}
	b.interrupt("ask", b.constChunk(vs("ok?")), boolT, "ok")
	b.set("count", "n", b.constChunk(vi(1)))
	b.join("j", bytecode.JoinAll, "m", "f")
	b.edge("start", "m")
	b.edge("start", "f")
	b.edge("m", "j")
	b.edge("f", "j")
	b.edge("j", "ask")
	b.edge("ask", "count")
	b.when("count", "ask", b.cmpChunk("n", bytecode.LT, vi(100)))
	b.bounded("count", 2, "end")
	b.otherwise("count", "end")
	return b.machine()
}

func randomHost(m *Machine, seed uint64) Host {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 1))
	return HostFunc(func(ctx context.Context, req CallRequest) (types.Value, error) {
		mu.Lock()
		x := rng.Int64N(1000)
		mu.Unlock()
		if m.prog.Tools[req.Callee].Name == "flaky" && x%2 == 0 && req.Attempt < 4 {
			return types.Value{}, NewError(KindUnavailable, "flaked with %d", x)
		}
		return vi(x), nil
	})
}

func TestReplay(t *testing.T) {
	m := fullGraph(t)
	store := NewMemStore()
	o := Options{RunID: "r", Host: randomHost(m, 7), Checkpointer: store, Clock: newFakeClock(true), Entropy: &seqEntropy{}}
	res := mustRun(t, m, o)
	for _, ans := range []bool{false, true, false} {
		if res.Status != StatusInterrupted {
			t.Fatalf("status %s", res.Status)
		}
		var err error
		res, err = m.Resume(bg, 0, ResumeInput{Chain: store.Chain("r"), Answers: map[string]types.Value{"g/ask": vb(ans)}}, o)
		if err != nil {
			t.Fatal(err)
		}
	}
	if res.Status != StatusCompleted {
		t.Fatalf("status %s", res.Status)
	}
	want := fmt.Sprint(stateOf(t, m, res))
	rep, err := m.Replay(bg, 0, store.Journal("r"), Options{RunID: "replay"})
	if err != nil || rep.Status != StatusCompleted {
		t.Fatalf("replay: %v %v", rep, err)
	}
	if got := fmt.Sprint(stateOf(t, m, rep)); got != want {
		t.Errorf("replay state\n got %s\nwant %s", got, want)
	}
	// A journal cut after the first interrupt replays up to it.
	var cut [][]byte
	for _, r := range store.Records("r") {
		cut = append(cut, r.Journal...)
		if r.Status == StatusInterrupted {
			break
		}
	}
	rep, err = m.Replay(bg, 0, cut, Options{})
	if err != nil || rep.Status != StatusInterrupted {
		t.Errorf("cut replay: %v %v", rep, err)
	}
}

// TestCrashProperty: random graphs crashed at random durable calls and
// resumed (repeatedly) end in the same state as uninterrupted runs, and no
// side effect runs twice.
func TestCrashProperty(t *testing.T) {
	iters := 300
	if testing.Short() {
		iters = 50
	}
	for seed := uint64(0); seed < uint64(iters); seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		m := randomGraph(t, rng)
		ref := mustRun(t, m, Options{Host: detHost(m, nil, nil)})
		want := fmt.Sprint(stateOf(t, m, ref))

		store := &crashStore{MemStore: NewMemStore(), at: 1 + rng.IntN(12), after: rng.IntN(2) == 0}
		var effects sync.Map
		o := Options{RunID: "r", Host: detHost(m, &effects, rng), Checkpointer: store}
		res, err := m.Run(bg, 0, o)
		var decisions map[string]Decision
		for round := 0; round < 50 && (err != nil || res.Status == StatusNeedsDecision); round++ {
			if err != nil && !errors.Is(err, errCrash) {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if res != nil && res.Status == StatusNeedsDecision {
				decisions = map[string]Decision{}
				for _, d := range res.Decisions {
					decisions[d.ID] = Decision{Action: DecideRerun}
				}
			}
			store.revive(rng.IntN(12), rng.IntN(2) == 0)
			chain := store.Chain("r")
			if len(chain) == 0 {
				res, err = m.Run(bg, 0, o)
				continue
			}
			res, err = m.Resume(bg, 0, ResumeInput{Chain: chain, Pending: store.Pending("r"), Decisions: decisions}, o)
		}
		if err != nil || res.Status != StatusCompleted {
			t.Fatalf("seed %d: did not complete: %v %v", seed, res, err)
		}
		if got := fmt.Sprint(stateOf(t, m, res)); got != want {
			t.Fatalf("seed %d: state after crashes\n got %s\nwant %s", seed, got, want)
		}
		effects.Range(func(k, v any) bool {
			if n := v.(*atomic.Int32).Load(); n > 1 && decisions == nil {
				t.Errorf("seed %d: side effect %s ran %d times", seed, k, n)
			}
			return true
		})
	}
}

// randomGraph builds a DAG-ish graph: a sequence of blocks, each a set node,
// a tool call (read-only or side-effecting), a map, a fan-out of 2–3
// branches into a join (all or any), or a bounded self-loop.
func randomGraph(t *testing.T, rng *rand.Rand) *Machine {
	b := newGraph(t, fld("log", listStr, ptr(vl()), bytecode.ReduceAppend), fld("sum", intT, ptr(vi(0)), bytecode.ReduceSum),
		fld("xs", listInt, ptr(vl(vi(1), vi(2), vi(3), vi(4))), 0), fld("last", strT, ptr(vs("")), 0))
	prev := []string{"start"}
	id := 0
	name := func(p string) string { id++; return fmt.Sprintf("%s%d", p, id) }
	unit := func() string {
		n := name("n")
		switch rng.IntN(4) {
		case 0:
			b.set(n, "sum", b.constChunk(vi(int64(rng.IntN(10)))), "last", b.constChunk(vs(n)))
		case 1:
			b.mapNode(n, "t", "log", b.loadChunk("xs"), uint32(rng.IntN(3)))
		default:
			i := b.call(n, "t", "log", "q", b.constChunk(vs(n)))
			if rng.IntN(2) == 0 {
				b.graph().Nodes[i].Effect = bytecode.EffectSideEffect
			}
		}
		return n
	}
	link := func(to string) {
		for _, p := range prev {
			b.edge(p, to)
		}
	}
	for blocks := 1 + rng.IntN(5); blocks > 0; blocks-- {
		switch rng.IntN(4) {
		case 0, 1:
			n := unit()
			link(n)
			prev = []string{n}
		case 2:
			var branches []string
			for k := 2 + rng.IntN(2); k > 0; k-- {
				n := unit()
				link(n)
				branches = append(branches, n)
			}
			mode := bytecode.JoinAll
			if rng.IntN(3) == 0 {
				mode = bytecode.JoinAny
			}
			j := name("j")
			b.join(j, mode, branches...)
			prev = branches
			link(j)
			prev = []string{j}
		case 3:
			n := name("loop")
			b.set(n, "sum", b.constChunk(vi(1)))
			link(n)
			after := unit()
			b.when(n, n, b.cmpChunk("sum", bytecode.LT, vi(1000)))
			b.bounded(n, uint32(1+rng.IntN(3)), after)
			b.otherwise(n, after)
			prev = []string{after}
		}
	}
	link("end")
	return b.machine()
}

// detHost answers deterministically from (node, args), with random delays,
// counting executions per idempotency key of side effects.
func detHost(m *Machine, effects *sync.Map, rng *rand.Rand) Host {
	var mu sync.Mutex
	return HostFunc(func(ctx context.Context, req CallRequest) (types.Value, error) {
		if rng != nil {
			mu.Lock()
			d := time.Duration(rng.IntN(200)) * time.Microsecond
			mu.Unlock()
			time.Sleep(d)
		}
		if effects != nil && req.Effect == bytecode.EffectSideEffect {
			c, _ := effects.LoadOrStore(req.IdempotencyKey, new(atomic.Int32))
			c.(*atomic.Int32).Add(1)
		}
		var sb strings.Builder
		sb.WriteString(req.Node)
		for _, a := range req.Args {
			sb.WriteString(" " + a.Value.String())
		}
		return vs(sb.String()), nil
	})
}

// TestReducers: every reducer, several writes to one field in one step,
// and the checkpoint chain restoring the identical state.
func TestReducers(t *testing.T) {
	two, _ := types.MakeMap([]string{"a", "b"}, []types.Value{vi(1), vi(2)})
	three, _ := types.MakeMap([]string{"b", "c"}, []types.Value{vi(20), vi(3)})
	recv := func(x types.Value, y types.Value) types.Value {
		v, _ := types.MakeRecord(recT.Shape(), []types.Value{x, y})
		return v
	}
	b := newGraph(t,
		fld("tags", types.MapOf(intT), ptr(mustMap(t)), bytecode.ReduceMerge),
		fld("rec", recT, ptr(recv(vi(1), vs("one"))), bytecode.ReduceMerge),
		fld("total", intT, ptr(vi(0)), bytecode.ReduceSum),
		fld("dur", types.DurationType, nil, bytecode.ReduceSum),
		fld("hi", intT, ptr(vi(5)), bytecode.ReduceMax),
		fld("lo", types.FloatType, ptr(vf(5)), bytecode.ReduceMin),
		fld("name", strT, ptr(vs("m")), bytecode.ReduceMax),
		fld("log", listInt, ptr(vl()), bytecode.ReduceAppend),
		fld("j", types.JSONType, nil, bytecode.ReduceMerge),
	)
	recNull, _ := types.MakeRecord(recT.Shape(), []types.Value{{}, vs("two")})
	b.set("a", "tags", b.constChunk(two), "total", b.constChunk(vi(3)), "hi", b.constChunk(vi(9)),
		"lo", b.constChunk(vf(7)), "name", b.constChunk(vs("z")), "log", b.constChunk(vl(vi(1), vi(2))),
		"dur", b.constChunk(vd(time.Second)), "j", b.constChunk(two))
	b.set("b", "tags", b.constChunk(three), "total", b.constChunk(vi(4)), "hi", b.constChunk(vi(2)),
		"lo", b.constChunk(vf(1.5)), "name", b.constChunk(vs("a")), "log", b.constChunk(vi(3)),
		"rec", b.constChunk(recNull), "dur", b.constChunk(vd(time.Second)), "j", b.constChunk(three))
	b.join("both", bytecode.JoinAll, "a", "b")
	b.set("c", "log", b.constChunk(vi(4)), "total", b.constChunk(vi(1)))
	b.edge("start", "a")
	b.edge("start", "b")
	b.edge("a", "both")
	b.edge("b", "both")
	b.edge("both", "c")
	b.edge("c", "end")
	m := b.machine()
	store := NewMemStore()
	res := mustRun(t, m, Options{RunID: "r", Checkpointer: store})
	want := map[string]string{
		"tags": `{"a": 1, "b": 20, "c": 3, "z": 0}`, "rec": `{x: 1, y: "two"}`, "total": "8", "dur": "2s",
		"hi": "9", "lo": "1.5", "name": `"z"`, "log": "[1, 2, 3, 4]", "j": `{"a": 1, "b": 20, "c": 3}`,
	}
	if got := stateOf(t, m, res); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("state\n got %v\nwant %v", got, want)
	}
	snap, err := m.restoreChain(0, store.Chain("r"))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range snap.state {
		if !types.Equal(v, res.State[i]) {
			t.Errorf("field %d restored as %s, want %s", i, v, res.State[i])
		}
	}
	// Overflowing sum fails the run with eval.
	b2 := newGraph(t, fld("total", intT, ptr(vi(math.MaxInt64)), bytecode.ReduceSum))
	b2.set("a", "total", b2.constChunk(vi(1)))
	b2.chain("a")
	m2 := b2.machine()
	if _, err := m2.Run(bg, 0, Options{}); err == nil || !strings.Contains(err.Error(), "field total: integer overflow") {
		t.Errorf("sum overflow: %v", err)
	}
}

func mustMap(t *testing.T) types.Value {
	v, err := types.MakeMap([]string{"z"}, []types.Value{vi(0)})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestEvalErrorCaught: an expression failure is a node error of kind eval
// pointing at the source, which a catch route receives.
func TestEvalErrorCaught(t *testing.T) {
	b := newGraph(t, fld("xs", listInt, ptr(vl()), 0), fld(ErrorField, errFieldT, nil, 0), fld("msg", strT, ptr(vs("")), 0))
	bad := b.chunk("bad", 0, 12, func(c *bytecode.ChunkBuilder) {
		c.Emit(bytecode.LOAD, b.field("xs"))
		c.Const(vi(0))
		c.Emit(bytecode.INDEX, 0)
		c.Emit(bytecode.RETURN, 0)
	})
	n := b.set("first", "msg", bad)
	fb := b.set("fallback", "msg", b.loadChunk(ErrorField))
	b.graph().Nodes[n].Catch = int32(fb)
	b.p.States[0].Fields[b.field("msg")].Type = b.pb.Type(types.JSONType)
	b.chain("first")
	b.edge("fallback", "end")
	m := b.machine()
	res := mustRun(t, m, Options{})
	if got := fieldOf(t, m, res, "msg").String(); got != `{kind: "eval", message: "test.agent:12:3: list index 0 out of range [0, 0)", node: "g/first"}` {
		t.Errorf("msg %s", got)
	}
}

// TestCorruptCheckpoints: damaged records are refused with errors, never
// panics.
func TestCorruptCheckpoints(t *testing.T) {
	m := fullGraph(t)
	store := NewMemStore()
	o := Options{RunID: "r", Host: randomHost(m, 3), Checkpointer: store, Clock: newFakeClock(true), Entropy: &seqEntropy{}, SnapshotEvery: 2}
	mustRun(t, m, o)
	recs := store.Records("r")
	rng := rand.New(rand.NewPCG(1, 2))
	mutate := func(b []byte) []byte {
		b = append([]byte(nil), b...)
		if len(b) == 0 {
			return []byte{byte(rng.IntN(256))}
		}
		switch rng.IntN(3) {
		case 0:
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		case 1:
			b = b[:rng.IntN(len(b))]
		default:
			b = append(b, byte(rng.IntN(256)))
		}
		return b
	}
	for i := 0; i < 3000; i++ {
		chain := append([]StepRecord(nil), recs...)
		k := rng.IntN(len(chain))
		r := &chain[k]
		switch rng.IntN(4) {
		case 0:
			r.State = mutate(r.State)
		case 1:
			r.Frontier = mutate(r.Frontier)
		case 2:
			r.Counters = mutate(r.Counters)
		case 3:
			r.Interrupts = mutate(r.Interrupts)
		}
		m.restoreChain(0, chain)
		run := &run{m: m, g: &m.graphs[0]}
		run.decodePending(PendingWrite{Task: "g/f", Data: mutate(r.State)})
		for _, j := range r.Journal {
			DecodeJournalEntry(mutate(j))
		}
		decodeEffect(mutate(r.State))
	}
}
