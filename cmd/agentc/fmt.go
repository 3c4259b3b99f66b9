package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/lang/format"
)

func newFmtCmd(a *app) *cobra.Command {
	var write, check, showDiff bool
	cmd := &cobra.Command{
		Use:   "fmt [FILES|DIRS...]",
		Short: "Format .agent files canonically",
		Long: `Fmt prints the canonical form of each file (or of standard input when no
file is named).

  -w        rewrite files in place
  --check   print the files whose formatting differs; exit 1 if any (the
            canonical form uses LF line endings: a CRLF file is listed, and
            stderr says so)
  -d        print a unified diff instead of the formatted text

A file with syntax errors is reported and left untouched (exit 1).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			tuneGCForBatch()
			if len(args) == 0 {
				if write {
					return usageErr(fmt.Errorf("-w needs file arguments"))
				}
				src, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return usageErr(fmt.Errorf("read stdin: %w", err))
				}
				return fmtOne(a, "<stdin>", src, false, check, showDiff)
			}
			files, err := project.Files(args)
			if err != nil {
				return usageErr(err)
			}
			var firstErr error
			for _, name := range files {
				src, err := os.ReadFile(name)
				if err != nil {
					return usageErr(fmt.Errorf("read %s: %w", name, err))
				}
				if err := fmtOne(a, name, src, write, check, showDiff); err != nil && firstErr == nil {
					firstErr = err
				}
			}
			return firstErr
		},
	}
	cmd.Flags().BoolVarP(&write, "write", "w", false, "write the result to the file instead of stdout")
	cmd.Flags().BoolVar(&check, "check", false, "list files whose formatting differs and exit 1 if any")
	cmd.Flags().BoolVarP(&showDiff, "diff", "d", false, "print diffs instead of formatted text")
	return cmd
}

// fmtOne formats one file (format.Apply) in the mode the flags pick:
// --check over -d over -w over printing.
func fmtOne(a *app, name string, src []byte, write, check, showDiff bool) error {
	mode := format.ModePrint
	switch {
	case check:
		mode = format.ModeCheck
	case showDiff:
		mode = format.ModeDiff
	case write:
		mode = format.ModeWrite
	}
	err := format.Apply(mode, name, src, a.stdout, a.stderr, a.warn)
	switch {
	case errors.Is(err, format.ErrSyntax) || errors.Is(err, format.ErrNotCanonical):
		return failed
	case err != nil:
		return usageErr(err)
	}
	return nil
}
