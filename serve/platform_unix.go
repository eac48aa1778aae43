//go:build unix

package serve

import (
	"os"
	"syscall"
)

// openAppendNoFollow opens path for append, creating it with mode 0600,
// without following a symlink in the last component (§11).
func openAppendNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
}

// lockFile takes an exclusive, non-blocking advisory lock on f.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// ownerLocked reports whether another open file description holds an
// exclusive lock on the owner file at path.
func ownerLocked(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
