package assemble

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/server/ui"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store/dial"
	"github.com/agentc/agentc/runtime/workspace"
)

// RunOnce is agentc run: it opens o's Runner over the store at target
// (Open), makes the invocation q asks for (session.Service.Invocation) and
// starts it (Runner.RunToEnd). close closes what Open opened; call it once
// the events are read. A request that does not fit the store satisfies
// session.Invalid; an upgrade the check refuses is *runtime.UpgradeError.
func RunOnce(ctx context.Context, o Options, target string, q session.Request) (asm *Assembly, events <-chan *runtime.Event, close func(), err error) {
	if q.Resume != "" && o.Replay == nil && len(o.Program.Tests) > 0 {
		if o.Replay, err = resumedReplay(ctx, o, target, q); err != nil {
			return nil, nil, nil, err
		}
	}
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

// resumedReplay is the default test block of the runnable of the run q
// resumes, read from the store at target before the Runner is assembled
// (session.Service.RunToResume), for a program whose replay the process
// could not choose (several runnables, no serve block): a run resumed
// without OPENAI_API_KEY replays the fixtures it started with.
func resumedReplay(ctx context.Context, o Options, target string, q session.Request) (t *bytecode.Test, err error) {
	st, err := dial.Open(ctx, target)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	run, err := session.New(st).RunToResume(ctx, cmp.Or(o.App, o.Program.Workflow), q.User, q.Session, q.Resume)
	if err != nil {
		return nil, err
	}
	if gi, ok := o.Program.Runnable(run.Runnable); ok {
		return replayOf(o.Program, gi), nil
	}
	return nil, nil
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

// Inspecting is agentc ui's inspector (OpenInspector) listening, with the
// token minted for this start that its page sends with every request.
type Inspecting struct {
	h      *ui.Handler
	l      net.Listener
	token  string
	target string
	close  func()
}

// StartInspector opens the inspector over the store at target (with o,
// over o's Runner too: OpenInspector) and listens on addr.
func StartInspector(ctx context.Context, o *Options, target, addr string) (*Inspecting, error) {
	h, closeFn, err := OpenInspector(ctx, o, target)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		closeFn()
		return nil, fmt.Errorf("listen: %w", err)
	}
	return &Inspecting{h: h, l: l, token: ui.NewToken(), target: target, close: closeFn}, nil
}

// URL is the address a person opens: the page, the token in its fragment.
func (i *Inspecting) URL() string {
	return fmt.Sprintf("http://%s%s#token=%s", i.l.Addr(), ui.PagePath, i.token)
}

// String is the line announcing the inspector.
func (i *Inspecting) String() string {
	return fmt.Sprintf("inspecting store %s on http://%s%s (open the address above; Ctrl-C stops)", dial.Display(i.target), i.l.Addr(), ui.PagePath)
}

// Serve serves the page and its API until ctx ends (ui.Handler.ServeLocal).
func (i *Inspecting) Serve(ctx context.Context) error { return i.h.ServeLocal(ctx, i.l, i.token) }

// Close closes what StartInspector opened.
func (i *Inspecting) Close() { i.close() }
