package cputime

import (
	"runtime"
	"testing"
	"time"
)

// TestProcessCountsWork: CPU spent in the process shows in Process.
func TestProcessCountsWork(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no getrusage")
	}
	before := Process()
	x := uint64(1)
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
		for range 1000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	if after := Process(); after-before < 10*time.Millisecond {
		t.Errorf("50 ms of work counted %v of CPU (x=%d)", after-before, x)
	}
}
