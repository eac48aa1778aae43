//go:build unix

package serve

import "syscall"

func mkfifoTest(path string) error { return syscall.Mkfifo(path, 0o600) }
