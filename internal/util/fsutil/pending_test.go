package fsutil

import (
	"errors"
	"os"
	"testing"
)

// TestRemovePending: a temporary file being written and a staging folder
// are removed by RemovePending (the signal backstop), and nothing new can
// be created afterwards; finished writes and commits leave nothing pending.
// Not parallel: RemovePending is process-wide.
func TestRemovePending(t *testing.T) {
	defer func() { pendingTemps.Lock(); pendingTemps.closed = false; pendingTemps.Unlock() }()
	dir := t.TempDir()
	r, err := OpenRoot(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	base := pendingCount()

	// Finished work leaves nothing pending.
	if err := r.WriteFile("done.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := r.StageDir("committed")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(false, 0o755); err != nil {
		t.Fatal(err)
	}
	if n := pendingCount(); n != base {
		t.Fatalf("%d pending after finished work, want %d", n, base)
	}

	// Unfinished work: a write blocked in its fill, an open stage folder.
	stage, err := r.StageDir("staged")
	if err != nil {
		t.Fatal(err)
	}
	inFill, release, wrote := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		wrote <- r.WriteFileFunc("out.zip", 0o644, func(f *os.File) error {
			f.Write([]byte("partial"))
			close(inFill)
			<-release
			return errors.New("interrupted")
		})
	}()
	<-inFill
	if got := RemovePending(); got != 2 {
		t.Errorf("RemovePending removed %d, want 2 (the temp file and the stage)", got)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 2 || names[0] != "committed" || names[1] != "done.txt" {
		t.Errorf("left %v, want only committed and done.txt", names)
	}
	if _, err := r.MkdirTemp(".", ".x-"); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("MkdirTemp after RemovePending: %v", err)
	}
	if err := r.WriteFile("late.txt", nil, 0o644); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("WriteFile after RemovePending: %v", err)
	}
	close(release)
	<-wrote
	stage.Abort()
}
