package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes shared by every subcommand.
const (
	exitOK    = 0
	exitFail  = 1 // diagnostics found, check failed, run failed
	exitUsage = 2 // bad flags or arguments, unreadable input
)

// exitError carries an exit code through cobra's error path.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// warn prints a warning on stderr.
func (a *app) warn(msg string) { fmt.Fprintf(a.stderr, "agentc: %s\n", msg) }

// usageErr marks err as a usage or I/O problem (exit 2).
func usageErr(err error) error { return &exitError{code: exitUsage, err: err} }

// failErr marks err as the command's failure (exit 1).
func failErr(err error) error { return &exitError{code: exitFail, err: err} }

// failed is an exit-1 outcome whose details were already printed.
var failed = &exitError{code: exitFail}

// app holds the streams every subcommand writes to, so tests can capture them.
type app struct {
	stdout io.Writer
	stderr io.Writer
}

// command is cmd running run with flags of type F (a struct, or one
// value): it returns cmd and the flags, for the caller to declare on
// cmd.Flags(); run reads them when cmd runs.
func command[F any](cmd *cobra.Command, run func(cmd *cobra.Command, args []string, f *F) error) (*cobra.Command, *F) {
	f := new(F)
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return run(cmd, args, f) }
	return cmd, f
}

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "agentc",
		Short:         "Compile, check, format, run and serve .agent workflows",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageErr(err) })
	root.AddCommand(
		newValidateCmd(a),
		newFmtCmd(a),
		newGraphCmd(a),
		newUICmd(a),
		newCompileCmd(a),
		newDisasmCmd(a),
		newVersionCmd(a),
		newRunCmd(a),
		newTestCmd(a),
		newSessionsCmd(a),
		newCheckpointsCmd(a),
		newReplayCmd(a),
		newServeCmd(a),
		newMCPCmd(a),
		newArtifactsCmd(a),
		newSkillsCmd(a),
		newStoreCmd(a),
		newPruneCmd(a),
		newLSPCmd(a),
		newUpgradeCheckCmd(a),
	)
	return root
}

// whileServing is ctx canceled by SIGINT or SIGTERM, for a command that
// serves (serve, mcp stdio, ui). It is installed when the command starts,
// before its server does: a signal that arrives between the server's
// announcement and its loop shuts it down gracefully instead of killing the
// process.
func whileServing(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// serveUntilStopped runs serve until ctx (whileServing's) is canceled; its
// error is the command's failure.
func serveUntilStopped(ctx context.Context, serve func(context.Context) error) error {
	if err := serve(ctx); err != nil {
		return failErr(err)
	}
	return nil
}

func run(args []string) int {
	return runWith(args, &app{stdout: os.Stdout, stderr: os.Stderr})
}

func runWith(args []string, a *app) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	root := newRoot(a)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(a.stderr, "agentc: %v\n", ee.err)
		}
		return ee.code
	}
	// cobra's own argument errors (unknown command, wrong arg count).
	fmt.Fprintf(a.stderr, "agentc: %v\n", err)
	return exitUsage
}
