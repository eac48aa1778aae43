//go:build unix

package bundle

import (
	"errors"
	"os"
	"syscall"
)

// openNoFollow opens path for reading without following a final symlink
// (O_NOFOLLOW: a symlink fails with ELOOP, reported as errIsSymlink) and
// without blocking on a fifo (O_NONBLOCK; the caller fstat's and refuses
// anything that is not a regular file). One open replaces lstat+open+compare.
func openNoFollow(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, errIsSymlink
		}
		return nil, err
	}
	return f, nil
}
