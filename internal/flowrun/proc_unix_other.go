//go:build unix && !linux

package flowrun

import "syscall"

// sysProcAttr puts the child in its own process group.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func processStartTime(int) uint64 { return 0 }
