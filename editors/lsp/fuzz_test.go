package lsp

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentc/agentc/stdlib"
)

// FuzzRequests opens arbitrary text, edits it at an arbitrary position and
// sends every position request there, calling the handlers directly (no
// recover), so any panic is a finding. Seeded from the examples.
func FuzzRequests(f *testing.F) {
	_, files := exampleFiles(f)
	for _, p := range append(files, "testdata/fixture/main.agent") {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b), uint16(12), uint16(8), "x")
	}
	f.Add("graph g(S) {\n  a -> \n}", uint16(1), uint16(7), "")
	f.Add("\ufeffstate S { a: \"😀\" | \"b\" }", uint16(0), uint16(16), "é")
	dir := f.TempDir()
	uri := uriOf(filepath.Join(dir, "f.agent"))
	f.Fuzz(func(t *testing.T, src string, line, char uint16, insert string) {
		s := newServer(io.Discard, Options{Universe: stdlib.Universe()})
		call := func(method string, params any) {
			b, err := json.Marshal(params)
			if err != nil {
				t.Fatal(err)
			}
			s.handle(&message{ID: json.RawMessage("1"), Method: method, Params: b})
		}
		call("initialize", map[string]any{"rootUri": uriOf(dir)})
		call("textDocument/didOpen", map[string]any{"textDocument": textDocumentItem{URI: uri, LanguageID: "agent", Version: 1, Text: src}})
		p := Position{Line: int(line), Character: int(char)}
		call("textDocument/didChange", map[string]any{"textDocument": versionedTextDocumentIdentifier{URI: uri, Version: 2},
			"contentChanges": []contentChange{{Range: &Range{Start: p, End: p}, Text: insert}}})
		tp := textDocumentPositionParams{TextDocument: textDocumentIdentifier{URI: uri}, Position: p}
		for _, m := range []string{"textDocument/hover", "textDocument/definition", "textDocument/completion", "textDocument/prepareRename"} {
			call(m, tp)
		}
		call("textDocument/references", referenceParams{TextDocument: tp.TextDocument, Position: p})
		call("textDocument/rename", renameParams{TextDocument: tp.TextDocument, Position: p, NewName: "renamed"})
		call("textDocument/documentSymbol", documentSymbolParams{TextDocument: tp.TextDocument})
		call("textDocument/formatting", documentFormattingParams{TextDocument: tp.TextDocument})
		var ds []Diagnostic
		for _, d := range s.docs[uri].diags {
			if d.Subject.File == s.docs[uri].name {
				ds = append(ds, s.toDiagnostic(s.docs[uri].root, s.docs[uri].text, d))
			}
		}
		call("textDocument/codeAction", codeActionParams{TextDocument: tp.TextDocument, Context: struct {
			Diagnostics []Diagnostic `json:"diagnostics"`
		}{ds}})
	})
}
