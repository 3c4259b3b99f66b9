// Package mcplocks is agentc mcp lock over a command's files: each file
// compiled without its lock files, the MCP servers its program declares
// listed (assemble.LockMCP) and their lock files written next to the
// declaring files (assemble.WriteLocks; spec/tools.md "Pinned schemas").
package mcplocks

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/runtime/assemble"
)

// Run is one agentc mcp lock: where its files' projects come from and
// where what it does is said.
type Run struct {
	// Open is the project of a file (a .agent file the command names).
	Open func(file string) (*project.Project, error)
	// Diags shows a file's diagnostics.
	Diags func([]diag.Diagnostic, diag.Sources) error
	// Out gets a line per lock file ("wrote NAME", "NAME unchanged"); Err
	// the notes, each prefixed with Prefix.
	Out, Err io.Writer
	Prefix   string
	// Timeout bounds the listing of one file's servers.
	Timeout time.Duration
}

// Lock locks files in order. ok is false when a file did not compile or
// its servers could not be listed (that file's locks are left as they
// were, the others are written); err is a problem of the command itself
// (a project that does not open, a diagnostic or lock file that cannot be
// written), which stops it at once.
func (r Run) Lock(ctx context.Context, files []string) (ok bool, err error) {
	ok = true
	written := map[string]bool{}
	for _, file := range files {
		proj, err := r.Open(file)
		if err != nil {
			return false, err
		}
		proj.IgnoreMCPLocks = true
		prog, _, ds, srcs, err := proj.Compile(file)
		if err != nil {
			return false, err
		}
		if len(ds) > 0 {
			if err := r.Diags(ds, srcs); err != nil {
				return false, err
			}
		}
		if n, _ := diag.CountErrors(ds); n > 0 || prog == nil {
			ok = false
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, r.Timeout)
		locks, err := assemble.LockMCP(cctx, prog, proj.Root, os.LookupEnv)
		cancel()
		if err != nil {
			fmt.Fprintf(r.Err, "%s%s: %v\n", r.Prefix, file, err)
			ok = false
			continue
		}
		if len(locks) == 0 && len(files) == 1 {
			fmt.Fprintf(r.Err, "%s%s declares no mcp tools; nothing to lock\n", r.Prefix, file)
		}
		writes, err := assemble.WriteLocks(proj.Root, locks, written)
		for _, w := range writes {
			if w.Changed {
				fmt.Fprintf(r.Out, "wrote %s\n", proj.Display(w.Name))
			} else {
				fmt.Fprintf(r.Out, "%s unchanged\n", proj.Display(w.Name))
			}
		}
		if err != nil {
			return false, err
		}
	}
	return ok, nil
}
