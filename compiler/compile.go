package compiler

import (
	"fmt"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Compile checks pkg and, when Check reports no error, lowers the checked
// program to bytecode (lower.go and the files next to it), encodes it (which
// sets the program's content hash and its state-schema hashes) and verifies
// it. It returns the program (nil when there are errors), the Info Check
// built, and every diagnostic, sorted: Check's, plus the few problems only
// lowering can see (a test answer that is not a literal, for example).
// Load's diagnostics are the caller's to report; a package holding a
// declaration that did not parse is not lowered.
//
// The result is deterministic: the same source gives the same bytes whatever
// the order of the files on the command line and of Go's map iteration.
func Compile(cfg Config, pkg *Package) (*bytecode.Program, *Info, []diag.Diagnostic) {
	info, ds := Check(cfg, pkg)
	if n, _ := diag.CountErrors(ds); n > 0 {
		return nil, info, ds
	}
	if bad := badDecls(pkg); len(bad) > 0 {
		// Load reported these; Check leaves declarations that did not
		// parse out, so the program would silently miss them.
		return nil, info, append(ds, bad...)
	}
	prog, lds := safeLower(info)
	if len(lds) > 0 {
		var all diag.List
		all.Append(ds...)
		all.Append(lds...)
		ds = all.Sorted()
	}
	if prog == nil {
		return nil, info, ds
	}
	if _, err := bytecode.Encode(prog); err != nil {
		return nil, info, append(ds, internalError(fmt.Errorf("encode: %w", err)))
	}
	if err := bytecode.Verify(prog); err != nil {
		return nil, info, append(ds, internalError(fmt.Errorf("the lowered program does not verify: %w", err)))
	}
	return prog, info, ds
}

// badDecls reports each declaration that did not parse (the caller is
// expected to stop on Load's diagnostics; this keeps Compile from lowering a
// partial program when it does not).
func badDecls(pkg *Package) []diag.Diagnostic {
	var out []diag.Diagnostic
	if pkg == nil {
		return nil
	}
	for _, f := range pkg.Files {
		for _, d := range f.Decls {
			if b, ok := d.(*syntax.BadDecl); ok {
				out = append(out, diag.Diagnostic{Severity: diag.Error, Code: diag.SyntaxError, Subject: b.Span(),
					Summary: "cannot compile a declaration with syntax errors"})
			}
		}
	}
	return out
}

// safeLower is lower with a panic (a bug: lowering trusts a clean Check)
// turned into an internal error, so that no input crashes a caller such as
// the language server.
func safeLower(info *Info) (prog *bytecode.Program, ds []diag.Diagnostic) {
	defer func() {
		if r := recover(); r != nil {
			prog, ds = nil, []diag.Diagnostic{internalError(fmt.Errorf("panic: %v", r))}
		}
	}()
	return lower(info)
}

// internalError reports a bug in lowering as a diagnostic (there is no
// source position to blame).
func internalError(err error) diag.Diagnostic {
	return diag.Diagnostic{Severity: diag.Error, Summary: "internal compiler error: " + err.Error()}
}
