package bytecode

import (
	"os"

	"github.com/agentc/agentc/compiler/types"
	"strings"
	"testing"
)

func TestExprSourceOfConditions(t *testing.T) {
	p := supportProgram(t)
	var conds []string
	for _, g := range p.Graphs {
		for _, n := range g.Nodes {
			for _, e := range n.Edges {
				if e.Kind != EdgeWhen {
					continue
				}
				src, err := ExprSource(p, int(e.Cond))
				if err != nil {
					t.Fatalf("%s: %v", n.Name, err)
				}
				conds = append(conds, src)
			}
		}
	}
	want := []string{`triage.verdict == "certificate"`, `decision.approved`}
	if strings.Join(conds, "|") != strings.Join(want, "|") {
		t.Errorf("conditions = %q, want %q", conds, want)
	}
}

func TestExprSourceShapes(t *testing.T) {
	pb := NewProgramBuilder()
	c := pb.NewChunk("e", None, 1)
	// not (a or b and c) == (1 + 2 * 3 > 4)  where a, b, c are constants
	b2, c2 := c.NewLabel(), c.NewLabel()
	c.Const(types.MakeBool(true))
	c.Emit(DUP, 0)
	c.Jump(JMPIFTRUE, b2)
	c.Emit(POP, 0)
	c.Const(types.MakeBool(false))
	c.Emit(DUP, 0)
	c.Jump(JMPIFFALSE, c2)
	c.Emit(POP, 0)
	c.Emit(LOADLOCAL, 0)
	c.Bind(c2)
	c.Bind(b2)
	c.Emit(NOT, 0)
	c.Emit(RETURN, 0)
	ci, err := c.Finish()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ExprSource(pb.Program(), int(ci), "x")
	if err != nil {
		t.Fatal(err)
	}
	if want := "not (true or false and x)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestPictureGolden(t *testing.T) {
	p := supportProgram(t)
	for _, f := range []PictureFormat{Mermaid, DOT} {
		got, err := Picture(p, 0, f)
		if err != nil {
			t.Fatal(err)
		}
		path := "testdata/support." + map[PictureFormat]string{Mermaid: "mmd", DOT: "dot"}[f]
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s is stale (go test ./compiler/bytecode -update):\n%s", path, got)
		}
	}
	if _, err := Picture(p, 0, "svg"); err == nil {
		t.Error("unknown format accepted")
	}
}
