//go:build unix

package jail

import (
	"io/fs"
	"syscall"
)

// Links is the hard-link count of the file st describes (1 when unknown).
// A regular file with more than one link has a name elsewhere too, perhaps
// outside any confinement, so readers that confine paths refuse it.
func Links(st fs.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Nlink)
	}
	return 1
}
