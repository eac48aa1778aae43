//go:build unix && !linux

package flowhelper

import "syscall"

// No Pdeathsig outside Linux: the helper treats EOF on fd 4 as close.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
