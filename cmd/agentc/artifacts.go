package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/inspect"
)

type artifactFlags struct {
	storeCmd
	user, session, out string
	rev                int
}

func newArtifactsCmd(a *app) *cobra.Command {
	cmd, f := group[artifactFlags](&cobra.Command{
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
	}, true)
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.user, "user", defaultUser, "the user")
	pf.StringVar(&f.session, "session", "", "the session (list: every session of the user; get: "+defaultSession+")")
	f.sub("list --app APP [--user U] [--session S]", "List artifacts (the latest revision of each)", cobra.NoArgs, func(ctx context.Context, in inspect.API, _ []string) error {
		ms, err := in.Artifacts(ctx, artifact.Filter{App: f.app, User: f.user, Session: f.session})
		return each(a, f.json, ms, err, func(m artifact.Meta) {
			fmt.Fprintf(a.stdout, "%s\t%s\trev %d\t%d bytes\t%s\t%s\n", m.Session, m.Name, m.Revision, m.Size, m.MimeType, m.Created.Format(time.RFC3339))
		})
	})
	get := f.sub("get NAME --app APP [--session S] [--rev N] [-o FILE]", "Print one revision of an artifact (default the latest)", cobra.ExactArgs(1), func(ctx context.Context, in inspect.API, args []string) error {
		sess := f.session
		if sess == "" {
			sess = defaultSession
		}
		art, err := in.Artifact(ctx, artifact.Key{App: f.app, User: f.user, Session: sess, Name: args[0]}, f.rev)
		switch {
		case err != nil:
			return failErr(err)
		case f.json:
			return a.printJSON(art)
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
	get.Flags().IntVar(&f.rev, "rev", 0, "the revision (default the latest)")
	get.Flags().StringVarP(&f.out, "output", "o", "", "write the bytes to this file")
	return cmd
}
