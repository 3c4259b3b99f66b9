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

// PictureOf is the drawing Picture renders: a renderer of its own (the
// browser inspector) gets the same nodes, shapes and edges.
func TestPictureOf(t *testing.T) {
	p := supportProgram(t)
	pg, err := PictureOf(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string]string{}
	for _, n := range pg.Nodes {
		shapes[n.Name] = n.Shape.String()
	}
	want := map[string]string{"start": "terminal", "end": "terminal", "triage": "box", "scan": "map", "approve": "interrupt", "fallback": "box"}
	for k, v := range want {
		if shapes[k] != v {
			t.Errorf("%s is drawn as %q, want %q", k, shapes[k], v)
		}
	}
	if got := ShapeJoin.String(); got != "join" {
		t.Errorf("ShapeJoin = %q", got)
	}
	dot, _ := Picture(p, 0, DOT)
	if again, _ := pg.Render(DOT); again != dot {
		t.Error("PictureOf rendered differs from Picture")
	}
	if _, err := PictureOf(p, 99); err == nil {
		t.Error("graph 99 drawn")
	}
}
