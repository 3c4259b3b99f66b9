package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/memory"
	"github.com/agentc/agentc/vm"
)

const mini = `workflow mini "tiny"

state S {
  q  : string
  a  : string = ""
  ok : bool = false
}

graph g(S) input q output a {
  node echo = set { a = "got {q}" }
  node ask  = interrupt "OK?" returns bool into ok
  node no   = set { a = "no" }
  start -> echo
  echo  -> ask
  ask   -> end when ok
  ask   -> no otherwise
  no    -> end
}
`

// fixture runs mini until it waits on ask, in session (app mini, user u,
// session s) of a fresh memory store, and returns an Inspector over the
// store and the run's id.
func fixture(t *testing.T) (*Inspector, *bytecode.Program, string) {
	t.Helper()
	ctx := context.Background()
	prog := runtimetest.CompileSource(t, "mini.agent", mini)
	st := memory.New()
	clock, ent := &runtimetest.Clock{}, &runtimetest.Entropy{}
	r, err := runtime.NewRunner(runtime.RunnerConfig{Store: st, Program: prog, Clock: clock, Entropy: ent, App: "mini"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	ch, err := r.Run(ctx, runtime.Invocation{User: "u", Session: "s", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	var fin *runtime.Event
	for e := range ch {
		if e.Kind == runtime.EventRunFinished {
			fin = e
		}
	}
	if fin == nil || fin.Status != runtime.StatusInterrupted {
		t.Fatalf("the run did not wait on ask: %+v", fin)
	}
	return New(Config{Store: st, Now: clock.Now, Clock: clock, Entropy: ent}), prog, fin.Run
}

func TestSessionsAndEvents(t *testing.T) {
	ctx := context.Background()
	in, _, run := fixture(t)
	key := store.SessionKey{App: "mini", User: "u", Session: "s"}
	ss, err := in.Sessions(ctx, session.ListFilter{App: "mini"})
	if err != nil || len(ss) != 1 || ss[0].User != "u" || ss[0].Session != "s" || ss[0].Events == 0 || ss[0].Runs != nil {
		t.Fatalf("Sessions = %+v, %v; want one session u/s with events and no runs listed", ss, err)
	}
	s, err := in.Session(ctx, key)
	if err != nil || len(s.Runs) != 1 || s.Runs[0] != (Run{ID: run, Runnable: "g", Status: "interrupted"}) {
		t.Fatalf("Session = %+v, %v; want run %s of g, interrupted", s, err, run)
	}
	if _, err := in.Session(ctx, store.SessionKey{App: "mini", User: "u", Session: "nope"}); err == nil || !strings.Contains(err.Error(), "session nope") {
		t.Errorf("a missing session: %v", err)
	}

	evs, err := in.Events(ctx, key, EventQuery{Kinds: []string{"input", "run_started"}})
	if err != nil || len(evs) != 2 {
		t.Fatalf("Events(input, run_started) = %d events, %v", len(evs), err)
	}
	if got := Summary(evs[0]); got != "hi" {
		t.Errorf("input summary %q, want hi", got)
	}
	if got := Summary(evs[1]); got != run+" g" {
		t.Errorf("run_started summary %q, want %q", got, run+" g")
	}
	if evs, err := in.Events(ctx, key, EventQuery{Run: "run_other"}); err != nil || len(evs) != 0 {
		t.Errorf("Events of another run = %d, %v; want none", len(evs), err)
	}
	q := EventQuery{Kinds: []string{"nope"}}
	if err := q.Check(); !errors.Is(err, ErrInvalid) || err.Error() != `unknown event kind "nope"` {
		t.Errorf("Check of an unknown kind: %v", err)
	}
	if _, err := in.Events(ctx, key, q); !errors.Is(err, ErrInvalid) {
		t.Errorf("Events of an unknown kind: %v", err)
	}
	if _, err := in.Events(ctx, store.SessionKey{App: "mini", User: "u", Session: "nope"}, EventQuery{}); err == nil || errors.Is(err, ErrInvalid) {
		t.Errorf("Events of a missing session: %v", err)
	}
}

func TestCheckpointsAndState(t *testing.T) {
	ctx := context.Background()
	in, _, run := fixture(t)
	cps, err := in.Checkpoints(ctx, run)
	if err != nil || len(cps) < 3 {
		t.Fatalf("Checkpoints = %+v, %v", cps, err)
	}
	for i, cp := range cps {
		if cp.Step != uint64(i) || cp.Bytes == 0 || cp.Time.Location() != time.UTC {
			t.Errorf("checkpoint %d: %+v", i, cp)
		}
	}
	if cps[0].Kind != "full" || len(cps[0].Nodes) != 0 || cps[0].Nodes == nil {
		t.Errorf("step 0 = %+v; want a full snapshot, no nodes (an empty list)", cps[0])
	}
	if got := strings.Join(cps[1].Nodes, ","); got != "echo" {
		t.Errorf("step 1 nodes %q, want echo", got)
	}
	last := cps[len(cps)-1]
	if got := strings.Join(last.Nodes, ","); got != "ask(waiting)" {
		t.Errorf("last step nodes %q, want ask(waiting)", got)
	}

	s, err := in.State(ctx, run, -1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Run != run || s.Step != last.Step || strings.Join(s.Interrupts, ",") != "g/ask" {
		t.Errorf("last state %+v; want step %d waiting on g/ask", s, last.Step)
	}
	if got := string(s.State); got != `{"q":"hi","a":"got hi","ok":false}` {
		t.Errorf("last state %s", got)
	}
	s, err = in.State(ctx, run, 0)
	if err != nil || s.Step != 0 || strings.Join(s.Frontier, ",") != "echo" || s.Interrupts != nil {
		t.Errorf("step 0 = %+v, %v; want frontier echo", s, err)
	}
	if _, err := in.State(ctx, run, 99); err == nil || !strings.Contains(err.Error(), "step 99") {
		t.Errorf("step 99: %v", err)
	}
	if _, err := in.Checkpoints(ctx, "run_nope"); err == nil || !strings.Contains(err.Error(), "run run_nope") {
		t.Errorf("a missing run: %v", err)
	}
}

func TestFork(t *testing.T) {
	ctx := context.Background()
	in, _, run := fixture(t)
	cps, err := in.Checkpoints(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	step := cps[len(cps)-1].Step
	set, err := ParseSets([]string{`a="edited"`})
	if err != nil {
		t.Fatal(err)
	}
	nr, err := in.Fork(ctx, ForkRequest{Run: run, Step: step, Set: set})
	if err != nil {
		t.Fatal(err)
	}
	if nr.ParentRun != run || nr.ParentStep != step || nr.Run == run || nr.Session != "s" || nr.User != "u" {
		t.Errorf("Fork = %+v", nr)
	}
	s, err := in.State(ctx, nr.Run, -1)
	if err != nil || !strings.Contains(string(s.State), `"a":"edited"`) || strings.Join(s.Interrupts, ",") != "g/ask" {
		t.Errorf("the fork's state %+v, %v; want a edited, waiting on g/ask", s, err)
	}
	if _, err := in.Replay(ctx, nr.Run, noFuncs); err == nil || !strings.Contains(err.Error(), "is a fork of "+run) {
		t.Errorf("replay of a fork: %v", err)
	}

	bad := []struct {
		name string
		req  ForkRequest
		want string
	}{
		{"ill-typed", ForkRequest{Run: run, Step: step, Set: map[string]json.RawMessage{"a": json.RawMessage(`5`)}}, "a = 5 does not fit string"},
		{"no such field", ForkRequest{Run: run, Step: step, Set: map[string]json.RawMessage{"nope": json.RawMessage(`1`)}}, `no field "nope" (fields: q, a, ok)`},
		{"another program", ForkRequest{Run: run, Step: step, ProgramHash: "00"}, "this program is 00"},
	}
	for _, tt := range bad {
		if _, err := in.Fork(ctx, tt.req); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want ErrInvalid saying %q", tt.name, err, tt.want)
		}
	}
	if _, err := in.Fork(ctx, ForkRequest{Run: "run_nope"}); err == nil || errors.Is(err, ErrInvalid) {
		t.Errorf("fork of a missing run: %v; want a store error, not ErrInvalid", err)
	}
}

func TestParseSets(t *testing.T) {
	tests := []struct {
		in   []string
		want string // the error; "" for none
	}{
		{nil, ""},
		{[]string{`a="x"`, `b={"k":[1]}`}, ""},
		{[]string{"a"}, `--set "a": want FIELD=JSON`},
		{[]string{`="x"`}, "want FIELD=JSON"},
		{[]string{"a=x"}, `--set a: "x" is not valid JSON`},
	}
	for _, tt := range tests {
		got, err := ParseSets(tt.in)
		if tt.want == "" {
			if err != nil || len(got) != len(tt.in) {
				t.Errorf("ParseSets(%q) = %v, %v", tt.in, got, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseSets(%q): %v; want ErrInvalid saying %q", tt.in, err, tt.want)
		}
	}
}

func noFuncs(*bytecode.Program) map[string]vm.Func { return nil }

func TestReplay(t *testing.T) {
	in, _, run := fixture(t)
	res, err := in.Replay(context.Background(), run, noFuncs)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Identical || res.Run != run || res.Step != res.WantStep || len(res.Diverged) != 0 {
		t.Errorf("Replay = %+v; want identical", res)
	}
}

// TestJSONShapes pins the JSON the CLI's --json prints and a browser
// inspector reads: field names and order.
func TestJSONShapes(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		v    any
		want string
	}{
		{Checkpoint{Step: 1, Kind: "delta", Nodes: []string{"triage"}, Time: at, Bytes: 9},
			`{"step":1,"kind":"delta","nodes":["triage"],"time":"2026-01-02T03:04:05Z","bytes":9}`},
		{State{Run: "r", Step: 2, Kind: "full", Frontier: []string{}, State: json.RawMessage(`{"a":1}`)},
			`{"run":"r","step":2,"kind":"full","frontier":[],"state":{"a":1}}`},
		{Forked{ParentRun: "p", ParentStep: 4, Run: "r", Session: "s", User: "u"},
			`{"parent_run":"p","parent_step":4,"run":"r","session":"s","user":"u"}`},
		{Replay{Identical: true, Run: "r", Step: 3, WantStep: 3},
			`{"diverged":null,"diverged_at":0,"identical":true,"run":"r","step":3,"want_step":3}`},
		{Session{App: "a", User: "u", Session: "s", Created: at, Updated: at, Events: 2},
			`{"app":"a","user":"u","session":"s","created":"2026-01-02T03:04:05Z","updated":"2026-01-02T03:04:05Z","events":2}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.v)
		if err != nil || string(b) != tt.want {
			t.Errorf("%T: %s, %v\nwant %s", tt.v, b, err, tt.want)
		}
	}
}

func TestArtifactsAndCandidates(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	now := func() time.Time { return time.Unix(100, 0).UTC() }
	k := artifact.Key{App: "a", User: "u", Session: "s", Name: "r.md"}
	svc := artifact.New(st, now)
	for _, body := range []string{"one", "two"} {
		if _, err := svc.Save(ctx, k, []byte(body), "text/markdown", "run_1"); err != nil {
			t.Fatal(err)
		}
	}
	in := New(Config{Store: st, Now: now})
	ms, err := in.Artifacts(ctx, artifact.Filter{App: "a", User: "u"})
	if err != nil || len(ms) != 1 || ms[0].Revision != 2 {
		t.Fatalf("Artifacts = %+v, %v; want r.md at revision 2", ms, err)
	}
	for rev, want := range map[int]string{0: "two", 1: "one", 2: "two"} {
		a, err := in.Artifact(ctx, k, rev)
		if err != nil || string(a.Data) != want {
			t.Errorf("Artifact rev %d = %v, %v; want %q", rev, a, err, want)
		}
	}
	if _, err := in.Artifact(ctx, k, 3); err == nil {
		t.Error("revision 3 was found")
	}
	if cs, err := in.Pending(ctx); err != nil || len(cs) != 0 {
		t.Errorf("Pending on an empty queue = %v, %v", cs, err)
	}
	if _, err := in.Candidate(ctx, "cand_nope"); err == nil {
		t.Error("a missing candidate was found")
	}
	if _, err := in.Approve(ctx, "cand_nope", "alice"); err == nil {
		t.Error("a missing candidate was approved")
	}
}

func TestPickGraph(t *testing.T) {
	prog := runtimetest.CompileSource(t, "two.agent", `workflow two "two graphs"

state S {
  q : string
}

graph one(S) input q output q {
  node n = set { q = "1" }
  start -> n
  n -> end
}

graph other(S) input q output q {
  node n = set { q = "2" }
  start -> n
  n -> end
}
`)
	tests := []struct {
		name string
		want int
		err  string
	}{
		{"one", 0, ""},
		{"other", 1, ""},
		{"", -1, "several graphs; pick one with --graph (graphs: one, other)"},
		{"nope", -1, `no graph or agent "nope" (graphs: one, other)`},
	}
	for _, tt := range tests {
		gi, err := PickGraph(prog, tt.name)
		if gi != tt.want || (err == nil) != (tt.err == "") || err != nil && err.Error() != tt.err {
			t.Errorf("PickGraph(%q) = %d, %v; want %d, %q", tt.name, gi, err, tt.want, tt.err)
		}
	}
	mini := runtimetest.CompileSource(t, "mini.agent", mini)
	if gi, err := PickGraph(mini, ""); gi != 0 || err != nil {
		t.Errorf("the only graph: %d, %v", gi, err)
	}
}

func TestDecodeProgram(t *testing.T) {
	prog := runtimetest.CompileSource(t, "mini.agent", mini)
	b, err := bytecode.Encode(prog)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := runtime.DecodeProgram(b); err != nil || len(p.Graphs) != 1 {
		t.Errorf("runtime.DecodeProgram = %v, %v", p, err)
	}
	if _, err := runtime.DecodeProgram(b[:len(b)/2]); err == nil {
		t.Error("a truncated program decoded")
	}
}
