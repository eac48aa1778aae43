//go:build unix

package fakeflow

import (
	"os/signal"
	"syscall"
	"time"
)

func ignoreTerm() { signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT) }

func getpgid() int {
	pg, _ := syscall.Getpgid(0)
	return pg
}

// die kills the process with signal sig, as a crash would.
func die(sig int) {
	signal.Reset(syscall.Signal(sig))
	_ = syscall.Kill(syscall.Getpid(), syscall.Signal(sig))
	time.Sleep(time.Minute)
}
