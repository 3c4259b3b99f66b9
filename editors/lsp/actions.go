package lsp

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Quick fixes that need more than the diagnostic's own suggestion: the
// missing import of a name declared in another file, and the otherwise
// edge of a switch that is not total.

var (
	unknownName  = regexp.MustCompile(`^unknown [a-z ]+ ([A-Za-z_][A-Za-z0-9_]*)$`)
	notExhaustiv = regexp.MustCompile(`^switch of node ([A-Za-z_][A-Za-z0-9_]*) has no otherwise`)
)

// maxScan bounds the .agent files read to find a declaration to import.
const maxScan = 2000

// declaredIn returns the root-relative names of the .agent files of root
// (the open buffers first, then the disk, skipping testdata, hidden
// folders and node_modules) that declare name at the top level, other
// than self.
func (s *Server) declaredIn(root, self, name string) []string {
	var out []string
	seen := map[string]bool{self: true}
	consider := func(rel string, src []byte) {
		if seen[rel] {
			return
		}
		seen[rel] = true
		f, _ := syntax.Parse(rel, src)
		if f != nil && slices.Contains(declNames(f), name) {
			out = append(out, rel)
		}
	}
	for _, e := range s.sameRoot(root) {
		consider(e.name, e.text.src)
	}
	// The file's own folder first (wherever it is), then the root's tree.
	read := func(rel string) {
		if seen[rel] {
			return
		}
		if src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel))); err == nil {
			consider(rel, src)
		}
	}
	agentFilesIn(root, path.Dir(self), read)
	walkAgentFiles(root, read)
	slices.Sort(out)
	return out
}

// agentFilesIn calls f with the root-relative name of each .agent file in
// the folder dir of root (not below it).
func agentFilesIn(root, dir string, f func(rel string)) {
	ents, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
	if err != nil {
		return
	}
	for _, ent := range ents {
		if rel := path.Join(dir, ent.Name()); !ent.IsDir() && strings.HasSuffix(rel, ".agent") {
			f(rel)
		}
	}
}

// walkAgentFiles calls f with the root-relative name of each .agent file
// under root, skipping testdata, hidden folders and node_modules, at most
// maxScan files.
func walkAgentFiles(root string, f func(rel string)) {
	n := 0
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if b := d.Name(); p != root && (b == "testdata" || b == "node_modules" || strings.HasPrefix(b, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".agent") {
			return nil
		}
		if n++; n > maxScan {
			return filepath.SkipAll
		}
		if rel, err := filepath.Rel(root, p); err == nil {
			f(filepath.ToSlash(rel))
		}
		return nil
	})
}

// declNames are the names a file declares at the top level.
func declNames(f *syntax.File) []string {
	var out []string
	for _, d := range f.Decls {
		if d, ok := d.(syntax.NamedDecl); ok {
			if _, id := d.Declares(); id != nil {
				out = append(out, id.Name)
			}
		}
	}
	return out
}

// importPath is target written relative to the folder of from.
func importPath(from, target string) string {
	rel, err := filepath.Rel(filepath.FromSlash(path.Dir(from)), filepath.FromSlash(target))
	if err != nil {
		return target
	}
	return filepath.ToSlash(rel)
}

// importAt is where a new import goes: after the last import, else after
// the workflow header, else at the top.
func importAt(d *document) (Position, string) {
	f := d.pkg.File(d.name)
	after := -1
	if f != nil {
		for _, decl := range f.Decls {
			switch decl.(type) {
			case *syntax.Import, *syntax.Workflow:
				after = decl.Span().End.Offset
			}
		}
	}
	if after < 0 {
		return Position{}, "%s\n\n"
	}
	p := d.text.position(after)
	if p.Line+1 >= len(d.text.lines) {
		return p, "\n%s" // the last line, with no newline after it
	}
	return Position{Line: p.Line + 1}, "%s\n"
}

func (s *Server) importActions(d *document, x Diagnostic) []CodeAction {
	m := unknownName.FindStringSubmatch(strings.SplitN(x.Message, "\n", 2)[0])
	if m == nil || x.Code != string(diag.UnknownName) {
		return nil
	}
	var out []CodeAction
	for _, file := range s.declaredIn(d.root, d.name, m[1]) {
		p := importPath(d.name, file)
		pos, form := importAt(d)
		line := strings.Replace(form, "%s", `import "`+p+`"`, 1)
		out = append(out, CodeAction{
			Title:       "Add import \"" + p + "\" (declares " + m[1] + ")",
			Kind:        "quickfix",
			Diagnostics: []Diagnostic{x},
			Edit:        &WorkspaceEdit{Changes: map[string][]TextEdit{d.uri: {{Range: Range{Start: pos, End: pos}, NewText: line}}}},
		})
	}
	return out
}

func (s *Server) otherwiseAction(d *document, x Diagnostic) []CodeAction {
	m := notExhaustiv.FindStringSubmatch(x.Message)
	if m == nil || x.Code != string(compiler.NonExhaustive) {
		return nil
	}
	start := d.text.offset(Position{Line: x.Range.Start.Line})
	indent := ""
	for i := start; i < len(d.text.src) && (d.text.src[i] == ' ' || d.text.src[i] == '\t'); i++ {
		indent += string(d.text.src[i])
	}
	end := d.text.offset(Position{Line: x.Range.End.Line, Character: 1 << 30})
	p := d.text.position(end)
	return []CodeAction{{
		Title:       "Add `" + m[1] + " -> end otherwise`",
		Kind:        "quickfix",
		Diagnostics: []Diagnostic{x},
		Edit:        &WorkspaceEdit{Changes: map[string][]TextEdit{d.uri: {{Range: Range{Start: p, End: p}, NewText: "\n" + indent + m[1] + " -> end otherwise"}}}},
	}}
}
