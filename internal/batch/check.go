package batch

import (
	"fmt"

	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/lang/diag"
)

// Check is agentc validate: the diagnostics of the files args name
// (project.Files: a directory stands for its .agent files), checked
// together in the project of the first, with their sources. err is a
// problem of the command itself (no .agent file, a file or directory that
// does not read, a project that does not open).
func (r Run) Check(args []string) ([]diag.Diagnostic, diag.Sources, error) {
	files, err := project.Files(args)
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("no .agent files in %v", args)
	}
	proj, err := r.Open(files[0])
	if err != nil {
		return nil, nil, err
	}
	return proj.Check(files)
}
