package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/compiler/bytecode"
)

func newCompileCmd(a *app) *cobra.Command {
	var out string
	var asJSON bool
	cmd := onProgram(a, &cobra.Command{
		Use:   "compile FILE [-o OUT.agb]",
		Short: "Compile a workflow to verified bytecode (.agb) and print its hash",
		Long: `Compile checks FILE and everything it imports, lowers it to bytecode,
verifies the result and writes it to OUT.agb (default: FILE with the .agb
extension; -o - writes to standard output). It prints the program's content
hash, which identifies it in checkpoints and the store, and for each
runnable the compiler's bound on one run (model calls, tokens, cost; the
fewest model calls a run makes) and its declared budget. The same source
always gives the same bytes.

Exit status: 0 when the program compiled (warnings allowed), 1 when any
error was found, 2 on a usage or I/O problem.`,
		Args: cobra.ExactArgs(1),
	}, func(args []string, prog *bytecode.Program, b []byte) error {
		hash := "sha256:" + hex.EncodeToString(prog.Hash[:])
		if out == "-" {
			if _, err := a.stdout.Write(b); err != nil {
				return usageErr(fmt.Errorf("write: %w", err))
			}
			fmt.Fprintln(a.stderr, hash)
			return nil
		}
		if out == "" {
			out = strings.TrimSuffix(args[0], ".agent") + ".agb"
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return usageErr(fmt.Errorf("write %s: %w", out, err))
		}
		if asJSON {
			return json.NewEncoder(a.stdout).Encode(struct {
				Version int                     `json:"version"`
				File    string                  `json:"file"`
				Output  string                  `json:"output"`
				Hash    string                  `json:"hash"`
				Bytes   int                     `json:"bytes"`
				Budgets []bytecode.BudgetReport `json:"budgets"`
			}{1, args[0], out, hash, len(b), prog.BudgetReports()})
		}
		fmt.Fprintf(a.stdout, "%s %s (%d bytes)\n", hash, out, len(b))
		for _, r := range prog.BudgetReports() {
			fmt.Fprintf(a.stdout, "  %s\n", r)
		}
		return nil
	})
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"version","file","output","hash","bytes","budgets"} as JSON`)
	cmd.Flags().StringVarP(&out, "output", "o", "", "the file to write (default: FILE with .agb; - for standard output)")
	return cmd
}
