package atomicfile

import (
	"errors"
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

func TestStageCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	final := filepath.Join(dir, "skill")

	s, err := StageDir(final)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "SKILL.md"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(false); err != nil {
		t.Fatal(err)
	}
	s.Abort() // no-op after commit
	if _, err := os.Stat(filepath.Join(final, "SKILL.md")); err != nil {
		t.Fatalf("committed file missing: %v", err)
	}

	s2, err := StageDir(final)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Commit(false); !errors.Is(err, ErrExists) {
		t.Fatalf("Commit over existing folder = %v, want ErrExists", err)
	}
	s2.Abort()
	assertOnly(t, dir, "skill")

	s3, err := StageDir(final)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s3.Dir, "NEW.md"), []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s3.Commit(true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(final, "SKILL.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("replaced folder still has the old file")
	}
	assertOnly(t, dir, "skill")
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
