package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/inspect"
	"github.com/agentc/agentc/runtime/server/ui"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/dial"
)

// withInspector opens the store the flags select and calls fn with an
// Inspector over it (forks get the wall clock and crypto ids).
func withInspector(ctx context.Context, f storeFlags, fn func(*inspect.Inspector) error) error {
	st, err := f.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(inspect.New(inspect.Config{Store: st, Clock: wallClock{}, Entropy: cryptoEntropy{}}))
}

// withAPI calls fn with an Inspector over the store the flags select or,
// when agentc serve holds that Pebble store, with the client of its
// inspector API (spec/inspector.md, "The CLI on a served store").
func withAPI(ctx context.Context, stderr io.Writer, f storeFlags, fn func(inspect.API) error) error {
	st, err := f.open(ctx)
	if errors.Is(err, store.ErrLocked) {
		if c, info, ok := servedAPI(f); ok {
			fmt.Fprintf(stderr, "agentc: the store is held by agentc serve (pid %d); asking it at http://%s\n", info.PID, info.Addr)
			return fn(c)
		}
	}
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(inspect.New(inspect.Config{Store: st, Clock: wallClock{}, Entropy: cryptoEntropy{}}))
}

// servedAPI is the inspector API of the agentc serve that holds the Pebble
// store f selects: the serve.json it wrote there, naming a live process.
func servedAPI(f storeFlags) (*ui.Client, ui.ServeInfo, bool) {
	t, err := f.target()
	if err != nil {
		return nil, ui.ServeInfo{}, false
	}
	if kind, _ := dial.Parse(t); kind != dial.Pebble {
		return nil, ui.ServeInfo{}, false
	}
	info, err := ui.ReadServeFile(t)
	if err != nil {
		return nil, info, false
	}
	if err := syscall.Kill(info.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return nil, info, false // its process is gone
	}
	return ui.NewClient(info.Addr, info.Token, info.User), info, true
}

// withApp is withAPI for the commands that need --app.
func withApp(ctx context.Context, stderr io.Writer, app string, f storeFlags, fn func(inspect.API) error) error {
	if app == "" {
		return usageErr(errors.New("--app is required (the workflow's name)"))
	}
	return withAPI(ctx, stderr, f, fn)
}

// inspectErr is an inspect error's exit: 2 for a bad request, else 1.
func inspectErr(err error) error {
	if errors.Is(err, inspect.ErrInvalid) {
		return usageErr(err)
	}
	return failErr(err)
}

// printJSON prints v as one line of JSON.
func (a *app) printJSON(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(a.stdout, "%s\n", b)
}

type sessionFlags struct {
	app, user string
	storeFlags
	json  bool
	run   string
	kinds []string
}

func newSessionsCmd(a *app) *cobra.Command {
	var f sessionFlags
	cmd := &cobra.Command{
		Use:   "sessions list|show|events",
		Short: "List and inspect the sessions in the local store",
		Long: `Sessions reads the store agentc run writes (--store, else $AGENTC_STORE,
else store: in agentc.yaml, else the data directory --data, $AGENTC_DATA,
./.agentc). --app is the app the sessions belong to: the workflow's
name unless the Runner was given another.

  agentc sessions list --app APP [--user U]      sessions, by (user, session)
  agentc sessions show SESSION --app APP         one session and its runs
  agentc sessions events SESSION --app APP       its ledger, one event a line

Exit status: 0, 1 when the store cannot be read or the session does not
exist, 2 on usage errors.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.app, "app", "", "the app (the workflow's name); required")
	pf.StringVar(&f.user, "user", "", "the user (list: all users; show/events: "+defaultUser+")")
	f.storeFlags.add(pf)
	pf.BoolVar(&f.json, "json", false, "print JSON")

	with := func(cmd *cobra.Command, fn func(inspect.API) error) error {
		return withApp(cmd.Context(), a.stderr, f.app, f.storeFlags, fn)
	}
	key := func(s string) store.SessionKey {
		u := f.user
		if u == "" {
			u = defaultUser
		}
		return store.SessionKey{App: f.app, User: u, Session: s}
	}
	list := &cobra.Command{
		Use:   "list --app APP [--user U]",
		Short: "List sessions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return with(cmd, func(in inspect.API) error {
				ss, err := in.Sessions(cmd.Context(), session.ListFilter{App: f.app, User: f.user})
				if err != nil {
					return failErr(err)
				}
				for _, s := range ss {
					if f.json {
						a.printJSON(s)
						continue
					}
					fmt.Fprintf(a.stdout, "%s\t%s\t%d events\tupdated %s\n", s.User, s.Session, s.Events, s.Updated.Format(time.RFC3339))
				}
				return nil
			})
		},
	}
	show := &cobra.Command{
		Use:   "show SESSION --app APP [--user U]",
		Short: "Show a session and its runs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return with(cmd, func(in inspect.API) error {
				s, err := in.Session(cmd.Context(), key(args[0]))
				if err != nil {
					return failErr(err)
				}
				if f.json {
					b, _ := json.MarshalIndent(s, "", "  ")
					fmt.Fprintf(a.stdout, "%s\n", b)
					return nil
				}
				fmt.Fprintf(a.stdout, "session %s (user %s, app %s)\n", s.Session, s.User, s.App)
				fmt.Fprintf(a.stdout, "created %s, updated %s, %d events\n", s.Created.Format(time.RFC3339), s.Updated.Format(time.RFC3339), s.Events)
				for _, r := range s.Runs {
					fmt.Fprintf(a.stdout, "  %s\t%s\t%s%s\n", r.ID, r.Runnable, r.Status, runTotals(r))
				}
				return nil
			})
		},
	}
	events := &cobra.Command{
		Use:   "events SESSION --app APP [--user U] [--run RUN] [--kind K]...",
		Short: "Print a session's ledger",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := inspect.EventQuery{Run: f.run, Kinds: f.kinds}
			if err := q.Check(); err != nil {
				return usageErr(err)
			}
			return with(cmd, func(in inspect.API) error {
				evs, err := in.Events(cmd.Context(), key(args[0]), q)
				if err != nil {
					return inspectErr(err)
				}
				for _, e := range evs {
					if !f.json {
						fmt.Fprintf(a.stdout, "%d\t%s\t%s\t%s\n", e.Seq, e.Kind, e.Node, inspect.Summary(e))
						continue
					}
					b, err := runtime.EncodeEvent(e)
					if err != nil {
						return failErr(err)
					}
					fmt.Fprintf(a.stdout, "%s\n", b)
				}
				return nil
			})
		},
	}
	events.Flags().StringVar(&f.run, "run", "", "only the events of this run")
	events.Flags().StringSliceVar(&f.kinds, "kind", nil, "only events of these kinds")
	cmd.AddCommand(list, show, events)
	return cmd
}

// runTotals is the tail of a run's line in sessions show: its cost in USD
// when known, and its tokens when any call reported usage.
func runTotals(r inspect.Run) string {
	out := ""
	if r.Cost != nil {
		out += "\tcost $" + strconv.FormatFloat(*r.Cost, 'f', -1, 64)
	}
	if r.Usage != nil {
		out += fmt.Sprintf("\ttokens %d in, %d out", r.Usage.PromptTokens, r.Usage.CompletionTokens)
	}
	return out
}
