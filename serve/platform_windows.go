//go:build windows

package serve

import (
	"errors"
	"io/fs"
	"os"
)

// openAppendNoFollow opens path for append, creating it with mode 0600. A
// symlink in the last component is refused.
func openAppendNoFollow(path string) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, errors.New("audit log is a symlink")
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}

// lockFile is best effort on Windows: the owner file is held open for the
// instance's lifetime.
func lockFile(*os.File) error { return nil }

// ownerLocked is conservative on Windows: an existing owner file counts as
// alive, so another instance's runs are never marked interrupted.
func ownerLocked(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// fileIdent has no inode on Windows; size and mtime still key the cache.
func fileIdent(os.FileInfo) (ino, dev uint64) { return 0, 0 }
