//go:build !linux

package jail

import (
	"fmt"
	"os/exec"
	"runtime"
)

// Probe reports that nothing confines commands outside Linux.
func Probe() Report {
	return Report{Missing: []string{"Landlock and namespaces: Linux only, this is " + runtime.GOOS}}
}

// Wrap fails: commands cannot be confined outside Linux.
func Wrap(*exec.Cmd, Spec) error {
	return fmt.Errorf("%w: Linux only, this is %s", ErrUnavailable, runtime.GOOS)
}
