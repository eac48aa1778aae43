//go:build unix

package serve

import (
	"os"
	"syscall"
)

// openAppendNoFollow opens path for append, creating it with mode 0600,
// without following a symlink in the last component (the audit log).
func openAppendNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
}
