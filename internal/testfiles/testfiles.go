// Package testfiles is agentc test over a command's files: each file
// compiled in its project, its test blocks run offline (testrun.File), a
// report per test and the edge coverage of each graph the tests ran.
package testfiles

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/runtime/testrun"
)

// Run is one agentc test: where its project comes from and where what it
// finds is said.
type Run struct {
	// Open is the project of the first file named.
	Open func(file string) (*project.Project, error)
	// Diags shows the diagnostics of a file that does not compile.
	Diags func([]diag.Diagnostic, diag.Sources) error
	// Out gets the reports (PASS or FAIL per test) and the coverage lines;
	// Err a file that cannot be read, prefixed with Prefix.
	Out, Err io.Writer
	Prefix   string
	// JSON prints one JSON object per test instead, and no coverage.
	JSON bool
}

// Args runs the tests of the files args name (project.TestFiles: a
// directory stands for its .agent files that declare a test block) in the
// project of the first. err is a problem of the command itself (a file or
// directory that does not read, a project that does not open).
func (r Run) Args(ctx context.Context, args []string) (passed, total int, err error) {
	files, err := project.TestFiles(args)
	if err != nil {
		return 0, 0, err
	}
	first := ""
	if len(files) > 0 {
		first = files[0]
	}
	proj, err := r.Open(first)
	if err != nil {
		return 0, 0, err
	}
	passed, total = r.Files(ctx, proj, files)
	return passed, total, nil
}

// Files runs the tests of each file of proj, in order, and returns how many
// passed and how many there were.
func (r Run) Files(ctx context.Context, proj *project.Project, files []string) (passed, total int) {
	for _, f := range files {
		p, n := r.File(ctx, proj, f)
		passed, total = passed+p, total+n
	}
	return passed, total
}

// File runs the tests of one file and returns how many passed and how
// many there were (a file that does not compile fails each of its test
// blocks, at least one).
func (r Run) File(ctx context.Context, proj *project.Project, file string) (passed, total int) {
	prog, enc, ds, srcs, err := proj.Compile(file)
	if err != nil {
		fmt.Fprintf(r.Err, "%s%v\n", r.Prefix, err)
		return 0, 1
	}
	if n, _ := diag.CountErrors(ds); n > 0 || prog == nil {
		_ = r.Diags(ds, srcs)
		blocks := project.TestBlocks(file)
		fmt.Fprintf(r.Out, "FAIL %s (does not compile: %d test(s) not run)\n", file, blocks)
		return 0, blocks
	}
	cfg := testrun.Config{Root: proj.Root, Display: proj.Display, Verified: true, Encoding: enc}
	cov := testrun.File(ctx, prog, file, cfg, func(rep testrun.Report) {
		if total++; rep.Pass {
			passed++
		}
		if !r.JSON {
			fmt.Fprint(r.Out, rep)
		} else if b, err := json.Marshal(rep); err == nil {
			fmt.Fprintf(r.Out, "%s\n", b)
		}
	})
	for _, c := range cov {
		if !r.JSON {
			fmt.Fprintf(r.Out, "coverage %s: graph %s: %d/%d edges\n", file, c.Graph, c.Taken, c.Total)
		}
	}
	return passed, total
}
