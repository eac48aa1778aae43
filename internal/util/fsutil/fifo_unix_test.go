//go:build unix

package fsutil

import (
	"syscall"
	"testing"
)

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

// walkErr runs the component-wise walk (used where openat2 is missing).
func walkErr(r *Root, rel string) error {
	fd, err := r.walk(rel, true, 0o755, "write")
	if err == nil {
		syscall.Close(fd)
	}
	return err
}
