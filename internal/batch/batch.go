// Package batch runs the commands that act on the .agent files a person
// names, file by file, each compiled in its project: agentc test (the
// test blocks run offline, Test) and agentc mcp lock (the MCP servers a
// program declares pinned in lock files, Lock).
package batch

import (
	"io"

	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/lang/diag"
)

// Run is where a batch command's files' projects come from and where what
// it does is said.
type Run struct {
	// Open is the project of a file the command names.
	Open func(file string) (*project.Project, error)
	// Diags shows the diagnostics of a file.
	Diags func([]diag.Diagnostic, diag.Sources) error
	// Out gets what the command reports (a line per test or lock file);
	// Err the notes, each prefixed with Prefix.
	Out, Err io.Writer
	Prefix   string
}
