// Package ptytest gives tests a pseudo-terminal, so that a child started in
// a new session with the slave as its controlling terminal has a real
// /dev/tty (authoring connect asks its Allow prompt there). Linux only,
// golang.org/x/sys/unix; test support, never linked into the binary.
package ptytest

import (
	"fmt"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Open allocates a pty pair and closes both ends at test end. Start the
// child with Stdin = slave and SysProcAttr{Setsid: true, Setctty: true,
// Ctty: 0} to make the slave its controlling terminal; read what it writes
// to the terminal from master.
func Open(t testing.TB) (master, slave *os.File) {
	t.Helper()
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("ptytest: no pseudo-terminal here (/dev/ptmx: %v)", err)
	}
	master = os.NewFile(uintptr(m), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		t.Fatalf("ptytest: unlockpt: %v", err)
	}
	n, err := unix.IoctlGetUint32(m, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		t.Fatalf("ptytest: ptsname: %v", err)
	}
	name := fmt.Sprintf("/dev/pts/%d", n)
	slave, err = os.OpenFile(name, os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		master.Close()
		t.Fatalf("ptytest: open %s: %v", name, err)
	}
	t.Cleanup(func() { slave.Close(); master.Close() })
	return master, slave
}

// Controlling is the SysProcAttr that starts a child in a new session with
// its stdin (the slave) as the controlling terminal.
func Controlling() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
}
