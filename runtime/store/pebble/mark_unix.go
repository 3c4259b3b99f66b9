//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package pebble

import (
	"os"
	"syscall"
)

// mapMark maps the mark file (at least markSize bytes) shared; nil when it
// cannot, and the mark is then written with pwrite.
func mapMark(f *os.File) []byte {
	b, err := syscall.Mmap(int(f.Fd()), 0, markSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	return b
}

func unmapMark(b []byte) error { return syscall.Munmap(b) }
