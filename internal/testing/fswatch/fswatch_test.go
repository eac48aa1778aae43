package fswatch

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestAccessed(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("data"), 0o644)
	w, ok, err := Accessed(p)
	if !ok {
		t.Skip("no inotify here")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	go os.ReadFile(p)
	if !w.Wait(30 * time.Second) {
		t.Fatal("no access seen")
	}
}

func TestNoAccess(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("data"), 0o644)
	w, ok, err := Accessed(p)
	if !ok || err != nil {
		t.Skip("no inotify here")
	}
	defer w.Close()
	if w.Wait(10 * time.Millisecond) {
		t.Fatal("access seen although nothing read the file")
	}
}
