package assemble

import (
	"context"
	"io"
	"log/slog"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/workspace"
)

// RunOnce is agentc run: it opens o's Runner over the store at target
// (Open), makes the invocation q asks for (session.Service.Invocation) and
// starts it (Runner.RunToEnd). close closes what Open opened; call it once
// the events are read. A request that does not fit the store satisfies
// session.Invalid; an upgrade the check refuses is *runtime.UpgradeError.
func RunOnce(ctx context.Context, o Options, target string, q session.Request) (asm *Assembly, events <-chan *runtime.Event, close func(), err error) {
	asm, st, r, close, err := Open(ctx, o, target)
	if err != nil {
		return nil, nil, nil, err
	}
	inv, err := session.New(st).Invocation(ctx, r, q)
	if err == nil {
		events, err = r.RunToEnd(ctx, inv)
	}
	if err != nil {
		close()
		return nil, nil, nil, err
	}
	return asm, events, close, nil
}

// StartServe is agentc serve once its program prog loaded (enc its
// encoding, root the project's root): the settings f resolves
// (ResolveServe), their authentication and the confinement of exec tools
// checked (CheckAuth, ExecConfinement), the request log in logFormat on
// logTo (RequestLogger) and the server (NewServed). warn gets the
// warnings. Errors in the settings are *ServeConfigError.
func StartServe(ctx context.Context, f ServeFlags, prog *bytecode.Program, enc []byte, root, logFormat string, logTo io.Writer, version string, warn func(string)) (*Served, error) {
	set, err := ResolveServe(f, prog, root, nil)
	if err == nil {
		err = set.CheckAuth()
	}
	if err == nil {
		err = ExecConfinement(prog, workspace.Confinement(), set.Tokens, set.Open, nil, warn)
	}
	if err != nil {
		return nil, &ServeConfigError{Err: err}
	}
	logger, err := RequestLogger(logFormat, logTo)
	if err != nil {
		return nil, &ServeConfigError{Err: err}
	}
	o := Process(prog, enc, root, set.Data, warn)
	o.Logger = logger
	return NewServed(ctx, o, prog, set, version, warn)
}

// StartStdio is agentc mcp stdio once its program prog loaded: the
// settings f resolves, the user every run belongs to (LocalUser of
// userName), the confinement of exec tools checked for that user alone,
// warnings logged on logTo, and the server (NewStdio). Errors in the
// settings are *ServeConfigError.
func StartStdio(ctx context.Context, f ServeFlags, prog *bytecode.Program, enc []byte, root, userName string, logTo io.Writer, version string, warn func(string)) (sv *Stdio, user string, err error) {
	set, err := ResolveServe(f, prog, root, nil)
	if err == nil {
		user, err = LocalUser(userName)
	}
	if err == nil {
		err = ExecConfinement(prog, workspace.Confinement(), map[string]string{"stdio": user}, false, nil, warn)
	}
	if err != nil {
		return nil, "", &ServeConfigError{Err: err}
	}
	o := Process(prog, enc, root, set.Data, warn)
	o.Logger = slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sv, err = NewStdio(ctx, o, set, version)
	return sv, user, err
}
