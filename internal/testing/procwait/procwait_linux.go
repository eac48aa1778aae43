package procwait

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

func exit(pid int, bound time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true
	}
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(bound)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n == 1
	}
}
