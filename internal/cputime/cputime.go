// Package cputime reads the process's CPU time, for the benchmarks and
// harnesses that report CPU per operation next to wall time (the machines
// they run on are shared, and a process's background work — the store's
// compactions, the collector — is part of what an operation costs).
package cputime

import "time"

// Process is the process's user and system CPU time so far (0 where the
// system does not report it).
func Process() time.Duration { return process() }
