//go:build linux

package flowhelper

import "syscall"

// Setpgid so the whole group can be signalled; Pdeathsig SIGTERM if the
// server dies (flow-helper.md §2.6).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
