package assemble

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/inspect"
	"github.com/agentc/agentc/runtime/runtimetest"
	"github.com/agentc/agentc/runtime/session"
	"github.com/agentc/agentc/runtime/store/dial"
)

const startTestSource = `workflow p

state S { q: string }

graph g(S) input q output q {
  start -> end
}
`

// TestRunOnce: a run to its end over a Pebble store; a request the store
// cannot serve is session.Invalid and leaves nothing open.
func TestRunOnce(t *testing.T) {
	prog := runtimetest.CompileSource(t, "p.agent", startTestSource)
	dir := t.TempDir()
	o := Options{Program: prog, Root: dir, Data: dir}
	target := filepath.Join(dir, "store")
	ctx := context.Background()
	asm, ch, closeRun, err := RunOnce(ctx, o, target, session.Request{User: "u", Session: "s", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	fin := inspect.Watch{Out: io.Discard, Err: io.Discard}.Follow(ch, time.Now)
	closeRun()
	if asm == nil || fin == nil || fin.Status != runtime.StatusCompleted || string(fin.Output) != `"hi"` {
		t.Fatalf("run: %+v", fin)
	}
	// The store was closed: it opens again, and a run it does not hold is
	// the request's fault.
	_, _, _, err = RunOnce(ctx, o, target, session.Request{User: "u", Session: "s", Resume: "run_nope"})
	if err == nil || !session.Invalid(err) {
		t.Fatalf("resume of a missing run: %v", err)
	}
	if _, _, _, err = RunOnce(ctx, o, target, session.Request{User: "u", Session: "s", Input: "again"}); err != nil {
		t.Fatalf("the store was left open: %v", err)
	}
}

// TestStartServeSettings: settings that do not hold (no tokens, an unknown
// log format) are *ServeConfigError, before anything opens.
func TestStartServeSettings(t *testing.T) {
	prog := runtimetest.CompileSource(t, "p.agent", startTestSource)
	dir := t.TempDir()
	for _, tc := range []struct {
		f      ServeFlags
		format string
		want   string
	}{
		{ServeFlags{Addr: "127.0.0.1:0", Data: dir, Set: func(f string) bool { return f == "data" }}, "json", "token"},
		{ServeFlags{Addr: "127.0.0.1:0", Data: dir, Tokens: []string{"t=alice"}, Set: func(f string) bool { return f == "token" || f == "data" }}, "xml", "xml"},
	} {
		sv, err := StartServe(context.Background(), tc.f, prog, nil, dir, tc.format, &bytes.Buffer{}, "test", func(string) {})
		var conf *ServeConfigError
		if sv != nil || !errors.As(err, &conf) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v %s: %v, want a ServeConfigError naming %s", tc.f, tc.format, err, tc.want)
		}
	}
}

// TestStartStdio: the MCP stdio server for a named user, over the store
// the settings select.
func TestStartStdio(t *testing.T) {
	prog := runtimetest.CompileSource(t, "p.agent", startTestSource)
	dir := t.TempDir()
	f := ServeFlags{Data: dir, Set: func(flag string) bool { return flag == "data" }}
	sv, user, err := StartStdio(context.Background(), f, prog, nil, dir, " ann ", &bytes.Buffer{}, "test", func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	if d := sv.Describe(user); user != "ann" || !strings.Contains(d, "as user ann") || !strings.Contains(d, "tools g") || !strings.Contains(d, "store "+dir) {
		t.Fatalf("user %q: %s", user, d)
	}
}

// TestStartInspector: the inspector listens, its URL carries the token,
// Serve ends with its context; an address it cannot listen on is an error.
func TestStartInspector(t *testing.T) {
	target := filepath.Join(t.TempDir(), "store")
	in, err := StartInspector(context.Background(), nil, target, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if u := in.URL(); !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.Contains(u, "/ui/#token=") {
		t.Errorf("URL %s", u)
	}
	if s := in.String(); !strings.HasPrefix(s, "inspecting store "+target+" on http://127.0.0.1:") {
		t.Errorf("String %s", s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := in.Serve(ctx); err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
	if _, err := StartInspector(context.Background(), nil, filepath.Join(t.TempDir(), "s2"), "127.0.0.1:-1"); err == nil || !strings.HasPrefix(err.Error(), "listen: ") {
		t.Errorf("bad address: %v", err)
	}
}

// TestProgramHash: the hash agrees with the one a run of the program
// records.
func TestProgramHash(t *testing.T) {
	prog := runtimetest.CompileSource(t, "p.agent", startTestSource)
	dir := t.TempDir()
	_, ch, closeRun, err := RunOnce(context.Background(), Options{Program: prog, Root: dir, Data: dir}, filepath.Join(dir, "store"), session.Request{User: "u", Session: "s", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	fin := inspect.Watch{Out: io.Discard, Err: io.Discard}.Follow(ch, time.Now)
	closeRun()
	st, err := dial.Open(context.Background(), filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run, err := st.GetRun(context.Background(), fin.Run)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := ProgramHash(prog); err != nil || h != run.ProgramHash {
		t.Fatalf("ProgramHash %s, %v; the run records %s", h, err, run.ProgramHash)
	}
}
