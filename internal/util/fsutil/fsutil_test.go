package fsutil

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// outside makes a folder outside the root holding a sentinel file, and
// returns the folder and a check that it is unchanged.
func outside(t *testing.T) (string, func()) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sentinel"), []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, func() {
		t.Helper()
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("outside folder: %v", err)
		}
		if len(ents) != 1 || ents[0].Name() != "sentinel" {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Fatalf("outside folder changed: %v", names)
		}
		b, err := os.ReadFile(filepath.Join(dir, "sentinel"))
		if err != nil || string(b) != "keep" {
			t.Fatalf("sentinel changed: %q %v", b, err)
		}
	}
}

func openRoot(t *testing.T, dir string) *Root {
	t.Helper()
	r, err := OpenRoot(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func wantLink(t *testing.T, err error, link string) {
	t.Helper()
	var le *LinkError
	if !errors.As(err, &le) {
		t.Fatalf("err = %v, want a LinkError naming %s", err, link)
	}
	if le.Path != filepath.FromSlash(link) {
		t.Fatalf("LinkError names %q, want %q", le.Path, link)
	}
	if !strings.Contains(err.Error(), "through symbolic link "+filepath.FromSlash(link)) {
		t.Fatalf("message %q does not name %s", err, link)
	}
	if !errors.Is(err, ErrSymlink) {
		t.Fatalf("errors.Is(err, ErrSymlink) is false for %v", err)
	}
}

// TestSymlinkedAncestorRefused: every mutation through a symlinked ancestor
// is refused with an error naming the link, and nothing outside changes.
func TestSymlinkedAncestorRefused(t *testing.T) {
	out, unchanged := outside(t)
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, filepath.Join(root, ".claude", "skills")); err != nil {
		t.Fatal(err)
	}
	r := openRoot(t, root)
	ops := map[string]func() error{
		"MkdirAll":  func() error { return r.MkdirAll(".claude/skills/x/y", 0o755) },
		"Mkdir":     func() error { return r.Mkdir(".claude/skills/x", 0o755) },
		"MkdirTemp": func() error { _, err := r.MkdirTemp(".claude/skills", "t-"); return err },
		"WriteFile": func() error { return r.WriteFile(".claude/skills/f", []byte("x"), 0o644) },
		"OpenFile": func() error {
			_, err := r.OpenFile(".claude/skills/f", os.O_RDWR|os.O_CREATE, 0o644)
			return err
		},
		"RemoveAll": func() error { return r.RemoveAll(".claude/skills/sentinel") },
		"Remove":    func() error { return r.Remove(".claude/skills/sentinel") },
		"Rename":    func() error { return r.Rename(".claude/skills/sentinel", "moved") },
		"Symlink":   func() error { return r.Symlink("/etc", ".claude/skills/l") },
		"Chmod":     func() error { return r.Chmod(".claude/skills/sentinel", 0o777) },
		"StageDir":  func() error { _, err := r.StageDir(".claude/skills/name"); return err },
		"Lstat":     func() error { _, err := r.Lstat(".claude/skills/sentinel"); return err },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			wantLink(t, op(), ".claude/skills")
			unchanged()
		})
	}
	// The component-wise walk (used without openat2) names the link too.
	if err := walkErr(r, ".claude/skills/x"); err != errNoWalk {
		wantLink(t, err, ".claude/skills")
	}
	unchanged()
}

func TestLabelNamesRoot(t *testing.T) {
	out, _ := outside(t)
	root := t.TempDir()
	os.Symlink(out, filepath.Join(root, "skills"))
	r, err := OpenRoot(root, "$CLAUDE_CONFIG_DIR")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	err = r.MkdirAll("skills/demo", 0o755)
	if err == nil || err.Error() != "refusing to write through symbolic link "+filepath.Join("$CLAUDE_CONFIG_DIR", "skills") {
		t.Fatalf("err = %v", err)
	}
}

// TestFinalLinkReplacedNotFollowed: RemoveAll, WriteFile and Stage.Commit
// replace a final link itself; the folder it points to is untouched.
func TestFinalLinkReplacedNotFollowed(t *testing.T) {
	out, unchanged := outside(t)
	root := t.TempDir()
	r := openRoot(t, root)
	link := filepath.Join(root, "name")
	mk := func() {
		os.RemoveAll(link)
		if err := os.Symlink(out, link); err != nil {
			t.Fatal(err)
		}
	}
	mk()
	if err := r.RemoveAll("name"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(link); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("link not removed: %v", err)
	}
	unchanged()

	mk()
	if err := r.WriteFile("name", []byte("new"), 0o640); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(link)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o640 {
		t.Fatalf("WriteFile over a link: %v %v", fi, err)
	}
	unchanged()

	mk()
	st, err := r.StageDir("name")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile(st.Rel+"/SKILL.md", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(false, 0o755); !errors.Is(err, ErrExists) {
		t.Fatalf("Commit without replace over a link: %v", err)
	}
	if err := st.Commit(true, 0o755); err != nil {
		t.Fatal(err)
	}
	fi, err = os.Lstat(link)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Fatalf("after Commit: %v %v", fi, err)
	}
	unchanged()
	assertOnly(t, root, "name", "name/SKILL.md")
}

// TestRemoveAllNestedLink: a link deep inside a removed folder is removed
// itself, its target kept.
func TestRemoveAllNestedLink(t *testing.T) {
	out, unchanged := outside(t)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(root, "a", "b", "f"), []byte("x"), 0o644)
	os.Symlink(out, filepath.Join(root, "a", "b", "out"))
	os.Symlink(filepath.Join(out, "sentinel"), filepath.Join(root, "a", "file-link"))
	for i := range 600 { // more than one Readdirnames batch
		os.WriteFile(filepath.Join(root, "a", "n"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26))), nil, 0o644)
	}
	r := openRoot(t, root)
	if err := r.RemoveAll("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a still there: %v", err)
	}
	unchanged()
	if err := r.RemoveAll("missing/x"); err != nil {
		t.Fatalf("RemoveAll of a missing path: %v", err)
	}
}

func TestEscapesRefused(t *testing.T) {
	r := openRoot(t, t.TempDir())
	for _, p := range []string{"../x", "a/../../x", "/etc/passwd", ""} {
		if err := r.WriteFile(p, nil, 0o644); err == nil {
			t.Errorf("WriteFile(%q) succeeded", p)
		}
	}
}

func TestMkdirAllAndFileUnderFile(t *testing.T) {
	root := t.TempDir()
	r := openRoot(t, root)
	if err := r.MkdirAll("a/b/c", 0o750); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(root, "a/b/c")); err != nil || !fi.IsDir() {
		t.Fatal(fi, err)
	}
	os.WriteFile(filepath.Join(root, "file"), nil, 0o644)
	err := r.MkdirAll("file/x", 0o755)
	if !errors.Is(err, ErrNotDir) && !errors.Is(err, fs.ErrExist) {
		t.Fatalf("MkdirAll under a file: %v", err)
	}
}

func TestStageAbort(t *testing.T) {
	root := t.TempDir()
	r := openRoot(t, root)
	st, err := r.StageDir("d/name")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(st.Path()); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("stage mode: %v %v", fi, err)
	}
	r.WriteFile(st.Rel+"/x", []byte("x"), 0o644)
	st.Abort()
	assertOnly(t, root, "d")
}

// TestOpenFileRefusesNonRegular: a FIFO opens without blocking and is
// refused; a final link is a LinkError.
func TestOpenFileRefusesNonRegular(t *testing.T) {
	root := t.TempDir()
	mkfifo(t, filepath.Join(root, "lock"))
	r := openRoot(t, root)
	_, err := r.OpenFile("lock", os.O_RDWR|os.O_CREATE, 0o644)
	if !errors.Is(err, ErrNotRegular) {
		t.Fatalf("FIFO lock: %v", err)
	}
	os.Mkdir(filepath.Join(root, "dir"), 0o755)
	if _, err := r.OpenFile("dir", os.O_RDWR|os.O_CREATE, 0o644); err == nil {
		t.Fatal("directory opened for writing")
	}
	os.Symlink("/etc/passwd", filepath.Join(root, "link"))
	_, err = r.OpenFile("link", os.O_RDWR|os.O_CREATE, 0o644)
	wantLink(t, err, "link")
}

func assertOnly(t *testing.T, root string, want ...string) {
	t.Helper()
	var got []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if p != root {
			rel, _ := filepath.Rel(root, p)
			got = append(got, filepath.ToSlash(rel))
		}
		return nil
	})
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("tree = %v, want %v", got, want)
	}
}

func TestReadFileRegular(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("hello"), 0o644)
	b, err := ReadFile(context.Background(), p, Key)
	if err != nil || string(b) != "hello" {
		t.Fatalf("%q %v", b, err)
	}
	b, err = ReadFile(context.Background(), p, Limit{"tiny", 5})
	if err != nil || string(b) != "hello" {
		t.Fatalf("at the cap: %q %v", b, err)
	}
	_, err = ReadFile(context.Background(), p, Limit{"ledger file", 4})
	var tl *TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the cap: %v", err)
	}
	if !strings.Contains(err.Error(), "ledger file exceeds the ledger file limit of 4 bytes") {
		t.Fatalf("message: %v", err)
	}
}

func TestReadFileRefusesDevicesAndFIFOs(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	mkfifo(t, fifo)
	for _, p := range []string{fifo, os.DevNull, t.TempDir()} {
		_, err := ReadFile(context.Background(), p, LedgerFile)
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("%s: %v, want not a regular file", p, err)
		}
		if err != nil && !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: message %q", p, err)
		}
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := ReadFile(context.Background(), "/dev/zero", LedgerFile); !errors.Is(err, ErrNotRegular) {
			t.Errorf("/dev/zero: %v", err)
		}
	}
}

func TestReadFileNoFollow(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("x"), 0o644)
	os.Symlink(p, filepath.Join(dir, "l"))
	if _, err := ReadFile(context.Background(), filepath.Join(dir, "l"), Key); err != nil {
		t.Fatalf("following read: %v", err)
	}
	if _, err := ReadFile(context.Background(), filepath.Join(dir, "l"), Key, NoFollow); !errors.Is(err, ErrSymlink) {
		t.Fatalf("NoFollow read: %v", err)
	}
}

// TestReadAllCanceled: a canceled context stops the read; a reader that
// never ends stops at the cap.
func TestReadAllCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadAll(ctx, zeros{}, 0, LedgerFile); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
	if _, err := ReadAll(context.Background(), zeros{}, 0, Limit{"x", 3 << 20}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("endless: %v", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	n := 0
	r := CtxReader(ctx2, readerFunc(func(p []byte) (int, error) {
		n++
		if n == 2 {
			cancel2()
		}
		return len(p), nil
	}))
	if _, err := ReadAll(context.Background(), r, 0, Limit{"x", 1 << 40}); !errors.Is(err, context.Canceled) {
		t.Fatalf("CtxReader: %v", err)
	}
}

var errNoWalk = errors.New("no component-wise walk on this system")

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestPathWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.json")
	if err := WriteFile(p, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	assertOnly(t, dir, "x.json")
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatal(fi.Mode())
	}
}

// TestCreateFile: create-once publication. The first creator wins, a second
// gets fs.ErrExist and changes nothing, a link at the name is never
// followed, a linked parent is refused, and no temporary is left or pending.
func TestCreateFile(t *testing.T) {
	dir := t.TempDir()
	r := openRoot(t, dir)
	if err := r.CreateFile("state/idem.key", []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.CreateFile("state/idem.key", []byte("second"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second create: %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "state/idem.key")); string(b) != "first" {
		t.Fatalf("content %q after a losing create", b)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "state/idem.key")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	outside := filepath.Join(t.TempDir(), "target")
	if err := os.Symlink(outside, filepath.Join(dir, "state/link")); err != nil {
		t.Fatal(err)
	}
	if err := r.CreateFile("state/link", []byte("x"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("create over a link: %v, want fs.ErrExist", err)
	}
	if _, err := os.Lstat(outside); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a link at the name was followed")
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := r.CreateFile("linked/x", []byte("x"), 0o600); err == nil {
		t.Fatal("created beneath a linked folder")
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "state"))
	if len(ents) != 2 {
		t.Fatalf("left in the folder: %v", ents)
	}
	if n := pendingCount(); n != 0 {
		t.Fatalf("%d temporaries still pending", n)
	}
	// The package-level form: the path's folder is the root.
	p := filepath.Join(dir, "state", "once")
	if err := CreateFile(p, []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CreateFile(p, []byte("b"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second package-level create: %v", err)
	}
}

// TestWriteFileFuncFailure: when fill fails (a canceled pack), the
// temporary is removed at once and nothing stays pending or in the folder.
func TestWriteFileFuncFailure(t *testing.T) {
	dir := t.TempDir()
	r := openRoot(t, dir)
	boom := errors.New("canceled")
	err := r.WriteFileFunc("out/x.skill", 0o644, func(f *os.File) error {
		if _, err := f.Write([]byte("part")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the fill's error", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "out")); len(ents) != 0 {
		t.Fatalf("left in the folder: %v", ents)
	}
	if n := pendingCount(); n != 0 {
		t.Fatalf("%d temporaries still pending", n)
	}
}

// TestWriteFileReplacesAndSetsMode: the path-level write replaces an
// existing file, sets the requested mode and leaves no temporary behind.
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
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want 0600", fi.Mode().Perm())
	}
	assertOnlyEntries(t, dir, "out.json")
}

// TestWriteFileOverFolderLeavesNothing: when the final rename fails (the
// target is a non-empty folder), the temporary is removed.
func TestWriteFileOverFolderLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "taken")
	if err := os.MkdirAll(filepath.Join(p, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("x"), 0o644); err == nil {
		t.Fatal("WriteFile over a non-empty folder succeeded")
	}
	assertOnlyEntries(t, dir, "taken")
}

func assertOnlyEntries(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("folder holds %v, want only %v", got, names)
	}
}
