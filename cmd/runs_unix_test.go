//go:build unix

package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunsHostileFiles: a symlinked record, a FIFO as the kept tail, an
// oversized record and a record others can write are refused before they
// are read; nothing is followed and nothing blocks.
func TestRunsHostileFiles(t *testing.T) {
	f := newRunsFixture(t)
	// Symlinked record pointing outside the state folder.
	outside := filepath.Join(t.TempDir(), "outside.json")
	os.WriteFile(outside, []byte(`{"schema_version":1}`), 0o600)
	linked := "run-" + strings.Repeat("1", 24)
	os.Symlink(outside, filepath.Join(f.records, linked+".json"))
	// Oversized record.
	big := "run-" + strings.Repeat("2", 24)
	f.file(t, big+".json", strings.Repeat(" ", 64<<10+1))
	// Record writable by others.
	loose := "run-" + strings.Repeat("3", 24)
	f.record(t, loose, "2026-12-01T10:00:00Z", "null", "running", "null", "null")
	os.Chmod(filepath.Join(f.records, loose+".json"), 0o666)
	// FIFO in place of the kept tail of a good run.
	if err := syscall.Mkfifo(filepath.Join(f.records, testRunID+".stderr.fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(f.records, testRunID+".stderr"))
	os.Rename(filepath.Join(f.records, testRunID+".stderr.fifo"), filepath.Join(f.records, testRunID+".stderr"))

	for id, why := range map[string]string{linked: "is a symbolic link", big: "exceeds the run record limit of 64 KiB", loose: "is writable by other users"} {
		code, out, errs := runsCLI("runs", "show", id, "--runs-dir", f.runs, "--json")
		doc := decodeOne(t, []byte(out))
		if e, _ := doc["error"].(map[string]any); code != exitFailed || e["code"] != codeRunUnreadable || !strings.Contains(errs, why) {
			t.Errorf("show %s: %d %s %q, want run_unreadable %q", id, code, out, errs, why)
		}
	}
	done := make(chan struct{})
	var code int
	var out, errs string
	go func() {
		defer close(done)
		code, out, errs = runsCLI("runs", "show", testRunID, "--runs-dir", f.runs, "--protected")
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("reading a FIFO tail blocked")
	}
	if code != exitFailed || out != "" || !strings.Contains(errs, "is not a regular file") {
		t.Fatalf("FIFO tail: %d %q %q", code, out, errs)
	}
	// The listing skips them with one warning and still lists the good run.
	code, out, errs = runsCLI("runs", "list", "--runs-dir", f.runs, "--json")
	doc := decodeOne(t, []byte(out))
	if code != 0 || doc["count"] != 1.0 || doc["unreadable"] != 3.0 || !strings.Contains(errs, "3 run record(s) in ") {
		t.Fatalf("list: %d %s %q", code, out, errs)
	}
}

// TestRunsForeignOwner: a state folder owned by another user is refused
// with its own message (root only: chown, as serve's test does).
func TestRunsForeignOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a folder to another user")
	}
	f := newRunsFixture(t)
	state := filepath.Dir(f.records)
	if err := os.Chown(state, 54321, 54321); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"runs", "list", "--runs-dir", f.runs}, {"attention", "list", "--runs-dir", f.runs}} {
		code, out, errs := runsCLI(args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "it is owned by another user (uid 54321)") {
			t.Errorf("%v: %d %q %q", args, code, out, errs)
		}
	}
	if fi, _ := os.Lstat(state); fi.Sys().(*syscall.Stat_t).Uid != 54321 {
		t.Error("the owner changed")
	}
}
