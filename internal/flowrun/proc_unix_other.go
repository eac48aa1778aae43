//go:build unix && !linux

package flowrun

import "syscall"

// sysProcAttr puts the child in its own process group.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func processStartTime(int) uint64 { return 0 }

// groupLive reports whether any process is still in group pgid.
func groupLive(pgid int) bool { return groupAlive(pgid) }
