package fswatch

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

type watch struct{ fd int }

func accessed(path string) (watch, bool, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return watch{}, false, nil
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_ACCESS); err != nil {
		unix.Close(fd)
		return watch{}, true, err
	}
	return watch{fd: fd}, true, nil
}

func (w watch) wait(bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false
		}
		if n > 0 {
			var buf [4096]byte
			k, _ := unix.Read(w.fd, buf[:])
			return k > 0
		}
	}
}

func (w watch) close() { unix.Close(w.fd) }
