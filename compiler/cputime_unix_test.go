//go:build unix

package compiler

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time. The machines benchmarks
// run on are shared, so CPU time per op is reported next to wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
