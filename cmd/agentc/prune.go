package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/retention"
	"github.com/agentc/agentc/runtime/store"
)

type pruneFlags struct {
	storeFlags
	app    string
	dryRun bool
	json   bool
}

func newPruneCmd(a *app) *cobra.Command {
	cmd, f := command(&cobra.Command{
		Use:   "prune [--app APP] [--dry-run] [--json] [--store URL|--data DIR]",
		Short: "Delete finished runs, idle sessions and old idempotency records by the retention policy",
		Long: `Prune applies the retention: policy of agentc.yaml at the project root
(spec/storage.md, "Retention") to the store ` + storeChosen + `: to --app, else to every app that has sessions there, each under
its own policy. agentc serve applies its app's policy by itself.

It deletes finished (completed, failed, canceled) runs older than max_age
or beyond max_runs per session, sessions idle longer than session_ttl with
their finished runs, and protocol idempotency records past idempotency_ttl
or of deleted runs. It never deletes a run that can still be resumed
(running, interrupted, needs_decision), a session holding one, or a run
another was forked from. Each item is checked again right before it is
deleted; one that changed is skipped.

--dry-run prints what would be deleted, and what a rule matched but is
kept, and deletes nothing. --json prints one JSON object per app.

Exit status: 0, 1 when the store cannot be read or a deletion failed, 2 on
usage errors.`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, args []string, f *pruneFlags) error {
		return pruneCommand(cmd, a, *f)
	})
	fl := cmd.Flags()
	f.storeFlags.add(fl)
	fl.StringVar(&f.app, "app", "", "the app to prune (default: every app in the store)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print what would be deleted; delete nothing")
	fl.BoolVar(&f.json, "json", false, "print JSON")
	return cmd
}

func pruneCommand(cmd *cobra.Command, a *app, f pruneFlags) error {
	wd, err := os.Getwd()
	if err != nil {
		return failErr(err)
	}
	set, err := assemble.ReadRetention(project.At(wd, nil).Root)
	if err != nil {
		return usageErr(err)
	}
	st, err := f.open(cmd.Context())
	if errors.Is(err, store.ErrLocked) {
		if _, info, ok := servedAPI(f.storeFlags); ok {
			return failErr(fmt.Errorf("the store is held by agentc serve (pid %d), which applies its app's retention policy itself (retention: in agentc.yaml, every interval); stop it to prune by hand", info.PID))
		}
	}
	if err != nil {
		return err
	}
	defer st.Close()
	err = assemble.Prune(cmd.Context(), st, set, f.app, time.Now, f.dryRun, func(pl *retention.Plan, rep retention.Report) {
		if pl.Policy.IsZero() && !f.json {
			fmt.Fprintf(a.stderr, "agentc: no retention policy for app %s in agentc.yaml: only records of deleted runs are pruned\n", pl.App)
		}
		if f.json {
			a.printJSON(rep)
		} else {
			fmt.Fprint(a.stdout, rep)
		}
	})
	if err != nil {
		return failErr(err)
	}
	return nil
}
