//go:build unix

package flowrun

import (
	"errors"
	"os"
	"syscall"
)

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// signalGroup sends sig to every process of group pgid.
func signalGroup(_ *os.Process, pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}

// groupAlive reports whether any process (zombies included) is still in
// group pgid.
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func signaled(st *os.ProcessState) (int, bool) {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	return int(ws.Signal()), true
}
