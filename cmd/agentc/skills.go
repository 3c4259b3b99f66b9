package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/runtime/assemble"
	"github.com/agentc/agentc/runtime/evolution"
	"github.com/agentc/agentc/runtime/inspect"
)

type skillsFlags struct {
	storeCmd
	by, reason string
}

func newSkillsCmd(a *app) *cobra.Command {
	cmd, f := group[skillsFlags](&cobra.Command{
		Use:   "skills pending|show|approve|reject",
		Short: "Review the skills evolution proposed",
		Long: `Skills manages the candidate skills an evolution policy's reviewer drafted
after runs (spec/skills.md), kept in the store (--store, $AGENTC_STORE,
store: in agentc.yaml, else the data directory --data, $AGENTC_DATA,
./.agentc).

  agentc skills pending            candidates waiting for a person or an evaluation
  agentc skills show ID            one candidate: proposal, evidence, gates
  agentc skills approve ID         publish it into the policy's publish folder
  agentc skills reject ID [--reason TEXT]

Approving re-checks the spec and safety gates, writes the skill folder
(SKILL.md and scripts/run.sh) and archives the skill's previous revision;
the next run that loads the skill sees it.

Exit status: 0, 1 when the store cannot be read, the candidate does not
exist or is not pending, 2 on usage errors.`,
	}, false)
	cmd.PersistentFlags().StringVar(&f.by, "by", "", "who decides (default the OS user)")

	who := func() string {
		if u, err := assemble.LocalUser(f.by); err == nil {
			return u
		}
		return "cli"
	}
	f.sub("pending", "List candidates waiting for approval or evaluation", cobra.NoArgs, func(ctx context.Context, in inspect.API, _ []string) error {
		cs, err := in.Pending(ctx)
		return each(a, f.json, cs, err, func(c *evolution.Candidate) { fmt.Fprintln(a.stdout, c.Line()) })
	})
	f.sub("show ID", "Show one candidate", cobra.ExactArgs(1), func(ctx context.Context, in inspect.API, args []string) error {
		c, err := in.Candidate(ctx, args[0])
		return one(a, f.json, c, err, func(c *evolution.Candidate) { fmt.Fprint(a.stdout, c) })
	})
	f.sub("approve ID", "Publish a pending candidate", cobra.ExactArgs(1), func(ctx context.Context, in inspect.API, args []string) error {
		c, err := in.Approve(ctx, args[0], who())
		return one(a, f.json, c, err, func(c *evolution.Candidate) {
			fmt.Fprintf(a.stdout, "published %s revision %d to %s\n", c.Proposal.Name, c.Revision, c.Dir)
		})
	})
	reject := f.sub("reject ID [--reason TEXT]", "Reject a pending candidate", cobra.ExactArgs(1), func(ctx context.Context, in inspect.API, args []string) error {
		c, err := in.Reject(ctx, args[0], who(), f.reason)
		return one(a, f.json, c, err, func(c *evolution.Candidate) {
			fmt.Fprintf(a.stdout, "rejected %s (%s)\n", c.ID, c.Proposal.Name)
		})
	})
	reject.Flags().StringVar(&f.reason, "reason", "", "why")
	return cmd
}
