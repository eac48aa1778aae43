package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplacesAndSetsMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.json")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "new" {
		t.Fatalf("content = %q, %v; want %q", got, err, "new")
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want 0600", fi.Mode().Perm())
	}
	assertOnly(t, dir, "out.json")
}

func TestWriteFileFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	// The target is an existing folder: the rename fails after the write.
	p := filepath.Join(dir, "taken")
	if err := os.MkdirAll(filepath.Join(p, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("x"), 0o644); err == nil {
		t.Fatal("WriteFile over a non-empty folder succeeded")
	}
	assertOnly(t, dir, "taken")
}
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if len(got) != len(names) {
		t.Fatalf("folder holds %v, want only %v", got, names)
	}
	for i := range names {
		if got[i] != names[i] {
			t.Fatalf("folder holds %v, want only %v", got, names)
		}
	}
}
