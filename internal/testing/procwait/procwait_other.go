//go:build !linux

package procwait

import (
	"os"
	"syscall"
	"time"
)

// exit has no pidfd outside Linux: it checks with signal 0 at a coarse
// period, the one bounded poll left (CI and the suite targets are Linux).
func exit(pid int, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for {
		p, err := os.FindProcess(pid)
		if err != nil || p.Signal(syscall.Signal(0)) != nil {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
