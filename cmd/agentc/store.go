package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/runtime/store/dial"
	"github.com/agentc/agentc/runtime/store/pebble"
)

func newStoreCmd(a *app) *cobra.Command {
	cmd, g := group[storeCmd](&cobra.Command{
		Use:   "store check|repair",
		Short: "Check and repair the local store",
		Long: `Store checks the Pebble store agentc run and agentc serve write (the
selected store: --store, $AGENTC_STORE, store: in agentc.yaml, else the
data directory --data, $AGENTC_DATA, ./.agentc) while no process holds it.

  agentc store check [--data DIR] [--json]    verify without changing anything:
      the directory layout, the seal of a cleanly closed store, every WAL
      (damage that is not a torn tail), every table's checksums, every
      value's frame, each run's checkpoint chain (a full snapshot before
      every delta), each session's ledger and each run's journal (no gaps)
  agentc store repair [--data DIR] [--json]   copy the store's files to
      DIR.repair-<time>, then recreate missing markers, rewrite damaged
      OPTIONS, cut a damaged WAL at its first bad record (what it drops stays
      in the copy) and check again; table and MANIFEST damage cannot be
      repaired: restore a backup

Exit status: 0 when the store is sound (after repair, for repair), 1 when
problems remain or the store cannot be read, 2 on usage errors.
See spec/storage.md, "Durability".`,
	}, false)
	// Check and repair work on the selected store, which must be a Pebble
	// directory; a report with problems left exits 1.
	pebbleCmd := func(use, short string, run func(ctx context.Context, dir string) (*pebble.Report, error)) {
		cmd.AddCommand(&cobra.Command{Use: use, Short: short, Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.target()
			if err != nil {
				return err
			}
			if kind, _ := dial.Parse(dir); kind != dial.Pebble {
				return usageErr(fmt.Errorf("store check and repair work on a Pebble directory, not %s: PostgreSQL checks its own pages (spec/storage.md)", dial.Display(dir)))
			}
			rep, err := run(cmd.Context(), dir)
			if err != nil {
				return failErr(err)
			}
			if !rep.OK() {
				return failed
			}
			return nil
		}})
	}
	pebbleCmd("check [--data DIR]", "Verify the store without changing it", func(ctx context.Context, dir string) (*pebble.Report, error) {
		rep, err := pebble.Check(ctx, dir)
		if err != nil {
			return nil, err
		}
		if g.json {
			return rep, a.printJSON(rep)
		}
		fmt.Fprint(a.stdout, rep)
		return rep, nil
	})
	pebbleCmd("repair [--data DIR]", "Repair the store, keeping a copy of what it drops", func(ctx context.Context, dir string) (*pebble.Report, error) {
		res, err := pebble.Repair(ctx, dir, time.Now())
		if res == nil {
			return nil, err
		}
		if g.json {
			if jerr := a.printJSON(res); jerr != nil {
				return nil, jerr
			}
			return res.Report, err
		}
		if res.Backup != "" {
			fmt.Fprintf(a.stdout, "copied the store's files to %s\n", res.Backup)
		}
		for _, act := range res.Actions {
			fmt.Fprintln(a.stdout, act)
		}
		if err == nil {
			fmt.Fprint(a.stdout, res.Report)
		}
		return res.Report, err
	})
	return cmd
}
