//go:build unix

package ledger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostileInputs: a FIFO, a device and an oversized file are refused
// before reading: before, a FIFO blocked forever and
// /dev/zero grew without bound.
func TestHostileInputs(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "ledger.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no mkfifo:", err)
	}
	big := filepath.Join(dir, "big.json")
	f, _ := os.Create(big)
	f.Truncate(64<<20 + 1) // sparse: one byte over the ledger-file cap
	f.Close()
	v, err := NewVerifier(DefaultTrust(), WithAt(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo:        "not a regular file",
		"/dev/zero": "not a regular file",
		big:         "ledger file exceeds the ledger file limit of 64 MiB",
	} {
		_, err := v.Verify(context.Background(), Path(path))
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrInput naming %q", path, err, want)
		}
	}
	// An evidence-root member that is a FIFO is refused too (fs.ReadFile
	// over os.DirFS used to block on it).
	evDir := filepath.Join(dir, "ev")
	os.Mkdir(evDir, 0o755)
	if err := syscall.Mkfifo(filepath.Join(evDir, "production-lifecycle-admissions.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(context.Background(), Path(evDir))
	if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("evidence folder with a FIFO: %v", err)
	}
	// A previous-registry FIFO is refused at option time.
	if _, err := NewVerifier(DefaultTrust(), WithPreviousRegistry(fifo)); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("previous registry FIFO: %v", err)
	}
}
