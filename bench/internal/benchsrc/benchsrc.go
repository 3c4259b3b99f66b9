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
	cfg := compiler.Config{FS: fstest.MapFS{name: {Data: []byte(src)}}, Root: ".", Universe: stdlib.Universe()}
	pkg, ds := compiler.Load(cfg, name)
	if n, _ := diag.CountErrors(ds); n > 0 {
		return nil, fmt.Errorf("load %s: %v", name, ds)
	}
	prog, _, ds := compiler.Compile(cfg, pkg)
	if n, _ := diag.CountErrors(ds); n > 0 || prog == nil {
		return nil, fmt.Errorf("compile %s: %v", name, ds)
	}
	return prog, nil
}
