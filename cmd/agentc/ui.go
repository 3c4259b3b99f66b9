package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/server"
)

type uiFlags struct {
	storeFlags
	addr string
}

func newUICmd(a *app) *cobra.Command {
	cmd, f := command(&cobra.Command{
		Use:   "ui [FILE] [--data DIR | --store URL] [--addr 127.0.0.1:0]",
		Short: "Inspect a store's runs in the browser",
		Long: `UI serves the run inspector (spec/inspector.md) over the selected store
(--store, $AGENTC_STORE, store: in agentc.yaml, else the data directory
--data, $AGENTC_DATA, ./.agentc) on a loopback address, and prints the
address to open: it carries a token minted for this start, which the page
sends with every request. Every app and user of the store is shown.

With FILE, the runs of FILE's program can be continued from the page
(answers, decisions, forks that continue), with FILE's models and tools as
agentc run would use them; without it, runs can be read, forked and the
evolution queue decided.

The pages are embedded: no network is needed. Stop with Ctrl-C.`,
		Args: cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string, f *uiFlags) error {
		if !server.IsLoopback(f.addr) {
			return usageErr(fmt.Errorf("--addr %s: agentc ui serves loopback addresses only (127.0.0.1, ::1, localhost)", f.addr))
		}
		ctx, stop := whileServing(cmd.Context())
		defer stop()
		target, err := f.target()
		if err != nil {
			return err
		}
		var o *assemble.Options
		if len(args) == 1 {
			prog, enc, proj, err := loadInProject(a, args[0])
			if err != nil {
				return err
			}
			opts := assemble.Process(prog, enc, proj.Root, f.dir(), a.warn)
			o = &opts
		}
		in, err := assemble.StartInspector(cmd.Context(), o, target, f.addr)
		if err != nil {
			return failErr(err)
		}
		defer in.Close()
		fmt.Fprintln(a.stdout, in.URL())
		fmt.Fprintf(a.stderr, "agentc: %s\n", in)
		return serveUntilStopped(ctx, in.Serve)
	})
	f.storeFlags.add(cmd.Flags())
	cmd.Flags().StringVar(&f.addr, "addr", "127.0.0.1:0", "listen address, loopback only (port 0: any free port)")
	return cmd
}
