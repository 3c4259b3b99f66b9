package assemble

import (
	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
)

// ProgramHash is the hash a Runner assembled over p records on its runs
// (runtime.ProgramHash with the functions Funcs binds): what agentc
// checkpoints fork --program compares a run's program with.
func ProgramHash(p *bytecode.Program) (string, error) {
	return runtime.ProgramHash(p, Funcs(p, nil, nil))
}
