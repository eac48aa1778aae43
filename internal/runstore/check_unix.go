//go:build unix

package runstore

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// testOnlyEUID replaces os.Geteuid in tests, so that a folder owned by
// "another user" can be simulated without root.
var testOnlyEUID = os.Geteuid

// private refuses a folder another user could change: owned by another
// user, or with a group or other write bit. Read and search bits are left
// alone: they do not let anyone plant a record. Nothing is changed here
// (serve tightens its own folders; a reader never does).
func private(p string, fi fs.FileInfo) error {
	if uid, ok := fsutil.Owner(fi); ok && uid != testOnlyEUID() {
		return &UnsafeDirError{Path: p, Reason: fmt.Sprintf("is owned by another user (uid %d)", uid)}
	}
	if m := fi.Mode().Perm(); m&0o022 != 0 {
		return &UnsafeDirError{Path: p, Reason: fmt.Sprintf("is writable by other users (mode %04o)", m)}
	}
	return nil
}

// tighten makes an existing folder of ours private: any group or other
// permission bit is removed (0700). A folder owned by another user is
// refused (fs.ErrPermission) and left as it is.
func tighten(p string, fi fs.FileInfo) error {
	if uid, ok := fsutil.Owner(fi); ok && uid != testOnlyEUID() {
		return fs.ErrPermission
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	return os.Chmod(p, 0o700)
}
