package bundle

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestDeeper(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mk := func(rel, marker string) {
		dir := filepath.Join(root, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if marker != "" {
			if err := os.WriteFile(filepath.Join(dir, marker), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("set-b/two", markerSealed)
	mk("set-a/one", markerPlain)
	mk("set-a/empty", "")
	mk("set-c/x/too-deep", markerPlain)
	// A symbolic link to a folder of bundles is never followed.
	if err := os.Symlink(filepath.Join(root, "set-a"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	got := Deeper(root, 5)
	want := []string{filepath.Join(root, "set-a/one"), filepath.Join(root, "set-b/two")}
	if !slices.Equal(got, want) {
		t.Fatalf("Deeper = %q, want %q", got, want)
	}
	if got := Deeper(root, 1); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("Deeper(root, 1) = %q", got)
	}
	if got := Deeper(filepath.Join(root, "missing"), 3); got != nil {
		t.Fatalf("missing root: %q", got)
	}
	if got := Deeper(root, 0); got != nil {
		t.Fatalf("max 0: %q", got)
	}
}

// TestDeeperBounded: a tree wider than the read limit is not read in full.
func TestDeeperBounded(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for i := range deeperReadLimit + 10 {
		if err := os.MkdirAll(filepath.Join(root, "d"+string(rune('A'+i/26))+string(rune('a'+i%26))), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	last := filepath.Join(root, "zz", "bundle")
	if err := os.MkdirAll(last, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(last, markerPlain), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Deeper(root, 3); got != nil {
		t.Fatalf("read past the limit: %q", got)
	}
}
