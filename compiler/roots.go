package compiler

import (
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/lang/diag"
)

// CheckRoots loads and checks each root file as its own program and returns
// every diagnostic, Load's and Check's, de-duplicated across roots that
// share imports and filtered by ForRoot (a root imported by another is a
// library), sorted. agentc validate reports them.
func CheckRoots(cfg Config, roots ...string) []diag.Diagnostic {
	pkgs := make([]*Package, len(roots))
	var all diag.List
	for i, name := range roots {
		var ds []diag.Diagnostic
		pkgs[i], ds = Load(cfg, name)
		all.Append(ds...)
	}
	for i, name := range roots {
		_, ds := Check(cfg, pkgs[i])
		all.Append(ForRoot(ds, name, pkgs...)...)
	}
	return all.Sorted()
}

// Build loads root and, when loading found no error, compiles it, keeping
// the "never used" warnings that speak for root (ForRoot). It returns the
// program (nil on any error), Compile's Output (nil when loading failed)
// and every diagnostic, sorted.
func Build(cfg Config, root string) (*bytecode.Program, *Output, []diag.Diagnostic) {
	pkg, lds := Load(cfg, root)
	var all diag.List
	all.Append(lds...)
	if n, _ := diag.CountErrors(lds); n > 0 {
		return nil, nil, all.Sorted()
	}
	prog, out, cds := Compile(cfg, pkg)
	all.Append(ForRoot(cds, root, pkg)...)
	return prog, out, all.Sorted()
}
