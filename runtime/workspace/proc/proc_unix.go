//go:build unix

package proc

import (
	"os/exec"
	"syscall"
)

// ownGroup puts cmd in a process group of its own.
func ownGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// kill kills the process group pid leads.
func kill(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
