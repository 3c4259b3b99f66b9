package lsp

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/stdlib"
)

var update = flag.Bool("update", false, "rewrite testdata/examples.golden")

func exampleFiles(t testing.TB) (root string, files []string) {
	t.Helper()
	root = abs(t, "../..")
	files, err := filepath.Glob(filepath.Join(root, "examples", "*", "*.agent"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	slices.Sort(files)
	return root, files
}

// TestExamples opens every example as an editor would and records what the
// server says about it: diagnostics (which must be validate's), the
// outline, and the hover of every graph node, in testdata/examples.golden.
func TestExamples(t *testing.T) {
	root, files := exampleFiles(t)
	c := newClient(t, root)
	uris := map[string]string{}
	srcs := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs[f] = string(b)
		uris[f] = c.open(f, string(b))
	}
	c.sync()

	// The same findings as `agentc validate` over the same files.
	proj := project.At(root, stdlib.Universe())
	var names []string
	for _, f := range files {
		n, err := proj.Name(f)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	want := map[string][]string{}
	for _, d := range compiler.CheckRoots(proj.Config(), names...) {
		want[d.Subject.File] = append(want[d.Subject.File], fmt.Sprintf("%d:%d %s", d.Subject.Start.Line, d.Subject.Start.Col, d.Code))
	}

	var out strings.Builder
	for i, f := range files {
		rel := names[i]
		fmt.Fprintf(&out, "== %s\n", rel)
		var got []string
		for _, d := range c.diagnostics(uris[f]) {
			got = append(got, fmt.Sprintf("%d:%d %s", d.Range.Start.Line+1, d.Range.Start.Character+1, d.Code))
			fmt.Fprintf(&out, "diagnostic %d:%d %s %s\n", d.Range.Start.Line+1, d.Range.Start.Character+1, d.Code, strings.ReplaceAll(d.Message, "\n", " / "))
		}
		if !slices.Equal(got, want[rel]) {
			t.Errorf("%s: diagnostics %v, validate says %v", rel, got, want[rel])
		}
		var syms []DocumentSymbol
		c.request("textDocument/documentSymbol", documentSymbolParams{TextDocument: textDocumentIdentifier{URI: uris[f]}}, &syms)
		for _, s := range syms {
			fmt.Fprintf(&out, "symbol %s %s", s.Detail, s.Name)
			for _, ch := range s.Children {
				fmt.Fprintf(&out, " [%s:%s]", ch.Name, ch.Detail)
			}
			out.WriteString("\n")
			for _, ch := range s.Children {
				if s.Detail != "graph" {
					continue
				}
				var h *Hover
				c.request("textDocument/hover", textDocumentPositionParams{TextDocument: textDocumentIdentifier{URI: uris[f]}, Position: ch.SelectionRange.Start}, &h)
				if h == nil {
					t.Errorf("%s: no hover on node %s", rel, ch.Name)
					continue
				}
				fmt.Fprintf(&out, "hover %s.%s\n  %s\n", s.Name, ch.Name, strings.ReplaceAll(strings.TrimSpace(h.Contents.Value), "\n", "\n  "))
			}
		}
		// Attribute hovers of the model and llm agent blocks of this file.
		for _, blk := range checkedBlocks(c.serverDoc(uris[f]).info) {
			if blk.kind != "model" && blk.kind != "llm agent" {
				continue
			}
			for _, a := range blk.attrs.List {
				if a.Syn == nil || a.Syn.Key == nil || a.Syn.Key.Span().File != rel {
					continue
				}
				var h *Hover
				p := c.serverDoc(uris[f]).text.position(a.Syn.Key.Span().Start.Offset)
				c.request("textDocument/hover", textDocumentPositionParams{TextDocument: textDocumentIdentifier{URI: uris[f]}, Position: p}, &h)
				if h == nil {
					t.Errorf("%s: no hover on attribute %s", rel, a.Name)
					continue
				}
				v := strings.NewReplacer("```agent\n", "", "\n```", "", "\n\n", " / ", "\n", " ").Replace(h.Contents.Value)
				fmt.Fprintf(&out, "hover %d:%d %s\n", p.Line+1, p.Character+1, v)
			}
		}
		// Go to definition resolves every name the checker resolved in
		// this file (one request per distinct name).
		seen := map[string]bool{}
		doc := c.serverDoc(uris[f])
		for k, r := range doc.info.Refs.All() {
			sp := nameSpan(k)
			if sp.File != rel || seen[refName(r)] {
				continue
			}
			seen[refName(r)] = true
			tg := resolve(doc.info, rel, k, sp, r)
			if tg == nil || !tg.def.IsValid() {
				continue
			}
			var locs []Location
			p := doc.text.position(sp.Start.Offset)
			c.request("textDocument/definition", textDocumentPositionParams{TextDocument: textDocumentIdentifier{URI: uris[f]}, Position: p}, &locs)
			if len(locs) != 1 {
				t.Errorf("%s:%d:%d: definition of %s = %v", rel, p.Line+1, p.Character+1, refName(r), locs)
			}
		}
	}
	golden := filepath.Join("testdata", "examples.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(b) != out.String() {
		t.Errorf("examples differ from %s (run with -update and review the diff):\n%s", golden, firstDiff(string(b), out.String()))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, x, y)
		}
	}
	return ""
}
