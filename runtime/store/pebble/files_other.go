//go:build !unix

package pebble

// fileLimit is the process's limit on open files: unknown here.
func fileLimit() uint64 { return 0 }
