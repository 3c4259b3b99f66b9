package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/runtime/inspect"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
)

type sessionFlags struct {
	storeCmd
	user string
}

func newSessionsCmd(a *app) *cobra.Command {
	cmd, f := group[sessionFlags](&cobra.Command{
		Use:   "sessions list|show|events",
		Short: "List and inspect the sessions in the local store",
		Long: `Sessions reads the store agentc run writes ` + storeChosen + `. --app is the app the sessions belong to: the workflow's
name unless the Runner was given another.

  agentc sessions list [--app APP [--user U]]    sessions, by (user, session);
                                                 without --app every app's, by app first
  agentc sessions show SESSION --app APP         one session and its runs
  agentc sessions events SESSION --app APP       its ledger, one event a line

Exit status: 0, 1 when the store cannot be read or the session does not
exist, 2 on usage errors.`,
	}, true)
	cmd.PersistentFlags().StringVar(&f.user, "user", "", "the user (list: all users; show/events: "+defaultUser+")")
	key := func(s string) store.SessionKey {
		u := f.user
		if u == "" {
			u = defaultUser
		}
		return store.SessionKey{App: f.app, User: u, Session: s}
	}
	list := f.sub("list [--app APP [--user U]]", "List sessions (default: of every app)", cobra.NoArgs, func(ctx context.Context, in inspect.API, _ []string) error {
		ss, err := in.Sessions(ctx, session.ListFilter{App: f.app, User: f.user})
		return each(a, f.json, ss, err, func(s inspect.Session) {
			if f.app == "" {
				fmt.Fprint(a.stdout, s.App, "\t")
			}
			fmt.Fprintln(a.stdout, s.Line())
		})
	})
	list.PreRunE = func(*cobra.Command, []string) error { f.keyed = false; return nil } // --app is optional here
	f.sub("show SESSION --app APP [--user U]", "Show a session and its runs", cobra.ExactArgs(1), func(ctx context.Context, in inspect.API, args []string) error {
		s, err := in.Session(ctx, key(args[0]))
		switch {
		case err != nil:
			return failErr(err)
		case f.json:
			return a.printIndented(s)
		}
		fmt.Fprint(a.stdout, s)
		return nil
	})
	var q inspect.EventQuery
	events := f.sub("events SESSION --app APP [--user U] [--run RUN] [--kind K]...", "Print a session's ledger", cobra.ExactArgs(1), func(ctx context.Context, in inspect.API, args []string) error {
		evs, err := in.Events(ctx, key(args[0]), q)
		if err != nil {
			return inspectErr(err)
		}
		for _, e := range evs {
			if !f.json {
				fmt.Fprintln(a.stdout, inspect.EventLine(e))
			} else if err := (inspect.Watch{Out: a.stdout}).Event(e); err != nil {
				return failErr(err)
			}
		}
		return nil
	})
	events.PreRunE = func(*cobra.Command, []string) error {
		if err := q.Check(); err != nil {
			return usageErr(err)
		}
		return nil
	}
	events.Flags().StringVar(&q.Run, "run", "", "only the events of this run")
	events.Flags().StringSliceVar(&q.Kinds, "kind", nil, "only events of these kinds")
	return cmd
}
