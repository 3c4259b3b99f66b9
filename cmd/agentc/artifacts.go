package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/inspect"
)

type artifactFlags struct {
	app, user, session, out string
	storeFlags
	rev  int
	json bool
}

func newArtifactsCmd(a *app) *cobra.Command {
	var f artifactFlags
	cmd := &cobra.Command{
		Use:   "artifacts list|get",
		Short: "List and read the artifacts runs saved in the local store",
		Long: `Artifacts reads the files runs saved with workspace_save_artifact, kept per
session with revisions 1, 2, … in the store (--store, $AGENTC_STORE,
store: in agentc.yaml, else the data directory --data, $AGENTC_DATA,
./.agentc). --app is the workflow's name.

  agentc artifacts list --app APP [--user U] [--session S]   latest revision of each
  agentc artifacts get NAME --app APP [--session S] [--rev N] [-o FILE]

get writes the bytes to standard output (or -o FILE); with --json it prints
the revision's metadata and its bytes (base64) instead.

Exit status: 0, 1 when the store cannot be read or the artifact does not
exist, 2 on usage errors.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.app, "app", "", "the app (the workflow's name); required")
	pf.StringVar(&f.user, "user", defaultUser, "the user")
	pf.StringVar(&f.session, "session", "", "the session (list: every session of the user; get: "+defaultSession+")")
	f.storeFlags.add(pf)
	pf.BoolVar(&f.json, "json", false, "print JSON")

	with := func(cmd *cobra.Command, fn func(inspect.API) error) error {
		return withApp(cmd.Context(), a.stderr, f.app, f.storeFlags, fn)
	}
	list := &cobra.Command{
		Use:   "list --app APP [--user U] [--session S]",
		Short: "List artifacts (the latest revision of each)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return with(cmd, func(in inspect.API) error {
				ms, err := in.Artifacts(cmd.Context(), artifact.Filter{App: f.app, User: f.user, Session: f.session})
				if err != nil {
					return failErr(err)
				}
				for _, m := range ms {
					if f.json {
						a.printJSON(m)
						continue
					}
					fmt.Fprintf(a.stdout, "%s\t%s\trev %d\t%d bytes\t%s\t%s\n", m.Session, m.Name, m.Revision, m.Size, m.MimeType, m.Created.Format(time.RFC3339))
				}
				return nil
			})
		},
	}
	get := &cobra.Command{
		Use:   "get NAME --app APP [--session S] [--rev N] [-o FILE]",
		Short: "Print one revision of an artifact (default the latest)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sess := f.session
			if sess == "" {
				sess = defaultSession
			}
			return with(cmd, func(in inspect.API) error {
				art, err := in.Artifact(cmd.Context(), artifact.Key{App: f.app, User: f.user, Session: sess, Name: args[0]}, f.rev)
				switch {
				case err != nil:
					return failErr(err)
				case f.json:
					a.printJSON(art)
					return nil
				case f.out == "":
					_, err = a.stdout.Write(art.Data)
					return err
				}
				if err := os.WriteFile(f.out, art.Data, 0o644); err != nil {
					return usageErr(err)
				}
				fmt.Fprintf(a.stderr, "agentc: wrote %s revision %s (%d bytes) to %s\n", art.Name, strconv.Itoa(art.Revision), len(art.Data), f.out)
				return nil
			})
		},
	}
	get.Flags().IntVar(&f.rev, "rev", 0, "the revision (default the latest)")
	get.Flags().StringVarP(&f.out, "output", "o", "", "write the bytes to this file")
	cmd.AddCommand(list, get)
	return cmd
}
