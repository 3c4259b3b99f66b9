// Package benchsrc compiles the benches' workflows, .agent source held in
// memory, with the standard library's universe.
package benchsrc

import (
	"fmt"
	"testing/fstest"

	"github.com/agentc/agentc/compiler"
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/stdlib"
)

// Compile loads and compiles src as the one file name; any error diagnostic
// fails it.
func Compile(name, src string) (*bytecode.Program, error) {
	prog, _, err := CompileBytes(name, src)
	return prog, err
}

// CompileBytes is Compile with the program's encoding, as agentc has it
// after compiling (for a Runner that loads the program once).
func CompileBytes(name, src string) (*bytecode.Program, []byte, error) {
	cfg := compiler.Config{FS: fstest.MapFS{name: {Data: []byte(src)}}, Root: ".", Universe: stdlib.Universe()}
	prog, out, ds := compiler.Build(cfg, name)
	if n, _ := diag.CountErrors(ds); n > 0 || prog == nil {
		return nil, nil, fmt.Errorf("compile %s: %v", name, ds)
	}
	return prog, out.Bytes, nil
}
