package compiler

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/vm"
)

// Regression tests for the compiler bugs of issue 18 (found by writing
// workflows from the spec): each source gives exactly the diagnostics
// listed, as "CODE substring", in order.
func TestIssue18Regressions(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{
			name: "set node writes count for definite assignment",
			src: `state S { q: string, a: string, out: string = "" }
graph g(S) input q output out {
  node wa  = set { a = "A" }
  node use = set { out = a }
  start -> wa
  wa -> use
  use -> end
}
`,
		},
		{
			name: "a set node that writes null does not assign",
			src: `state S { q: string, a: string?, out: string = "" }
graph g(S) input q output out {
  node wa  = set { a = null }
  node use = set { out = a.x }
  start -> wa
  wa -> use
  use -> end
}
`,
			want: []string{"T306 a is optional and may be unset"},
		},
		{
			name: "catch on a set node",
			src: `state S { q: string, xs: list<string> = [], out: string = "", failure: error? }
graph g(S) input q output out {
  node pick     = set { out = xs[3] } catch -> fallback
  node fallback = set { out = "none: {error.message}", failure = error }
  start -> pick
  pick -> end
  fallback -> end
}
`,
		},
		{
			name: "catch on an interrupt: P511 without follow-on errors",
			src: `state S { q: string, out: string = "", failure: error? }
graph g(S) input q output out {
  node ask      = interrupt "ok?" returns string into out catch -> fallback
  node fallback = set { out = "none: {error.message}", failure = error }
  start -> ask
  ask -> end
  fallback -> end
}
`,
			want: []string{"P511 catch is not allowed on an interrupt node"},
		},
		{
			name: "G407 sees a parenthesised copy of a condition",
			src: `state S { q: string, ok: bool = false, out: string = "" }
graph g(S) input q output out {
  node a = set { out = "a" }
  node b = set { out = "b" }
  node c = set { out = "c" }
  node d = set { out = "d" }
  start -> a when q == "x"
  start -> b when (q == "x")
  start -> c when (q == "y" or ok) and q != "z"
  start -> d when q == "y" or ok and q != "z"
  start -> end otherwise
  a -> end
  b -> end
  c -> end
  d -> end
}
`,
			want: []string{"G407 condition (q == \"x\") repeats an earlier edge of start"},
		},
		{
			name: "no G402 after a misspelled edge target",
			src: `state S { q: string, out: string = "" }
graph g(S) input q output out {
  node a = set { out = "a" }
  start -> a
  a -> ennd
}
`,
			want: []string{"N201 graph g has no node ennd"},
		},
		{
			name: "no G401 or G405 after misspelled edge ends",
			src: `state S { q: string, out: string = "" }
graph g(S) input q output out {
  node a = set { out = "a" }
  node b = set { out = "b" }
  start -> a
  a -> bb when q == "y"
  a -> end otherwise
  bx -> b
  b -> end
}
`,
			want: []string{"N201 graph g has no node bb", "N201 graph g has no node bx"},
		},
		{
			name: "no G405 after an edge into start",
			src: `state S { q: string, out: string = "" }
graph g(S) input q output out {
  node a = set { out = "a" }
  node b = set { out = "b" }
  start -> a
  a -> start when q == "y"
  a -> b otherwise
  b -> end
}
`,
			want: []string{"G408 no edge may lead into start"},
		},
		{
			name: "no G402 after an edge into start",
			src: `state S { q: string, out: string = "" }
graph g(S) input q output out {
  node a = set { out = "a" }
  start -> a
  a -> start
}
`,
			want: []string{"G408 no edge may lead into start"},
		},
		{
			name: "a repeated edge is not two branches (no G409 from start and start)",
			src: `state S { q: string, out: string = "" }
graph g(S) input q output out {
  node a = set { out = "a" }
  start -> a
  start -> a
  a -> end
}
`,
			want: []string{"G407 edge start -> a is declared twice"},
		},
		{
			name: "no T313 after a repeated record key",
			src: `state S { q: string, out: string = "", r: json = { x: 1, x: 2 } }
graph g(S) input q output out {
  node a = set { out = "a" }
  start -> a
  a -> end
}
`,
			want: []string{"N202 key x is repeated"},
		},
		{
			name: "one error for a non-ASCII name, however often it is used",
			src: `state S { q: string, out: string = "" }
graph g(S) input q output out {
  node résumé = set { out = "a" }
  start -> résumé
  résumé -> end
}
`,
			want: []string{`S101 name "résumé" is not ASCII`},
		},
		{
			name: "one error for an unclosed interpolation, naming it",
			src: `state S { q: string, out: string = "" }
graph g(S) input q output out {
  node n = set { out = "hello {q" }
  start -> n
  n -> end
}
`,
			want: []string{"S105 interpolation is not closed before the end of the string"},
		},
		{
			name: "articles agree with the word they stand before",
			src: `model m { provider = openai, name = "x" }
agent helper llm { model = m }
state S { q: string, out: string = "" }
graph g(S) input q output out {
  node n = tool helper { q = q }
  start -> n
  n -> end
}
test "t" {
  run = g
  answer n = "x"
}
`,
			want: []string{"N210 helper is an llm agent, not a tool", "N210 node n is a tool node, not an interrupt"},
		},
		{
			name: "a real G402 is still reported",
			src: `state S { q: string, out: string = "" }
graph g(S) input q output out {
  node a = set { out = "a" }
  node b = set { out = "b" }
  start -> a when q == "a"
  start -> b otherwise
  a -> ennd
}
`,
			want: []string{"G402 node b has no out-edges", "N201 graph g has no node ennd"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, ds := checkFile(fstest.MapFS{"main.agent": {Data: []byte(tc.src)}}, "main.agent")
			var got []string
			for _, d := range ds {
				got = append(got, string(d.Code)+" "+d.Summary)
			}
			ok := len(got) == len(tc.want)
			for i := 0; ok && i < len(got); i++ {
				ok = strings.HasPrefix(got[i], strings.SplitN(tc.want[i], " ", 2)[0]+" ") && strings.Contains(got[i], strings.SplitN(tc.want[i], " ", 2)[1])
			}
			if !ok {
				t.Errorf("diagnostics:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

// TestCatchOnSetRuns: a set node's evaluation failure goes to its catch
// target, which reads it as error.
func TestCatchOnSetRuns(t *testing.T) {
	prog, ds := compileSource(t, `
state S { q: string, xs: list<string> = [], out: string = "", failure: error? }
graph g(S) input q output out {
  node pick     = set { out = xs[3] } catch -> fallback
  node fallback = set { out = "none: {error.kind}", failure = error }
  start -> pick
  pick -> end
  fallback -> end
}
`)
	if prog == nil {
		t.Fatal(ds)
	}
	m, err := vm.New(prog, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := m.Run(ctx, 0, vm.Options{RunID: "r", Input: types.MakeString("c"), Clock: instantClock{}, Entropy: fixedEntropy{}})
	if err != nil || res.Output.Str() != "none: eval" {
		t.Fatalf("run: %v, output %v", err, res)
	}
}

// runOutput compiles src and runs its graph g with input "c", returning the
// output as text.
func runOutput(t *testing.T, src string) string {
	t.Helper()
	prog, ds := compileSource(t, src)
	if prog == nil {
		t.Fatal(ds)
	}
	m, err := vm.New(prog, nil)
	if err != nil {
		t.Fatal(err)
	}
	gi, _ := m.Graph("g")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := m.Run(ctx, gi, vm.Options{RunID: "r", Input: types.MakeString("c"), Clock: instantClock{}, Entropy: fixedEntropy{}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res.Output.Str()
}

// TestMergeOfARecordLiteral: a record literal written to a merge field
// writes the fields it names; the others keep their values (they were reset
// to their defaults). A first write to an unassigned field is whole.
func TestMergeOfARecordLiteral(t *testing.T) {
	got := runOutput(t, `
type Cfg { a: string = "da", b: string = "db", n: int = 0 }
state S { q: string, c: Cfg = {} reduce merge, d: Cfg reduce merge, out: string = "" }
graph g(S) input q output out {
  node w1   = set { c = { a: "A1", b: "B1", n: 1 }, d = { b: "B1" } }
  node w2   = set { c = { b: "B2" }, d = { n: 2 } }
  node show = set { out = "{c.a} {c.b} {c.n} / {d.a} {d.b} {d.n}" }
  start -> w1
  w1 -> w2
  w2 -> show
  show -> end
}
`)
	if want := "A1 B2 1 / da B1 2"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

// TestKeysAreSorted: keys() gives sorted names for maps and records alike
// (spec §4.6); a record literal's fields came back in source order.
func TestKeysAreSorted(t *testing.T) {
	got := runOutput(t, `
type R { z: int = 0, a: int = 0 }
state S { q: string, m: map<int> = {}, r: R = {}, out: string = "" }
graph g(S) input q output out {
  node w    = set { m = { y: 1, b: 2 } }
  node show = set { out = "{keys({z: 1, a: 2})} {keys(m)} {keys(r)}" }
  start -> w
  w -> show
  show -> end
}
`)
	if want := `["a","z"] ["b","y"] ["a","z"]`; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}

// TestFixtureStaysInItsFolder: a test's fixture path may not leave the
// folder of the file that names it, even inside the module root (P503).
func TestFixtureStaysInItsFolder(t *testing.T) {
	src := `workflow w
model m { provider = openai, name = "x" }
agent a llm { model = m }
test "outside" {
  run = a
  model m replay "../shared.yaml"
}
test "inside" {
  run = a
  model m replay "fixtures/m.yaml"
}
`
	fsys := fstest.MapFS{
		"w/main.agent":      {Data: []byte(src)},
		"shared.yaml":       {Data: []byte("version: 1\n")},
		"w/fixtures/m.yaml": {Data: []byte("version: 1\n")},
	}
	_, _, ds := checkFile(fsys, "w/main.agent")
	var got []string
	for _, d := range ds {
		got = append(got, string(d.Code)+" "+d.Summary)
	}
	if len(got) != 1 || got[0] != `P503 fixture "../shared.yaml": path leaves the folder of w/main.agent` {
		t.Errorf("diagnostics: %q", got)
	}
}
