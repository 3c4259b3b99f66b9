package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store"
	"github.com/agentc/agentc/runtime/store/pebble"
)

type sessionFlags struct {
	app, user, data string
	json            bool
	run             string
	kinds           []string
}

func newSessionsCmd(a *app) *cobra.Command {
	var f sessionFlags
	cmd := &cobra.Command{
		Use:   "sessions list|show|events",
		Short: "List and inspect the sessions in the local store",
		Long: `Sessions reads the store agentc run writes (--data, else $AGENTC_DATA,
else ./.agentc). --app is the app the sessions belong to: the workflow's
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
	pf.StringVar(&f.data, "data", "", "the data directory (default $AGENTC_DATA, else ./.agentc)")
	pf.BoolVar(&f.json, "json", false, "print JSON")

	open := func() (*pebble.Store, *session.Service, error) {
		if f.app == "" {
			return nil, nil, usageErr(errors.New("--app is required (the workflow's name)"))
		}
		st, err := pebble.Open(dataDir(f.data), nil)
		if err != nil {
			return nil, nil, &exitError{code: exitFail, err: err}
		}
		return st, session.New(st), nil
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
			st, svc, err := open()
			if err != nil {
				return err
			}
			defer st.Close()
			infos, err := svc.List(cmd.Context(), session.ListFilter{App: f.app, User: f.user})
			if err != nil {
				return &exitError{code: exitFail, err: err}
			}
			for _, in := range infos {
				if f.json {
					b, _ := json.Marshal(sessionJSON(in))
					fmt.Fprintf(a.stdout, "%s\n", b)
					continue
				}
				fmt.Fprintf(a.stdout, "%s\t%s\t%d events\tupdated %s\n", in.Key.User, in.Key.Session, in.Events, in.Updated.UTC().Format(time.RFC3339))
			}
			return nil
		},
	}
	show := &cobra.Command{
		Use:   "show SESSION --app APP [--user U]",
		Short: "Show a session and its runs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, svc, err := open()
			if err != nil {
				return err
			}
			defer st.Close()
			in, err := svc.Get(cmd.Context(), key(args[0]))
			if err != nil {
				return &exitError{code: exitFail, err: fmt.Errorf("session %s: %w", args[0], err)}
			}
			if f.json {
				b, _ := json.MarshalIndent(sessionJSON(in), "", "  ")
				fmt.Fprintf(a.stdout, "%s\n", b)
				return nil
			}
			fmt.Fprintf(a.stdout, "session %s (user %s, app %s)\n", in.Key.Session, in.Key.User, in.Key.App)
			fmt.Fprintf(a.stdout, "created %s, updated %s, %d events\n", in.Created.UTC().Format(time.RFC3339), in.Updated.UTC().Format(time.RFC3339), in.Events)
			for _, r := range in.Runs {
				fmt.Fprintf(a.stdout, "  %s\t%s\t%s\n", r.ID, r.Runnable, r.Status)
			}
			return nil
		},
	}
	events := &cobra.Command{
		Use:   "events SESSION --app APP [--user U] [--run RUN] [--kind K]...",
		Short: "Print a session's ledger",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			filter := session.EventFilter{Run: f.run}
			for _, k := range f.kinds {
				if !runtime.EventKind(k).Valid() {
					return usageErr(fmt.Errorf("unknown event kind %q", k))
				}
				filter.Kinds = append(filter.Kinds, runtime.EventKind(k))
			}
			st, svc, err := open()
			if err != nil {
				return err
			}
			defer st.Close()
			k := key(args[0])
			if _, err := svc.Get(cmd.Context(), k); err != nil {
				return &exitError{code: exitFail, err: fmt.Errorf("session %s: %w", args[0], err)}
			}
			evs, err := svc.Events(cmd.Context(), k, filter)
			if err != nil {
				return &exitError{code: exitFail, err: err}
			}
			for _, e := range evs {
				if f.json {
					b, err := runtime.EncodeEvent(e)
					if err != nil {
						return &exitError{code: exitFail, err: err}
					}
					fmt.Fprintf(a.stdout, "%s\n", b)
					continue
				}
				fmt.Fprintf(a.stdout, "%d\t%s\t%s\t%s\n", e.Seq, e.Kind, e.Node, eventSummary(e))
			}
			return nil
		},
	}
	events.Flags().StringVar(&f.run, "run", "", "only the events of this run")
	events.Flags().StringSliceVar(&f.kinds, "kind", nil, "only events of these kinds")
	cmd.AddCommand(list, show, events)
	return cmd
}

type sessionOut struct {
	App     string      `json:"app"`
	User    string      `json:"user"`
	Session string      `json:"session"`
	Created time.Time   `json:"created"`
	Updated time.Time   `json:"updated"`
	Events  uint64      `json:"events"`
	Runs    []runOutput `json:"runs,omitempty"`
}

type runOutput struct {
	ID       string `json:"id"`
	Runnable string `json:"runnable"`
	Status   string `json:"status"`
}

func sessionJSON(in session.Info) sessionOut {
	out := sessionOut{App: in.Key.App, User: in.Key.User, Session: in.Key.Session, Created: in.Created.UTC(), Updated: in.Updated.UTC(), Events: in.Events}
	for _, r := range in.Runs {
		out.Runs = append(out.Runs, runOutput{ID: r.ID, Runnable: r.Runnable, Status: string(r.Status)})
	}
	return out
}

// eventSummary is a one-line gist of an event's payload.
func eventSummary(e *runtime.Event) string {
	short := func(s string) string {
		s = strings.Join(strings.Fields(s), " ")
		if len(s) > 80 {
			s = s[:77] + "..."
		}
		return s
	}
	switch e.Kind {
	case runtime.EventInput:
		if e.Resume != nil {
			return "resume " + e.Resume.Run
		}
		return short(e.Text)
	case runtime.EventRunStarted:
		return e.Run + " " + e.Runnable
	case runtime.EventModelResponse:
		return short(e.Model + " " + e.Text)
	case runtime.EventToolResult:
		if e.ToolCall != nil {
			return short(e.ToolCall.Name + " " + string(e.Result))
		}
	case runtime.EventStateDelta:
		var fs []string
		for _, c := range e.Changes {
			fs = append(fs, c.Op+" "+c.Field)
		}
		return strings.Join(fs, ", ")
	case runtime.EventInterrupt:
		var ids []string
		for _, in := range e.Interrupts {
			ids = append(ids, in.ID)
		}
		return strings.Join(ids, ", ")
	case runtime.EventRunError, runtime.EventNodeFailed:
		if e.Error != nil {
			return short(e.Error.Kind + ": " + e.Error.Message)
		}
	case runtime.EventRunFinished:
		return short(string(e.Status) + " " + string(e.Output))
	}
	return ""
}
