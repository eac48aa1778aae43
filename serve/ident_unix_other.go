//go:build unix && !linux && !darwin

package serve

import (
	"os"
	"syscall"
)

// fileIdent returns the inode and device of fi (the path-based identity
// walk of snapshot_path.go).
func fileIdent(fi os.FileInfo) (ino, dev uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino), uint64(st.Dev)
	}
	return 0, 0
}
