// Package lsp is agentc's language server: the Language Server Protocol
// over one stream (stdio in `agentc lsp`), on the compiler's own loader,
// checker, formatter and Info. It never resolves a name itself: every
// answer about a name comes from compiler.Info (Refs, ExprTypes, the
// resolved declarations), so the editor and `agentc validate` agree.
//
// Documents the editor has open form an overlay over the disk: imports of
// an open file resolve against the other open buffers first. Each open
// document is checked as its own root (as `agentc validate FILE` does); an
// edit re-checks that document and every open document whose import
// closure holds it, and nothing else.
//
// Requests are answered one at a time, in arrival order, and a panic in a
// handler is recovered and answered as an internal error: no input stops
// the server.
package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Options configure a server.
type Options struct {
	// Universe is the compiler's view of the stdlib (stdlib.Universe()).
	Universe *compiler.Universe
	// Version is reported in serverInfo.
	Version string
	// Log receives one line per internal failure (a recovered panic, an
	// unwritable response); nil discards them.
	Log io.Writer
	// Now is the clock behind the latency figures; nil is time.Now.
	Now func() time.Time
}

// ErrExitWithoutShutdown is what Serve returns when the client sent exit
// before shutdown (the protocol's exit code 1).
var ErrExitWithoutShutdown = errors.New("lsp: exit without shutdown")

// Serve answers LSP messages read from in on out until the client sends
// exit, in ends, or ctx is cancelled (which closes in, when it is an
// io.Closer as os.Stdin is, to stop the read). It returns nil after
// shutdown and exit, and at the end of in.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	return newServer(out, opts).serve(ctx, in)
}

func (s *Server) serve(ctx context.Context, in io.Reader) error {
	if c, ok := in.(io.Closer); ok {
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
	}
	r := newReader(in)
	for {
		body, err := r.read()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("lsp: %w", err)
		}
		s.dispatch(body)
		if s.exited {
			if !s.shutdown {
				return ErrExitWithoutShutdown
			}
			return nil
		}
	}
}

// Server is the state of one session.
type Server struct {
	opts    Options
	out     *writer
	docs    map[string]*document // by URI
	folders []string             // workspace folders (absolute paths)

	// extra are the unopened files with diagnostics published (URIs).
	extra map[string]bool

	initialized, shutdown, exited bool
	// lastCheck is how long the last re-check after a change took (all
	// the documents it re-checked), for the latency benchmark and the log.
	lastCheck time.Duration
}

// document is one open buffer and what the last check of it learned.
type document struct {
	uri     string
	path    string // absolute
	root    string // the project root it is checked in (absolute)
	name    string // relative to root, slash-separated
	version int
	text    *text

	pkg   *compiler.Package
	info  *compiler.Info
	diags []diag.Diagnostic // Load's and Check's, every file of the closure
	// graphs are the last checked version of each graph by name: while a
	// graph being edited does not parse, completion inside it uses them.
	graphs map[string]*compiler.Graph
}

func newServer(out io.Writer, opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Server{opts: opts, out: &writer{w: out}, docs: map[string]*document{}}
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Log != nil {
		fmt.Fprintf(s.opts.Log, "agentc lsp: "+format+"\n", args...)
	}
}

// dispatch handles one message body.
func (s *Server) dispatch(body []byte) {
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		s.reply(json.RawMessage("null"), nil, errorf(codeParseError, "invalid JSON: %v", err))
		return
	}
	if m.Method == "" {
		return // a response to a request the server never sends
	}
	result, err := s.call(&m)
	if !m.isRequest() {
		if err != nil {
			s.logf("%s: %v", m.Method, err)
		}
		return
	}
	s.reply(m.ID, result, err)
}

// call runs the handler of m with panics turned into internal errors.
func (s *Server) call(m *message) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.logf("panic in %s: %v\n%s", m.Method, r, debug.Stack())
			result, err = nil, errorf(codeInternalError, "internal error in %s: %v", m.Method, r)
		}
	}()
	return s.handle(m)
}

func (s *Server) reply(id json.RawMessage, result any, err error) {
	resp := &message{ID: id}
	if err != nil {
		var re *rpcError
		if !errors.As(err, &re) {
			re = errorf(codeRequestFailed, "%v", err)
		}
		resp.Error = re
	} else {
		b, merr := json.Marshal(result)
		if merr != nil {
			resp.Error = errorf(codeInternalError, "encode result: %v", merr)
		} else {
			resp.Result = b
		}
	}
	if werr := s.out.write(resp); werr != nil {
		s.logf("%v", werr)
	}
}

func (s *Server) notify(method string, params any) {
	b, err := json.Marshal(params)
	if err != nil {
		s.logf("encode %s: %v", method, err)
		return
	}
	if err := s.out.write(&message{Method: method, Params: b}); err != nil {
		s.logf("%v", err)
	}
}

func decode[T any](raw json.RawMessage) (*T, error) {
	v := new(T)
	if len(raw) == 0 {
		return nil, errorf(codeInvalidParams, "missing params")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, errorf(codeInvalidParams, "invalid params: %v", err)
	}
	return v, nil
}

// A route decodes a method's params and calls its handler.
type route func(s *Server, raw json.RawMessage) (any, error)

// request routes a method to a handler of its decoded params.
func request[P, R any](h func(*Server, *P) (R, error)) route {
	return func(s *Server, raw json.RawMessage) (any, error) {
		p, err := decode[P](raw)
		if err != nil {
			return nil, err
		}
		return h(s, p)
	}
}

// notification routes a method to a handler that has no result.
func notification[P any](h func(*Server, *P) error) route {
	return request(func(s *Server, p *P) (any, error) { return nil, h(s, p) })
}

// syncRoutes are the notifications that keep the open documents; they and
// featureRoutes, the language features, are served once initialized.
var syncRoutes = map[string]route{
	"textDocument/didOpen":   notification((*Server).didOpen),
	"textDocument/didChange": notification((*Server).didChange),
	"textDocument/didSave":   notification((*Server).didSave),
	"textDocument/didClose":  notification((*Server).didClose),
}

var featureRoutes = map[string]route{
	"textDocument/formatting":     request((*Server).formatting),
	"textDocument/documentSymbol": request((*Server).documentSymbols),
	"textDocument/hover":          request((*Server).hover),
	"textDocument/definition":     request((*Server).definition),
	"textDocument/references":     request((*Server).references),
	"textDocument/completion":     request((*Server).completion),
	"textDocument/prepareRename":  request((*Server).prepareRename),
	"textDocument/rename":         request((*Server).rename),
	"textDocument/codeAction":     request((*Server).codeActions),
}

// handle routes one request or notification.
func (s *Server) handle(m *message) (any, error) {
	switch m.Method {
	case "initialize":
		p, err := decode[initializeParams](m.Params)
		if err != nil {
			return nil, err
		}
		return s.initialize(p), nil
	case "initialized":
		return nil, nil
	case "shutdown":
		s.shutdown = true
		return nil, nil
	case "exit":
		s.exited = true
		return nil, nil
	}
	if !s.initialized {
		if m.isRequest() {
			return nil, errorf(codeNotInitialized, "the server is not initialized")
		}
		return nil, nil
	}
	if s.shutdown && m.isRequest() {
		return nil, errorf(codeInvalidRequest, "the server is shutting down")
	}
	if r, ok := syncRoutes[m.Method]; ok {
		return r(s, m.Params)
	}
	if r, ok := featureRoutes[m.Method]; ok {
		return r(s, m.Params)
	}
	switch m.Method {
	case "workspace/didChangeWatchedFiles":
		s.diskChanged()
		return nil, nil
	case "$/cancelRequest", "$/setTrace", "workspace/didChangeConfiguration":
		return nil, nil
	}
	if m.isRequest() {
		return nil, errorf(codeMethodNotFound, "method %s is not supported", m.Method)
	}
	return nil, nil // unknown notifications are ignored, as the protocol asks
}

func (s *Server) initialize(p *initializeParams) any {
	s.initialized = true
	for _, f := range p.WorkspaceFolders {
		if path, err := pathOf(f.URI); err == nil {
			s.folders = append(s.folders, path)
		}
	}
	if len(s.folders) == 0 {
		if path, err := pathOf(p.RootURI); err == nil {
			s.folders = append(s.folders, path)
		} else if p.RootPath != "" && filepath.IsAbs(p.RootPath) {
			s.folders = append(s.folders, filepath.Clean(p.RootPath))
		}
	}
	return map[string]any{
		"capabilities": map[string]any{
			"positionEncoding": "utf-16",
			"textDocumentSync": map[string]any{
				"openClose": true,
				"change":    2, // incremental
				"save":      map[string]any{"includeText": true},
			},
			"hoverProvider":              true,
			"definitionProvider":         true,
			"referencesProvider":         true,
			"documentSymbolProvider":     true,
			"documentFormattingProvider": true,
			"renameProvider":             map[string]any{"prepareProvider": true},
			"completionProvider":         map[string]any{"triggerCharacters": []string{">"}},
			"codeActionProvider":         map[string]any{"codeActionKinds": []string{"quickfix"}},
		},
		"serverInfo": map[string]any{"name": "agentc", "version": s.opts.Version},
	}
}

// rootOf is the project root a file is checked in: the nearest ancestor
// holding agentc.yaml or .git (the CLI's rule), else the workspace folder
// that holds the file, else the file's folder.
func (s *Server) rootOf(path string) string {
	dir := filepath.Dir(path)
	root := project.At(dir, nil).Root
	if root != dir || hasMarker(dir) {
		return root
	}
	best := ""
	for _, f := range s.folders {
		if within(path, f) && len(f) > len(best) {
			best = f
		}
	}
	if best != "" {
		return best
	}
	return dir
}

func hasMarker(dir string) bool {
	for _, m := range []string{"agentc.yaml", ".git"} {
		if _, err := os.Stat(filepath.Join(dir, m)); err == nil {
			return true
		}
	}
	return false
}

func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func (s *Server) doc(uri string) (*document, error) {
	d := s.docs[uri]
	if d == nil {
		return nil, errorf(codeInvalidParams, "document %s is not open", uri)
	}
	return d, nil
}

func (s *Server) didOpen(p *didOpenParams) error {
	path, err := pathOf(p.TextDocument.URI)
	if err != nil {
		return err
	}
	root := s.rootOf(path)
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	d := &document{
		uri: p.TextDocument.URI, path: path, root: root, name: filepath.ToSlash(rel),
		version: p.TextDocument.Version, text: newText([]byte(p.TextDocument.Text)),
	}
	s.docs[d.uri] = d
	s.changed(d)
	return nil
}

func (s *Server) didChange(p *didChangeParams) error {
	return s.update(p.TextDocument.URI, func(d *document) error {
		for _, c := range p.ContentChanges {
			src, err := d.text.apply(c)
			if err != nil {
				return fmt.Errorf("change %s: %w", d.uri, err)
			}
			d.text = newText(src)
		}
		d.version = p.TextDocument.Version
		return nil
	})
}

func (s *Server) didSave(p *didSaveParams) error {
	return s.update(p.TextDocument.URI, func(d *document) error {
		if p.Text != nil && *p.Text != string(d.text.src) {
			d.text = newText([]byte(*p.Text))
		}
		return nil
	})
}

// update applies f to the open document uri, then re-checks it (changed).
func (s *Server) update(uri string, f func(d *document) error) error {
	d, err := s.doc(uri)
	if err != nil {
		return err
	}
	if err := f(d); err != nil {
		return err
	}
	s.changed(d)
	return nil
}

func (s *Server) didClose(p *didCloseParams) error {
	d, err := s.doc(p.TextDocument.URI)
	if err != nil {
		return err
	}
	delete(s.docs, d.uri)
	s.notify("textDocument/publishDiagnostics", publishDiagnosticsParams{URI: d.uri, Diagnostics: []Diagnostic{}})
	// The disk version replaces the buffer for the importers.
	for _, e := range s.recheckImporters(d) {
		s.publish(e)
	}
	s.publishClosed()
	return nil
}

// changed re-checks d and every open document of its root whose import
// closure holds it, and publishes their diagnostics.
func (s *Server) changed(d *document) {
	start := s.opts.Now()
	s.check(d)
	again := s.recheckImporters(d)
	s.lastCheck = s.opts.Now().Sub(start)
	s.publish(d)
	for _, e := range again {
		s.publish(e)
	}
	s.publishClosed()
}

// recheckImporters re-checks the other open documents of d's root whose
// import closure holds d, and returns them by name.
func (s *Server) recheckImporters(d *document) []*document {
	var again []*document
	for _, e := range s.docs {
		if e.root == d.root && e != d && e.pkg.File(d.name) != nil {
			again = append(again, e)
		}
	}
	sort.Slice(again, func(i, j int) bool { return again[i].name < again[j].name })
	for _, e := range again {
		s.check(e)
	}
	return again
}

// diskChanged re-checks every open document: a file they import changed
// on disk (a checkout, another editor), which only the client's file
// watcher reports.
func (s *Server) diskChanged() {
	all := make([]*document, 0, len(s.docs))
	for _, d := range s.docs {
		all = append(all, d)
	}
	slices.SortFunc(all, func(a, b *document) int { return strings.Compare(a.uri, b.uri) })
	for _, d := range all {
		s.check(d)
	}
	for _, d := range all {
		s.publish(d)
	}
	s.publishClosed()
}

// config is the compiler's configuration for one root: the disk under the
// open buffers of that root.
func (s *Server) config(root string) compiler.Config {
	files := map[string][]byte{}
	for _, e := range s.docs {
		if e.root == root {
			files[e.name] = e.text.src
		}
	}
	return compiler.Config{FS: &overlay{base: os.DirFS(root), files: files}, Root: ".", Universe: s.opts.Universe}
}

// check loads and checks d as a root, as `agentc validate` does.
func (s *Server) check(d *document) {
	cfg := s.config(d.root)
	pkg, lds := compiler.Load(cfg, d.name)
	info, cds := compiler.Check(cfg, pkg)
	pkgs := []*compiler.Package{pkg}
	for _, e := range s.docs {
		if e != d && e.root == d.root && e.pkg != nil {
			pkgs = append(pkgs, e.pkg)
		}
	}
	var all diag.List
	all.Append(lds...)
	all.Append(compiler.ForRoot(cds, d.name, pkgs...)...)
	d.pkg, d.info, d.diags = pkg, info, all.Sorted()
	if d.graphs == nil {
		d.graphs = map[string]*compiler.Graph{}
	}
	for _, g := range info.Graphs {
		if _, parsed := g.Syntax().(*syntax.Graph); parsed && g.Span().File == d.name {
			d.graphs[g.Name()] = g
		}
	}
}

func (s *Server) publish(d *document) {
	out := []Diagnostic{}
	for _, x := range d.diags {
		if x.Subject.File != d.name {
			continue
		}
		out = append(out, s.toDiagnostic(d.root, d.text, x))
	}
	v := d.version
	s.notify("textDocument/publishDiagnostics", publishDiagnosticsParams{URI: d.uri, Version: &v, Diagnostics: out})
}

// publishClosed publishes the diagnostics of the files that open
// documents import but that are not open themselves (an error in an
// imported file shows in the editor's problem list), and clears those of
// files no open document reaches any more.
func (s *Server) publishClosed() {
	open := map[string]bool{}
	for uri := range s.docs {
		open[uri] = true
	}
	type fileDiags struct {
		root, name string
		list       diag.List
	}
	found := map[string]*fileDiags{}
	for _, d := range s.sameRootAll() {
		for _, x := range d.diags {
			if x.Subject.File == "" || x.Subject.File == d.name {
				continue
			}
			uri := uriIn(d.root, x.Subject.File)
			if open[uri] {
				continue
			}
			fd := found[uri]
			if fd == nil {
				fd = &fileDiags{root: d.root, name: x.Subject.File}
				found[uri] = fd
			}
			fd.list.Add(x)
		}
	}
	uris := make([]string, 0, len(found)+len(s.extra))
	for uri := range found {
		uris = append(uris, uri)
	}
	for uri := range s.extra {
		if found[uri] == nil {
			uris = append(uris, uri)
		}
	}
	slices.Sort(uris)
	next := map[string]bool{}
	for _, uri := range uris {
		fd := found[uri]
		if fd == nil {
			if !open[uri] {
				s.notify("textDocument/publishDiagnostics", publishDiagnosticsParams{URI: uri, Diagnostics: []Diagnostic{}})
			}
			continue
		}
		t, ok := s.textOf(fd.root, fd.name)
		if !ok {
			continue
		}
		out := []Diagnostic{}
		for _, x := range fd.list.Sorted() {
			out = append(out, s.toDiagnostic(fd.root, t, x))
		}
		s.notify("textDocument/publishDiagnostics", publishDiagnosticsParams{URI: uri, Diagnostics: out})
		next[uri] = true
	}
	s.extra = next
}

// sameRootAll is every open document, by URI.
func (s *Server) sameRootAll() []*document {
	out := make([]*document, 0, len(s.docs))
	for _, d := range s.docs {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b *document) int { return strings.Compare(a.uri, b.uri) })
	return out
}

func (s *Server) toDiagnostic(root string, t *text, x diag.Diagnostic) Diagnostic {
	sev := severityInformation
	switch x.Severity {
	case diag.Error:
		sev = severityError
	case diag.Warning:
		sev = severityWarning
	}
	msg := x.Summary
	if x.Detail != "" {
		msg += "\n" + x.Detail
	}
	out := Diagnostic{Range: t.rangeOf(x.Subject), Severity: sev, Code: string(x.Code), Source: "agentc", Message: msg}
	if name, ok := suggestion(x.Detail); ok {
		out.Data, _ = json.Marshal(fixData{Replace: name})
	}
	for _, r := range x.Related {
		loc, ok := s.location(root, r.Span)
		if !ok {
			continue
		}
		out.RelatedInformation = append(out.RelatedInformation, DiagnosticRelatedInformation{Location: loc, Message: r.Message})
	}
	return out
}

// textOf returns the text of a root-relative file: the open buffer, else
// the disk.
func (s *Server) textOf(root, name string) (*text, bool) {
	for _, e := range s.docs {
		if e.root == root && e.name == name {
			return e.text, true
		}
	}
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		return nil, false
	}
	return newText(src), true
}

// location converts a span of a root's file into an LSP location.
func (s *Server) location(root string, sp diag.Span) (Location, bool) {
	if sp.File == "" {
		return Location{}, false
	}
	t, ok := s.textOf(root, sp.File)
	if !ok {
		return Location{}, false
	}
	return Location{URI: uriOf(filepath.Join(root, filepath.FromSlash(sp.File))), Range: t.rangeOf(sp)}, true
}

// sameRoot returns the open documents checked in root, by name.
func (s *Server) sameRoot(root string) []*document {
	var out []*document
	for _, e := range s.docs {
		if e.root == root {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *document) int { return strings.Compare(a.name, b.name) })
	return out
}

// overlay is the disk of one root under the open buffers.
type overlay struct {
	base  fs.FS
	files map[string][]byte
}

func (o *overlay) Open(name string) (fs.File, error) {
	if b, ok := o.files[name]; ok {
		return &memFile{name: name, data: b}, nil
	}
	return o.base.Open(name)
}

func (o *overlay) ReadFile(name string) ([]byte, error) {
	if b, ok := o.files[name]; ok {
		return slices.Clone(b), nil
	}
	return fs.ReadFile(o.base, name)
}

func (o *overlay) Stat(name string) (fs.FileInfo, error) {
	if b, ok := o.files[name]; ok {
		return memInfo{name: name, size: len(b)}, nil
	}
	return fs.Stat(o.base, name)
}

type memFile struct {
	name string
	data []byte
	off  int
}

func (f *memFile) Stat() (fs.FileInfo, error) { return memInfo{name: f.name, size: len(f.data)}, nil }
func (f *memFile) Close() error               { return nil }
func (f *memFile) Read(p []byte) (int, error) {
	if f.off >= len(f.data) {
		return 0, io.EOF
	}
	n := copy(p, f.data[f.off:])
	f.off += n
	return n, nil
}

type memInfo struct {
	name string
	size int
}

func (i memInfo) Name() string       { return filepath.Base(i.name) }
func (i memInfo) Size() int64        { return int64(i.size) }
func (i memInfo) Mode() fs.FileMode  { return 0o444 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
