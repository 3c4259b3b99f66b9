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
	var f pruneFlags
	cmd := &cobra.Command{
		Use:   "prune [--app APP] [--dry-run] [--json] [--store URL|--data DIR]",
		Short: "Delete finished runs, idle sessions and old idempotency records by the retention policy",
		Long: `Prune applies the retention: policy of agentc.yaml at the project root
(spec/storage.md, "Retention") to the store (--store, else $AGENTC_STORE,
else store: in agentc.yaml, else the data directory --data, $AGENTC_DATA,
./.agentc): to --app, else to every app that has sessions there, each under
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
		RunE: func(cmd *cobra.Command, args []string) error {
			return pruneCommand(cmd, a, f)
		},
	}
	fl := cmd.Flags()
	f.storeFlags.add(fl)
	fl.StringVar(&f.app, "app", "", "the app to prune (default: every app in the store)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print what would be deleted; delete nothing")
	fl.BoolVar(&f.json, "json", false, "print JSON")
	return cmd
}

// pruneReport is the JSON of one app's pass.
type pruneReport struct {
	App     string           `json:"app"`
	Policy  string           `json:"policy"`
	DryRun  bool             `json:"dry_run"`
	Delete  []retention.Item `json:"delete"`
	Keep    []retention.Item `json:"keep"`
	Skipped []retention.Item `json:"skipped,omitempty"`
	Deleted map[string]int   `json:"deleted"`
	Error   string           `json:"error,omitempty"`
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
	r, plans, err := assemble.PlanRetention(cmd.Context(), st, set, f.app, time.Now)
	if err != nil {
		return failErr(err)
	}
	var errs []error
	for _, pl := range plans {
		if pl.Policy.IsZero() && !f.json {
			fmt.Fprintf(a.stderr, "agentc: no retention policy for app %s in agentc.yaml: only records of deleted runs are pruned\n", pl.App)
		}
		var res retention.Result
		if !f.dryRun {
			res, err = r.Apply(cmd.Context(), pl)
			if err != nil {
				errs = append(errs, err)
			}
		}
		if f.json {
			rep := pruneReport{App: pl.App, Policy: pl.Policy.String(), DryRun: f.dryRun, Delete: pl.Delete, Keep: pl.Keep, Skipped: res.Skipped,
				Deleted: map[string]int{}}
			for _, k := range []retention.Kind{retention.KindRun, retention.KindSession, retention.KindIdempotency, retention.KindRecord} {
				rep.Deleted[string(k)] = res.Count(k)
			}
			if err != nil {
				rep.Error = err.Error()
			}
			a.printJSON(rep)
			continue
		}
		printPrune(a, pl, res, f.dryRun)
	}
	if len(errs) > 0 {
		return failErr(errors.Join(errs...))
	}
	return nil
}

// printPrune prints one app's plan and what applying it did.
func printPrune(a *app, pl *retention.Plan, res retention.Result, dryRun bool) {
	fmt.Fprintf(a.stdout, "app %s: %s\n", pl.App, pl.Policy)
	verb := "deleted"
	items := res.Deleted
	if dryRun {
		verb, items = "would delete", pl.Delete
	}
	for _, it := range items {
		fmt.Fprintf(a.stdout, "  %s %s: %s\n", verb, it, it.Why)
	}
	for _, it := range pl.Keep {
		fmt.Fprintf(a.stdout, "  kept %s: %s\n", it, it.Why)
	}
	for _, it := range res.Skipped {
		fmt.Fprintf(a.stdout, "  skipped %s: %s\n", it, it.Why)
	}
	fmt.Fprintf(a.stdout, "  %s %d runs, %d sessions, %d idempotency records, %d task records\n", verb,
		retention.Count(items, retention.KindRun), retention.Count(items, retention.KindSession),
		retention.Count(items, retention.KindIdempotency), retention.Count(items, retention.KindRecord))
}
