// Package project is where a command reads .agent files from: a root
// directory (the nearest ancestor of the file the command names, else of
// the working directory, holding agentc.yaml or .git) that imports, skills
// and fixtures may not leave, the compiler's configuration over it, the
// source files named on a command line, and diagnostics rewritten for
// display. Names inside the compiler are relative to the root; names shown
// to the user are relative to the working directory.
package project

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/lang/diag"
)

// Project is a root and the working directory names are shown against.
type Project struct {
	Root     string // absolute
	WD       string // absolute
	universe *compiler.Universe
	// IgnoreMCPLocks compiles without the MCP lock files
	// (compiler.Config.IgnoreMCPLocks; agentc mcp lock).
	IgnoreMCPLocks bool
}

// OpenFor is the project of the file or folder path names (relative to the
// working directory or absolute): its root is the nearest ancestor of path
// holding agentc.yaml or .git, as the go command finds go.mod, so a file
// can be named from any folder (with no such folder above it, the working
// directory's project, as Open); names are still shown relative to the
// working directory. An empty path is Open.
func OpenFor(path string, u *compiler.Universe) (*Project, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	if path == "" {
		return At(wd, u), nil
	}
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(wd, path)
	}
	dir := abs
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		dir = filepath.Dir(abs)
	}
	if root, ok := findRoot(dir); ok {
		return &Project{Root: root, WD: wd, universe: u}, nil
	}
	return At(wd, u), nil // no marker above the file: the working directory's project
}

// At is the project of working directory wd (absolute).
func At(wd string, u *compiler.Universe) *Project {
	root, ok := findRoot(wd)
	if !ok {
		root = wd
	}
	return &Project{Root: root, WD: wd, universe: u}
}

// findRoot is the nearest ancestor of dir (absolute) holding agentc.yaml or
// .git; ok is false when there is none.
func findRoot(start string) (root string, ok bool) {
	for dir := start; ; {
		if exists(filepath.Join(dir, "agentc.yaml")) || exists(filepath.Join(dir, ".git")) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// Config is the compiler's configuration: the project's files and its
// universe.
func (p *Project) Config() compiler.Config {
	return compiler.Config{FS: os.DirFS(p.Root), Root: ".", Universe: p.universe, IgnoreMCPLocks: p.IgnoreMCPLocks}
}

// Name converts a user path into a root-relative, slash-separated name.
func (p *Project) Name(userPath string) (string, error) {
	abs := userPath
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(p.WD, userPath)
	}
	rel, err := filepath.Rel(p.Root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the project root %s", userPath, p.Root)
	}
	return filepath.ToSlash(rel), nil
}

// Display converts a root-relative name into a path relative to the
// working directory (slash-separated), for output.
func (p *Project) Display(name string) string {
	rel, err := filepath.Rel(p.WD, filepath.Join(p.Root, filepath.FromSlash(name)))
	if err != nil {
		return name
	}
	return filepath.ToSlash(rel)
}

// Shown is Display that also reads the named file into srcs under its
// display name, once (nil when it does not read), for diagnostics'
// snippets.
func (p *Project) Shown(srcs diag.Sources) func(name string) string {
	return func(name string) string {
		shown := p.Display(name)
		if _, ok := srcs[shown]; !ok {
			srcs[shown], _ = os.ReadFile(filepath.Join(p.Root, filepath.FromSlash(name)))
		}
		return shown
	}
}

// Localize rewrites the file names of diagnostics for display, reads the
// files they mention for snippets, and sorts them.
func (p *Project) Localize(ds []diag.Diagnostic) ([]diag.Diagnostic, diag.Sources) {
	srcs := diag.Sources{}
	shown := p.Shown(srcs)
	fix := func(s *diag.Span) {
		if s.File != "" {
			s.File = shown(s.File)
		}
	}
	out := make([]diag.Diagnostic, len(ds))
	for i, d := range ds {
		d.Related = append([]diag.Related(nil), d.Related...)
		fix(&d.Subject)
		d.Summary, d.Detail = p.displayPaths(d.Summary), p.displayPaths(d.Detail)
		for j := range d.Related {
			fix(&d.Related[j].Span)
			d.Related[j].Message = p.displayPaths(d.Related[j].Message)
		}
		out[i] = d
	}
	diag.Sort(out)
	return out, srcs
}

// pathWord is a word of a message that may be a root-relative file name:
// slash-separated name characters, after the start or a space, bracket or
// punctuation (not a quote: a quoted path is as its author wrote it).
var pathWord = regexp.MustCompile(`(^|[\s(\[,;=])([A-Za-z0-9_][A-Za-z0-9_.\-]*(?:/[A-Za-z0-9_.\-]+)*)`)

// displayPaths rewrites the root-relative file names in a message for
// display, as Localize does spans: a word with a slash whose first element
// is in the root, or a .agent file in the root.
func (p *Project) displayPaths(msg string) string {
	if msg == "" || p.WD == p.Root {
		return msg
	}
	return pathWord.ReplaceAllStringFunc(msg, func(m string) string {
		sub := pathWord.FindStringSubmatch(m)
		lead, word := sub[1], sub[2]
		first, _, slash := strings.Cut(word, "/")
		switch {
		case slash && exists(filepath.Join(p.Root, first)):
		case !slash && strings.HasSuffix(word, ".agent") && exists(filepath.Join(p.Root, word)):
		default:
			return m
		}
		return lead + p.Display(strings.TrimRight(word, ".")) + word[len(strings.TrimRight(word, ".")):]
	})
}

// Check checks each root file as its own program (compiler.CheckRoots)
// and returns every diagnostic in display form.
func (p *Project) Check(files []string) ([]diag.Diagnostic, diag.Sources, error) {
	names := make([]string, len(files))
	for i, f := range files {
		var err error
		if names[i], err = p.Name(f); err != nil {
			return nil, nil, err
		}
	}
	ds, srcs := p.Localize(compiler.CheckRoots(p.Config(), names...))
	return ds, srcs, nil
}

// Compile builds one root file (compiler.Build). It returns the program
// (nil when any error was found, loading included), verified, with its
// encoding, and every diagnostic in display form.
func (p *Project) Compile(file string) (*bytecode.Program, []byte, []diag.Diagnostic, diag.Sources, error) {
	name, err := p.Name(file)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	prog, out, all := compiler.Build(p.Config(), name)
	var enc []byte
	if out != nil {
		enc = out.Bytes
	}
	ds, srcs := p.Localize(all)
	return prog, enc, ds, srcs, nil
}

// Load is the program a command starts from file: a .agent file is
// compiled (Compile); any other file is bytecode, read, decoded and
// verified. Either way the program is verified once and returned with its
// encoding (nil when any error was found) and, for a source file, its
// diagnostics. A file that cannot be read or lies outside the root is an
// error; bytecode that does not decode or verify is a *BytecodeError.
func (p *Project) Load(file string) (*bytecode.Program, []byte, []diag.Diagnostic, diag.Sources, error) {
	if strings.HasSuffix(file, ".agent") {
		if _, err := os.Stat(file); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("read %s: %w", file, err)
		}
		return p.Compile(file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("read %s: %w", file, err)
	}
	prog, err := bytecode.Decode(b)
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, "hash") || strings.Contains(msg, "truncated") {
			err = fmt.Errorf("%w (the file is truncated or damaged; compile it again)", err)
		}
		return nil, nil, nil, nil, &BytecodeError{fmt.Errorf("%s: %w", file, err)}
	}
	if err := bytecode.Verify(prog); err != nil {
		return nil, nil, nil, nil, &BytecodeError{fmt.Errorf("%s does not verify:\n%w", file, err)}
	}
	return prog, b, nil, nil, nil
}

// BytecodeError is a file read as bytecode that does not decode or verify.
type BytecodeError struct{ Err error }

func (e *BytecodeError) Error() string { return e.Err.Error() }
func (e *BytecodeError) Unwrap() error { return e.Err }
