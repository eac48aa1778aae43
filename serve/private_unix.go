//go:build unix

package serve

import (
	"io/fs"
	"os"
	"syscall"
)

// makePrivate enforces issue 10 §5 on an existing folder: any group or
// other permission bit is removed (0700) when this user owns it; a folder
// owned by another user is refused (the caller reports exit 2).
func makePrivate(p string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && int(st.Uid) != os.Geteuid() {
		return fs.ErrPermission
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	return os.Chmod(p, 0o700)
}
