package serve

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// snapTree writes a small bundle-shaped folder: two files, a templates
// folder with three files and an empty sub-folder, all with an old mtime.
func snapTree(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "b")
	for _, p := range []string{"manifest.json", "workflow.json", "templates/a.png", "templates/b.png", "templates/c.png"} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("content of "+filepath.Base(p)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "templates", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{"manifest.json", "workflow.json", "templates/a.png", "templates/b.png", "templates/c.png", "templates/empty", "templates", "."} {
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(p)), old, old); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// keepTimes runs change on path and puts the path's and its folder's mtime
// back, so that only size, inode, mode or ctime can tell.
func keepTimes(t *testing.T, path string, change func()) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	di, err := os.Lstat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	change()
	if err := os.Chtimes(filepath.Dir(path), di.ModTime(), di.ModTime()); err != nil {
		t.Fatal(err)
	}
	if fi2, err := os.Lstat(path); err == nil && fi2.Mode()&os.ModeSymlink == 0 {
		if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSnapshotWalk: the walk lists every entry, depth first in byte order,
// each folder before its entries, and an unchanged folder checks out.
func TestSnapshotWalk(t *testing.T) {
	dir := snapTree(t)
	s, ok := takeSnapshot(dir)
	if !ok {
		t.Fatal("snapshot failed")
	}
	want := ".\nmanifest.json\ntemplates\ntemplates/a.png\ntemplates/b.png\ntemplates/c.png\ntemplates/empty\nworkflow.json"
	if s.files != want {
		t.Fatalf("files %q, want %q", s.files, want)
	}
	if len(s.ident) != 64 {
		t.Fatalf("ident %q", s.ident)
	}
	if !checkSnapshot(dir, s.files, s.ident) {
		t.Fatal("unchanged folder is a miss")
	}
	if again, _ := takeSnapshot(dir); again != s {
		t.Fatalf("second walk %+v, first %+v", again, s)
	}
	if s.newest > time.Now().Add(-30*time.Minute).UnixNano() && runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Fatalf("newest %d is not the old mtime", s.newest)
	}
}

// TestSnapshotCatchesChanges: every change to an entry a full verification
// reads is a miss at the next check, also with the mtimes put back.
func TestSnapshotCatchesChanges(t *testing.T) {
	ctime := runtime.GOOS == "linux" || runtime.GOOS == "darwin"
	for _, tc := range []struct {
		name      string
		needCtime bool // caught only through the inode change time
		change    func(t *testing.T, dir string)
	}{
		{"replace a file (same size, new inode)", false, func(t *testing.T, dir string) {
			p := filepath.Join(dir, "templates", "b.png")
			keepTimes(t, p, func() {
				tmp := p + ".new"
				if err := os.WriteFile(tmp, []byte("content of x.png"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, p); err != nil {
					t.Fatal(err)
				}
			})
		}},
		{"rewrite in place (same size)", true, func(t *testing.T, dir string) {
			p := filepath.Join(dir, "workflow.json")
			keepTimes(t, p, func() {
				if err := os.WriteFile(p, []byte("content of workflow.jsoX"), 0o644); err != nil {
					t.Fatal(err)
				}
			})
		}},
		{"grow a file", false, func(t *testing.T, dir string) {
			p := filepath.Join(dir, "templates", "c.png")
			keepTimes(t, p, func() {
				if err := os.WriteFile(p, []byte("content of c.png, longer"), 0o644); err != nil {
					t.Fatal(err)
				}
			})
		}},
		{"folder swapped for a link to a copy", false, func(t *testing.T, dir string) {
			p := filepath.Join(dir, "templates")
			moved := filepath.Join(filepath.Dir(dir), "moved")
			keepTimes(t, p, func() {
				if err := os.Rename(p, moved); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(moved, p); err != nil {
					t.Skipf("no symlinks: %v", err)
				}
			})
		}},
		{"file swapped for a link", false, func(t *testing.T, dir string) {
			p := filepath.Join(dir, "manifest.json")
			moved := filepath.Join(filepath.Dir(dir), "manifest.json")
			keepTimes(t, p, func() {
				if err := os.Rename(p, moved); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(moved, p); err != nil {
					t.Skipf("no symlinks: %v", err)
				}
			})
		}},
		{"chmod", false, func(t *testing.T, dir string) {
			if runtime.GOOS == "windows" {
				t.Skip("no permission bits")
			}
			p := filepath.Join(dir, "templates", "a.png")
			keepTimes(t, p, func() {
				if err := os.Chmod(p, 0o600); err != nil {
					t.Fatal(err)
				}
			})
		}},
		{"rename within (two names swapped)", false, func(t *testing.T, dir string) {
			a, b := filepath.Join(dir, "templates", "a.png"), filepath.Join(dir, "templates", "b.png")
			keepTimes(t, a, func() {
				tmp := a + ".tmp"
				for _, mv := range [][2]string{{a, tmp}, {b, a}, {tmp, b}} {
					if err := os.Rename(mv[0], mv[1]); err != nil {
						t.Fatal(err)
					}
				}
			})
		}},
		{"entry added to a sub-folder", false, func(t *testing.T, dir string) {
			p := filepath.Join(dir, "templates", "empty", "new.enc")
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"entry removed", false, func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "templates", "c.png")); err != nil {
				t.Fatal(err)
			}
		}},
		{"folder swapped for a file", false, func(t *testing.T, dir string) {
			p := filepath.Join(dir, "templates", "empty")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"bundle folder swapped for a link", false, func(t *testing.T, dir string) {
			moved := dir + ".real"
			if err := os.Rename(dir, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(moved, dir); err != nil {
				t.Skipf("no symlinks: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needCtime && !ctime {
				t.Skip("no inode change time on this platform")
			}
			dir := snapTree(t)
			s, ok := takeSnapshot(dir)
			if !ok || !checkSnapshot(dir, s.files, s.ident) {
				t.Fatal("fresh snapshot does not check out")
			}
			tc.change(t, dir)
			if checkSnapshot(dir, s.files, s.ident) {
				t.Fatal("change not caught")
			}
		})
	}
}

// TestSnapshotRefusesBadLists: a recorded list that is not a walk of plain
// relative names is a miss, never a lookup outside the folder.
func TestSnapshotRefusesBadLists(t *testing.T) {
	dir := snapTree(t)
	s, ok := takeSnapshot(dir)
	if !ok {
		t.Fatal("snapshot failed")
	}
	outside := filepath.Base(filepath.Dir(dir))
	for _, files := range []string{
		"",
		"manifest.json",
		strings.TrimPrefix(s.files, ".\n"),
		".\n.",
		".\n..",
		".\n../" + outside,
		".\n/etc/passwd",
		".\ntemplates/a.png", // beneath a folder not recorded first
		".\ntemplates\nworkflow.json\ntemplates/a.png", // a folder entered again
		".\nmanifest.json\nmanifest.json/x",            // beneath a file
		".\n\nmanifest.json",
		".\ntemplates//a.png",
	} {
		if checkSnapshot(dir, files, s.ident) {
			t.Errorf("list %q checked out", files)
		}
	}
	if checkSnapshot(dir, s.files, strings.Repeat("0", 64)) {
		t.Error("a wrong ident checked out")
	}
}

// TestSnapshotNotCached: a name with a newline (the list's separator) and a
// folder changed within the racy window are not cached.
func TestSnapshotNotCached(t *testing.T) {
	dir := snapTree(t)
	if err := os.WriteFile(filepath.Join(dir, "templates", "odd\nname"), nil, 0o644); err != nil {
		t.Skipf("no newline in names here: %v", err)
	}
	if _, ok := takeSnapshot(dir); ok {
		t.Fatal("a folder with a newline in a name was snapshotted")
	}

	// A folder whose newest change is more than the window before the
	// discovery started is cached.
	dir = snapTree(t)
	w := &workflow{dir: dir, baseID: "workflow_" + strings.Repeat("a", 24)}
	pre, ok := takeSnapshot(dir)
	if !ok {
		t.Fatal("snapshot failed")
	}
	rc := &rootCache{started: time.Unix(0, pre.newest).Add(racyWindow + 1)}
	rc.record(w, false, pre)
	if len(rc.out) != 1 {
		t.Fatalf("a folder older than the window was not cached: %d entries", len(rc.out))
	}
	// A bare touch of one template just now puts it within the window.
	now := time.Now()
	if err := os.Chtimes(filepath.Join(dir, "templates", "a.png"), now, now); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	pre, ok = takeSnapshot(dir)
	if !ok {
		t.Fatal("snapshot failed")
	}
	rc = &rootCache{started: started}
	rc.record(w, false, pre)
	if len(rc.out) != 0 {
		t.Fatal("a folder touched within the racy window was cached")
	}
}
