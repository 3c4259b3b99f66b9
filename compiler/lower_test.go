package compiler

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
	"github.com/agentc/agentc/stdlib"
)

// Lowering tests: every example that is a program root compiles, verifies,
// round-trips through the encoding, and compiles to the same bytes however
// its files are listed; conditions decompile to their source text; the
// bytecode picture of every graph equals the checked graph's. The disasm
// goldens are in lower_golden_test.go, the VM's acceptance in
// lower_vm_test.go.

// repoFS is the repository, the module root the examples are loaded from.
var repoFS = os.DirFS("..")

// exampleRoots lists every examples/**/*.agent file that is a program root:
// one with a workflow header or a graph.
func exampleRoots(t testing.TB) []string {
	t.Helper()
	var roots []string
	err := fs.WalkDir(repoFS, "examples", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".agent") {
			return err
		}
		src, err := fs.ReadFile(repoFS, p)
		if err != nil {
			return err
		}
		f, _ := syntax.Parse(p, src)
		for _, d := range f.Decls {
			switch d.(type) {
			case *syntax.Workflow, *syntax.Graph:
				roots = append(roots, p)
				return nil
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(roots) < 6 {
		t.Fatalf("found %d example roots: %v", len(roots), roots)
	}
	return roots
}

// compileFiles loads and compiles roots from fsys, failing on any error.
func compileFiles(t testing.TB, fsys fs.FS, roots ...string) (*bytecode.Program, *Info, []byte) {
	t.Helper()
	cfg := Config{FS: fsys, Universe: stdlib.Universe()}
	pkg, ds := Load(cfg, roots...)
	if n, _ := diag.CountErrors(ds); n > 0 {
		t.Fatalf("%v: load: %v", roots, ds)
	}
	prog, out, ds := Compile(cfg, pkg)
	if n, _ := diag.CountErrors(ds); n > 0 || prog == nil {
		t.Fatalf("%v: compile: %v", roots, ds)
	}
	info := out.Info
	b, err := bytecode.Encode(prog)
	if err != nil {
		t.Fatalf("%v: encode: %v", roots, err)
	}
	if !bytes.Equal(out.Bytes, b) || out.Hash != prog.Hash || out.Hash != bytecode.HashOf(b) {
		t.Fatalf("%v: Compile's bytes or hash differ from the program's encoding", roots)
	}
	return prog, info, b
}

func TestCompileExamples(t *testing.T) {
	for _, root := range exampleRoots(t) {
		t.Run(root, func(t *testing.T) {
			prog, _, b := compileFiles(t, repoFS, root)
			if err := bytecode.Verify(prog); err != nil {
				t.Fatalf("verify: %v", err)
			}
			dec, err := bytecode.Decode(b)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if err := bytecode.Verify(dec); err != nil {
				t.Fatalf("verify decoded: %v", err)
			}
			again, err := bytecode.Encode(dec)
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("decode/encode does not round-trip (err %v)", err)
			}
			if dec.Hash != prog.Hash {
				t.Errorf("hash %x after decoding, %x compiled", dec.Hash, prog.Hash)
			}
		})
	}
}

// TestCompileIsDeterministic compiles each example twice, and each example
// folder's roots in both orders, and compares the bytes.
func TestCompileIsDeterministic(t *testing.T) {
	byDir := map[string][]string{}
	for _, root := range exampleRoots(t) {
		_, _, b1 := compileFiles(t, repoFS, root)
		_, _, b2 := compileFiles(t, repoFS, root)
		if !bytes.Equal(b1, b2) {
			t.Errorf("%s: two compilations differ", root)
		}
		byDir[path.Dir(root)] = append(byDir[path.Dir(root)], root)
	}
	multi := 0
	for dir, roots := range byDir {
		if len(roots) < 2 {
			continue
		}
		multi++
		_, _, fwd := compileFiles(t, repoFS, roots...)
		rev := slices.Clone(roots)
		slices.Reverse(rev)
		_, _, back := compileFiles(t, repoFS, rev...)
		if !bytes.Equal(fwd, back) {
			t.Errorf("%s: roots %v and %v compile differently", dir, roots, rev)
		}
	}
	if multi == 0 {
		t.Error("no example folder has two roots; the order test tested nothing")
	}
}

// TestConditionsDecompile proves the lowering of conditions: every edge
// condition's code decompiles (bytecode.ExprSource) to the canonical text of
// its source (ExprText).
func TestConditionsDecompile(t *testing.T) {
	n := 0
	for _, root := range exampleRoots(t) {
		prog, info, _ := compileFiles(t, repoFS, root)
		for gi, g := range info.Graphs {
			bg := &prog.Graphs[gi]
			for _, node := range g.Nodes {
				k := 0
				for _, e := range node.Out {
					if e.Kind != EdgeWhen && e.Kind != EdgeAlways && e.Kind != EdgeOtherwise {
						continue
					}
					be := bg.Nodes[node.Index].Edges[k]
					k++
					if e.Kind != EdgeWhen {
						continue
					}
					got, err := bytecode.ExprSource(prog, int(be.Cond))
					if err != nil {
						t.Errorf("%s: %s -> %s: %v", root, node.Name, e.To.Name, err)
						continue
					}
					if want := ExprText(e.When); got != want {
						t.Errorf("%s: %s -> %s: decompiles to %q, source %q", root, node.Name, e.To.Name, got, want)
					}
					n++
				}
			}
		}
	}
	if n < 8 {
		t.Errorf("only %d conditions checked", n)
	}
}

// TestPicturesAgree: the picture drawn from bytecode equals the picture
// drawn from the checked graph, byte for byte, in both formats.
func TestPicturesAgree(t *testing.T) {
	for _, root := range exampleRoots(t) {
		prog, info, _ := compileFiles(t, repoFS, root)
		for gi, g := range info.Graphs {
			for _, f := range []bytecode.PictureFormat{bytecode.Mermaid, bytecode.DOT} {
				want, err := Picture(g, f)
				if err != nil {
					t.Fatal(err)
				}
				got, err := bytecode.Picture(prog, gi, f)
				if err != nil {
					t.Fatalf("%s: graph %s: %v", root, g.Name(), err)
				}
				if got != want {
					t.Errorf("%s: graph %s (%s): bytecode picture\n%s\nchecked picture\n%s", root, g.Name(), f, got, want)
				}
			}
		}
	}
}

// compileSource compiles one in-memory file.
// reloaded encodes p and decodes it back, verified; the decoded program
// must encode to the same bytes.
func reloaded(t testing.TB, p *bytecode.Program) *bytecode.Program {
	t.Helper()
	b, err := bytecode.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := bytecode.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := bytecode.Verify(back); err != nil {
		t.Fatal(err)
	}
	if again, err := bytecode.Encode(back); err != nil || !bytes.Equal(again, b) {
		t.Fatalf("decode/encode does not round-trip (err %v)", err)
	}
	return back
}

func compileSource(t testing.TB, src string) (*bytecode.Program, []diag.Diagnostic) {
	t.Helper()
	cfg := Config{FS: fstest.MapFS{"main.agent": {Data: []byte(src)}}, Universe: stdlib.Universe()}
	pkg, ds := Load(cfg, "main.agent")
	if n, _ := diag.CountErrors(ds); n > 0 {
		return nil, ds
	}
	prog, _, ds := Compile(cfg, pkg)
	return prog, ds
}
