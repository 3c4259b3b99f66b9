//go:build !unix

package jail

import "io/fs"

// Links is 1 where the system does not report link counts.
func Links(fs.FileInfo) uint64 { return 1 }
