//go:build unix

package fsutil

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wantNotOurs checks err is a NotOursError naming path, with reason and
// fix words.
func wantNotOurs(t *testing.T, err error, path, reason, fix string) {
	t.Helper()
	var ne *NotOursError
	if !errors.As(err, &ne) || !errors.Is(err, ErrNotOurs) {
		t.Fatalf("err = %v, want a NotOursError", err)
	}
	if ne.Path != path || !strings.Contains(ne.Reason, reason) || !strings.Contains(ne.Fix, fix) {
		t.Fatalf("err = %q, want %s / %s / %s", err, path, reason, fix)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fix) {
		t.Fatalf("message %q names neither the file nor the fix", err)
	}
}

// TestOpenOursRefusesHardLink: a file we append to that is a hard link to
// a file elsewhere is refused, and the other file is unchanged.
func TestOpenOursRefusesHardLink(t *testing.T) {
	out, unchanged := outside(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "audit.jsonl")
	if err := os.Link(filepath.Join(out, "sentinel"), p); err != nil {
		t.Skip("hard links:", err)
	}
	// The sentinel is 0644 and ours: only the second name gives it away.
	f, err := OpenOurs(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if f != nil {
		f.Write([]byte("appended"))
		f.Close()
	}
	wantNotOurs(t, err, p, "hard link", "cp "+p)
	r := openRoot(t, dir)
	f, err = r.OpenOurs("audit.jsonl", os.O_RDWR, 0)
	if f != nil {
		f.Truncate(0)
		f.Close()
	}
	wantNotOurs(t, err, p, "hard link", "mv")
	if _, err := ReadOurs(context.Background(), p, Limit{"state file", 64}); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("ReadOurs = %v", err)
	}
	unchanged()
}

// TestOpenOursRefusesWritableByOthers: a group- or world-writable file is
// refused (the fix is chmod go-w), even when it is ours.
func TestOpenOursRefusesWritableByOthers(t *testing.T) {
	dir := t.TempDir()
	for _, mode := range []os.FileMode{0o620, 0o602, 0o666} {
		p := filepath.Join(dir, "lock.json")
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		f, err := OpenOurs(p, os.O_RDWR, 0)
		if f != nil {
			f.Close()
		}
		wantNotOurs(t, err, p, "writable by other users", "chmod go-w "+p)
		if _, err := ReadOurs(context.Background(), p, Limit{"state file", 64}); !errors.Is(err, ErrNotOurs) {
			t.Fatalf("ReadOurs %o = %v", mode, err)
		}
	}
}

// TestOpenOursRefusesForeignOwner: a file of another user is refused,
// simulated by changing who this user is and, as root, by a real chown.
func TestOpenOursRefusesForeignOwner(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "idem.key")
	if err := os.WriteFile(p, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	me := geteuid()
	geteuid = func() int { return me + 1 }
	_, err := ReadOurs(context.Background(), p, Limit{"state file", 64})
	geteuid = os.Geteuid
	wantNotOurs(t, err, p, "owned by another user", "move it aside")
	if os.Geteuid() != 0 {
		t.Skip("a real chown needs root")
	}
	if err := os.Chown(p, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	f, err := OpenOurs(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if f != nil {
		f.Close()
	}
	wantNotOurs(t, err, p, "owned by another user", "remove it")
}

// TestOpenOursOwnFiles: a file the call creates, and a file of ours with
// one link and no write bit for others (0600 or 0644), are used.
func TestOpenOursOwnFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "helper.log")
	f, err := OpenOurs(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("a"))
	f.Close()
	for _, mode := range []os.FileMode{0o600, 0o644, 0o444} {
		os.Chmod(p, mode)
		f, err := OpenOurs(p, os.O_RDONLY, 0)
		if err != nil {
			t.Fatalf("%o: %v", mode, err)
		}
		f.Close()
		if data, err := ReadOurs(context.Background(), p, Limit{"state file", 64}); err != nil || string(data) != "a" {
			t.Fatalf("%o: %q %v", mode, data, err)
		}
	}
	// A link is still refused as a link, and a FIFO as not regular.
	if err := os.Symlink(p, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenOurs(filepath.Join(dir, "link"), os.O_WRONLY|os.O_APPEND, 0); !errors.Is(err, ErrSymlink) {
		t.Fatalf("symlink: %v", err)
	}
}

// TestCheckOursFolder: a folder writable by others, or another user's, is
// refused; a private one passes.
func TestCheckOursFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Lstat(dir)
	if err := CheckOurs(dir, fi); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	fi, _ = os.Lstat(dir)
	wantNotOurs(t, CheckOurs(dir, fi), dir, "writable by other users", "chmod go-w "+dir)
}
