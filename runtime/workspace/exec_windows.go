package workspace

import (
	"os"
	"syscall"
)

// sysProcAttr has no process groups to set up on Windows.
func sysProcAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// killGroup kills the command's process only: on Windows its children are
// not covered (spec/skills.md).
func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

func probeNetNS() bool { return false }

// groupKill: only the command itself is killed.
const groupKill = false
