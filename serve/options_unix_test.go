//go:build unix

package serve

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestConfigSpecialFiles: serve --config refuses a FIFO (which used to
// block start-up forever), /dev/zero (which grew without bound) and a file
// above 1 MiB, before reading.
func TestConfigSpecialFiles(t *testing.T) {
	t.Parallel()
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

// TestRunsDirForeignOwnerRefused: a group/world-accessible runs dir owned
// by another user is refused (exit 2 via ConfigError), not changed.
func TestRunsDirForeignOwnerRefused(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a folder to another user")
	}
	runs := filepath.Join(t.TempDir(), "runs")
	os.Mkdir(runs, 0o777)
	os.Chmod(runs, 0o777)
	if err := os.Chown(runs, 54321, 54321); err != nil {
		t.Fatal(err)
	}
	_, err := prepareState(runs)
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "not owned by this user") {
		t.Fatalf("err = %v", err)
	}
	if fi, _ := os.Stat(runs); fi.Mode().Perm() != 0o777 {
		t.Errorf("a foreign folder was changed: %v", fi.Mode().Perm())
	}
}
