package compiler

import (
	"fmt"
	"slices"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/lang/syntax"
)

// Compile checks pkg and, when Check reports no error, lowers the checked
// program to bytecode (lower.go and the files next to it), seals it (encodes
// it once, recording its content hash and its state-schema hashes in the
// program) and verifies it. It returns the program (nil when there are
// errors), the Output (the program's encoding and hash, and the Info Check
// built; never nil), and every diagnostic, sorted: Check's, plus the few
// problems only lowering can see (a test answer that is not a literal, for
// example). Load's diagnostics are the caller's to report; a package holding
// a declaration that did not parse is not lowered.
//
// A program Compile returns has passed bytecode.Verify: load it with
// vm.NewVerified, and hand Output.Bytes to whatever stores it, rather than
// verifying or encoding it again.
//
// The result is deterministic: the same source gives the same bytes whatever
// the order of the files on the command line and of Go's map iteration.
func Compile(cfg Config, pkg *Package) (*bytecode.Program, *Output, []diag.Diagnostic) {
	info, ds := Check(cfg, pkg)
	out := &Output{Info: info}
	if n, _ := diag.CountErrors(ds); n > 0 {
		return nil, out, ds
	}
	if bad := badDecls(pkg); len(bad) > 0 {
		// Load reported these; Check leaves declarations that did not
		// parse out, so the program would silently miss them.
		return nil, out, append(ds, bad...)
	}
	prog, lds := safeLower(info)
	if len(lds) > 0 {
		var all diag.List
		all.Append(ds...)
		all.Append(lds...)
		ds = all.Sorted()
	}
	if prog == nil {
		return nil, out, ds
	}
	b, err := bytecode.Seal(prog)
	if err != nil {
		return nil, out, append(ds, internalError(fmt.Errorf("encode: %w", err)))
	}
	if err := bytecode.Verify(prog); err != nil {
		return nil, out, append(ds, internalError(fmt.Errorf("the lowered program does not verify: %w", err)))
	}
	out.Bytes, out.Hash = b, prog.Hash
	return prog, out, ds
}

// Output is what Compile produces besides the program.
type Output struct {
	// Bytes is the program's canonical encoding (bytecode.Encode): what an
	// .agb file and the store hold. nil when Compile returned no program.
	Bytes []byte
	// Hash is the program's content hash (the program's Hash, the last 32
	// bytes of Bytes).
	Hash [32]byte
	// Info is what Check built (also when there were errors).
	Info *Info
}

// ForRoot returns ds without the "never used" warnings that do not speak
// for the program whose root file is root: those about declarations of
// other files, and every one when a file of pkgs imports root (a library
// file's declarations are used by its importers). pkgs are the packages
// loaded together with root (its own included). agentc validate, compile,
// run and test apply it to what Check and Compile report.
func ForRoot(ds []diag.Diagnostic, root string, pkgs ...*Package) []diag.Diagnostic {
	imported := false
	for _, pkg := range pkgs {
		if pkg == nil {
			continue
		}
		for _, deps := range pkg.Imports {
			imported = imported || slices.Contains(deps, root)
		}
	}
	var out []diag.Diagnostic
	for _, d := range ds {
		if d.Code == diag.UnusedDecl && (d.Subject.File != root || imported) {
			continue
		}
		out = append(out, d)
	}
	return out
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
