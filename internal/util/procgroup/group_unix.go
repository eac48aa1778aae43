//go:build unix

package procgroup

import (
	"errors"
	"os"
	"syscall"
)

// Group is the child's process group (the child is its leader).
type Group struct{ pgid int }

// New is the group led by p, started with [SysProcAttr].
func New(p *os.Process) Group { return Group{pgid: p.Pid} }

// Term asks every process of the group to stop (SIGTERM).
func (g Group) Term() { _ = syscall.Kill(-g.pgid, syscall.SIGTERM) }

// Kill ends every process of the group (SIGKILL).
func (g Group) Kill() { _ = syscall.Kill(-g.pgid, syscall.SIGKILL) }

// Live reports whether a live process is left in the group (see [Live]).
func (g Group) Live() bool { return Live(g.pgid) }

// Close releases the group's resources (none on Unix).
func (g Group) Close() {}

// alive reports whether any process (zombies included) is in group pgid.
func alive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Signaled is the signal that ended a process, if one did.
func Signaled(st *os.ProcessState) (int, bool) {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	return int(ws.Signal()), true
}
