//go:build unix

package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// openRead opens path read-only and non-blocking (a FIFO opens at once and
// is then refused by the caller's fstat), never as a controlling terminal,
// and with noFollow without following a final symlink.
func openRead(path string, noFollow bool) (*os.File, error) {
	flag := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
	if noFollow {
		flag |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		if noFollow && errors.Is(err, syscall.ELOOP) {
			return nil, &fs.PathError{Op: "open", Path: path, Err: ErrSymlink}
		}
		return nil, err
	}
	return f, nil
}
