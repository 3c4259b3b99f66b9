package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/stdlib"
)

// project is where .agent files are read from: a root directory (the
// nearest ancestor of the working directory holding agentc.yaml or .git,
// else the working directory) that imports, skills and fixtures may not
// leave. Names inside the compiler are relative to the root; names shown to
// the user are relative to the working directory.
type project struct {
	root string // absolute
	wd   string // absolute
}

func openProject() (*project, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	root := wd
	for dir := wd; ; {
		if exists(filepath.Join(dir, "agentc.yaml")) || exists(filepath.Join(dir, ".git")) {
			root = dir
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return &project{root: root, wd: wd}, nil
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// config is the compiler's configuration: the project's files and the
// stdlib table's universe (so `run = builtin.NAME` is checked).
func (p *project) config() compiler.Config {
	return compiler.Config{FS: os.DirFS(p.root), Root: ".", Universe: stdlib.Universe()}
}

// name converts a user path into a root-relative, slash-separated name.
func (p *project) name(userPath string) (string, error) {
	abs := userPath
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(p.wd, userPath)
	}
	rel, err := filepath.Rel(p.root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is outside the project root %s", userPath, p.root)
	}
	return filepath.ToSlash(rel), nil
}

// display converts a root-relative name into a path relative to the working
// directory (slash-separated), for output.
func (p *project) display(name string) string {
	rel, err := filepath.Rel(p.wd, filepath.Join(p.root, filepath.FromSlash(name)))
	if err != nil {
		return name
	}
	return filepath.ToSlash(rel)
}

// localize rewrites the file names of diagnostics for display and reads the
// files they mention for snippets.
func (p *project) localize(ds []diag.Diagnostic) ([]diag.Diagnostic, diag.Sources) {
	srcs := diag.Sources{}
	fix := func(s *diag.Span) {
		if s.File == "" {
			return
		}
		name := s.File
		s.File = p.display(name)
		if _, ok := srcs[s.File]; !ok {
			data, err := os.ReadFile(filepath.Join(p.root, filepath.FromSlash(name)))
			if err == nil {
				srcs[s.File] = data
			} else {
				srcs[s.File] = nil
			}
		}
	}
	out := make([]diag.Diagnostic, len(ds))
	for i, d := range ds {
		d.Related = append([]diag.Related(nil), d.Related...)
		fix(&d.Subject)
		for j := range d.Related {
			fix(&d.Related[j].Span)
		}
		out[i] = d
	}
	diag.Sort(out)
	return out, srcs
}

// check checks each root file as its own program (compiler.CheckRoots)
// and returns every diagnostic in display form.
func (p *project) check(files []string) ([]diag.Diagnostic, diag.Sources, error) {
	names := make([]string, len(files))
	for i, f := range files {
		var err error
		if names[i], err = p.name(f); err != nil {
			return nil, nil, err
		}
	}
	ds, srcs := p.localize(compiler.CheckRoots(p.config(), names...))
	return ds, srcs, nil
}

// compile builds one root file (compiler.Build). It returns the program
// (nil when any error was found, loading included), verified, with its
// encoding, and every diagnostic in display form.
func (p *project) compile(file string) (*bytecode.Program, []byte, []diag.Diagnostic, diag.Sources, error) {
	name, err := p.name(file)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	prog, out, all := compiler.Build(p.config(), name)
	var enc []byte
	if out != nil {
		enc = out.Bytes
	}
	ds, srcs := p.localize(all)
	return prog, enc, ds, srcs, nil
}
