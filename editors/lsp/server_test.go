package lsp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/agentc/agentc/lang/format"
)

// fixture opens testdata/fixture/main.agent (which imports lib.agent) in
// a fresh server.
func fixture(t *testing.T) (c *client, mainURI, libURI, mainSrc string) {
	t.Helper()
	dir := abs(t, "testdata/fixture")
	c = newClient(t, dir)
	b, err := os.ReadFile(filepath.Join(dir, "main.agent"))
	if err != nil {
		t.Fatal(err)
	}
	mainURI = c.open(filepath.Join(dir, "main.agent"), string(b))
	c.sync()
	return c, mainURI, uriOf(filepath.Join(dir, "lib.agent")), string(b)
}

// pos finds the n-th (0-based) occurrence of needle in src, plus delta
// bytes, as an LSP position (the fixture's lines before the match are
// ASCII except where a test says so).
func pos(t *testing.T, src, needle string, n, delta int) Position {
	t.Helper()
	off := -1
	for i := 0; i <= n; i++ {
		j := strings.Index(src[off+1:], needle)
		if j < 0 {
			t.Fatalf("%q: occurrence %d not found", needle, n)
		}
		off += 1 + j
	}
	return newText([]byte(src)).position(off + delta)
}

func TestFixtureCleanAndHover(t *testing.T) {
	c, mainURI, _, src := fixture(t)
	if ds := c.diagnostics(mainURI); len(ds) != 0 {
		t.Fatalf("fixture has diagnostics: %+v", ds)
	}
	tests := []struct {
		name, needle string
		n            int
		want         []string
	}{
		{"field at its write", "into answer", 0, []string{"answer: string = \"\"", "field of state `S`", "written by `ask`", "read by `mark`"}},
		{"node declaration", "ask  =", 0, []string{"node ask = llm judge -> string into answer", "node of graph `decide`", "reads `question`", "writes `answer`"}},
		{"set node", "mark =", 0, []string{"node mark = set", "reads `answer`", "writes `verdict`, `note`"}},
		{"agent across import", "judge {", 0, []string{"agent judge llm -> string", "Decides a question", "model `fast`"}},
		{"type across import", "Verdict?", 0, []string{`type Verdict = "yes" | "no"`}},
		{"state in graph header", "decide(S)", 0, []string{"state S {", "question: string"}},
		{"edge target", "-> end", 0, []string{"end"}},
		{"node argument", "prompt = question", 0, []string{"prompt = question", "llm node attribute"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := pos(t, src, tc.needle, tc.n, 0)
			if tc.n == 0 && strings.HasPrefix(tc.needle, "into ") {
				p.Character += len("into ")
			}
			if tc.needle == "decide(S)" {
				p = pos(t, src, tc.needle, 0, len("decide("))
			}
			if tc.needle == "-> end" {
				p = pos(t, src, tc.needle, 0, len("-> "))
			}
			var h *Hover
			c.request("textDocument/hover", textDocumentPositionParams{TextDocument: textDocumentIdentifier{URI: mainURI}, Position: p}, &h)
			if h == nil {
				t.Fatalf("no hover at %+v", p)
			}
			for _, w := range tc.want {
				if !strings.Contains(h.Contents.Value, w) {
					t.Errorf("hover lacks %q:\n%s", w, h.Contents.Value)
				}
			}
		})
	}
}

func TestDefinitionAndReferences(t *testing.T) {
	c, mainURI, libURI, src := fixture(t)
	lib, err := os.ReadFile(abs(t, "testdata/fixture/lib.agent"))
	if err != nil {
		t.Fatal(err)
	}
	var locs []Location
	c.request("textDocument/definition", textDocumentPositionParams{TextDocument: textDocumentIdentifier{URI: mainURI}, Position: pos(t, src, "judge {", 0, 2)}, &locs)
	want := Location{URI: libURI, Range: Range{Start: pos(t, string(lib), "judge llm", 0, 0), End: pos(t, string(lib), "judge llm", 0, len("judge"))}}
	if len(locs) != 1 || locs[0] != want {
		t.Fatalf("definition of judge = %+v, want %+v", locs, want)
	}

	// The field answer: its declaration, the graph's output binding and
	// the into clause, and the read inside the interpolation.
	var refs []Location
	c.request("textDocument/references", referenceParams{TextDocument: textDocumentIdentifier{URI: mainURI}, Position: pos(t, src, "answer   :", 0, 1),
		Context: struct {
			IncludeDeclaration bool `json:"includeDeclaration"`
		}{true}}, &refs)
	var got []Position
	for _, l := range refs {
		if l.URI != mainURI {
			t.Errorf("reference in %s", l.URI)
		}
		got = append(got, l.Range.Start)
	}
	wantPos := []Position{pos(t, src, "answer   :", 0, 0), pos(t, src, "output answer", 0, len("output ")),
		pos(t, src, "into answer", 0, len("into ")), pos(t, src, "{answer}", 0, 1)}
	if !slices.Equal(got, wantPos) {
		t.Errorf("references of answer = %v, want %v", got, wantPos)
	}
	// Without the declaration.
	refs = nil
	c.request("textDocument/references", referenceParams{TextDocument: textDocumentIdentifier{URI: mainURI}, Position: pos(t, src, "into answer", 0, 6)}, &refs)
	if len(refs) != 3 {
		t.Errorf("references without the declaration: %d, want 3", len(refs))
	}
}

func TestRename(t *testing.T) {
	c, mainURI, libURI, src := fixture(t)
	var r *Range
	c.request("textDocument/prepareRename", at(mainURI, pos(t, src, "judge {", 0, 1).Line, pos(t, src, "judge {", 0, 1).Character), &r)
	if r == nil {
		t.Fatal("judge cannot be renamed")
	}
	var edit WorkspaceEdit
	c.request("textDocument/rename", renameParams{TextDocument: textDocumentIdentifier{URI: mainURI}, Position: pos(t, src, "judge {", 0, 1), NewName: "arbiter"}, &edit)
	// other.agent imports lib.agent too; it is not open, and it is edited.
	otherURI := uriOf(filepath.Join(abs(t, "testdata/fixture"), "other.agent"))
	if len(edit.Changes[mainURI]) != 1 || len(edit.Changes[libURI]) != 1 || len(edit.Changes[otherURI]) != 1 || len(edit.Changes) != 3 {
		t.Fatalf("rename edits = %+v, want one in each of the three files", edit.Changes)
	}
	other, err := os.ReadFile(abs(t, "testdata/fixture/other.agent"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := edit.Changes[otherURI][0].Range.Start, pos(t, string(other), "judge {", 0, 0); got != want {
		t.Errorf("rename in other.agent at %+v, want %+v", got, want)
	}
	for _, bad := range []string{"9lives", "has space", "graph", ""} {
		if err := c.call("textDocument/rename", renameParams{TextDocument: textDocumentIdentifier{URI: mainURI}, Position: pos(t, src, "judge {", 0, 1), NewName: bad}, nil); err == nil {
			t.Errorf("rename to %q accepted", bad)
		}
	}
	// A builtin cannot be renamed.
	if err := c.call("textDocument/prepareRename", at(mainURI, pos(t, src, "-> end", 0, 3).Line, pos(t, src, "-> end", 0, 3).Character), nil); err == nil {
		t.Error("end is renameable")
	}
}

func TestTypoDiagnosticAndQuickFix(t *testing.T) {
	c, mainURI, _, src := fixture(t)
	typo := strings.Replace(src, "llm judge", "llm judgee", 1)
	c.change(mainURI, 2, contentChange{Text: typo})
	c.sync()
	ds := c.diagnostics(mainURI)
	if len(ds) != 1 {
		t.Fatalf("diagnostics = %+v, want one", ds)
	}
	d := ds[0]
	wantRange := Range{Start: pos(t, typo, "judgee", 0, 0), End: pos(t, typo, "judgee", 0, 6)}
	if d.Code != "N201" || d.Range != wantRange || d.Severity != severityError {
		t.Errorf("diagnostic = %+v, want an error at %+v", d, wantRange)
	}
	if !strings.Contains(d.Message, "did you mean judge?") {
		t.Errorf("message %q has no suggestion", d.Message)
	}
	var actions []CodeAction
	c.request("textDocument/codeAction", codeActionParams{TextDocument: textDocumentIdentifier{URI: mainURI}, Range: d.Range,
		Context: struct {
			Diagnostics []Diagnostic `json:"diagnostics"`
		}{[]Diagnostic{d}}}, &actions)
	if len(actions) != 1 || actions[0].Title != "Change to judge" {
		t.Fatalf("code actions = %+v", actions)
	}
	edits := actions[0].Edit.Changes[mainURI]
	if len(edits) != 1 || edits[0].NewText != "judge" || edits[0].Range != wantRange {
		t.Errorf("quick fix edit = %+v", edits)
	}
}

// An unsaved edit of an open library re-checks the open file importing
// it, against the buffer, not the disk.
func TestOverlayAndImporterRecheck(t *testing.T) {
	c, mainURI, libURI, _ := fixture(t)
	lib, err := os.ReadFile(abs(t, "testdata/fixture/lib.agent"))
	if err != nil {
		t.Fatal(err)
	}
	c.open(abs(t, "testdata/fixture/lib.agent"), string(lib))
	c.sync()
	if ds := c.diagnostics(libURI); len(ds) != 0 {
		t.Fatalf("lib diagnostics: %+v", ds)
	}
	// Incremental change: rename the agent in the buffer only.
	lt := newText(lib)
	i := strings.Index(string(lib), "judge llm")
	c.change(libURI, 2, contentChange{Range: &Range{Start: lt.position(i), End: lt.position(i + len("judge"))}, Text: "arbiter"})
	c.sync()
	ds := c.diagnostics(mainURI)
	if len(ds) != 1 || !strings.Contains(ds[0].Message, "judge") {
		t.Fatalf("main after the library edit: %+v", ds)
	}
	// Closing the library falls back to the disk, where judge exists.
	c.notify("textDocument/didClose", map[string]any{"textDocument": textDocumentIdentifier{URI: libURI}})
	c.sync()
	if ds := c.diagnostics(mainURI); len(ds) != 0 {
		t.Fatalf("main after closing the library: %+v", ds)
	}
}

// Columns are UTF-16 code units: an error after "😀é" on a line.
func TestUTF16Columns(t *testing.T) {
	c, mainURI, _, src := fixture(t)
	bad := strings.Replace(src, `note     : string = "😀é"`, `note     : string = "😀é" reduce bogus`, 1)
	c.change(mainURI, 2, contentChange{Text: bad})
	c.sync()
	ds := c.diagnostics(mainURI)
	if len(ds) != 1 {
		t.Fatalf("diagnostics = %+v", ds)
	}
	line := `  note     : string = "😀é" reduce `
	want := len(utf16.Encode([]rune(line)))
	if got := ds[0].Range.Start.Character; got != want || ds[0].Range.End.Character != want+len("bogus") {
		t.Errorf("range = %+v, want characters %d..%d", ds[0].Range, want, want+5)
	}
	// And back: a position after the emoji hovers the name under it.
	var h *Hover
	c.request("textDocument/hover", at(mainURI, ds[0].Range.Start.Line, 3), &h)
	if h == nil || !strings.Contains(h.Contents.Value, "note: string") {
		t.Errorf("hover on note = %+v", h)
	}
}

func TestFormatting(t *testing.T) {
	dir := t.TempDir()
	c := newClient(t, dir)
	src := "workflow w\nstate S {\n  a: string\n    b : int = 1\n}\n"
	uri := c.open(filepath.Join(dir, "f.agent"), src)
	var edits []TextEdit
	c.request("textDocument/formatting", documentFormattingParams{TextDocument: textDocumentIdentifier{URI: uri}}, &edits)
	want, _ := format.Bytes("f.agent", []byte(src))
	if len(edits) != 1 || edits[0].NewText != string(want) || edits[0].Range.Start != (Position{}) || edits[0].Range.End != newText([]byte(src)).end() {
		t.Fatalf("formatting edits = %+v, want the whole file as %q", edits, want)
	}
	c.change(uri, 2, contentChange{Text: string(want)})
	edits = nil
	c.request("textDocument/formatting", documentFormattingParams{TextDocument: textDocumentIdentifier{URI: uri}}, &edits)
	if len(edits) != 0 {
		t.Errorf("formatting a canonical file: %+v", edits)
	}
	c.change(uri, 3, contentChange{Text: "state S {"})
	if err := c.call("textDocument/formatting", documentFormattingParams{TextDocument: textDocumentIdentifier{URI: uri}}, nil); err == nil || !strings.Contains(err.Message, "cannot format") {
		t.Errorf("formatting a broken file: %v", err)
	}
}

func TestCompletion(t *testing.T) {
	c, mainURI, _, src := fixture(t)
	labels := func(text string, p Position) []string {
		t.Helper()
		c.change(mainURI, 2, contentChange{Text: text})
		var l completionList
		c.request("textDocument/completion", textDocumentPositionParams{TextDocument: textDocumentIdentifier{URI: mainURI}, Position: p}, &l)
		var out []string
		for _, it := range l.Items {
			out = append(out, it.Label)
		}
		return out
	}
	has := func(name string, got []string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: completion lacks %q (got %v)", name, w, got)
			}
		}
	}
	// An edge target: the graph's nodes.
	edge := strings.Replace(src, "  mark  -> end\n", "  mark  -> end\n  ask -> \n", 1)
	got := labels(edge, pos(t, edge, "ask -> \n", 0, len("ask -> ")))
	has("edge target", got, "ask", "mark", "end")
	if slices.Contains(got, "question") {
		t.Errorf("edge target offers a field: %v", got)
	}
	// A prefix inside a node's arguments: the state fields.
	arg := strings.Replace(src, "prompt = question", "prompt = qu", 1)
	has("field prefix", labels(arg, pos(t, arg, "prompt = qu", 0, len("prompt = qu"))), "question")
	// After llm: the agents.
	call := strings.Replace(src, "llm judge", "llm ", 1)
	has("callee", labels(call, pos(t, call, "llm ", 0, len("llm "))), "judge")
	// Top level: declaration keywords.
	top := src + "\n"
	has("top level", labels(top, newText([]byte(top)).end()), "graph", "agent", "model", "import")
	// A reducer.
	red := strings.Replace(src, `answer   : string = ""`, `answer   : string = "" reduce `, 1)
	has("reducer", labels(red, pos(t, red, "reduce ", 0, len("reduce "))), "append", "max")
	// A model block: its attributes; the word list of provider.
	model := src + "\nmodel m {\n  \n}\n"
	has("model attributes", labels(model, pos(t, model, "model m {\n  ", 0, len("model m {\n  "))), "provider", "name", "temperature")
	// Enum literals: after == on an enum field, and as a set value.
	cmp := strings.Replace(src, "  ask   -> mark\n", "  ask   -> mark when verdict == \n", 1)
	has("enum comparison", labels(cmp, pos(t, cmp, "verdict == ", 0, len("verdict == "))), `"yes"`, `"no"`)
	set := strings.Replace(src, `verdict = "yes"`, `verdict = `, 1)
	has("enum set value", labels(set, pos(t, set, "verdict = ", 0, len("verdict = "))), `"yes"`, `"no"`)
	prov := src + "\nmodel m {\n  provider = \n}\n"
	has("provider words", labels(prov, pos(t, prov, "provider = ", 0, len("provider = "))), "openai")
}

func TestDocumentSymbols(t *testing.T) {
	c, mainURI, _, _ := fixture(t)
	var syms []DocumentSymbol
	c.request("textDocument/documentSymbol", documentSymbolParams{TextDocument: textDocumentIdentifier{URI: mainURI}}, &syms)
	var got []string
	for _, s := range syms {
		entry := s.Detail + " " + s.Name
		for _, ch := range s.Children {
			entry += " [" + ch.Name + ":" + ch.Detail + "]"
		}
		got = append(got, entry)
	}
	want := []string{
		"workflow demo", "import lib.agent",
		`state S [question:string] [answer:string] [verdict:Verdict?] [note:string]`,
		"graph decide [ask:llm] [mark:set]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("symbols:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// No input stops the server or makes it answer with an internal error.
func TestRobustness(t *testing.T) {
	dir := t.TempDir()
	c := newClient(t, dir)
	// Requests on documents that are not open, with bad params, unknown
	// methods.
	if err := c.call("textDocument/hover", at("file:///none.agent", 0, 0), nil); err == nil || err.Code != codeInvalidParams {
		t.Errorf("hover on a closed document: %v", err)
	}
	if err := c.call("textDocument/hover", json.RawMessage(`[1,2]`), nil); err == nil || err.Code != codeInvalidParams {
		t.Errorf("hover with bad params: %v", err)
	}
	if err := c.call("workspace/symbol", map[string]any{}, nil); err == nil || err.Code != codeMethodNotFound {
		t.Errorf("unknown method: %v", err)
	}
	// Garbage documents, positions anywhere.
	srcs := []string{"", "graph", "graph g(", "state S { a: }", "\xff\xfe\x00", "test \"x\" { expect visited( }",
		"graph g(S) {\n node a = map x in [ { llm q } }\n", "\ufeffworkflow w", strings.Repeat("(", 5000)}
	for i, src := range srcs {
		uri := c.open(filepath.Join(dir, "g.agent"), src)
		c.change(uri, i+2, contentChange{Text: src})
		lines := strings.Count(src, "\n") + 2
		for line := 0; line < lines; line++ {
			for ch := 0; ch < 12; ch += 3 {
				for _, m := range []string{"textDocument/hover", "textDocument/definition", "textDocument/completion", "textDocument/prepareRename"} {
					if err := c.call(m, at(uri, line, ch), nil); err != nil && err.Code == codeInternalError {
						t.Errorf("%s on %q at %d:%d: %v", m, src, line, ch, err)
					}
				}
			}
		}
		for _, m := range []string{"textDocument/documentSymbol", "textDocument/formatting"} {
			if err := c.call(m, documentSymbolParams{TextDocument: textDocumentIdentifier{URI: uri}}, nil); err != nil && err.Code == codeInternalError {
				t.Errorf("%s on %q: %v", m, src, err)
			}
		}
		c.notify("textDocument/didClose", map[string]any{"textDocument": textDocumentIdentifier{URI: uri}})
	}
	// A change range outside the text is clamped, not a crash.
	uri := c.open(filepath.Join(dir, "h.agent"), "workflow w\n")
	c.change(uri, 2, contentChange{Range: &Range{Start: Position{Line: 40, Character: 3}, End: Position{Line: 99, Character: 0}}, Text: "x"})
	c.sync()
}

func TestLifecycle(t *testing.T) {
	// A request before initialize is refused; shutdown then exit ends
	// Serve with nil; exit without shutdown is an error.
	for _, shutdown := range []bool{true, false} {
		sin, cout := ioPipe()
		var out strings.Builder
		done := make(chan error, 1)
		go func() { done <- Serve(t.Context(), sin, &syncWriter{b: &out}, Options{}) }()
		w := &writer{w: cout}
		w.write(&message{ID: json.RawMessage("1"), Method: "textDocument/hover", Params: json.RawMessage(`{}`)})
		w.write(&message{ID: json.RawMessage("2"), Method: "initialize", Params: json.RawMessage(`{}`)})
		if shutdown {
			w.write(&message{ID: json.RawMessage("3"), Method: "shutdown"})
		}
		w.write(&message{Method: "exit"})
		err := <-done
		cout.Close()
		if shutdown && err != nil || !shutdown && err != ErrExitWithoutShutdown {
			t.Errorf("shutdown=%v: Serve = %v", shutdown, err)
		}
		if !strings.Contains(out.String(), `"code":-32002`) {
			t.Errorf("no not-initialized error in %s", out.String())
		}
	}
}

func TestTextPositions(t *testing.T) {
	src := "a😀b\néx\r\n\nlast"
	tx := newText([]byte(src))
	tests := []struct {
		off  int
		want Position
	}{
		{0, Position{0, 0}}, {1, Position{0, 1}}, {5, Position{0, 3}}, {6, Position{0, 4}}, {7, Position{1, 0}},
		{9, Position{1, 1}}, {10, Position{1, 2}}, {13, Position{3, 0}}, {len(src), Position{3, 4}}, {999, Position{3, 4}},
	}
	for _, tc := range tests {
		if got := tx.position(tc.off); got != tc.want {
			t.Errorf("position(%d) = %+v, want %+v", tc.off, got, tc.want)
		}
		if tc.off <= len(src) {
			if back := tx.offset(tc.want); back != tc.off {
				t.Errorf("offset(%+v) = %d, want %d", tc.want, back, tc.off)
			}
		}
	}
	// Inside the surrogate pair: the emoji's start; past a line's end: the
	// end of that line.
	if got := tx.offset(Position{0, 2}); got != 1 {
		t.Errorf("offset inside a surrogate pair = %d, want 1", got)
	}
	if got := tx.offset(Position{0, 99}); got != 6 {
		t.Errorf("offset past the line end = %d, want 6", got)
	}
}

// applyEdits applies one document's edits (non-overlapping) to src.
func applyEdits(t *testing.T, src string, edits []TextEdit) string {
	t.Helper()
	slices.SortFunc(edits, func(a, b TextEdit) int {
		tx := newText([]byte(src))
		return tx.offset(b.Range.Start) - tx.offset(a.Range.Start)
	})
	for _, e := range edits {
		out, err := newText([]byte(src)).apply(contentChange{Range: &e.Range, Text: e.NewText})
		if err != nil {
			t.Fatal(err)
		}
		src = string(out)
	}
	return src
}

func codeActions(t *testing.T, c *client, uri string, ds []Diagnostic) []CodeAction {
	t.Helper()
	var actions []CodeAction
	for _, d := range ds {
		var got []CodeAction
		c.request("textDocument/codeAction", codeActionParams{TextDocument: textDocumentIdentifier{URI: uri}, Range: d.Range,
			Context: struct {
				Diagnostics []Diagnostic `json:"diagnostics"`
			}{[]Diagnostic{d}}}, &got)
		actions = append(actions, got...)
	}
	return actions
}

// The missing import: main without its import line has unknown names;
// the quick fix adds `import "lib.agent"`, after which it checks clean.
func TestQuickFixImport(t *testing.T) {
	c, mainURI, _, src := fixture(t)
	noImport := strings.Replace(src, "import \"lib.agent\"\n", "", 1)
	c.change(mainURI, 2, contentChange{Text: noImport})
	c.sync()
	ds := c.diagnostics(mainURI)
	if len(ds) == 0 {
		t.Fatal("no diagnostics without the import")
	}
	var fix *CodeAction
	for _, a := range codeActions(t, c, mainURI, ds) {
		if a.Title == `Add import "lib.agent" (declares judge)` {
			fix = &a
		}
	}
	if fix == nil {
		t.Fatalf("no import fix among %+v", codeActions(t, c, mainURI, ds))
	}
	fixed := applyEdits(t, noImport, fix.Edit.Changes[mainURI])
	if !strings.HasPrefix(fixed, "workflow demo \"Asks the judge\"\nimport \"lib.agent\"\n") {
		t.Errorf("fixed source:\n%s", fixed)
	}
	c.change(mainURI, 3, contentChange{Text: fixed})
	c.sync()
	if ds := c.diagnostics(mainURI); len(ds) != 0 {
		t.Errorf("after the fix: %+v", ds)
	}
}

// A switch without otherwise gets `NODE -> end otherwise` after its last
// edge, indented like it.
func TestQuickFixOtherwise(t *testing.T) {
	c, mainURI, _, src := fixture(t)
	partial := strings.Replace(src, "  ask   -> mark\n", "  ask   -> mark when answer == \"x\"\n", 1)
	c.change(mainURI, 2, contentChange{Text: partial})
	c.sync()
	ds := c.diagnostics(mainURI)
	var g404 []Diagnostic
	for _, d := range ds {
		if d.Code == "G404" {
			g404 = append(g404, d)
		}
	}
	if len(g404) != 1 {
		t.Fatalf("diagnostics = %+v, want one G404", ds)
	}
	acts := codeActions(t, c, mainURI, g404)
	if len(acts) != 1 || acts[0].Title != "Add `ask -> end otherwise`" {
		t.Fatalf("actions = %+v", acts)
	}
	fixed := applyEdits(t, partial, acts[0].Edit.Changes[mainURI])
	if !strings.Contains(fixed, "  ask   -> mark when answer == \"x\"\n  ask -> end otherwise\n") {
		t.Errorf("fixed source:\n%s", fixed)
	}
	c.change(mainURI, 3, contentChange{Text: fixed})
	c.sync()
	if ds := c.diagnostics(mainURI); len(ds) != 0 {
		t.Errorf("after the fix: %+v", ds)
	}
}

// A file changed on disk (not open) re-checks its importers when the
// client's watcher reports it.
func TestWatchedFileChange(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib", "types.agent")
	if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lib, []byte("type T = \"a\" | \"b\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, dir)
	uri := c.open(filepath.Join(dir, "main.agent"), "import \"lib/types.agent\"\n\nstate S { t: T = \"a\" }\n")
	c.sync()
	if ds := c.diagnostics(uri); len(ds) != 1 || ds[0].Code != "N205" {
		t.Fatalf("before: %+v, want only the unused-state warning", ds)
	}
	if err := os.WriteFile(lib, []byte("type U = \"a\" | \"b\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.notify("workspace/didChangeWatchedFiles", map[string]any{"changes": []map[string]any{{"uri": uriOf(lib), "type": 2}}})
	c.sync()
	ds := c.diagnostics(uri)
	if !slices.ContainsFunc(ds, func(d Diagnostic) bool { return d.Code == "N201" && strings.Contains(d.Message, "did you mean U?") }) {
		t.Errorf("after the disk change: %+v", ds)
	}
}

// An error in an imported file that is not open is published under that
// file's URI, and cleared once no open file reaches it.
func TestClosedImportDiagnostics(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib.agent")
	if err := os.WriteFile(lib, []byte("type T = \"a\" | \"b\"\ntype U = { x: Missing }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, dir)
	src := "import \"lib.agent\"\n\nstate S { t: T = \"a\" }\n"
	uri := c.open(filepath.Join(dir, "main.agent"), src)
	c.sync()
	ds := c.diagnostics(uriOf(lib))
	if len(ds) != 1 || ds[0].Code != "N201" || ds[0].Range.Start != (Position{Line: 1, Character: 14}) {
		t.Fatalf("lib diagnostics: %+v", ds)
	}
	// Dropping the import clears them.
	c.change(uri, 2, contentChange{Text: "state S { t: string = \"a\" }\n"})
	c.sync()
	if ds := c.diagnostics(uriOf(lib)); len(ds) != 0 {
		t.Errorf("lib diagnostics after dropping the import: %+v", ds)
	}
}

// Hover on a record field selector walks the checked type of the chain;
// on a state field it shows the field's list size.
func TestSelectorHover(t *testing.T) {
	root, _ := exampleFiles(t)
	c := newClient(t, root)
	type doc struct{ uri, src string }
	docs := map[string]doc{}
	tests := []struct {
		file, needle string
		delta        int
		want         []string
	}{
		{"expense/expense.agent", "claim.category }", len("claim."), []string{"category: Category", "field of type `Claim`"}},
		{"expense/expense.agent", "claim.currency", len("claim."), []string{`currency: string = "EUR"`}},
		{"expense/expense.agent", "manager.decision", len("manager.d"), []string{`decision: "approve" | "reject"`, "field of type `Approval`"}},
		{"digest/digest.agent", "in links", len("in "), []string{"links: list<string> max 10 = []", "field of state `Reading`"}},
	}
	for _, tc := range tests {
		d, ok := docs[tc.file]
		if !ok {
			path := filepath.Join(root, "examples", filepath.FromSlash(tc.file))
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			d = doc{src: string(b)}
			d.uri = c.open(path, d.src)
			c.sync()
			docs[tc.file] = d
		}
		var h *Hover
		c.request("textDocument/hover", textDocumentPositionParams{TextDocument: textDocumentIdentifier{URI: d.uri}, Position: pos(t, d.src, tc.needle, 0, tc.delta)}, &h)
		if h == nil {
			t.Errorf("%s: no hover", tc.needle)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(h.Contents.Value, w) {
				t.Errorf("%s: hover lacks %q:\n%s", tc.needle, w, h.Contents.Value)
			}
		}
	}
}
