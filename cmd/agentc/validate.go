package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/lang/diag"
)

func newValidateCmd(a *app) *cobra.Command {
	cmd, format := command(&cobra.Command{
		Use:   "validate FILES|DIRS...",
		Short: "Check .agent files and report every problem with file:line:col",
		Long: `Validate parses and checks every .agent file named (directories are walked,
skipping testdata and hidden folders) and reports all diagnostics.

Exit status: 0 when there are no errors (warnings allowed), 1 when any error
was found, 2 on a usage or I/O problem.`,
		Args: cobra.MinimumNArgs(1),
	}, func(cmd *cobra.Command, args []string, format *string) error {
		tuneGCForBatch()
		switch *format {
		case "text", "json", "sarif":
		default:
			return usageErr(fmt.Errorf("unknown --format %q (want text, json or sarif)", *format))
		}
		ds, srcs, err := a.batch().Check(args)
		if err != nil {
			return usageErr(err)
		}
		if err := renderDiags(a, *format, ds, srcs); err != nil {
			return usageErr(err)
		}
		if nerr, _ := diag.CountErrors(ds); nerr > 0 {
			return failed
		}
		return nil
	})
	cmd.Flags().StringVar(format, "format", "text", "output format: text, json or sarif")
	return cmd
}

// textDiags writes diagnostics as text to stderr (renderDiags).
func (a *app) textDiags(ds []diag.Diagnostic, srcs diag.Sources) error {
	return renderDiags(a, "text", ds, srcs)
}

// renderDiags writes diagnostics in the chosen format (diag.Write): text
// to stderr, json and sarif to stdout.
func renderDiags(a *app, format string, ds []diag.Diagnostic, srcs diag.Sources) error {
	w := a.stdout
	if format == "text" {
		w = a.stderr
	}
	return diag.Write(w, format, ds, srcs, agentcVersion())
}
