package compiler

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Config is what Load and Check need besides the source.
type Config struct {
	// FS holds the source files (os.DirFS in the CLI, fstest.MapFS in tests).
	FS fs.FS
	// Root is the module root inside FS ("" or "." for FS's root). Imports,
	// skill folders and fixtures may not leave it; file names in spans are
	// relative to it.
	Root string
	// Universe is the compiler's view of the stdlib (stdlib.Universe());
	// nil is the empty universe: no functions, builtin tools or error kinds.
	Universe *Universe
	// IgnoreMCPLocks skips the MCP lock files (spec/tools.md "Pinned
	// schemas"): no pinned schemas, effects or drift diagnostics, and no
	// lock hash in the program. agentc mcp lock compiles this way the
	// program whose servers it is about to pin.
	IgnoreMCPLocks bool
}

func (c Config) root() string {
	r := path.Clean(strings.TrimPrefix(c.Root, "./"))
	if r == "" || r == "/" {
		return "."
	}
	return r
}

// fsPath turns a name relative to the root into a path inside FS.
func (c Config) fsPath(name string) string {
	if r := c.root(); r != "." {
		return path.Join(r, name)
	}
	return name
}

// Package is a set of parsed files: the roots and everything they import.
type Package struct {
	// Files are every loaded file, sorted by name (relative to the root).
	Files []*syntax.File
	// Roots are the names of the root files, in the order given.
	Roots []string
	// Imports maps a file name to the names of the files it imports, in
	// source order (files that could not be loaded are left out).
	Imports map[string][]string

	byName   map[string]*syntax.File
	srcBytes int // total source size, to size Check's tables
}

// File returns the loaded file with the given name, or nil.
func (p *Package) File(name string) *syntax.File {
	if p == nil {
		return nil
	}
	return p.byName[name]
}

// Load reads the root .agent files and every file they import, parsing each
// once. Import paths are relative to the importing file; an import that
// leaves cfg.Root is an error. Load always returns a Package holding every
// file it could read.
func Load(cfg Config, roots ...string) (*Package, []diag.Diagnostic) {
	l := &loader{cfg: cfg, pkg: &Package{Imports: map[string][]string{}, byName: map[string]*syntax.File{}}}
	if cfg.FS == nil {
		l.diags.Add(diag.Diagnostic{Severity: diag.Error, Code: diag.IOError, Summary: "no file system to load from"})
		return l.pkg, l.diags.Sorted()
	}
	for _, r := range roots {
		name, ok := l.rootName(r)
		if !ok {
			l.diags.Errorf(diag.ImportNotFound, diag.Span{File: r}, "%s is outside the module root %s", r, cfg.root())
			continue
		}
		if l.load(name, diag.Span{File: name}) {
			l.pkg.Roots = append(l.pkg.Roots, name)
		}
	}
	for len(l.queue) > 0 {
		f := l.queue[0]
		l.queue = l.queue[1:]
		l.imports(f)
	}
	l.cycles()
	sort.Slice(l.pkg.Files, func(i, j int) bool { return l.pkg.Files[i].Name < l.pkg.Files[j].Name })
	return l.pkg, l.diags.Sorted()
}

type loader struct {
	cfg   Config
	pkg   *Package
	queue []*syntax.File
	diags diag.List
	// importAt records the import declaration behind each import edge.
	importAt map[[2]string]*syntax.Import
}

// rootName converts a root path (relative to FS) to a name relative to
// cfg.Root.
func (l *loader) rootName(p string) (string, bool) {
	p = path.Clean(strings.ReplaceAll(p, "\\", "/"))
	if r := l.cfg.root(); r != "." {
		if !strings.HasPrefix(p, r+"/") {
			return "", false
		}
		p = strings.TrimPrefix(p, r+"/")
	}
	if p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/") {
		return "", false
	}
	return p, true
}

// load reads and parses name unless it is loaded already. It reports read
// errors at span and returns whether the file is (now) loaded.
func (l *loader) load(name string, at diag.Span) bool {
	if _, ok := l.pkg.byName[name]; ok {
		return true
	}
	src, err := fs.ReadFile(l.cfg.FS, l.cfg.fsPath(name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			l.diags.Errorf(diag.ImportNotFound, at, "file %s not found", name)
		} else {
			l.diags.Errorf(diag.IOError, at, "cannot read %s: %v", name, trimPathErr(err))
		}
		return false
	}
	l.pkg.srcBytes += len(src)
	f, ds := syntax.Parse(name, src)
	l.diags.Append(ds...)
	l.pkg.byName[name] = f
	l.pkg.Files = append(l.pkg.Files, f)
	l.queue = append(l.queue, f)
	return true
}

func trimPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// imports resolves and loads the imports of f.
func (l *loader) imports(f *syntax.File) {
	seen := map[string]*syntax.Import{}
	for _, d := range f.Decls {
		imp, ok := d.(*syntax.Import)
		if !ok || imp.Path == nil {
			continue
		}
		at := imp.Path.Span()
		lit, ok := imp.Path.Literal()
		if !ok {
			l.diags.Errorf(NotConstant, at, "import path must be a literal string")
			continue
		}
		target, err := resolveRel(f.Name, lit)
		if err != nil {
			l.diags.Errorf(diag.ImportNotFound, at, "cannot import %q: %v", lit, err)
			continue
		}
		if prev, dup := seen[target]; dup {
			l.diags.Warnf(diag.DuplicateImport, at, "%s is already imported", target).Related =
				[]diag.Related{{Message: "first imported here", Span: prev.Path.Span()}}
			continue
		}
		seen[target] = imp
		if target == f.Name {
			l.diags.Errorf(diag.ImportCycle, at, "import cycle: %s imports itself", f.Name)
			continue
		}
		if !l.load(target, at) {
			continue
		}
		l.pkg.Imports[f.Name] = append(l.pkg.Imports[f.Name], target)
		if l.importAt == nil {
			l.importAt = map[[2]string]*syntax.Import{}
		}
		l.importAt[[2]string{f.Name, target}] = imp
	}
}

// resolveRel resolves an import or file path written in file from (relative
// to from's folder) to a clean name relative to the module root.
func resolveRel(from, p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("empty path")
	case strings.Contains(p, "\\"):
		return "", errors.New("paths use forward slashes")
	case strings.HasPrefix(p, "/") || (len(p) > 1 && p[1] == ':'):
		return "", errors.New("path is absolute; write it relative to the importing file")
	}
	out := path.Clean(path.Join(path.Dir(from), p))
	if out == ".." || strings.HasPrefix(out, "../") {
		return "", fmt.Errorf("path leaves the module root")
	}
	return out, nil
}

// cycles reports every import cycle once, at the import that closes it.
func (l *loader) cycles() {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var visit func(n string)
	visit = func(n string) {
		color[n] = grey
		stack = append(stack, n)
		for _, m := range l.pkg.Imports[n] {
			switch color[m] {
			case white:
				visit(m)
			case grey:
				i := len(stack) - 1
				for i > 0 && stack[i] != m {
					i--
				}
				chain := append(append([]string(nil), stack[i:]...), m)
				imp := l.importAt[[2]string{n, m}]
				l.diags.Errorf(diag.ImportCycle, imp.Path.Span(), "import cycle: %s", strings.Join(chain, " -> "))
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
	}
	names := make([]string, 0, len(l.pkg.byName))
	for n := range l.pkg.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	// Visit roots first so cycles are reported from the root's perspective.
	for _, n := range append(append([]string(nil), l.pkg.Roots...), names...) {
		if color[n] == white {
			visit(n)
		}
	}
}
