//go:build unix

package workspace

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByMe reports whether st's owner is this process's uid.
func ownedByMe(st fs.FileInfo) bool {
	s, ok := st.Sys().(*syscall.Stat_t)
	return !ok || int(s.Uid) == os.Getuid()
}
