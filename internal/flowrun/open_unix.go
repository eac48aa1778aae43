//go:build unix

package flowrun

import (
	"os"
	"syscall"
)

// openNoFollow opens path read-only, refusing a symlink in the last
// component and never blocking on a FIFO swapped in after the lstat.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}
