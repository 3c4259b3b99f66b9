package proc

import (
	"os"
	"os/exec"
)

// ownGroup does nothing: Windows has no process groups to set up.
func ownGroup(*exec.Cmd) {}

// kill kills the command's process only: on Windows its children are not
// covered (spec/skills.md).
func kill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
