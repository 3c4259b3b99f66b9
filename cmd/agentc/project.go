package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// check loads and checks each root file as its own program and returns
// every diagnostic (de-duplicated across roots that share imports) in
// display form, plus the Info of each root.
func (p *project) check(files []string) ([]diag.Diagnostic, diag.Sources, map[string]*compiler.Info, error) {
	cfg := p.config()
	type loaded struct {
		name string
		pkg  *compiler.Package
		ds   []diag.Diagnostic
	}
	var roots []loaded
	imported := map[string]bool{}
	for _, f := range files {
		name, err := p.name(f)
		if err != nil {
			return nil, nil, nil, err
		}
		pkg, ds := compiler.Load(cfg, name)
		roots = append(roots, loaded{name, pkg, ds})
		for _, deps := range pkg.Imports {
			for _, d := range deps {
				imported[d] = true
			}
		}
	}
	var all diag.List
	infos := map[string]*compiler.Info{}
	for i, r := range roots {
		all.Append(r.ds...)
		info, ds := compiler.Check(cfg, r.pkg)
		for _, d := range ds {
			// "Never used" speaks for the program being checked: only its
			// root file, and only when no other file imports it (a library
			// file's declarations are used by its importers).
			if d.Code == diag.UnusedDecl && (d.Subject.File != r.name || imported[r.name]) {
				continue
			}
			all.Add(d)
		}
		infos[files[i]] = info
	}
	ds, srcs := p.localize(all.Sorted())
	return ds, srcs, infos, nil
}

// compile loads one root file and compiles it. It returns the program (nil
// when any error was found, loading included) and every diagnostic in
// display form; like check, "never used" warnings speak only for the root
// file.
func (p *project) compile(file string) (*bytecode.Program, []diag.Diagnostic, diag.Sources, error) {
	name, err := p.name(file)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg := p.config()
	pkg, lds := compiler.Load(cfg, name)
	var all diag.List
	all.Append(lds...)
	var prog *bytecode.Program
	if n, _ := diag.CountErrors(lds); n == 0 {
		imported := false
		for _, deps := range pkg.Imports {
			imported = imported || slices.Contains(deps, name)
		}
		var cds []diag.Diagnostic
		prog, _, cds = compiler.Compile(cfg, pkg)
		for _, d := range cds {
			if d.Code == diag.UnusedDecl && (d.Subject.File != name || imported) {
				continue
			}
			all.Add(d)
		}
	}
	ds, srcs := p.localize(all.Sorted())
	return prog, ds, srcs, nil
}
