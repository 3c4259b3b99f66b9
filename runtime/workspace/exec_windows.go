package workspace

import "syscall"

// sysProcAttr has no process groups to set up on Windows.
func sysProcAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

func probeNetNS() bool { return false }

// groupKill: only the command itself is killed.
const groupKill = false
