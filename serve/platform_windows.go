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

// fileIdent has no inode on Windows; size and mtime still key the cache.
func fileIdent(os.FileInfo) (ino, dev uint64) { return 0, 0 }
