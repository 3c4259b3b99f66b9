package tools

// `run = exec { command, dir, env, stdin, timeout }`
// (spec/language.md §7.3, spec/tools.md "Declared http and exec tools").

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/outbound"
	"github.com/agentc/agentc/runtime/workspace/jail"
	"github.com/agentc/agentc/runtime/workspace/proc"
	"github.com/agentc/agentc/vm"
)

const (
	// stderrTail is how much of the end of standard error a failure quotes.
	stderrTail = 2048
	// defaultPath is the child's PATH when the environment has none.
	defaultPath = "/usr/local/bin:/usr/bin:/bin"
)

type execTool struct {
	*declared
	own time.Duration
}

func newExecTool(d *declared) (*execTool, error) {
	x := &execTool{declared: d, own: DefaultExecTimeout}
	if len(d.t.Impl.Argv) == 0 {
		return nil, fmt.Errorf("tool %s: exec without a command", d.t.Name)
	}
	if d.t.Impl.Timeout > 0 {
		x.own = d.t.Impl.Timeout
	}
	return x, nil
}

func (x *execTool) Spec() runtime.ToolSpec { return x.spec() }
func (x *execTool) Effect() runtime.Effect { return runtime.Effect(x.t.Effect) }

// Call renders argv, folder, environment and standard input from the
// validated input and runs the command (no shell) in a process group of its
// own, killed as a whole on timeout, on an oversized output and when the
// command exits (so forked children do not outlive the call).
func (x *execTool) Call(ctx context.Context, req runtime.ToolRequest) (json.RawMessage, error) {
	limit := x.callTimeout(x.own)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	input, err := x.input(req.Args)
	if err != nil {
		return nil, err
	}
	argv := make([]string, len(x.t.Impl.Argv))
	for i, c := range x.t.Impl.Argv {
		if argv[i], err = x.text(ctx, fmt.Sprintf("command[%d]", i), c, input); err != nil {
			return nil, err
		}
	}
	if argv[0] == "" {
		return nil, x.errorf(vm.KindToolError, "command[0] is empty")
	}
	dir, set, err := x.optString(ctx, "dir", input)
	if err != nil {
		return nil, err
	}
	if !set {
		dir = "."
	}
	if path.IsAbs(dir) {
		return nil, x.errorf(vm.KindToolError, "dir %q: absolute folders are refused", dir)
	}
	realDir, err := x.cfg.resolve("tool "+x.t.Name+": dir", path.Join(x.fileDir(), dir))
	if err != nil {
		return nil, err
	}
	env, err := x.environ(ctx, input, req.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	var stdin []byte
	if s, set, err := x.optString(ctx, "stdin", input); err != nil {
		return nil, err
	} else if set {
		stdin = []byte(s)
	}
	out, err := x.run(ctx, argv, realDir, env, stdin, limit)
	if err != nil {
		return nil, err
	}
	return x.result("standard output", out)
}

// IdempotencyEnv is the variable an exec tool's command reads the runtime's
// idempotency key from, as an http tool reads its Idempotency-Key header.
const IdempotencyEnv = "AGENTC_IDEMPOTENCY_KEY"

// environ is the child's whole environment: PATH (from Config.LookupEnv,
// else a default), the declared env map, and for an idempotent or
// side-effect call the runtime's idempotency key as IdempotencyEnv (set
// last: a declared entry cannot forge it), nothing else of this process.
func (x *execTool) environ(ctx context.Context, input types.Value, idem string) ([]string, error) {
	vars := map[string]string{"PATH": defaultPath}
	if x.cfg.LookupEnv != nil {
		if p, ok := x.cfg.LookupEnv("PATH"); ok && p != "" {
			vars["PATH"] = p
		}
	}
	m, _, err := x.optStringMap(ctx, "env", input)
	if err != nil {
		return nil, err
	}
	for k, val := range m {
		vars[k] = val
	}
	delete(vars, IdempotencyEnv)
	if idem != "" {
		vars[IdempotencyEnv] = idem
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

// run starts argv and collects its standard output (capped) and the tail
// of its standard error. Every goroutine it starts has ended when it
// returns, and so has every process of the command's group.
func (x *execTool) run(ctx context.Context, argv []string, dir string, env []string, stdin []byte, limit time.Duration) ([]byte, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	if errors.Is(cmd.Err, exec.ErrNotFound) || errors.Is(cmd.Err, exec.ErrDot) {
		return nil, x.errorf(vm.KindToolError, "command %q not found", argv[0])
	}
	cmd.Dir, cmd.Env = dir, env
	if strings.ContainsRune(argv[0], '/') {
		p := argv[0]
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return nil, x.errorf(vm.KindToolError, "command %q not found", argv[0])
		}
	}
	if err := x.confine(cmd); err != nil {
		return nil, err
	}

	max := x.cfg.maxBytes()
	stdout := &capBuffer{max: max}
	var tail tailBuffer
	stop, werr, err := proc.Run(ctx, cmd, stdin, stdout, &tail)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return nil, x.errorf(vm.KindToolError, "command %q not found", argv[0])
		}
		return nil, x.errorf(vm.KindToolError, "start %q: %v", argv[0], err)
	}
	switch {
	case stop == proc.Interrupted && ctx.Err() == context.DeadlineExceeded:
		return nil, x.errorf(vm.KindTimeout, "%s: no result within %s (process group killed)", argv[0], limit)
	case stop == proc.Interrupted:
		return nil, x.errorf(vm.KindCanceled, "%s: canceled (process group killed)", argv[0])
	case stop == proc.Overflowed:
		return nil, x.errorf(vm.KindToolError, "%s: standard output exceeds the %d-byte cap (process group killed)", argv[0], max)
	}
	if werr != nil {
		msg := werr.Error()
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				msg = "killed by signal " + ws.Signal().String()
			} else {
				msg = fmt.Sprintf("exit status %d", ee.ExitCode())
			}
		}
		if t := outbound.Snippet(tail.bytes(), stderrTail); t != "" {
			msg += ": " + t
		}
		return nil, x.errorf(vm.KindToolError, "%s: %s", argv[0], msg)
	}
	return stdout.buf, nil
}

// confine rewrites cmd to run under package jail unless the
// configuration opts out: the project (Workspace) read-write (tools such
// as `git apply` write to it), the system folders read-only, the data
// directory hidden, nothing else of the file system, nothing of /proc,
// signals and abstract sockets only within the command's own processes,
// new user, PID, IPC and UTS namespaces. The network is kept (exec tools
// may call out) and so is the uid. Where the kernel cannot confine, the
// command runs unconfined; agentc serve refuses that for several users
// unless the operator opts in (workspace.Confinement).
func (x *execTool) confine(cmd *exec.Cmd) error {
	if x.cfg.UnconfinedExec || !jail.Probe().Confined() {
		return nil
	}
	hide := append([]string{filepath.Join(x.cfg.Workspace, ".agentc")}, x.cfg.ExecHide...)
	if x.cfg.LookupEnv != nil {
		if d, ok := x.cfg.LookupEnv("AGENTC_DATA"); ok && d != "" {
			if abs, err := filepath.Abs(d); err == nil {
				hide = append(hide, abs)
			}
		}
	}
	if err := jail.Wrap(cmd, jail.Spec{RW: []string{x.cfg.Workspace}, Hide: hide, Network: true}); err != nil {
		return x.errorf(vm.KindUnavailable, "confine %s: %v", x.t.Name, err)
	}
	return nil
}

// capBuffer keeps standard output; a write past max bytes is ErrOverflow,
// which ends the command.
type capBuffer struct {
	buf []byte
	max int64
}

func (c *capBuffer) Write(p []byte) (int, error) {
	if int64(len(c.buf)+len(p)) > c.max {
		return 0, proc.ErrOverflow
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

// tailBuffer keeps the last stderrTail bytes written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*stderrTail {
		t.b = append(t.b[:0], t.b[len(t.b)-stderrTail:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) bytes() []byte {
	if len(t.b) > stderrTail {
		return t.b[len(t.b)-stderrTail:]
	}
	return t.b
}
