package lsp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/format"
	"github.com/agentc/agentc/lang/syntax"
)

// formatting is `agentc fmt`: one edit replacing the document with its
// canonical form, none when it is canonical already, an error when it has
// syntax errors.
func (s *Server) formatting(p *documentFormattingParams) ([]TextEdit, error) {
	d, err := s.doc(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	out, ds := format.Bytes(d.name, d.text.src)
	if out == nil {
		msg := "the file has syntax errors"
		for _, x := range ds {
			if x.Severity == diag.Error {
				msg = fmt.Sprintf("cannot format: %s: %s", x.Subject, x.Summary)
				break
			}
		}
		return nil, errorf(codeRequestFailed, "%s", msg)
	}
	if string(out) == string(d.text.src) {
		return []TextEdit{}, nil
	}
	return []TextEdit{{Range: Range{End: d.text.end()}, NewText: string(out)}}, nil
}

// declSymbols are the symbol kinds of the named declarations, by keyword
// (a block declaration's is symbolObject).
var declSymbols = map[string]int{
	"type": symbolStruct, "tool": symbolFunction, "skill": symbolModule, "state": symbolStruct,
	"agent": symbolClass, "graph": symbolClass,
}

// documentSymbols is the outline, from the syntax tree (so a file that
// does not check still has one).
func (s *Server) documentSymbols(p *documentSymbolParams) ([]DocumentSymbol, error) {
	d, err := s.doc(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	f := d.pkg.File(d.name)
	out := []DocumentSymbol{}
	if f == nil {
		return out, nil
	}
	sym := func(name, detail string, kind int, whole, sel diag.Span) DocumentSymbol {
		if !sel.IsValid() {
			sel = whole
		}
		return DocumentSymbol{Name: name, Detail: detail, Kind: kind, Range: d.text.rangeOf(whole), SelectionRange: d.text.rangeOf(sel)}
	}
	ident := func(id *syntax.Ident) (string, diag.Span) {
		if id == nil {
			return "", diag.Span{}
		}
		return id.Name, id.Span()
	}
	fields := func(fs []*syntax.Field) []DocumentSymbol {
		var out []DocumentSymbol
		for _, x := range fs {
			if x == nil || x.Name == nil {
				continue
			}
			out = append(out, sym(x.Name.Name, typeText(d.text.src, x.Type), symbolField, x.Span(), x.Name.Span()))
		}
		return out
	}
	for _, decl := range f.Decls {
		var ds DocumentSymbol
		switch x := decl.(type) {
		case *syntax.Workflow:
			n, sp := ident(x.Name)
			ds = sym(n, "workflow", symbolModule, x.Span(), sp)
		case *syntax.Import:
			lit := ""
			if x.Path != nil {
				lit, _ = x.Path.Literal()
			}
			ds = sym(lit, "import", symbolFile, x.Span(), x.Span())
		case syntax.NamedDecl:
			keyword, id := x.Declares()
			n, sp := ident(id)
			ds = sym(n, keyword, declSymbols[keyword], x.Span(), sp)
			switch x := x.(type) {
			case *syntax.BlockDecl:
				ds.Kind = symbolObject
			case *syntax.TypeDecl:
				if x.Record != nil {
					ds.Children = fields(x.Record.Fields)
				} else {
					ds.Kind = symbolEnum
				}
			case *syntax.State:
				ds.Children = fields(x.Fields)
			case *syntax.Agent:
				if x.Kind != nil {
					ds.Detail = "agent " + x.Kind.Name
				}
			case *syntax.Graph:
				for _, it := range x.Items {
					if it == nil || it.Node == nil || it.Node.Name == nil {
						continue
					}
					kind := "node"
					if it.Node.Body != nil {
						kind = nodeBodyKind(it.Node.Body)
					}
					ds.Children = append(ds.Children, sym(it.Node.Name.Name, kind, symbolMethod, it.Node.Span(), it.Node.Name.Span()))
				}
			}
		case *syntax.Serve:
			ds = sym("serve", "serve", symbolInterface, x.Span(), x.Span())
		case *syntax.Test:
			name := "test"
			if x.Name != nil {
				name, _ = x.Name.Literal()
			}
			ds = sym(name, "test", symbolEvent, x.Span(), x.Span())
		case *syntax.BadDecl:
			n, sp := ident(x.Name)
			if n == "" {
				n = x.Keyword
			}
			if n == "" {
				continue
			}
			ds = sym(n, x.Keyword+" (syntax error)", symbolObject, x.Span(), sp)
		default:
			continue
		}
		if ds.Name == "" {
			ds.Name = ds.Detail
		}
		out = append(out, ds)
	}
	return out, nil
}

func nodeBodyKind(b syntax.NodeBody) string {
	switch x := b.(type) {
	case *syntax.CallNode:
		return x.Kind
	case *syntax.SetNode:
		return "set"
	case *syntax.MapNode:
		return "map"
	case *syntax.InterruptNode:
		return "interrupt"
	case *syntax.JoinNode:
		return "join " + x.Mode
	case *syntax.WaitNode:
		return "wait"
	}
	return "node"
}

// typeText is a type expression's source text.
func typeText(src []byte, t *syntax.Type) string {
	if t == nil {
		return ""
	}
	sp := t.Span()
	if sp.Start.Offset < 0 || sp.End.Offset > len(src) || sp.End.Offset < sp.Start.Offset {
		return ""
	}
	return strings.Join(strings.Fields(string(src[sp.Start.Offset:sp.End.Offset])), " ")
}

// posOf resolves a request's document and position to a byte offset.
func (s *Server) posOf(uri string, p Position) (*document, int, error) {
	d, err := s.doc(uri)
	if err != nil {
		return nil, 0, err
	}
	return d, d.text.offset(p), nil
}

// targetOf resolves a request's document and position to the byte offset
// and the name there (nil when there is none).
func (s *Server) targetOf(uri string, p Position) (*document, int, *target, error) {
	d, off, err := s.posOf(uri, p)
	if err != nil {
		return nil, 0, nil, err
	}
	return d, off, targetAt(d.info, d.name, off), nil
}

func (s *Server) hover(p *textDocumentPositionParams) (*Hover, error) {
	d, off, t, err := s.targetOf(p.TextDocument.URI, p.Position)
	if err != nil {
		return nil, err
	}
	if t == nil {
		if sp, owner, f, ok := selectorAt(d.info, d.name, off); ok {
			r := d.text.rangeOf(sp)
			return &Hover{Contents: markupContent{Kind: "markdown", Value: describeSelector(owner, f)}, Range: &r}, nil
		}
		if a, kind := attrAt(d.info, d.name, off); a != nil {
			r := d.text.rangeOf(a.Syn.Key.Span())
			return &Hover{Contents: markupContent{Kind: "markdown", Value: describeAttr(a, kind)}, Range: &r}, nil
		}
		return nil, nil
	}
	md := describe(d.info, t)
	if md == "" {
		return nil, nil
	}
	r := d.text.rangeOf(t.at)
	return &Hover{Contents: markupContent{Kind: "markdown", Value: md}, Range: &r}, nil
}

func (s *Server) definition(p *textDocumentPositionParams) ([]Location, error) {
	d, _, t, err := s.targetOf(p.TextDocument.URI, p.Position)
	if err != nil {
		return nil, err
	}
	if t == nil || !t.def.IsValid() {
		return []Location{}, nil
	}
	loc, ok := s.location(d.root, t.def)
	if !ok {
		return []Location{}, nil
	}
	return []Location{loc}, nil
}

// allOccurrences collects the occurrences of id, which is spelled name,
// de-duplicated and in file and offset order: over the checks of every
// open document of root (each holds its import closure), and of every
// other .agent file whose text holds name — in the folders of the open
// documents (wherever they are) and under root (walkAgentFiles) — checked
// from the disk under the open buffers: a file that imports a declaration
// is found whether or not it is open.
func (s *Server) allOccurrences(root, id, name string) []diag.Span {
	seen := map[string]bool{}
	var out []diag.Span
	add := func(info *compiler.Info) {
		for _, sp := range occurrences(info, id) {
			k := fmt.Sprintf("%s@%d", sp.File, sp.Start.Offset)
			if !seen[k] {
				seen[k] = true
				out = append(out, sp)
			}
		}
	}
	done := map[string]bool{}
	docs := s.sameRoot(root)
	for _, e := range docs {
		add(e.info)
		done[e.name] = true
	}
	cfg := s.config(root)
	check := func(rel string) {
		if done[rel] {
			return
		}
		done[rel] = true
		if t, ok := s.textOf(root, rel); !ok || !bytes.Contains(t.src, []byte(name)) {
			return
		}
		pkg, _ := compiler.Load(cfg, rel)
		info, _ := compiler.Check(cfg, pkg)
		add(info)
	}
	for _, e := range docs {
		agentFilesIn(root, path.Dir(e.name), check)
	}
	walkAgentFiles(root, check)
	slices.SortFunc(out, func(a, b diag.Span) int {
		if a.File != b.File {
			return strings.Compare(a.File, b.File)
		}
		return a.Start.Offset - b.Start.Offset
	})
	return out
}

func (s *Server) references(p *referenceParams) ([]Location, error) {
	d, _, t, err := s.targetOf(p.TextDocument.URI, p.Position)
	if err != nil {
		return nil, err
	}
	out := []Location{}
	if t == nil {
		return out, nil
	}
	id := t.id()
	if id == "" {
		return out, nil
	}
	for _, sp := range s.allOccurrences(d.root, id, t.name) {
		if !p.Context.IncludeDeclaration && sp == t.def {
			continue
		}
		if loc, ok := s.location(d.root, sp); ok {
			out = append(out, loc)
		}
	}
	return out, nil
}

// renameable reports whether a target may be renamed: declarations,
// fields, nodes and loop variables declared in source.
func renameable(t *target) error {
	switch t.ref.Kind {
	case compiler.RefDecl, compiler.RefField, compiler.RefNode, compiler.RefLoopVar:
	default:
		return errorf(codeRequestFailed, "%s cannot be renamed: it is not declared in a source file", t.name)
	}
	if n := t.ref.Node; t.ref.Kind == compiler.RefNode && n != nil && (n.Kind == compiler.NodeStart || n.Kind == compiler.NodeEnd) {
		return errorf(codeRequestFailed, "%s is a keyword and cannot be renamed", n.Name)
	}
	if !t.def.IsValid() {
		return errorf(codeRequestFailed, "%s cannot be renamed: it is built in", t.name)
	}
	return nil
}

func (s *Server) prepareRename(p *textDocumentPositionParams) (*Range, error) {
	d, _, t, err := s.targetOf(p.TextDocument.URI, p.Position)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, nil
	}
	if err := renameable(t); err != nil {
		return nil, err
	}
	r := d.text.rangeOf(t.at)
	return &r, nil
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (s *Server) rename(p *renameParams) (*WorkspaceEdit, error) {
	d, _, t, err := s.targetOf(p.TextDocument.URI, p.Position)
	if err != nil {
		return nil, err
	}
	if !identRE.MatchString(p.NewName) {
		return nil, errorf(codeInvalidParams, "%q is not a name: use letters, digits and _, not starting with a digit", p.NewName)
	}
	if syntax.IsDeclKeyword(p.NewName) || p.NewName == "start" || p.NewName == "end" {
		return nil, errorf(codeInvalidParams, "%q is a keyword", p.NewName)
	}
	if t == nil {
		return nil, errorf(codeRequestFailed, "no name to rename here")
	}
	if err := renameable(t); err != nil {
		return nil, err
	}
	edit := &WorkspaceEdit{Changes: map[string][]TextEdit{}}
	for _, sp := range s.allOccurrences(d.root, t.id(), t.name) {
		loc, ok := s.location(d.root, sp)
		if !ok {
			continue
		}
		edit.Changes[loc.URI] = append(edit.Changes[loc.URI], TextEdit{Range: loc.Range, NewText: p.NewName})
	}
	return edit, nil
}

// fixData is what a diagnostic carries for its quick fix.
type fixData struct {
	Replace string `json:"replace"`
}

var didYouMean = regexp.MustCompile(`did you mean ([A-Za-z_][A-Za-z0-9_]*)\?`)

// suggestion extracts the checker's "did you mean X?" from a detail.
func suggestion(detail string) (string, bool) {
	m := didYouMean.FindStringSubmatch(detail)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// codeActions offers quick fixes for the diagnostics in the request: the
// missing import of a name another file declares, the otherwise edge of a
// switch that is not total, and the suggested name for a misspelled one.
func (s *Server) codeActions(p *codeActionParams) ([]CodeAction, error) {
	d, err := s.doc(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	out := []CodeAction{}
	for _, x := range p.Context.Diagnostics {
		out = append(out, s.importActions(d, x)...)
		out = append(out, s.otherwiseAction(d, x)...)
		var fd fixData
		if len(x.Data) == 0 || json.Unmarshal(x.Data, &fd) != nil || !identRE.MatchString(fd.Replace) {
			continue
		}
		out = append(out, CodeAction{
			Title:       fmt.Sprintf("Change to %s", fd.Replace),
			Kind:        "quickfix",
			Diagnostics: []Diagnostic{x},
			IsPreferred: true,
			Edit:        &WorkspaceEdit{Changes: map[string][]TextEdit{d.uri: {{Range: x.Range, NewText: fd.Replace}}}},
		})
	}
	return out, nil
}

// uriIn is the URI of a root-relative file.
func uriIn(root, name string) string { return uriOf(filepath.Join(root, filepath.FromSlash(name))) }
