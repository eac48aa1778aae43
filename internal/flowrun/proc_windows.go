//go:build windows

package flowrun

import (
	"os"
	"syscall"
)

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// sysProcAttr starts the child in a new process group. Windows has no
// process-group kill through the standard library, so only the direct child
// is killed (a job object with kill-on-close is the documented follow-up).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

func signalGroup(p *os.Process, _ int, _ syscall.Signal) { _ = p.Kill() }

func groupAlive(int) bool { return false }

func groupLive(int) bool { return false }

func signaled(*os.ProcessState) (int, bool) { return 0, false }

func processStartTime(int) uint64 { return 0 }
