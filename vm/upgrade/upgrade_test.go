package upgrade_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/internal/upgradetest"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/vm"
	"github.com/agentc/agentc/vm/upgrade"
)

// support compiles the support example with variant v applied ("" none).
func support(t *testing.T, v string) *bytecode.Program {
	t.Helper()
	p, _ := upgradetest.Program(t, "../../examples", v)
	return p
}

func codes(r *upgrade.Report) []string {
	var out []string
	for _, i := range r.Issues {
		if i.Severity == diag.Error {
			out = append(out, string(i.Code))
		}
	}
	return out
}

// TestSupportVariants: Check over the support example and each edit of it.
func TestSupportVariants(t *testing.T) {
	old := support(t, "")
	if r := upgrade.Check(old, old); !r.Compatible() || len(r.Issues) != 0 {
		t.Fatalf("a program against itself: %v", r.Issues)
	}
	for _, v := range upgradetest.Variants {
		t.Run(v.Name, func(t *testing.T) {
			r := upgrade.Check(old, support(t, v.Name))
			if r.Compatible() != v.Compatible {
				t.Fatalf("Compatible = %v, want %v: %v", r.Compatible(), v.Compatible, r.Issues)
			}
			if v.Compatible {
				return
			}
			i := slices.IndexFunc(r.Issues, func(i upgrade.Issue) bool { return string(i.Code) == v.Code })
			if i < 0 {
				t.Fatalf("no %s in %v", v.Code, codes(r))
			}
			is := r.Issues[i]
			if !is.Old.IsValid() || !is.New.IsValid() || is.Old.File != "support/support.agent" {
				t.Errorf("%s lacks a position in both versions: %s", v.Code, is)
			}
			if !strings.Contains(r.Error(), "approve") {
				t.Errorf("the refusal does not name approve: %s", r.Error())
			}
		})
	}
}

const base = `workflow w
state S {
  n: int = 0
  note: string = ""
  ok: bool?
}
graph g(S) output note {
  node bump = set { n = n + 1 }
  node ask  = interrupt "ok {note}?" returns bool into ok
  node fin  = set { note = "done {n}" }
  start -> bump
  bump  -> ask
  ask   -> fin  when ok
  ask   -> bump otherwise max 3 else -> fin
  fin   -> end
}
`

// waiting runs base until it waits at ask for the second time and returns
// its checkpoint chain.
func waiting(t *testing.T, p *bytecode.Program) []vm.StepRecord {
	t.Helper()
	m, err := vm.New(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := vm.NewMemStore()
	ctx := context.Background()
	res, err := m.Run(ctx, 0, vm.Options{RunID: "r", Checkpointer: st})
	if err != nil || res.Status != vm.StatusInterrupted {
		t.Fatalf("run: %v %v", res, err)
	}
	res, err = m.Resume(ctx, 0, vm.ResumeInput{Chain: st.Chain("r"), Answers: map[string]types.Value{"g/ask": types.MakeBool(false)}},
		vm.Options{Checkpointer: st})
	if err != nil || res.Status != vm.StatusInterrupted {
		t.Fatalf("resume: %v %v", res, err)
	}
	return st.Chain("r")
}

// TestPlanMovesARun: a run waiting at ask after one loop moves to a program
// that reorders fields and nodes and adds a defaulted field; it finishes
// there with the state it would have had, the loop count carried.
func TestPlanMovesARun(t *testing.T) {
	old := runtimetest.CompileSource(t, "w.agent", base)
	edited := strings.NewReplacer(
		"  n: int = 0\n  note: string = \"\"\n", "  extra: list<string> = [\"x\"]\n  note: string = \"\"\n  n: int = 0\n",
		"node fin  = set { note = \"done {n}\" }", "node fin  = set { note = \"finished {n} {extra}\" }",
	).Replace(base)
	edited = strings.Replace(edited, "  node bump = set { n = n + 1 }\n", "", 1)
	edited = strings.Replace(edited, "  node fin ", "  node bump = set { n = n + 1 }\n  node fin ", 1)
	nw := runtimetest.CompileSource(t, "w.agent", edited)
	chain := waiting(t, old)
	rec, rep := upgrade.Plan(old, nw, "g", chain, 0)
	if rec == nil {
		t.Fatalf("refused: %v", rep.Issues)
	}
	m, err := vm.New(nw, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := vm.NewMemStore()
	ctx := context.Background()
	// The loop bound (3) counts the traversal before the move: the third
	// refusal after it takes the else edge.
	chain = []vm.StepRecord{*rec}
	var res *vm.Result
	for i := range 3 {
		res, err = m.Resume(ctx, 0, vm.ResumeInput{Chain: chain, Answers: map[string]types.Value{"g/ask": types.MakeBool(false)}},
			vm.Options{Checkpointer: st})
		want := vm.StatusInterrupted
		if i == 2 {
			want = vm.StatusCompleted
		}
		if err != nil || res.Status != want {
			t.Fatalf("resume %d on the new program: %v %v, want %s", i+1, res, err, want)
		}
		chain = st.Chain("r")
	}
	if got := res.Output.Str(); got != `finished 4 ["x"]` {
		t.Errorf("output %q, want the third bump and the new field's default", got)
	}
}

// TestPlanUnassigned: the new program assigns a field on the way to the
// interrupt and reads it after; a run that waits there from before never
// took that way, so the field is null where the new program assumes it is
// assigned (U711).
func TestPlanUnassigned(t *testing.T) {
	src := strings.Replace(base, "  ok: bool?\n", "  ok: bool?\n  who: string\n", 1)
	old := runtimetest.CompileSource(t, "w.agent", src)
	edited := strings.NewReplacer(
		"  node fin  = set { note = \"done {n}\" }", "  node name = set { who = \"ann\" }\n  node fin  = set { note = \"done {n} by {who}\" }",
		"  bump  -> ask\n", "  bump  -> name\n  name  -> ask\n",
	).Replace(src)
	nw := runtimetest.CompileSource(t, "w.agent", edited)
	rec, rep := upgrade.Plan(old, nw, "g", waiting(t, old), 0)
	if rec != nil || !slices.Contains(codes(rep), "U711") {
		t.Fatalf("Plan = %v, codes %v, want U711", rec != nil, codes(rep))
	}
}

// TestPlanRefusals: what refuses one run, by code.
func TestPlanRefusals(t *testing.T) {
	old := runtimetest.CompileSource(t, "w.agent", base)
	chain := waiting(t, old)
	for _, tc := range []struct {
		name, from, to, code string
		pending              int
	}{
		{"field type", "  n: int = 0\n", "  n: float = 0.0\n", "U702", 0},
		{"new field without default", "  ok: bool?\n", "  ok: bool?\n  who: string\n", "U703", 0},
		{"dropped field read at the frontier", "  note: string = \"\"\n", "  label: string = \"\"\n", "U704", 0},
		{"interrupt renamed", "ask", "confirm", "U705", 0},
		{"resume type", "returns bool into ok", "returns string into answer", "U706", 0},
		{"loop counter", "  ask   -> bump otherwise max 3 else -> fin\n", "  ask   -> bump2 otherwise max 3 else -> fin\n  bump2 -> ask\n", "U707", 0},
		{"unfinished step", "", "", "U708", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := base
			if tc.from != "" {
				src = strings.ReplaceAll(base, tc.from, tc.to)
			}
			switch tc.name {
			case "dropped field read at the frontier":
				src = strings.ReplaceAll(src, "{note}", "{label}")
				src = strings.ReplaceAll(src, "output note", "output label")
				src = strings.ReplaceAll(src, "set { note =", "set { label =")
			case "loop counter":
				src = strings.Replace(src, "  node fin ", "  node bump2 = set { n = n + 2 }\n  node fin ", 1)
			case "resume type":
				src = strings.Replace(src, "  ok: bool?\n", "  ok: bool?\n  answer: string?\n", 1)
				src = strings.ReplaceAll(src, "when ok", "when answer == \"yes\"")
			}
			nw := runtimetest.CompileSource(t, "w.agent", src)
			rec, rep := upgrade.Plan(old, nw, "g", chain, tc.pending)
			if rec != nil || !slices.Contains(codes(rep), tc.code) {
				t.Fatalf("Plan = %v, codes %v, want %s refused", rec != nil, codes(rep), tc.code)
			}
		})
	}
}

// TestPlanListSize: a run holding three elements in xs does not move to a
// program that sizes xs at two (U714): the VM and the compiler's bounds
// count on the size; at three it moves.
func TestPlanListSize(t *testing.T) {
	src := strings.Replace(base, "  ok: bool?\n", "  ok: bool?\n  xs: list<int> = [1, 2, 3]\n", 1)
	old := runtimetest.CompileSource(t, "w.agent", src)
	chain := waiting(t, old)
	for _, tc := range []struct {
		max string
		ok  bool
	}{{"2", false}, {"3", true}} {
		nw := runtimetest.CompileSource(t, "w.agent", strings.Replace(src, "xs: list<int> = [1, 2, 3]", "xs: list<int> max "+tc.max+" = []", 1))
		rec, rep := upgrade.Plan(old, nw, "g", chain, 0)
		if tc.ok {
			if rec == nil {
				t.Errorf("max %s: refused: %v", tc.max, rep.Issues)
			}
			continue
		}
		if rec != nil || !slices.Contains(codes(rep), "U714") {
			t.Fatalf("max %s: Plan = %v, codes %v, want U714", tc.max, rec != nil, codes(rep))
		}
		if is := rep.Issues[0]; !strings.Contains(is.Message, "state field xs holds 3 elements in the run, past its list size of 2 in the new program") || !is.Old.IsValid() || !is.New.IsValid() {
			t.Errorf("issue %s", is)
		}
	}
}

// TestVerdict: the conclusion names both versions and says which way the
// check went.
func TestVerdict(t *testing.T) {
	ok := &upgrade.Report{}
	bad := &upgrade.Report{Issues: []upgrade.Issue{{Severity: diag.Error}}}
	if got := ok.Verdict("a.agent", "b.agent"); got != "compatible: runs waiting on a.agent can move to b.agent" {
		t.Errorf("compatible: %s", got)
	}
	if got := bad.Verdict("a.agent", "b.agent"); got != "incompatible: runs waiting on a.agent keep their program; b.agent cannot take them" {
		t.Errorf("incompatible: %s", got)
	}
}
