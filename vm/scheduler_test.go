package vm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
)

var bg = context.Background()

func mustRun(t testing.TB, m *Machine, o Options) *Result {
	t.Helper()
	res, err := m.Run(bg, 0, o)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

func TestChain(t *testing.T) {
	b := newGraph(t, fld("n", intT, ptr(vi(0)), bytecode.ReduceSum), fld("s", strT, ptr(vs("")), 0))
	one := b.constChunk(vi(1))
	b.set("a", "n", one)
	b.set("b", "n", one)
	b.set("c", "n", one, "s", b.chunk("interp", 0, 3, func(c *bytecode.ChunkBuilder) {
		c.Const(vs("n was "))
		c.Emit(bytecode.LOAD, b.field("n"))
		c.Emit(bytecode.INTERP, 2)
		c.Emit(bytecode.RETURN, 0)
	}))
	b.chain("a", "b", "c")
	m := b.machine()
	var events []string
	res := mustRun(t, m, Options{RunID: "r1", Emit: func(e Event) {
		events = append(events, fmt.Sprintf("%d %s %s", e.Step, e.Kind, e.Node))
	}})
	if res.Status != StatusCompleted || res.Step != 3 {
		t.Fatalf("status %s step %d", res.Status, res.Step)
	}
	if got := stateOf(t, m, res); got["n"] != "3" || got["s"] != `"n was 2"` {
		t.Errorf("state %v", got)
	}
	if got := res.Output.String(); got != `{"n": 3, "s": "n was 2"}` {
		t.Errorf("output %s", got)
	}
	want := "1 node_started g/a|1 node_finished g/a|1 state_delta |2 node_started g/b|2 node_finished g/b|2 state_delta |3 node_started g/c|3 node_finished g/c|3 state_delta |3 run_finished "
	if got := strings.Join(events, "|"); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
}

// fanJoin builds start -> a, b (tools into an append field) -> join -> c.
func fanJoin(t *testing.T, mode bytecode.JoinMode, longB bool) (*gbuild, *Machine) {
	b := newGraph(t, fld("hits", listStr, ptr(vl()), bytecode.ReduceAppend), fld("fired", intT, ptr(vi(0)), bytecode.ReduceSum))
	b.call("a", "ta", "hits", "q", b.constChunk(vs("a")))
	b.call("b", "tb", "hits", "q", b.constChunk(vs("b")))
	last := "b"
	if longB {
		b.call("b2", "tb", "hits", "q", b.constChunk(vs("b2")))
		last = "b2"
	}
	b.join("j", mode, "a", last)
	b.set("c", "fired", b.constChunk(vi(1)))
	b.edge("start", "a")
	b.edge("start", "b")
	b.edge("a", "j")
	if longB {
		b.edge("b", "b2")
	}
	b.edge(last, "j")
	b.edge("j", "c")
	b.edge("c", "end")
	return b, b.machine()
}

func echoHost(m *Machine, delay func() time.Duration) *toolHost {
	f := func(ctx context.Context, req CallRequest) (types.Value, error) {
		if delay != nil {
			select {
			case <-time.After(delay()):
			case <-ctx.Done():
				return types.Value{}, ctx.Err()
			}
		}
		q := arg(req, "q")
		if q.IsNull() {
			q = arg(req, "x")
		}
		return vs(m.prog.Tools[req.Callee].Name + ":" + strings.Trim(q.String(), `"`)), nil
	}
	return &toolHost{m: m, fs: map[string]func(context.Context, CallRequest) (types.Value, error){"ta": f, "tb": f, "tc": f, "td": f}}
}

func TestFanOutJoin(t *testing.T) {
	for _, tc := range []struct {
		mode  bytecode.JoinMode
		long  bool
		hits  string
		steps uint64
	}{
		{bytecode.JoinAll, false, `["ta:a", "tb:b"]`, 3},
		{bytecode.JoinAny, false, `["ta:a", "tb:b"]`, 3},
		{bytecode.JoinAll, true, `["ta:a", "tb:b", "tb:b2"]`, 4},
		{bytecode.JoinAny, true, `["ta:a", "tb:b", "tb:b2"]`, 3}, // j fires in step 2 with b2; b2's arrival ends the wave
	} {
		t.Run(fmt.Sprintf("%s long=%v", tc.mode, tc.long), func(t *testing.T) {
			_, m := fanJoin(t, tc.mode, tc.long)
			res := mustRun(t, m, Options{Host: echoHost(m, nil)})
			if got := stateOf(t, m, res); got["hits"] != tc.hits || got["fired"] != "1" {
				t.Errorf("state %v", got)
			}
			if res.Step != tc.steps {
				t.Errorf("%d steps, want %d", res.Step, tc.steps)
			}
		})
	}
}

func TestSwitch(t *testing.T) {
	for _, tc := range []struct {
		x    int64
		want string
	}{{1, "low"}, {5, "mid"}, {50, "high"}} {
		b := newGraph(t, fld("x", intT, ptr(vi(tc.x)), 0), fld("label", strT, ptr(vs("")), 0))
		b.set("check", "x", b.loadChunk("x"))
		for _, l := range []string{"low", "mid", "high"} {
			b.set(l, "label", b.constChunk(vs(l)))
			b.edge(l, "end")
		}
		b.edge("start", "check")
		b.when("check", "low", b.cmpChunk("x", bytecode.LT, vi(3)))
		b.when("check", "mid", b.cmpChunk("x", bytecode.LT, vi(10)))
		b.otherwise("check", "high")
		m := b.machine()
		res := mustRun(t, m, Options{})
		if got := fieldOf(t, m, res, "label").Str(); got != tc.want {
			t.Errorf("x=%d: label %q, want %q", tc.x, got, tc.want)
		}
	}
}

func loopGraph(t *testing.T, max uint32) *gbuild {
	b := newGraph(t, fld("n", intT, ptr(vi(0)), bytecode.ReduceSum), fld("label", strT, ptr(vs("")), 0))
	b.set("inc", "n", b.constChunk(vi(1)))
	b.set("done", "label", b.constChunk(vs("gave up")))
	b.edge("start", "inc")
	b.when("inc", "inc", b.cmpChunk("n", bytecode.LT, vi(100)))
	b.bounded("inc", max, "done")
	b.otherwise("inc", "end")
	b.edge("done", "end")
	return b
}

func TestBoundedLoop(t *testing.T) {
	m := loopGraph(t, 3).machine()
	res := mustRun(t, m, Options{})
	if got := stateOf(t, m, res); got["n"] != "4" || got["label"] != `"gave up"` {
		t.Errorf("state %v", got)
	}
	// A `max N` edge without else fails the run with loop_limit. Verify
	// requires an else, so remove it from the loaded machine to exercise
	// the VM's own check.
	m = loopGraph(t, 2).machine()
	m.prog.Graphs[0].Nodes[m.graphs[0].g.Nodes[2].Edges[0].Target].Edges[0].Else = bytecode.None
	res, err := m.Run(bg, 0, Options{})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindLoopLimit || res.Status != StatusFailed {
		t.Fatalf("got %v, %v; want loop_limit", res, err)
	}
	if got := fieldOf(t, m, res, "n").Int(); got != 2 || res.Step != 2 {
		t.Errorf("failed run's state n=%d at step %d, want the last committed n=2 at step 2", got, res.Step)
	}
}

func TestMap(t *testing.T) {
	var cur, peak atomic.Int32
	b := newGraph(t, fld("xs", listInt, ptr(vl(vi(3), vi(1), vi(2), vi(5), vi(4))), 0),
		fld("out", listInt, ptr(vl(vi(0))), bytecode.ReduceAppend), fld("after", boolT, ptr(vb(false)), 0))
	b.mapNode("sq", "sq", "out", b.loadChunk("xs"), 2)
	b.set("next", "after", b.constChunk(vb(true)))
	b.chain("sq", "next")
	m := b.machine()
	host := &toolHost{m: m, fs: map[string]func(context.Context, CallRequest) (types.Value, error){
		"sq": func(ctx context.Context, req CallRequest) (types.Value, error) {
			n := cur.Add(1)
			defer cur.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			x := arg(req, "x").Int()
			time.Sleep(time.Duration(5-x) * time.Millisecond) // later items finish first
			return vi(x * x), nil
		}}}
	res := mustRun(t, m, Options{Host: host})
	if got := fieldOf(t, m, res, "out").String(); got != "[0, 9, 1, 4, 25, 16]" {
		t.Errorf("out %s", got)
	}
	if p := peak.Load(); p > 2 {
		t.Errorf("%d items ran at once, concurrency is 2", p)
	}
	// An empty list runs nothing and writes nothing.
	res = mustRun(t, m, Options{Host: host, Fields: []NamedValue{{Name: "xs", Value: vl()}}})
	if got := stateOf(t, m, res); got["out"] != "[0]" || got["after"] != "true" {
		t.Errorf("state %v", got)
	}
}

func TestMapItemFailureCancelsOthers(t *testing.T) {
	b := newGraph(t, fld("xs", listInt, ptr(vl(vi(1), vi(2), vi(3), vi(4))), 0),
		fld("out", listInt, ptr(vl()), bytecode.ReduceAppend), fld(ErrorField, errFieldT, nil, 0), fld("msg", strT, ptr(vs("")), 0))
	n := b.mapNode("m", "f", "out", b.loadChunk("xs"), 0)
	b.graph().Nodes[n].Catch = int32(b.set("fallback", "msg", b.chunk("msg", 0, 2, func(c *bytecode.ChunkBuilder) {
		c.Emit(bytecode.LOAD, b.field(ErrorField))
		i, _ := b.pb.Const(vs("node"))
		c.Emit(bytecode.FIELD, i)
		c.Emit(bytecode.RETURN, 0)
	})))
	b.chain("m")
	b.edge("fallback", "end")
	m := b.machine()
	var canceled atomic.Int32
	host := &toolHost{m: m, fs: map[string]func(context.Context, CallRequest) (types.Value, error){
		"f": func(ctx context.Context, req CallRequest) (types.Value, error) {
			if arg(req, "x").Int() == 2 {
				return types.Value{}, NewError(KindToolError, "item two is bad")
			}
			<-ctx.Done()
			canceled.Add(1)
			return types.Value{}, ctx.Err()
		}}}
	res := mustRun(t, m, Options{Host: host})
	if got := stateOf(t, m, res); got["out"] != "[]" || got["msg"] != `"g/m/1"` {
		t.Errorf("state %v", got)
	}
	if canceled.Load() > 3 {
		t.Errorf("%d items canceled, want at most 3", canceled.Load())
	}
}

func retryGraph(t *testing.T, r bytecode.Retry, timeout time.Duration) (*gbuild, *Machine) {
	b := newGraph(t, fld("out", strT, ptr(vs("")), 0))
	n := b.call("flaky", "flaky", "out", "q", b.constChunk(vs("x")))
	b.graph().Nodes[n].Retry = r
	b.graph().Nodes[n].Timeout = timeout
	b.chain("flaky")
	return b, b.machine()
}

func TestRetry(t *testing.T) {
	_, m := retryGraph(t, bytecode.Retry{MaxAttempts: 3, BackoffMin: 100 * time.Millisecond, BackoffMax: 150 * time.Millisecond, Jitter: true}, 0)
	var attempts []uint32
	host := &toolHost{m: m, fs: map[string]func(context.Context, CallRequest) (types.Value, error){
		"flaky": func(ctx context.Context, req CallRequest) (types.Value, error) {
			attempts = append(attempts, req.Attempt)
			if req.Attempt < 3 {
				return types.Value{}, NewError(KindUnavailable, "try later")
			}
			return vs("ok"), nil
		}}}
	clock := newFakeClock(true)
	res := mustRun(t, m, Options{Host: host, Clock: clock, Entropy: &seqEntropy{}})
	if got := fieldOf(t, m, res, "out").Str(); got != "ok" || !slices.Equal(attempts, []uint32{1, 2, 3}) {
		t.Errorf("out %q attempts %v", got, attempts)
	}
	waits := clock.Waits()
	if len(waits) != 2 || waits[0] > 100*time.Millisecond || waits[1] > 150*time.Millisecond || waits[0] == waits[1] {
		t.Errorf("backoff waits %v, want jittered within 100ms and 150ms", waits)
	}
	if _, err := m.Run(bg, 0, Options{Host: host}); err == nil || !strings.Contains(err.Error(), "needs a Clock") {
		t.Errorf("run without a clock: %v", err)
	}

	// `on` restricts the retried kinds; eval errors are never retried by default.
	_, m = retryGraph(t, bytecode.Retry{MaxAttempts: 3, On: []string{"timeout"}}, 0)
	attempts = nil
	host.m = m
	res, err := m.Run(bg, 0, Options{Host: host})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindUnavailable || len(attempts) != 1 || res.Status != StatusFailed {
		t.Errorf("got %v attempts %v", err, attempts)
	}
	if !retries(&bytecode.Retry{}, KindToolError) || retries(&bytecode.Retry{}, KindEval) || retries(&bytecode.Retry{}, KindLoopLimit) {
		t.Error("default retryable kinds are wrong")
	}
	if got := backoffDelay(&bytecode.Retry{BackoffMin: time.Second, BackoffMax: 5 * time.Second}, 5); got != 5*time.Second {
		t.Errorf("backoff %v", got)
	}
}

func TestTimeout(t *testing.T) {
	_, m := retryGraph(t, bytecode.Retry{MaxAttempts: 2, On: []string{"timeout"}}, 10*time.Second)
	clock := newFakeClock(false)
	var kinds []string
	host := &toolHost{m: m, fs: map[string]func(context.Context, CallRequest) (types.Value, error){
		"flaky": func(ctx context.Context, req CallRequest) (types.Value, error) {
			if req.Attempt == 1 {
				clock.Advance(10 * time.Second) // the call takes too long
				<-ctx.Done()
				return types.Value{}, ctx.Err()
			}
			return vs("second"), nil
		}}}
	res, err := m.Run(bg, 0, Options{Host: host, Clock: clock, Emit: func(e Event) {
		if e.Err != nil {
			kinds = append(kinds, string(e.Err.Kind))
		}
	}})
	if err != nil || fieldOf(t, m, res, "out").Str() != "second" {
		t.Fatalf("got %v, %v", res, err)
	}
	// Every attempt times out: the node fails with kind timeout.
	host.fs["flaky"] = func(ctx context.Context, req CallRequest) (types.Value, error) {
		clock.Advance(time.Minute)
		<-ctx.Done()
		return types.Value{}, ctx.Err()
	}
	_, err = m.Run(bg, 0, Options{Host: host, Clock: clock})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindTimeout || !strings.Contains(e.Message, "timeout of 10s") {
		t.Errorf("got %v, want a timeout", err)
	}
}

func catchGraph(t *testing.T, catch bool) (*gbuild, *Machine) {
	b := newGraph(t, fld("body", strT, ptr(vs("")), 0), fld(ErrorField, errFieldT, nil, 0), fld("failure", errFieldT, nil, 0))
	n := b.call("get", "flaky", "body", "q", b.constChunk(vs("x")))
	fb := b.set("fallback",
		"body", b.chunk("msg", 0, 9, func(c *bytecode.ChunkBuilder) {
			c.Const(vs("unavailable: "))
			c.Emit(bytecode.LOAD, b.field(ErrorField))
			i, _ := b.pb.Const(vs("message"))
			c.Emit(bytecode.FIELD, i)
			c.Emit(bytecode.INTERP, 2)
			c.Emit(bytecode.RETURN, 0)
		}),
		"failure", b.loadChunk(ErrorField))
	if catch {
		b.graph().Nodes[n].Catch = int32(fb)
	}
	b.chain("get")
	b.edge("fallback", "end")
	return b, b.machine()
}

func TestCatch(t *testing.T) {
	_, m := catchGraph(t, true)
	host := &toolHost{m: m, fs: map[string]func(context.Context, CallRequest) (types.Value, error){
		"flaky": func(ctx context.Context, req CallRequest) (types.Value, error) {
			return types.Value{}, errors.New("HTTP 404")
		}}}
	res := mustRun(t, m, Options{Host: host})
	got := stateOf(t, m, res)
	if got["body"] != `"unavailable: HTTP 404"` || got["failure"] != `{kind: "tool_error", message: "HTTP 404", node: "g/get"}` {
		t.Errorf("state %v", got)
	}
	_, m = catchGraph(t, false)
	host.m = m
	res, err := m.Run(bg, 0, Options{Host: host})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindToolError || e.Node != "g/get" || res.Status != StatusFailed {
		t.Errorf("got %v, %v", res, err)
	}
	// A panicking host is an internal node error, caught like any other.
	_, m = catchGraph(t, true)
	host = &toolHost{m: m, fs: map[string]func(context.Context, CallRequest) (types.Value, error){
		"flaky": func(ctx context.Context, req CallRequest) (types.Value, error) { panic("boom") }}}
	res = mustRun(t, m, Options{Host: host})
	if got := fieldOf(t, m, res, "body").Str(); got != "unavailable: panic: boom" {
		t.Errorf("body %q", got)
	}
}

func TestCache(t *testing.T) {
	b := newGraph(t, fld("out", strT, ptr(vs("")), 0))
	n := b.call("c", "slow", "out", "q", b.constChunk(vs("x")))
	b.graph().Nodes[n].Cache = true
	b.graph().Nodes[n].CacheTTL = time.Hour
	b.chain("c")
	m := b.machine()
	var calls atomic.Int32
	host := &toolHost{m: m, fs: map[string]func(context.Context, CallRequest) (types.Value, error){
		"slow": func(ctx context.Context, req CallRequest) (types.Value, error) {
			return vs(fmt.Sprint("call ", calls.Add(1))), nil
		}}}
	clock := newFakeClock(false)
	for i, want := range []string{"call 1", "call 1", "call 2"} {
		if i == 2 {
			clock.Advance(2 * time.Hour)
		}
		res := mustRun(t, m, Options{Host: host, Clock: clock})
		if got := fieldOf(t, m, res, "out").Str(); got != want {
			t.Errorf("run %d: %q, want %q", i, got, want)
		}
	}
}

func interruptGraph(t *testing.T) (*gbuild, *Machine, *types.Type) {
	dec, _ := types.NewRecord("Decision", []types.Field{{Name: "approved", Type: boolT}, {Name: "feedback", Type: types.OptionalOf(strT)}})
	b := newGraph(t, fld("report", strT, ptr(vs("draft")), 0), fld("decision", types.OptionalOf(dec), nil, 0), fld("label", strT, ptr(vs("")), 0))
	b.interrupt("approve", b.chunk("prompt", 0, 4, func(c *bytecode.ChunkBuilder) {
		c.Const(vs("Publish "))
		c.Emit(bytecode.LOAD, b.field("report"))
		c.Const(vs("?"))
		c.Emit(bytecode.INTERP, 3)
		c.Emit(bytecode.RETURN, 0)
	}), dec, "decision")
	b.set("publish", "label", b.constChunk(vs("published")))
	b.chain("approve", "publish")
	return b, b.machine(), dec
}

func TestInterruptResume(t *testing.T) {
	_, m, dec := interruptGraph(t)
	for _, durable := range []bool{false, true} {
		store := NewMemStore()
		o := Options{RunID: "run-1"}
		if durable {
			o.Checkpointer = store
		}
		res := mustRun(t, m, o)
		if res.Status != StatusInterrupted || len(res.Interrupts) != 1 {
			t.Fatalf("status %s %v", res.Status, res.Interrupts)
		}
		it := res.Interrupts[0]
		if it.ID != "g/approve" || it.Prompt != "Publish draft?" || it.Type != dec {
			t.Errorf("interrupt %+v", it)
		}
		in := ResumeInput{From: res.Snapshot}
		if durable {
			in = ResumeInput{Chain: store.Chain("run-1")}
		}
		// A wrong-typed value is refused and nothing runs.
		in.Answers = map[string]types.Value{"g/approve": vs("yes")}
		_, err := m.Resume(bg, 0, in, o)
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindInvalidResume || !strings.Contains(err.Error(), "want Decision") {
			t.Errorf("wrong-typed resume: %v", err)
		}
		in.Answers = map[string]types.Value{"g/nope": vb(true)}
		if _, err := m.Resume(bg, 0, in, o); err == nil || !strings.Contains(err.Error(), "pending: g/approve") {
			t.Errorf("unknown interrupt: %v", err)
		}
		// No answer: still interrupted.
		in.Answers = nil
		res2, err := m.Resume(bg, 0, in, o)
		if err != nil || res2.Status != StatusInterrupted {
			t.Errorf("resume without answer: %v %v", res2, err)
		}
		// A record missing an optional field converts.
		partial, _ := types.NewRecord("", []types.Field{{Name: "approved", Type: boolT}})
		v, _ := types.MakeRecord(partial.Shape(), []types.Value{vb(true)})
		in.Answers = map[string]types.Value{"g/approve": v}
		res, err = m.Resume(bg, 0, in, o)
		if err != nil || res.Status != StatusCompleted {
			t.Fatalf("resume: %v %v", res, err)
		}
		if got := stateOf(t, m, res); got["decision"] != "{approved: true, feedback: null}" || got["label"] != `"published"` {
			t.Errorf("state %v", got)
		}
	}
}

func TestResumeRefusesOtherProgram(t *testing.T) {
	_, m, _ := interruptGraph(t)
	store := NewMemStore()
	mustRun(t, m, Options{RunID: "r", Checkpointer: store})
	b2, _, _ := interruptGraph(t)
	b2.p.Workflow = "changed"
	m2 := b2.machine()
	_, err := m2.Resume(bg, 0, ResumeInput{Chain: store.Chain("r")}, Options{})
	h1, h2 := m.Hash(), m2.Hash()
	if !errors.Is(err, ErrProgramMismatch) || !strings.Contains(err.Error(), fmt.Sprintf("%x", h1)) || !strings.Contains(err.Error(), fmt.Sprintf("%x", h2)) {
		t.Errorf("got %v", err)
	}
}

func TestMaxSteps(t *testing.T) {
	m := loopGraph(t, 1000).machine()
	res, err := m.Run(bg, 0, Options{MaxSteps: 5})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindMaxSteps || res.Status != StatusFailed || res.Step != 5 {
		t.Errorf("got %+v, %v", res, err)
	}
}

// TestDeterministicMerge: parallel branches and map items writing one
// append field merge in program order, whatever order they finish in.
func TestDeterministicMerge(t *testing.T) {
	b := newGraph(t, fld("hits", listStr, ptr(vl()), bytecode.ReduceAppend), fld("xs", listStr, ptr(vl(vs("p"), vs("q"), vs("r"), vs("s"))), 0))
	for _, n := range []string{"a", "b", "c", "d"} {
		b.call(n, "t"+n, "hits", "q", b.constChunk(vs(n)))
	}
	b.mapNode("m", "ta", "hits", b.loadChunk("xs"), 0)
	b.join("j", bytecode.JoinAll, "a", "b", "c", "d", "m")
	for _, n := range []string{"a", "b", "c", "d", "m"} {
		b.edge("start", n)
		b.edge(n, "j")
	}
	b.edge("j", "end")
	m := b.machine()
	host := echoHost(m, func() time.Duration { return time.Duration(rand.IntN(300)) * time.Microsecond })
	want := `["ta:a", "tb:b", "tc:c", "td:d", "ta:p", "ta:q", "ta:r", "ta:s"]`
	for i := 0; i < 200; i++ {
		res := mustRun(t, m, Options{Host: host})
		if got := fieldOf(t, m, res, "hits").String(); got != want {
			t.Fatalf("run %d: %s", i, got)
		}
	}
}

func TestAppendDeltaIsSmall(t *testing.T) {
	b := newGraph(t, fld("log", listStr, ptr(vl()), bytecode.ReduceAppend), fld("big", strT, ptr(vs(strings.Repeat("x", 10000))), 0))
	names := []string{"a", "b", "c"}
	for _, n := range names {
		b.set(n, "log", b.constChunk(vs(n+strings.Repeat("y", 199))))
	}
	b.chain(names...)
	m := b.machine()
	store := NewMemStore()
	mustRun(t, m, Options{RunID: "r", Checkpointer: store})
	recs := store.Records("r")
	if len(recs) != 4 || !recs[0].Full || recs[1].Full {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs[1:] {
		if n := len(r.State); n > 260 {
			t.Errorf("step %d delta is %d bytes", r.Step, n)
		}
	}
	// The chain restores the same state.
	snap, err := m.restoreChain(0, store.Chain("r"))
	if err != nil || snap.state[0].Len() != 3 {
		t.Fatalf("restore: %v", err)
	}
}

// TestSubGraph: a graph node's call is run by the host with the same
// Machine, its arguments setting the child's fields.
func TestSubGraph(t *testing.T) {
	b := newGraph(t, fld("q", strT, ptr(vs("hi")), 0), fld("out", strT, ptr(vs("")), 0))
	p, pb := b.p, b.pb
	empty, _ := pb.Const(vs(""))
	p.States = append(p.States, bytecode.State{Name: "C", Fields: []bytecode.StateField{
		{Name: "x", Type: pb.Type(strT), Reducer: bytecode.ReduceReplace},
		{Name: "y", Type: pb.Type(strT), Reducer: bytecode.ReduceReplace, HasDefault: true, Default: empty},
	}})
	c := pb.NewChunk("child.shout", 1, 0)
	c.Emit(bytecode.LOAD, 0)
	c.Const(vs("!"))
	c.Emit(bytecode.ADD, 0)
	c.Emit(bytecode.RETURN, 0)
	shout, err := c.Finish()
	if err != nil {
		t.Fatal(err)
	}
	p.Graphs = append(p.Graphs, bytecode.Graph{Name: "child", State: 1, Input: bytecode.None, Output: 1, Nodes: []bytecode.Node{
		{Name: "start", Kind: bytecode.NodeStart, Into: bytecode.None, Catch: bytecode.None, Effect: bytecode.EffectReadOnly,
			Edges: []bytecode.Edge{{Kind: bytecode.EdgeAlways, Cond: bytecode.None, Target: 2, Else: bytecode.None}}},
		{Name: "end", Kind: bytecode.NodeEnd, Into: bytecode.None, Catch: bytecode.None, Effect: bytecode.EffectReadOnly},
		{Name: "shout", Kind: bytecode.NodeSet, Into: bytecode.None, Catch: bytecode.None, Effect: bytecode.EffectReadOnly,
			Set:   []bytecode.Assign{{Field: 1, Code: shout}},
			Edges: []bytecode.Edge{{Kind: bytecode.EdgeAlways, Cond: bytecode.None, Target: 1, Else: bytecode.None}}},
	}})
	b.add(bytecode.Node{Name: "sub", Kind: bytecode.NodeGraph, Into: int32(b.field("out")),
		Call: bytecode.Call{Kind: bytecode.CallGraph, Callee: 1, Args: []bytecode.Arg{{Name: "x", Code: b.loadChunk("q")}}}})
	b.chain("sub")
	m := b.machine()
	var paths []string
	var host HostFunc
	host = func(ctx context.Context, req CallRequest) (types.Value, error) {
		res, err := m.Run(ctx, int(req.Callee), Options{Fields: req.Args, PathPrefix: req.Node, Host: host,
			Emit: func(e Event) {
				if e.Kind == EventNodeStarted {
					paths = append(paths, e.Node)
				}
			}})
		if err != nil {
			return types.Value{}, err
		}
		return res.Output, nil
	}
	res := mustRun(t, m, Options{Host: host})
	if got := fieldOf(t, m, res, "out").Str(); got != "hi!" || strings.Join(paths, ",") != "g/sub/child/shout" {
		t.Errorf("out %q, child paths %v", got, paths)
	}
}

func TestCancel(t *testing.T) {
	b := newGraph(t, fld("out", strT, ptr(vs("")), 0))
	b.call("slow", "slow", "out", "q", b.constChunk(vs("x")))
	b.chain("slow")
	m := b.machine()
	ctx, cancel := context.WithCancel(bg)
	host := &toolHost{m: m, fs: map[string]func(context.Context, CallRequest) (types.Value, error){
		"slow": func(ctx context.Context, req CallRequest) (types.Value, error) {
			cancel()
			<-ctx.Done()
			return types.Value{}, ctx.Err()
		}}}
	store := NewMemStore()
	res, err := m.Run(ctx, 0, Options{RunID: "r", Host: host, Checkpointer: store})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindCanceled || res.Status != StatusCanceled || res.Step != 0 {
		t.Errorf("got %+v, %v", res, err)
	}
	if n := len(store.Records("r")); n != 1 {
		t.Errorf("%d records, want only the initial one", n)
	}
}

// TestWorkersRunTogether: a step's blocking host calls all run at once up
// to Options.Workers (the workers wake one another), and no more; a run of
// many quick steps, where helpers wake late, merges every result.
func TestWorkersRunTogether(t *testing.T) {
	for _, tc := range []struct{ items, workers, peak int }{{8, 8, 8}, {6, 3, 3}, {5, 1, 1}} {
		t.Run(fmt.Sprintf("items=%d workers=%d", tc.items, tc.workers), func(t *testing.T) {
			xs := make([]types.Value, tc.items)
			for i := range xs {
				xs[i] = vi(int64(i))
			}
			b := newGraph(t, fld("xs", listInt, ptr(vl(xs...)), 0), fld("out", listInt, ptr(vl()), bytecode.ReduceAppend))
			b.mapNode("m", "f", "out", b.loadChunk("xs"), 0)
			b.chain("m")
			m := b.machine()
			var cur, peak atomic.Int32
			var closed atomic.Bool
			all := make(chan struct{})
			host := &toolHost{m: m, fs: map[string]func(context.Context, CallRequest) (types.Value, error){
				"f": func(ctx context.Context, req CallRequest) (types.Value, error) {
					n := cur.Add(1)
					defer cur.Add(-1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					if int(n) == tc.peak && closed.CompareAndSwap(false, true) {
						close(all)
					}
					select {
					case <-all:
					case <-time.After(10 * time.Second):
						return types.Value{}, errors.New("the other calls never started")
					}
					return arg(req, "x"), nil
				}}}
			res := mustRun(t, m, Options{Host: host, Workers: tc.workers})
			if got, want := fieldOf(t, m, res, "out").String(), vl(xs...).String(); got != want {
				t.Errorf("out %s, want %s", got, want)
			}
			if p := int(peak.Load()); p != tc.peak {
				t.Errorf("%d calls ran at once, want %d", p, tc.peak)
			}
		})
	}
	m := fanMachine(t, 50, true, true)
	x := vs("x")
	res, err := m.Run(bg, 0, Options{Host: HostFunc(func(context.Context, CallRequest) (types.Value, error) { return x, nil }), Workers: 8})
	if err != nil || res.Step != 100 || fieldOf(t, m, res, "hits").Len() != 400 {
		t.Fatalf("fan-out run: step %d, err %v", res.Step, err)
	}
}
