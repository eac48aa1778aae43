//go:build unix

package skill

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestVerifyRefusesSpecialFiles: a FIFO archive, a FIFO sidecar and
// /dev/zero are refused at once with "not a regular file" (before, the FIFO
// blocked forever, ignoring SIGINT and SIGTERM).
func TestVerifyRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "demo.skill")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero"} {
		_, err := VerifyArchive(p, VerifyOptions{})
		if !errors.Is(err, ErrPath) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: %v", p, err)
		}
	}
	good := writeArchive(t, "demo.skill", buildZip(t, goodMembers(), nil))
	if err := syscall.Mkfifo(good+".sha256", 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := VerifyArchive(good, VerifyOptions{})
	if !errors.Is(err, ErrPath) || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("FIFO sidecar: %v", err)
	}
	os.Remove(good + ".sha256")
	os.WriteFile(good+".sha256", []byte(strings.Repeat("0", 70<<10)), 0o644)
	if _, err := VerifyArchive(good, VerifyOptions{}); !strings.Contains(err.Error(), "sidecar exceeds") {
		t.Errorf("oversized sidecar: %v", err)
	}
	// A canceled context stops the check.
	os.Remove(good + ".sha256")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := VerifyArchive(good, VerifyOptions{Context: ctx}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}
