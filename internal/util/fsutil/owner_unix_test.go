//go:build unix

package fsutil

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOwner: the owner is read both from a Root's Lstat (whose Sys is
// deliberately empty) and from os.Lstat.
func TestOwner(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := openRoot(t, dir)
	fi, err := r.Lstat("f")
	if err != nil {
		t.Fatal(err)
	}
	if uid, ok := Owner(fi); !ok || uid != os.Geteuid() {
		t.Errorf("Owner(Root.Lstat) = %d, %v; want %d", uid, ok, os.Geteuid())
	}
	ofi, err := os.Lstat(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	if uid, ok := Owner(ofi); !ok || uid != os.Geteuid() {
		t.Errorf("Owner(os.Lstat) = %d, %v", uid, ok)
	}
}
