//go:build unix

package fsutil

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openRead opens path read-only and non-blocking (a FIFO opens at once and
// is then refused by the caller's fstat), never as a controlling terminal,
// and with noFollow without following a final symlink.
//
// The descriptor is opened with the system call and handed to os.NewFile
// after O_NONBLOCK is cleared: os.OpenFile would register it with the
// runtime's poller, which on Linux refuses regular files (one failing
// epoll_ctl per opened file). A blocking descriptor from NewFile
// is never registered. No read happens before the caller's fstat has seen a
// regular file, so clearing O_NONBLOCK on a FIFO cannot block anything.
func openRead(path string, noFollow bool) (*os.File, error) {
	flag := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	if noFollow {
		flag |= unix.O_NOFOLLOW
	}
	fd, err := openEINTR(path, flag)
	if err != nil {
		if noFollow && errors.Is(err, unix.ELOOP) {
			return nil, &fs.PathError{Op: "open", Path: path, Err: ErrSymlink}
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, 0); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openDir opens a folder for listing (O_DIRECTORY: anything else fails at
// once with ENOTDIR, so a FIFO cannot block), following links like os.Open.
func openDir(path string) (*os.File, error) {
	fd, err := openEINTR(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOCTTY)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

func openEINTR(path string, flag int) (int, error) {
	for {
		fd, err := unix.Open(path, flag, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}
