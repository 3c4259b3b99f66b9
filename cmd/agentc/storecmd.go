package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/inspect"
	"github.com/agentc/agentc/runtime/server/ui"
	"github.com/agentc/agentc/runtime/store"
)

// storeCmd is what the commands that read the store (sessions,
// checkpoints, artifacts, skills, store, replay) share: --data, --store and
// --json on the command and its subcommands, and for the groups keyed by
// app a required --app.
type storeCmd struct {
	storeFlags
	json   bool
	app    string
	keyed  bool // --app is a flag of the group, and required
	parent *cobra.Command
}

// bind gives cmd the persistent flags (with --app when keyed) and makes it
// the parent of the subcommands sub adds; it returns cmd.
func (g *storeCmd) bind(cmd *cobra.Command, keyed bool) *cobra.Command {
	pf := cmd.PersistentFlags()
	if g.keyed = keyed; keyed {
		pf.StringVar(&g.app, "app", "", "the app (the workflow's name); required")
	}
	g.storeFlags.add(pf)
	pf.BoolVar(&g.json, "json", false, "print JSON")
	g.parent = cmd
	return cmd
}

// group is cmd as a store command group (bind) with flags F, which embed
// storeCmd; it returns cmd and the flags.
func group[F any, P interface {
	*F
	bind(*cobra.Command, bool) *cobra.Command
}](cmd *cobra.Command, keyed bool) (*cobra.Command, P) {
	f := P(new(F))
	return f.bind(cmd, keyed), f
}

// sub adds a subcommand to the group that runs fn with an Inspector over
// the selected store or, when agentc serve holds that Pebble store, with the
// client of its inspector API (spec/inspector.md, "The CLI on a served
// store"); it returns the subcommand (to add flags or a PreRunE check).
func (g *storeCmd) sub(use, short string, args cobra.PositionalArgs, fn func(ctx context.Context, in inspect.API, args []string) error) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Args: args, RunE: func(cmd *cobra.Command, args []string) error {
		return g.api(cmd.Context(), cmd.ErrOrStderr(), func(in inspect.API) error { return fn(cmd.Context(), in, args) })
	}}
	g.parent.AddCommand(cmd)
	return cmd
}

// inspect opens the store the flags select and calls fn with an Inspector
// over it (forks get the wall clock and crypto ids); a keyed group's --app
// is checked first.
func (g *storeCmd) inspect(ctx context.Context, fn func(*inspect.Inspector) error) error {
	st, err := g.openKeyed(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(inspect.New(inspect.Config{Store: st, Clock: assemble.WallClock{}, Entropy: assemble.CryptoEntropy{}}))
}

// api is inspect, except that when agentc serve holds the Pebble store fn
// gets the client of that server's inspector API (a note on stderr says so).
func (g *storeCmd) api(ctx context.Context, stderr io.Writer, fn func(inspect.API) error) error {
	err := g.inspect(ctx, func(in *inspect.Inspector) error { return fn(in) })
	if errors.Is(err, store.ErrLocked) {
		if c, info, ok := servedAPI(g.storeFlags); ok {
			fmt.Fprintf(stderr, "agentc: the store is held by agentc serve (pid %d); asking it at http://%s\n", info.PID, info.Addr)
			return fn(c)
		}
	}
	return err
}

// openKeyed opens the selected store once a keyed group's --app is checked.
func (g *storeCmd) openKeyed(ctx context.Context) (store.Store, error) {
	if g.keyed && g.app == "" {
		return nil, usageErr(errors.New("--app is required (the workflow's name)"))
	}
	return g.open(ctx)
}

// servedAPI is the inspector API of the agentc serve that holds the Pebble
// store f selects (assemble.ServedAt).
func servedAPI(f storeFlags) (*ui.Client, ui.ServeInfo, bool) {
	t, err := f.target()
	if err != nil {
		return nil, ui.ServeInfo{}, false
	}
	return assemble.ServedAt(t)
}

// inspectErr is an inspect error's exit: 2 for a bad request, else 1.
func inspectErr(err error) error {
	if errors.Is(err, inspect.ErrInvalid) {
		return usageErr(err)
	}
	return failErr(err)
}

// printJSON prints v as one line of JSON.
func (a *app) printJSON(v any) error { return a.writeJSON(json.Marshal(v)) }

// printIndented prints v as indented JSON.
func (a *app) printIndented(v any) error { return a.writeJSON(json.MarshalIndent(v, "", "  ")) }

// writeJSON prints JSON marshaled by printJSON or printIndented; a value
// that does not marshal is the command's failure.
func (a *app) writeJSON(b []byte, err error) error {
	if err != nil {
		return failErr(err)
	}
	fmt.Fprintf(a.stdout, "%s\n", b)
	return nil
}

// each prints what a listing read: a failed read exits 1; each item is a
// line of JSON with --json, else the line text prints.
func each[T any](a *app, asJSON bool, items []T, err error, text func(T)) error {
	if err != nil {
		return failErr(err)
	}
	for _, it := range items {
		if !asJSON {
			text(it)
		} else if err := a.printJSON(it); err != nil {
			return err
		}
	}
	return nil
}

// one prints what a lookup read, as each does.
func one[T any](a *app, asJSON bool, v T, err error, text func(T)) error {
	return each(a, asJSON, []T{v}, err, text)
}
