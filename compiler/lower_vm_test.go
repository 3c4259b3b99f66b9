package compiler

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/vm"
)

// The VM accepts what the compiler emits: every example program loads
// (vm.New verifies it and binds its functions), every graph — declared or
// lowered from an agent — runs against a stub host that answers each call
// with a value of the requested type, and every tool template evaluates.
// (Only tests import vm: the compiler itself does not.)

// stubFuncs are the functions a program may call besides vm.Builtins: the
// embedder binds env (resolved at load), the summary triggers and visited.
func stubFuncs() map[string]vm.Func {
	funcs := vm.Builtins()
	str := func(args []types.Value) (types.Value, error) {
		return types.MakeString("env:" + args[0].Str()), nil
	}
	yes := func([]types.Value) (types.Value, error) { return types.MakeBool(true), nil }
	funcs["env"] = str
	for _, name := range []string{"visited", "context_ratio", "event_count", "token_count"} {
		funcs[name] = yes
	}
	return funcs
}

// sample returns a value of type t.
func sample(t *types.Type) types.Value {
	if t == nil {
		return types.MakeString("ok")
	}
	switch t.Kind() {
	case types.KindString, types.KindJSON:
		return types.MakeString("x")
	case types.KindInt:
		return types.MakeInt(1)
	case types.KindFloat:
		return types.MakeFloat(1.5)
	case types.KindBool:
		return types.MakeBool(true)
	case types.KindDuration:
		return types.MakeDuration(time.Second)
	case types.KindEnum:
		return types.MakeString(t.Literals()[0])
	case types.KindOptional:
		return sample(t.Elem())
	case types.KindList, types.KindMessages:
		return types.MakeList([]types.Value{sample(t.Elem())})
	case types.KindMap:
		m, _ := types.MakeMap([]string{"k"}, []types.Value{sample(t.Elem())})
		return m
	case types.KindRecord:
		vals := make([]types.Value, t.NumFields())
		for i := range vals {
			vals[i] = sample(t.Field(i).Type)
		}
		r, _ := types.MakeRecord(t.Shape(), vals)
		return r
	}
	return types.Value{}
}

type stillClock struct{}

func (stillClock) Now() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) }
func (stillClock) AfterFunc(time.Duration, func()) func() bool {
	return func() bool { return true }
}

// instantClock fires every timer at once: backoffs do not wait (and the
// graphs that use it have no timeouts).
type instantClock struct{ stillClock }

func (instantClock) AfterFunc(_ time.Duration, f func()) func() bool {
	go f()
	return func() bool { return false }
}

type fixedEntropy struct{}

func (fixedEntropy) Uint64() uint64 { return 42 }

func TestExamplesRunOnTheVM(t *testing.T) {
	host := vm.HostFunc(func(_ context.Context, req vm.CallRequest) (types.Value, error) {
		return sample(req.Result), nil
	})
	for _, root := range exampleRoots(t) {
		prog, _, _ := compileFiles(t, repoFS, root)
		m, err := vm.New(prog, stubFuncs())
		if err != nil {
			t.Fatalf("%s: %v", root, err)
		}
		for gi := range prog.Graphs {
			g := &prog.Graphs[gi]
			var input types.Value
			if g.Input != bytecode.None {
				input = sample(prog.Types[prog.States[g.State].Fields[g.Input].Type])
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			res, err := m.Run(ctx, gi, vm.Options{
				RunID: "run_test", Input: input, Host: host, Clock: stillClock{}, Entropy: fixedEntropy{},
			})
			cancel()
			if err != nil {
				t.Errorf("%s: graph %s: %v", root, g.Name, err)
				continue
			}
			if res.Status != vm.StatusCompleted && res.Status != vm.StatusInterrupted {
				t.Errorf("%s: graph %s: status %s", root, g.Name, res.Status)
			}
		}
		for ti := range prog.Tools {
			tool := &prog.Tools[ti]
			in := sample(prog.Types[tool.Input])
			var chunks []uint32
			switch tool.Impl.Kind {
			case bytecode.ImplHTTP:
				chunks = append(chunks, tool.Impl.URL)
				for _, h := range tool.Impl.Headers {
					if h.Kind == bytecode.AttrCode {
						chunks = append(chunks, h.Code)
					}
				}
			case bytecode.ImplExec:
				chunks = append(chunks, tool.Impl.Argv...)
			}
			for _, ci := range chunks {
				v, err := m.Eval(context.Background(), int(ci), nil, in)
				if err != nil || v.Kind() != types.ValString {
					t.Errorf("%s: tool %s: chunk %s = %v, %v", root, tool.Name, prog.Chunks[ci].Name, v, err)
				}
			}
		}
	}
}

// TestCompositionsRun runs the graphs agents are lowered to against a host
// that records every call: a chain hands each answer to the next member, a
// cycle stops when `until` holds (and re-prompts its first member with the
// last answer), a parallel agent answers with a map by member name.
func TestCompositionsRun(t *testing.T) {
	prog, ds := compileSource(t, `
model m { provider = openai, name = "x" }
agent a llm { model = m }
agent b llm { model = m }
agent c llm { model = m }
agent pipe  chain    { agents = [a, b, c] }
agent loop  cycle    { agents = [a, b], max = 3, until = output == "DONE" and iteration >= 2 }
agent panel parallel { agents = [a, c] }
`)
	if prog == nil {
		t.Fatal(ds)
	}
	m, err := vm.New(prog, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, answer func(callee, prompt string) string) (*vm.Result, []string) {
		t.Helper()
		var calls []string
		host := vm.HostFunc(func(_ context.Context, req vm.CallRequest) (types.Value, error) {
			callee := prog.Agents[req.Callee].Name
			prompt := req.Args[0].Value.Str()
			calls = append(calls, req.Node+"("+prompt+")")
			return types.MakeString(answer(callee, prompt)), nil
		})
		gi, ok := m.Graph(name)
		if !ok {
			t.Fatalf("no graph %s", name)
		}
		res, err := m.Run(context.Background(), gi, vm.Options{RunID: "r", Input: types.MakeString("go"), Host: host})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res, calls
	}
	echo := func(callee, prompt string) string { return callee + "<" + prompt + ">" }

	res, calls := run("pipe", echo)
	if got, want := res.Output.Str(), "c<b<a<go>>>"; got != want {
		t.Errorf("chain output %q, want %q (calls %v)", got, want, calls)
	}

	res, calls = run("loop", func(callee, prompt string) string {
		if callee == "b" {
			return "DONE"
		}
		return echo(callee, prompt)
	})
	want := []string{"loop/a(go)", "loop/b(a<go>)", "loop/a(DONE)", "loop/b(a<DONE>)"}
	if res.Output.Str() != "DONE" || len(calls) != len(want) {
		t.Fatalf("cycle: output %q, calls %v, want %v", res.Output.Str(), calls, want)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Errorf("cycle call %d = %s, want %s", i, calls[i], want[i])
		}
	}

	res, calls = run("loop", echo) // never DONE: stops after max rounds
	if len(calls) != 6 || res.Status != vm.StatusCompleted {
		t.Errorf("cycle without until: %s after %v", res.Status, calls)
	}

	res, _ = run("panel", echo)
	for _, k := range []string{"a", "c"} {
		if v, ok := res.Output.MapGet(k); !ok || v.Str() != k+"<go>" {
			t.Errorf("parallel answer of %s = %v", k, v)
		}
	}
}

// TestLoweredSemantics runs small graphs that exercise one lowering rule
// each on the VM.
func TestLoweredSemantics(t *testing.T) {
	prog, ds := compileSource(t, `
tool flaky { input { id: string } output string run = builtin.http_fetch effect = read_only }
tool double { input { n: int } output int run = builtin.http_fetch effect = read_only }

state S {
  q      : string
  body   : string = ""
  f      : float = 0
  xs     : list<int> = [] reduce append
  ok     : bool = false
  n      : int = 0 reduce sum
  failure: error?
}

graph caught(S) input q output body {
  node get      = tool flaky { id = q } retry 1 catch -> fallback into body
  node fallback = set { body = "failed: {error.message}", failure = error }
  start -> get
  get -> end
  fallback -> end
}

graph mapped(S) input q {
  node each = map k in [1, 2, 3] concurrency 2 { tool double { n = k * 10 } } into xs
  node conv = set { f = 2, ok = q not in ["a", "b"] and len(xs) == 3 or false }
  start -> each
  each -> conv
  conv -> end
}

graph bounded(S) input q {
  node tick = set { n = 1 }
  start -> tick
  tick -> tick when n < 10 max 2
  tick -> end otherwise
}
`)
	if prog == nil {
		t.Fatal(ds)
	}
	m, err := vm.New(prog, nil)
	if err != nil {
		t.Fatal(err)
	}
	field := func(res *vm.Result, gi int, name string) types.Value {
		for i, f := range prog.States[prog.Graphs[gi].State].Fields {
			if f.Name == name {
				return res.State[i]
			}
		}
		t.Fatalf("no field %s", name)
		return types.Value{}
	}
	run := func(name string, host vm.Host) (*vm.Result, int, error) {
		gi, _ := m.Graph(name)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := m.Run(ctx, gi, vm.Options{RunID: "r", Input: types.MakeString("c"), Host: host,
			Clock: instantClock{}, Entropy: fixedEntropy{}})
		return res, gi, err
	}

	attempts := 0
	res, gi, err := run("caught", vm.HostFunc(func(context.Context, vm.CallRequest) (types.Value, error) {
		attempts++
		return types.Value{}, &vm.Error{Kind: vm.KindToolError, Message: "boom"}
	}))
	if err != nil || res.Output.Str() != "failed: boom" || attempts != 2 {
		t.Errorf("catch: %v, output %v after %d attempts", err, res.Output, attempts)
	}
	if f := field(res, gi, "failure"); f.Kind() != types.ValRecord {
		t.Errorf("catch: failure = %v", f)
	}

	res, gi, err = run("mapped", vm.HostFunc(func(_ context.Context, req vm.CallRequest) (types.Value, error) {
		return types.MakeInt(req.Args[0].Value.Int() * 2), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if xs := field(res, gi, "xs"); xs.Len() != 3 || xs.Elem(0).Int() != 20 || xs.Elem(2).Int() != 60 {
		t.Errorf("map: xs = %v", xs)
	}
	if f := field(res, gi, "f"); f.Kind() != types.ValFloat || f.Float() != 2 {
		t.Errorf("CONV: f = %v (%s)", f, f.Kind())
	}
	if ok := field(res, gi, "ok"); !ok.Bool() {
		t.Errorf("not in / and / or: ok = %v", ok)
	}

	res, _, err = run("bounded", nil)
	var ve *vm.Error
	if res == nil || res.Status != vm.StatusFailed || !errors.As(err, &ve) || ve.Kind != vm.KindLoopLimit {
		t.Errorf("max without else: %v, %v", res, err)
	}
}

// TestLoweringDiagnostics: what only lowering can reject is reported as a
// diagnostic, never a panic or an invalid program.
func TestLoweringDiagnostics(t *testing.T) {
	for _, tc := range []struct{ name, src, code string }{
		{"computed answer", `
state S { q: string, ok: bool? }
graph g(S) input q {
  node ask = interrupt "ok?" returns bool into ok
  start -> ask
  ask -> end
}
test "t" {
  run = g
  answer ask = 1 == 1
  expect ok == true
}`, "T313"},
		{"computed argv", `
tool t { input { argv: list<string> } run = exec { command = input.argv } }`, "T313"},
		{"agent named end", `
model m { provider = openai, name = "x" }
agent end llm { model = m }`, "N206"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prog, ds := compileSource(t, tc.src)
			if prog != nil {
				t.Fatalf("compiled; diagnostics %v", ds)
			}
			found := false
			for _, d := range ds {
				found = found || string(d.Code) == tc.code
			}
			if !found {
				t.Errorf("diagnostics %v, want %s", ds, tc.code)
			}
		})
	}
}

// TestSpecBlocksCompile compiles every valid ```agent block of spec/*.md and
// loads it into the VM.
func TestSpecBlocksCompile(t *testing.T) {
	files, err := filepath.Glob("../spec/*.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var block strings.Builder
		in, start := false, 0
		for i, line := range strings.Split(string(text), "\n") {
			switch {
			case !in && strings.TrimSpace(line) == "```agent":
				in, start = true, i+1
				block.Reset()
			case in && strings.TrimSpace(line) == "```":
				in = false
				n++
				prog, ds := compileSource(t, block.String())
				if prog == nil {
					t.Errorf("%s:%d: %v", f, start, ds)
					continue
				}
				if _, err := vm.New(prog, stubFuncs()); err != nil {
					t.Errorf("%s:%d: %v", f, start, err)
				}
			case in:
				block.WriteString(line + "\n")
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d spec blocks compiled", n)
	}
}

// TestCatchIntoJoin: a catch route into a join makes its source a
// predecessor, so a failure that is caught arrives like a completion.
func TestCatchIntoJoin(t *testing.T) {
	prog, ds := compileSource(t, `
tool t { input { id: string } output string run = builtin.http_fetch effect = read_only }
state S { q: string, a: string = "", b: string = "", done: bool = false }
graph g(S) input q {
  node a    = tool t { id = q } catch -> both into a
  node b    = tool t { id = q } into b
  node both = join all
  node fin  = set { done = true }
  start -> a
  start -> b
  a -> both
  b -> both
  both -> fin
  fin -> end
}`)
	if prog == nil {
		t.Fatal(ds)
	}
	m, err := vm.New(prog, nil)
	if err != nil {
		t.Fatal(err)
	}
	host := vm.HostFunc(func(_ context.Context, req vm.CallRequest) (types.Value, error) {
		if req.Node == "g/a" {
			return types.Value{}, &vm.Error{Kind: vm.KindToolError, Message: "down"}
		}
		return types.MakeString("ok"), nil
	})
	res, err := m.Run(context.Background(), 0, vm.Options{RunID: "r", Input: types.MakeString("x"), Host: host})
	if err != nil || res.Status != vm.StatusCompleted || !res.State[3].Bool() {
		t.Errorf("status %v, err %v, state %v", res.Status, err, res.State)
	}
}

// The compiler cannot import vm; the hidden field's name must still agree.
func TestErrorFieldName(t *testing.T) {
	if errorField != vm.ErrorField {
		t.Errorf("compiler writes %q, the VM reads %q", errorField, vm.ErrorField)
	}
}
