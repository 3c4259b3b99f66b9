package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/editors/lsp"
	"github.com/agentc/agentc/stdlib"
)

func newLSPCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "lsp",
		Short: "Run the language server on standard input and output",
		Long: `Lsp speaks the Language Server Protocol on standard input and output, for
editors: diagnostics as you type (the codes of agentc validate), hover,
go to definition, references, rename, completion, document symbols,
formatting (agentc fmt) and quick fixes. Open buffers take the place of the
files on disk, so imports resolve against unsaved edits.

Exit status: 0 after the client's shutdown and exit (or the end of input),
1 when the client exits without shutdown.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			err := lsp.Serve(cmd.Context(), cmd.InOrStdin(), a.stdout, lsp.Options{
				Universe: stdlib.Universe(),
				Version:  agentcVersion(),
				Log:      a.stderr,
			})
			if errors.Is(err, lsp.ErrExitWithoutShutdown) {
				return failed
			}
			if err != nil {
				return failErr(err)
			}
			return nil
		},
	}
}
