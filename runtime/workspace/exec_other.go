//go:build unix && !linux

package workspace

import "syscall"

// sysProcAttr puts the command in its own process group; there is no
// network namespace outside Linux.
func sysProcAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func probeNetNS() bool { return false }

// groupKill: the whole process group is killed.
const groupKill = true
