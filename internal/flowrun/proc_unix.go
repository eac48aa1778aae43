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

// procGroup is the child's process group (the child is its leader).
type procGroup struct{ pgid int }

func newGroup(p *os.Process) procGroup { return procGroup{pgid: p.Pid} }

// signal sends sig to every process of the group.
func (g procGroup) signal(sig syscall.Signal) { _ = syscall.Kill(-g.pgid, sig) }

// live reports whether a live process is left in the group.
func (g procGroup) live() bool { return groupLive(g.pgid) }

func (g procGroup) close() {}

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
