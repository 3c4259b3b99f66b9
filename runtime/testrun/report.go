package testrun

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentc/agentc/compiler/bytecode"
)

// Report is one test's outcome as agentc test prints it: String for a
// person, its JSON (one object a line) with --json.
type Report struct {
	File     string   `json:"file"`
	Name     string   `json:"name"`
	Pass     bool     `json:"pass"`
	Failures []string `json:"failures,omitempty"`
	Status   string   `json:"status,omitempty"`
	Elapsed  string   `json:"elapsed"`
}

// String is "PASS FILE: NAME (ELAPSED)" (or FAIL) and a line per failure.
func (r Report) String() string {
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s (%s)\n", verdict, r.File, r.Name, r.Elapsed)
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "    %s\n", f)
	}
	return b.String()
}

// File runs every test block of prog, compiled from file (the name
// reports show), in order, handing each test's report to each as it ends,
// and returns the edge coverage of the graphs the tests ran.
func File(ctx context.Context, prog *bytecode.Program, file string, cfg Config, each func(Report)) []GraphCoverage {
	var cov Coverage
	for i := range prog.Tests {
		r := Run(ctx, prog, &prog.Tests[i], cfg)
		cov.Add(r)
		each(Report{File: file, Name: r.Name, Pass: r.Pass, Failures: r.Failures, Status: r.Status,
			Elapsed: r.Elapsed.Round(time.Millisecond).String()})
	}
	return cov.Graphs(prog)
}
