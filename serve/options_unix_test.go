//go:build unix

package serve

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestConfigSpecialFiles: serve --config refuses a FIFO (which used to
// block start-up forever), /dev/zero (which grew without bound) and a file
// above 1 MiB, before reading.
func TestConfigSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "deploy.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	f, _ := os.Create(big)
	f.Truncate(1<<20 + 1)
	f.Close()
	for p, want := range map[string]string{
		fifo:        "the deployment config is not a regular file: " + fifo,
		"/dev/zero": "the deployment config is not a regular file: /dev/zero",
		big:         "the deployment config exceeds 1 MiB: " + big,
	} {
		_, err := effectiveProfile(nil, p)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Msg != want {
			t.Errorf("%s: %v, want %q", p, err, want)
		}
	}
}
