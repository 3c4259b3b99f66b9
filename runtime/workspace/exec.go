package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/agentc/agentc/runtime/workspace/jail"
	"github.com/agentc/agentc/runtime/workspace/proc"
)

// Command is one process to run in a workspace: an argv (no shell), a
// working directory relative to the workspace root, standard input, extra
// environment variables and a timeout.
type Command struct {
	Argv    []string
	Dir     string // workspace-relative; "" = the root
	Stdin   []byte
	Env     map[string]string // added to the scrubbed environment
	Timeout time.Duration     // 0: the executor's default
}

// Result is what a command did. A command that ran and exited non-zero is
// a Result, not an error; errors are for commands that could not run.
type Result struct {
	ExitCode        int    `json:"exit_code"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated,omitempty"`
	StderrTruncated bool   `json:"stderr_truncated,omitempty"`
	TimedOut        bool   `json:"timed_out,omitempty"`
}

// Isolation says what an executor isolates, honestly: what Describe
// returns is what spec/skills.md documents per platform.
type Isolation struct {
	ProcessTree bool // the whole process group is killed on timeout and after exit
	Environment bool // the environment is scrubbed
	Network     bool // the command has no network (a private network namespace)
	Filesystem  bool // the command cannot read or write outside the workspace
}

// Executor runs commands in workspaces.
type Executor interface {
	Run(ctx context.Context, ws *Workspace, cmd Command) (*Result, error)
	Isolation() Isolation
}

// Defaults of Local.
const (
	DefaultTimeout  = 60 * time.Second
	MaxTimeout      = 10 * time.Minute
	DefaultMaxBytes = 64 << 10
)

// Local runs commands as child processes of this one. Each command gets its
// own process group; on timeout or cancellation, and again when the command
// exits, the whole group is killed with SIGKILL, so forked children do not
// outlive it. The environment is scrubbed to PATH, HOME and TMPDIR (both the
// workspace), LANG and the command's own variables.
//
// Where the kernel allows (Confinement), the command is confined by package
// jail: Landlock limits it to its workspace (read-write) and the read-only
// system folders, so other runs' workspaces, the data directory and
// /proc/<pid>/environ of this process are out of reach; new user, PID,
// IPC, UTS and network namespaces give it no network and a process tree
// that dies with it (setsid does not escape); and when this process is
// root, it runs as an unprivileged uid that owns its workspace. Where
// Landlock is missing, commands run unconfined (as this user, reading what
// the user can) and Isolation().Filesystem is false: the caller decides
// whether that is acceptable (agentc serve refuses it for several users).
// Without confinement, on Linux with unprivileged user namespaces, the
// command still gets a network namespace.
type Local struct {
	Timeout  time.Duration // default per command (DefaultTimeout)
	MaxBytes int           // cap of stdout and of stderr each (DefaultMaxBytes)
	// NoNetworkIsolation turns the network namespace off even where it
	// works.
	NoNetworkIsolation bool
	// NoConfinement runs commands without package jail even where it
	// works (the file system is then not isolated).
	NoConfinement bool

	once  sync.Once
	netNS bool
}

// Confinement reports what package jail can confine on this machine (the
// same for workspace commands and declared exec tools); agentc serve
// calls it at start.
func Confinement() jail.Report { return jail.Probe() }

// Isolation reports what l isolates on this machine.
func (l *Local) Isolation() Isolation {
	return Isolation{ProcessTree: groupKill, Environment: true, Network: l.network(), Filesystem: l.confined()}
}

func (l *Local) confined() bool { return !l.NoConfinement && jail.Probe().Confined() }

func (l *Local) network() bool {
	if l.NoNetworkIsolation {
		return false
	}
	l.once.Do(func() { l.netNS = probeNetNS() })
	return l.netNS
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reservedEnv cannot be set by a command.
var reservedEnv = map[string]bool{"PATH": true, "HOME": true, "TMPDIR": true, "LD_PRELOAD": true, "LD_LIBRARY_PATH": true, "AGENTC_JAIL_V1": true}

// Run runs cmd in ws and waits for it and its process group.
func (l *Local) Run(ctx context.Context, ws *Workspace, cmd Command) (*Result, error) {
	if len(cmd.Argv) == 0 || cmd.Argv[0] == "" {
		return nil, errors.New("exec: empty command")
	}
	dir, err := ws.Dir(cmd.Dir)
	if err != nil {
		return nil, fmt.Errorf("exec: working directory: %w", err)
	}
	timeout := cmd.Timeout
	if timeout <= 0 {
		timeout = l.Timeout
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	timeout = min(timeout, MaxTimeout)
	max := l.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ws.Root, "TMPDIR=" + ws.Root, "LANG=C.UTF-8"}
	var names []string
	for k := range cmd.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !envNameRE.MatchString(k) || reservedEnv[k] {
			return nil, fmt.Errorf("exec: environment variable %q may not be set", k)
		}
		env = append(env, k+"="+cmd.Env[k])
	}

	c := exec.Command(cmd.Argv[0], cmd.Argv[1:]...)
	if lp, err := lookPath(cmd.Argv[0], dir); err == nil {
		c.Path = lp
	} else {
		return nil, fmt.Errorf("exec: %s: %w", cmd.Argv[0], err)
	}
	c.Dir, c.Env = dir, env
	stdout, stderr := &capped{max: max}, &capped{max: max}
	c.SysProcAttr = sysProcAttr(l.network())
	if l.confined() {
		if err := l.confine(c, ws); err != nil {
			return nil, fmt.Errorf("exec: %s: %w", cmd.Argv[0], err)
		}
	}
	limited, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop, waitErr, err := proc.Run(limited, c, cmd.Stdin, stdout, stderr)
	if err != nil {
		return nil, fmt.Errorf("exec: start %s: %w", cmd.Argv[0], err)
	}
	res := &Result{}
	if stop == proc.Interrupted {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("exec: %s: %w", cmd.Argv[0], ctx.Err())
		}
		res.TimedOut = true
	}
	res.Stdout, res.StdoutTruncated = stdout.result()
	res.Stderr, res.StderrTruncated = stderr.result()
	var exitErr *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &exitErr):
		res.ExitCode = exitErr.ExitCode()
		if res.ExitCode < 0 {
			res.ExitCode = 128 + int(syscall.SIGKILL)
		}
	default:
		return nil, fmt.Errorf("exec: %s: %w", cmd.Argv[0], waitErr)
	}
	return res, nil
}

// confine rewrites c to run under package jail, confined to ws. As root,
// when every folder above the workspace can be crossed by other users, the
// command runs as the workspace's unprivileged uid, which is given the
// workspace first.
func (l *Local) confine(c *exec.Cmd, ws *Workspace) error {
	spec := jail.Spec{RW: []string{ws.Root}, Network: l.NoNetworkIsolation}
	if jail.Probe().UnprivilegedUID && crossable(filepath.Dir(ws.Root)) {
		spec.UID = jail.SandboxUID(ws.Root)
		if err := ws.chownAll(spec.UID); err != nil {
			return fmt.Errorf("workspace owner: %w", err)
		}
	}
	c.SysProcAttr = sysProcAttr(false) // the process group only: jail adds the namespaces
	return jail.Wrap(c, spec)
}

// crossable reports whether dir and every folder above it may be searched
// by any user (the x bit for others).
func crossable(dir string) bool {
	for {
		st, err := os.Stat(dir)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

// lookPath resolves argv[0]: a name without a slash through the scrubbed
// PATH; a path relative to the working directory as is.
func lookPath(name, dir string) (string, error) {
	if bytes.ContainsRune([]byte(name), '/') {
		if name[0] == '/' {
			return name, nil
		}
		return dir + "/" + name, nil
	}
	for _, d := range []string{"/usr/local/bin", "/usr/bin", "/bin"} {
		if p, err := exec.LookPath(d + "/" + name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("not found in PATH (/usr/local/bin:/usr/bin:/bin)")
}

// capped keeps the first max bytes written and counts the rest, so that a
// flood of output is drained without being kept.
type capped struct {
	mu      sync.Mutex
	max     int
	buf     bytes.Buffer
	dropped int64
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - c.buf.Len()
	if room > 0 {
		n := min(room, len(p))
		c.buf.Write(p[:n])
		c.dropped += int64(len(p) - n)
	} else {
		c.dropped += int64(len(p))
	}
	return len(p), nil
}

func (c *capped) result() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := string(bytes.ToValidUTF8(c.buf.Bytes(), []byte("\uFFFD")))
	if c.dropped > 0 {
		s += fmt.Sprintf("\n[output truncated: %d more bytes]", c.dropped)
	}
	return s, c.dropped > 0
}
