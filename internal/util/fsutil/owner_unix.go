//go:build unix

package fsutil

import (
	"io/fs"
	"syscall"
)

// Owner returns the user id owning fi, for a FileInfo from [Root.Lstat] or
// from the os package; ok is false when fi carries none.
func Owner(fi fs.FileInfo) (uid int, ok bool) {
	if f, isOurs := fi.(*fileInfo); isOurs {
		return int(f.st.Uid), true
	}
	if st, isStat := fi.Sys().(*syscall.Stat_t); isStat && st != nil {
		return int(st.Uid), true
	}
	return 0, false
}
