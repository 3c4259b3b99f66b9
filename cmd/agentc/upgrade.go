package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/lang/diag"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/vm/upgrade"
)

func newUpgradeCheckCmd(a *app) *cobra.Command {
	cmd, asJSON := command(&cobra.Command{
		Use:   "upgrade-check OLD NEW [--json]",
		Short: "Prove that runs waiting on OLD can move to NEW",
		Long: `Upgrade-check compiles OLD and NEW (.agent files, or verified .agb bytecode)
and proves that every run of OLD waiting at an interrupt can continue on
NEW (spec/upgrade.md): kept state fields keep their types, new ones have
defaults, every interrupt exists with the same resume type, loop and join
counters map. Each incompatibility is reported with its position in NEW
and in OLD; --json prints the diagnostics as validate --format json does.

agentc run --resume RUN --upgrade, and agentc serve with --upgrade-waiting,
move a waiting run only when this check (over the run's own checkpoint)
passes; otherwise the run keeps its program.

Exit status: 0 compatible, 1 incompatible, 2 usage (a file that does not
read or compile).`,
		Args: cobra.ExactArgs(2),
	}, func(cmd *cobra.Command, args []string, asJSON *bool) error {
		var progs [2]*bytecode.Program
		var projs [2]*project.Project
		for i, f := range args {
			var err error
			if progs[i], _, projs[i], err = loadInProject(a, f); err != nil {
				var ee *exitError
				if errors.As(err, &ee) && ee.code == exitFail {
					ee.code = exitUsage // a program that does not compile is no verdict
				}
				return err
			}
		}
		return upgradeCheck(a, args, projs, upgrade.Check(progs[0], progs[1]), *asJSON)
	})
	cmd.Flags().BoolVar(asJSON, "json", false, "print the diagnostics as JSON on standard output")
	return cmd
}

// upgradeCheck prints rep with the files of each version named as the
// command line reaches them.
func upgradeCheck(a *app, files []string, projs [2]*project.Project, rep *upgrade.Report, asJSON bool) error {
	srcs := diag.Sources{}
	ds := rep.Diagnostics(projs[0].Shown(srcs), projs[1].Shown(srcs))
	if asJSON {
		if err := diag.WriteJSON(a.stdout, ds); err != nil {
			return failErr(err)
		}
	} else {
		if err := diag.WriteText(a.stderr, ds, srcs); err != nil {
			return failErr(err)
		}
		fmt.Fprintln(a.stderr, rep.Verdict(files[0], files[1]))
	}
	if !rep.Compatible() {
		return failed
	}
	return nil
}

// upgradeRefused prints the report of an upgrade agentc run --upgrade was
// refused (exit 1): the run keeps its program. The old version's files
// are named "old:FILE" (its text is no longer on disk to quote).
func upgradeRefused(a *app, file string, e *runtime.UpgradeError) error {
	proj, err := openProject(file)
	if err != nil {
		return failErr(err)
	}
	srcs := diag.Sources{}
	ds := e.Report.Diagnostics(func(name string) string { return "old:" + proj.Display(name) }, proj.Shown(srcs))
	if err := diag.WriteText(a.stderr, ds, srcs); err != nil {
		return failErr(err)
	}
	return failErr(fmt.Errorf("run %s keeps its program %.12s: %s cannot take it (resume without --upgrade to continue on its program)", e.Report.Run, e.Report.Old, file))
}
