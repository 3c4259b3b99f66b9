// Package jail starts a command confined to the folders it is given: on
// Linux, Landlock limits the file system to those folders plus the
// read-only system folders programs need, and new user, PID, IPC, UTS and
// (unless the command keeps the network) network namespaces hide the
// rest of the machine; a process running as root moreover runs the command
// as an unprivileged uid. Landlock applies to the calling process, so the
// command is started through this binary itself: Wrap rewrites an
// exec.Cmd to re-execute /proc/self/exe with a marker variable, and this
// package's init, which runs before main in every binary that links it,
// applies the restrictions and executes the real command.
//
// Probe reports what this machine supports; Wrap fails with
// ErrUnavailable where the file system cannot be confined, so that a
// caller never runs unconfined without deciding to.
package jail

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnavailable is wrapped when the kernel cannot confine a command.
var ErrUnavailable = errors.New("confinement unavailable")

// Spec is what one command may reach.
type Spec struct {
	// RW are folders (or files) the command may read, write and execute
	// in.
	RW []string
	// RO are folders (or files) it may read and execute, besides the
	// system folders (SystemRO).
	RO []string
	// Hide are paths inside RW or RO folders that stay unreachable (a
	// data directory inside a project, say): folders containing them are
	// granted entry by entry around them.
	Hide []string
	// Network keeps the network: no network namespace and no Landlock
	// TCP restriction.
	Network bool
	// UID, when this process is root, is the unprivileged uid (and gid)
	// the command runs as; 0 keeps this process's uid. RW folders must
	// be writable by it (Chown).
	UID int
}

// SystemRO are the read-only paths every command gets (those that exist):
// programs, libraries, the loader's cache, time zones, name service files
// and certificates. Nothing else of /etc, no /proc, no /home, no /root, no
// /tmp.
var SystemRO = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/localtime", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts",
	"/etc/resolv.conf", "/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/mime.types",
	"/etc/protocols", "/etc/services",
	"/dev/urandom", "/dev/random",
}

// SystemRW are the device files every command may write.
var SystemRW = []string{"/dev/null", "/dev/zero", "/dev/full"}

// Report says what confinement this machine gives a command.
type Report struct {
	// Landlock is the Landlock ABI version applied (0: none, so the
	// file system and other processes' /proc entries are not confined).
	Landlock int
	// Namespaces: commands run in new user, PID, IPC, UTS and network
	// namespaces.
	Namespaces bool
	// UnprivilegedUID: commands run as an unprivileged uid (only when
	// this process is root).
	UnprivilegedUID bool
	// Missing explains each mechanism that is not available.
	Missing []string
}

// Confined reports whether the file system (and so other runs' folders,
// the data directory and /proc/<pid>/environ) is out of a command's reach.
func (r Report) Confined() bool { return r.Landlock > 0 }

func (r Report) String() string {
	var on []string
	if r.Landlock > 0 {
		on = append(on, fmt.Sprintf("landlock ABI %d", r.Landlock))
	}
	if r.Namespaces {
		on = append(on, "user/pid/ipc/uts/net namespaces")
	}
	if r.UnprivilegedUID {
		on = append(on, "unprivileged uid")
	}
	s := "none"
	if len(on) > 0 {
		s = strings.Join(on, ", ")
	}
	if len(r.Missing) > 0 {
		s += " (missing: " + strings.Join(r.Missing, "; ") + ")"
	}
	return s
}

// SandboxUID is the unprivileged uid for key (a workspace path): one of
// 65,536 ids from 1<<20 up, so that distinct workspaces almost always get
// distinct owners in addition to Landlock's separation.
func SandboxUID(key string) int {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return 1<<20 + int(h&0xffff)
}
