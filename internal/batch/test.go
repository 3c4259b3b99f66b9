package batch

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/runtime/testrun"
)

// Test is agentc test: it runs the test blocks of the files args name
// (project.TestFiles: a directory stands for its .agent files that
// declare a test block) in the project of the first, offline
// (testrun.File). err is a problem of the command itself (a file or
// directory that does not read, a project that does not open). Out gets
// PASS or FAIL per test and the edge coverage of each graph the tests ran,
// or with asJSON one JSON object per test and no coverage.
func (r Run) Test(ctx context.Context, args []string, asJSON bool) (passed, total int, err error) {
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
	passed, total = r.testFiles(ctx, proj, files, asJSON)
	return passed, total, nil
}

// testFiles runs the tests of each file of proj, in order, and returns
// how many passed and how many there were.
func (r Run) testFiles(ctx context.Context, proj *project.Project, files []string, asJSON bool) (passed, total int) {
	for _, f := range files {
		p, n := r.testFile(ctx, proj, f, asJSON)
		passed, total = passed+p, total+n
	}
	return passed, total
}

// testFile runs the tests of one file and returns how many passed and how
// many there were (a file that does not compile fails each of its test
// blocks, at least one).
func (r Run) testFile(ctx context.Context, proj *project.Project, file string, asJSON bool) (passed, total int) {
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
		if !asJSON {
			fmt.Fprint(r.Out, rep)
		} else if b, err := json.Marshal(rep); err == nil {
			fmt.Fprintf(r.Out, "%s\n", b)
		}
	})
	for _, c := range cov {
		if !asJSON {
			fmt.Fprintf(r.Out, "coverage %s: graph %s: %d/%d edges\n", file, c.Graph, c.Taken, c.Total)
		}
	}
	return passed, total
}
