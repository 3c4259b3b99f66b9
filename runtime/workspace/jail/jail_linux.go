package jail

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// markerEnv carries the payload from Wrap to the re-executed binary.
const markerEnv = "AGENTC_JAIL_V1"

// payload is what the re-executed binary needs: the real command and the
// paths to grant (already resolved by the parent).
type payload struct {
	Path    string   `json:"path"`
	Argv    []string `json:"argv"`
	Env     []string `json:"env"`
	RODirs  []string `json:"ro_dirs,omitempty"`
	ROFiles []string `json:"ro_files,omitempty"`
	RWDirs  []string `json:"rw_dirs,omitempty"`
	RWFiles []string `json:"rw_files,omitempty"`
	Network bool     `json:"network,omitempty"`
}

func init() {
	v, ok := os.LookupEnv(markerEnv)
	if !ok {
		return
	}
	os.Exit(enter(v))
}

// enter applies Landlock to this (single, locked) thread and executes the
// command; it returns only on failure, with the exit status to use.
func enter(v string) int {
	runtime.LockOSThread() // never unlocked: the thread becomes the command
	var p payload
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		fmt.Fprintf(os.Stderr, "agentc jail: bad payload: %v\n", err)
		return 126
	}
	if err := restrict(p); err != nil {
		fmt.Fprintf(os.Stderr, "agentc jail: %v\n", err)
		return 126
	}
	err := syscall.Exec(p.Path, p.Argv, p.Env)
	fmt.Fprintf(os.Stderr, "agentc jail: exec %s: %v\n", p.Path, err)
	if errors.Is(err, syscall.ENOENT) {
		return 127
	}
	return 126
}

// config is the Landlock configuration: every file-system right, the IPC
// scopes (no signals to, no abstract sockets of, processes outside), and
// TCP unless the command keeps the network; downgraded to the kernel's ABI.
func config(network bool) landlock.Config {
	c := landlock.Config{HandledAccessFS: landlock.V11.HandledAccessFS, Scoped: landlock.V11.Scoped}
	if !network {
		c.HandledAccessNet = landlock.V11.HandledAccessNet
	}
	return c.BestEffort()
}

func restrict(p payload) error {
	var rules []landlock.Rule
	if len(p.RODirs) > 0 {
		rules = append(rules, landlock.RODirs(p.RODirs...).IgnoreIfMissing())
	}
	if len(p.ROFiles) > 0 {
		rules = append(rules, landlock.ROFiles(p.ROFiles...).IgnoreIfMissing())
	}
	if len(p.RWDirs) > 0 {
		rules = append(rules, landlock.RWDirs(p.RWDirs...))
	}
	if len(p.RWFiles) > 0 {
		rules = append(rules, landlock.RWFiles(p.RWFiles...).IgnoreIfMissing())
	}
	fd, flags, err := config(p.Network).NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock ruleset: %w", err)
	}
	if fd < 0 {
		return fmt.Errorf("landlock: %w", ErrUnavailable)
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// Wrap rewrites cmd (Path, Args, Env and Dir set; SysProcAttr nil or
// with only Setpgid) to run confined by s. It fails with ErrUnavailable
// when Landlock is not available; without namespaces (Probe's report) the
// command still runs under Landlock.
func Wrap(cmd *exec.Cmd, s Spec) error {
	r := Probe()
	if !r.Confined() {
		return fmt.Errorf("%w: %s", ErrUnavailable, strings.Join(r.Missing, "; "))
	}
	p, err := build(cmd, s)
	if err != nil {
		return err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("jail: %w", err)
	}
	cmd.Path = "/proc/self/exe" // a magic link: reachable whatever the uid
	cmd.Args = []string{"agentc-jail"}
	cmd.Env = []string{markerEnv + "=" + string(b)}
	attr := &syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		attr.Setpgid = cmd.SysProcAttr.Setpgid
	}
	if r.Namespaces {
		namespaces(attr, s, r.UnprivilegedUID)
	}
	cmd.SysProcAttr = attr
	return nil
}

// namespaces adds new user, PID, IPC and UTS namespaces (and a network
// one unless s.Network). As root with s.UID set, the command runs as that
// uid; otherwise as this process's uid.
func namespaces(a *syscall.SysProcAttr, s Spec, unpriv bool) {
	a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS
	if !s.Network {
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	uid, gid := os.Getuid(), os.Getgid()
	if unpriv && s.UID > 0 {
		uid, gid = s.UID, s.UID
		a.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
		a.GidMappingsEnableSetgroups = true
	}
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
}

// build resolves the command's grants: the system paths, s.RW and s.RO
// (RO folders split around s.Hide).
func build(cmd *exec.Cmd, s Spec) (payload, error) {
	p := payload{Path: cmd.Path, Argv: cmd.Args, Env: cmd.Env, Network: s.Network}
	if p.Env == nil {
		p.Env = []string{}
	}
	for _, sp := range SystemRO {
		if st, err := os.Stat(sp); err == nil {
			if st.IsDir() {
				p.RODirs = append(p.RODirs, sp)
			} else {
				p.ROFiles = append(p.ROFiles, sp)
			}
		}
	}
	p.RWFiles = append(p.RWFiles, SystemRW...)
	var hide []string
	for _, h := range s.Hide {
		if real, err := filepath.EvalSymlinks(h); err == nil {
			hide = append(hide, real)
		}
	}
	for i, list := range [][]string{s.RO, s.RW} {
		for _, path := range list {
			real, err := filepath.EvalSymlinks(path)
			if err != nil {
				return payload{}, fmt.Errorf("jail: %s: %w", path, err)
			}
			if err := grantAround(&p, real, hide, i == 1, 0); err != nil {
				return payload{}, err
			}
		}
	}
	return p, nil
}

// grantAround grants dir (read-only, or read-write with rw), or, when a
// hidden path is inside it, each of its entries except the hidden ones
// (recursively towards them). Symlinks among those entries are not
// granted.
func grantAround(p *payload, dir string, hide []string, rw bool, depth int) error {
	if slices.Contains(hide, dir) {
		return nil
	}
	inside := false
	for _, h := range hide {
		if strings.HasPrefix(h, dir+string(filepath.Separator)) {
			inside = true
		}
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("jail: %w", err)
	}
	switch {
	case !st.IsDir() && rw:
		p.RWFiles = append(p.RWFiles, dir)
		return nil
	case !st.IsDir():
		p.ROFiles = append(p.ROFiles, dir)
		return nil
	case !inside && rw:
		p.RWDirs = append(p.RWDirs, dir)
		return nil
	case !inside:
		p.RODirs = append(p.RODirs, dir)
		return nil
	}
	if depth > 32 {
		return fmt.Errorf("jail: %s: too deep", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("jail: %w", err)
	}
	// Landlock rights are inherited by everything beneath a granted
	// path, so this folder itself gets none (it cannot be listed): only
	// its entries are granted, one by one.
	for _, e := range ents {
		if e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		if err := grantAround(p, filepath.Join(dir, e.Name()), hide, rw, depth+1); err != nil {
			return err
		}
	}
	return nil
}

var (
	probeOnce sync.Once
	probed    Report
)

// Probe reports, once per process, what confinement commands get here:
// the Landlock ABI and whether a confined child starts with namespaces
// (and as an unprivileged uid when this process is root).
func Probe() Report {
	probeOnce.Do(func() { probed = probe() })
	return probed
}

func probe() Report {
	var r Report
	abi, err := llsyscall.LandlockGetABIVersion()
	switch {
	case err != nil:
		r.Missing = append(r.Missing, fmt.Sprintf("Landlock: %v (a kernel of 5.13 or later with landlock in its lsm= list is needed)", err))
		return r
	case abi < 1:
		r.Missing = append(r.Missing, "Landlock: not enabled")
		return r
	}
	r.Landlock = min(abi, 11)
	truePath := ""
	for _, p := range []string{"/usr/bin/true", "/bin/true"} {
		if _, err := os.Stat(p); err == nil {
			truePath = p
			break
		}
	}
	if truePath == "" {
		r.Missing = append(r.Missing, "namespaces: no true(1) to probe with")
		return r
	}
	tryRun := func(ns, unpriv bool) error {
		c := exec.Command(truePath)
		c.Env = []string{}
		c.Dir = "/"
		p, err := build(c, Spec{})
		if err != nil {
			return err
		}
		b, _ := json.Marshal(p)
		c.Path, c.Args, c.Env = "/proc/self/exe", []string{"agentc-jail"}, []string{markerEnv + "=" + string(b)}
		c.SysProcAttr = &syscall.SysProcAttr{}
		if ns {
			namespaces(c.SysProcAttr, Spec{UID: SandboxUID("probe")}, unpriv)
		}
		out, err := c.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	root := os.Geteuid() == 0
	if root {
		if err := tryRun(true, true); err == nil {
			r.Namespaces, r.UnprivilegedUID = true, true
			return r
		} else {
			r.Missing = append(r.Missing, fmt.Sprintf("unprivileged uid: %v", err))
		}
	} else {
		r.Missing = append(r.Missing, "unprivileged uid: this process is not root, commands keep its uid")
	}
	if err := tryRun(true, false); err == nil {
		r.Namespaces = true
		return r
	} else {
		r.Missing = append(r.Missing, fmt.Sprintf("namespaces: %v", err))
	}
	if err := tryRun(false, false); err != nil {
		r.Landlock = 0
		r.Missing = append(r.Missing, fmt.Sprintf("Landlock: a confined child does not start: %v", err))
	}
	return r
}
