package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentc/agentc/compiler/project"
	"github.com/agentc/agentc/runtime/assemble"
)

func newMCPCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve a workflow to MCP clients; pin the MCP servers a workflow calls",
	}
	var (
		f        assemble.ServeFlags
		userName string
	)
	stdio := &cobra.Command{
		Use:   "stdio FILE|OUT.agb [--data DIR|--store URL] [--app APP] [--user U]",
		Short: "Serve a workflow's runnables as MCP tools over standard input and output",
		Long: `mcp stdio serves the same MCP tools as agentc serve's /mcp endpoint over
newline-delimited JSON-RPC on standard input and output, for a desktop
client that starts agentc itself: one tool per served runnable, plus
agentc_resume when a run can wait for input. Logs and warnings go to
standard error; nothing but the protocol is written to standard output.

There is no authentication: every run belongs to one user, the local OS
user (else $USER), or --user. Runs are stored in the store agentc run
uses (--store, $AGENTC_STORE, store: in agentc.yaml, else the Pebble
store in the data directory --data, $AGENTC_DATA, ./.agentc), so agentc sessions and
agentc run --resume see them.

Models: with OPENAI_API_KEY set, each model declaration calls an
OpenAI-compatible endpoint; without it, the models and tools replay the
fixtures of the first test block that runs the served runnable.

The command ends when the client closes standard input, or on SIGINT or
SIGTERM (running runs are canceled and stay resumable).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.Set = cmd.Flags().Changed
			return mcpStdioCommand(cmd, a, args[0], f, userName)
		},
	}
	fl := stdio.Flags()
	addServeStore(fl, &f)
	fl.StringVar(&userName, "user", "", "the user every run belongs to (default: the local OS user)")
	cmd.AddCommand(stdio, newMCPLockCmd(a))
	return cmd
}

func newMCPLockCmd(a *app) *cobra.Command {
	var timeout time.Duration
	lock := &cobra.Command{
		Use:   "lock FILE|DIR...",
		Short: "Pin the tools and JSON Schemas of the MCP servers workflows declare",
		Long: `mcp lock connects to every MCP server the run = mcp tools of FILE (or of
each .agent file under DIR) declare, imported files included, lists its
tools and writes them, with their input and output JSON Schemas and
annotations, to a lock file next to the declaring file: x.agent gets
x.mcp.lock. The file is deterministic (sorted, canonical JSON): commit it,
and review its diff when a server changes. validate, compile, run and test
then check tool arguments against it without the network, and its hash is
part of the program's (spec/tools.md "Pinned schemas").

Servers are reached as agentc run reaches them: env() from the
environment, HTTP hosts in AGENTC_ALLOW_HOSTS, stdio servers started in
the declaring file's folder. Run it only on files you trust. A server that
cannot be reached fails the command and leaves that file's lock as it was.

Exit status: 0 when every lock was written, 1 when a file does not
compile or a server cannot be listed, 2 on a usage or I/O problem.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return mcpLockCommand(cmd.Context(), a, args, timeout)
		},
	}
	lock.Flags().DurationVar(&timeout, "timeout", 60*time.Second, "how long to wait for the servers of one file")
	return lock
}

func mcpLockCommand(ctx context.Context, a *app, args []string, timeout time.Duration) error {
	files, err := project.Files(args)
	if err != nil {
		return usageErr(err)
	}
	ok, err := a.batch().Lock(ctx, files, timeout)
	switch {
	case err != nil:
		return usageErr(err)
	case !ok:
		return failed
	}
	return nil
}

func mcpStdioCommand(cmd *cobra.Command, a *app, file string, f assemble.ServeFlags, userName string) error {
	ctx, stop := whileServing(cmd.Context())
	defer stop()
	prog, enc, proj, err := loadInProject(a, file)
	if err != nil {
		return err
	}
	sv, userName, err := assemble.StartStdio(cmd.Context(), f, prog, enc, proj.Root, userName, a.stderr, agentcVersion(), a.warn)
	if err != nil {
		return serveErr(err)
	}
	defer sv.Close()
	fmt.Fprintf(a.stderr, "agentc: %s\n", sv.Describe(userName))
	return serveUntilStopped(ctx, func(ctx context.Context) error { return sv.Serve(ctx, userName, cmd.InOrStdin(), a.stdout) })
}
