//go:build unix

package fsutil

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOpenNotPolled: an opened regular file is a blocking descriptor that
// the runtime's poller never saw (os.OpenFile tried to register
// every opened file, and Linux refuses regular files with EPERM). A file
// outside the poller has no deadlines.
func TestOpenNotPolled(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]OpenOption{nil, {NoFollow}} {
		f, _, err := Open(p, Limit{"f", 10}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.SetReadDeadline(time.Now()); !errors.Is(err, os.ErrNoDeadline) {
			t.Fatalf("opened file is pollable: SetReadDeadline = %v", err)
		}
		fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
		if err != nil || fl&unix.O_NONBLOCK != 0 {
			t.Fatalf("flags %#x, %v: want blocking", fl, err)
		}
		if fd, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil || fd&unix.FD_CLOEXEC == 0 {
			t.Fatalf("fd flags %#x, %v: want close-on-exec", fd, err)
		}
		f.Close()
	}
	d, err := OpenDir(filepath.Dir(p))
	if err != nil {
		t.Fatal(err)
	}
	if names, err := d.Readdirnames(-1); err != nil || len(names) != 1 {
		t.Fatalf("OpenDir lists %v, %v", names, err)
	}
	d.Close()
	if _, err := OpenDir(p); !errors.Is(err, unix.ENOTDIR) {
		t.Fatalf("OpenDir of a file: %v", err)
	}
}

// TestReadFileSizes: the one-read path returns every byte at every size
// around the chunk and buffer edges, and a file whose stat'ed size is 0
// but which has content (procfs) is read to its end.
func TestReadFileSizes(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 4095, chunk - 1, chunk, chunk + 1, 3*chunk + 7} {
		data := bytes.Repeat([]byte{'a', 'b', 'c'}, n/3+1)[:n]
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(context.Background(), p, Limit{"f", int64(n)})
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("size %d: read %d bytes, %v", n, len(got), err)
		}
		if n > 0 {
			if _, err := ReadFile(context.Background(), p, Limit{"f", int64(n - 1)}); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("size %d over the cap: %v", n, err)
			}
		}
	}
	if _, err := os.Stat("/proc/self/status"); err == nil {
		got, err := ReadFile(context.Background(), "/proc/self/status", Limit{"status", 1 << 20})
		if err != nil || !bytes.Contains(got, []byte("\nVmHWM:")) || !bytes.HasSuffix(got, []byte("\n")) {
			t.Fatalf("procfs file: %d bytes, %v", len(got), err)
		}
	}
}
