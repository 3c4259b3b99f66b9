//go:build unix

package pebble

import "syscall"

// fileLimit is the process's limit on open files (0: unknown). Go raises
// the soft limit to the hard one when a program starts.
func fileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return rl.Cur
}
