package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGoldenMatches(t *testing.T) {
	p := filepath.Join(t.TempDir(), "g.txt")
	if err := os.WriteFile(p, []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Golden(t, p, []byte("same\n"))
}

func TestGoldenMismatchFails(t *testing.T) {
	if Update() {
		t.Skip("-update rewrites instead of comparing")
	}
	p := filepath.Join(t.TempDir(), "g.txt")
	if err := os.WriteFile(p, []byte("want\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ft := &fakeTB{TB: t}
	Golden(ft, p, []byte("got\n"))
	if !ft.failed {
		t.Fatal("Golden accepted different bytes")
	}
}

type fakeTB struct {
	testing.TB
	failed bool
}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Errorf(string, ...any) { f.failed = true }
func (f *fakeTB) Fatalf(string, ...any) { f.failed = true }
