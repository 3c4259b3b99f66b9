package batch

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/runtime/assemble"
)

// Lock is agentc mcp lock: it locks files in order, each compiled without
// its lock files, the MCP servers its program declares listed within
// timeout (assemble.LockMCP) and their lock files written next to the
// declaring files (assemble.WriteLocks; spec/tools.md "Pinned schemas"),
// a line per lock file on Out ("wrote NAME", "NAME unchanged"). ok is
// false when a file did not compile or its servers could not be listed
// (that file's locks are left as they were, the others are written); err
// is a problem of the command itself (a project that does not open, a
// diagnostic or lock file that cannot be written), which stops it at once.
func (r Run) Lock(ctx context.Context, files []string, timeout time.Duration) (ok bool, err error) {
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
		cctx, cancel := context.WithTimeout(ctx, timeout)
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
