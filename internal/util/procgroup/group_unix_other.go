//go:build unix && !linux

package procgroup

import "syscall"

// SysProcAttr puts the child in its own process group. There is no parent
// death signal outside Linux.
func SysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// StartTime is 0: no portable start time outside Linux.
func StartTime(int) uint64 { return 0 }

// Live reports whether any process is still in group pgid.
func Live(pgid int) bool { return alive(pgid) }
