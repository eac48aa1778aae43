package skill

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// folderHash hashes dir (an absolute folder) through a root at its parent.
func folderHash(t *testing.T, dir string) (string, error) {
	t.Helper()
	r, err := fsutil.OpenRoot(filepath.Dir(dir), "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return FolderHash(context.Background(), r, filepath.Base(dir))
}

// TestFolderHashMatchesSkillsCLI: the hashes of the committed fixtures are
// the ones skills@1.7.4 wrote into its lock files for them (provenance in
// testdata/skill/lockhash/README.md).
func TestFolderHashMatchesSkillsCLI(t *testing.T) {
	for name, want := range map[string]string{
		"minimal":   "73f33c8b9098ba00dbfd640eab46411635292d5b50cf6857bb767dd2800ceb0c",
		"order-mix": "37aca64d799114345613c8f395ce9d7d5c339a0b77f9cbed6b9f789d647b7ccd",
	} {
		abs, _ := filepath.Abs(filepath.Join("..", "testdata", "skill", "lockhash", name))
		got, err := folderHash(t, abs)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: FolderHash %s, skills@1.7.4 recorded %s", name, got, want)
		}
	}
}

// lockFixture copies a committed fixture into a temp folder.
func lockFixture(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("..", "testdata", "skill", "lockhash", name))); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestFolderHashSkips: .git and node_modules folders (at any depth), links
// and FIFOs are left out, as the CLI's collectFiles leaves them out, so the
// hash is unchanged; a file named .git is hashed like any file.
func TestFolderHashSkips(t *testing.T) {
	dir := lockFixture(t, "order-mix")
	want := "37aca64d799114345613c8f395ce9d7d5c339a0b77f9cbed6b9f789d647b7ccd"
	for _, d := range []string{".git", "node_modules", "docs/node_modules", "docs/.git"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
		os.WriteFile(filepath.Join(dir, d, "x"), []byte("skipped"), 0o644)
	}
	os.Symlink("a.md", filepath.Join(dir, "link.md"))
	os.Symlink("/etc", filepath.Join(dir, "etc"))
	if err := mkfifo(filepath.Join(dir, "fifo")); err != nil {
		t.Logf("no FIFO in the tree: %v", err) // a platform without FIFOs
	}
	got, err := folderHash(t, dir)
	if err != nil || got != want {
		t.Fatalf("with skipped entries: %s %v, want %s", got, err, want)
	}
	os.WriteFile(filepath.Join(dir, "x", ".git"), []byte("gitdir: ../elsewhere\n"), 0o644)
	if got, _ := folderHash(t, dir); got == want || got == "" {
		t.Fatalf("a file named .git must be hashed: %s", got)
	}
}

// TestFolderHashChanges: one changed byte, a renamed file and a moved
// file each change the hash.
func TestFolderHashChanges(t *testing.T) {
	want := "37aca64d799114345613c8f395ce9d7d5c339a0b77f9cbed6b9f789d647b7ccd"
	for name, edit := range map[string]func(dir string){
		"byte":   func(d string) { os.WriteFile(filepath.Join(d, "a.md"), []byte("lower A\n"), 0o644) },
		"rename": func(d string) { os.Rename(filepath.Join(d, "z1"), filepath.Join(d, "z2")) },
		"move":   func(d string) { os.Rename(filepath.Join(d, "x.y"), filepath.Join(d, "x", "x.y")) },
	} {
		dir := lockFixture(t, "order-mix")
		edit(dir)
		if got, err := folderHash(t, dir); err != nil || got == want || got == "" {
			t.Errorf("%s: hash %q %v, want a different one", name, got, err)
		}
	}
}

// TestFolderHashNonASCII: any path that is not printable ASCII (a
// non-ASCII name at any depth, a control character) gives "" and no
// error: the CLI's order for such paths depends on its ICU version and
// locale.
func TestFolderHashNonASCII(t *testing.T) {
	for _, p := range []string{"café.md", "docs/é/x.md", "tab\tname", "docs/deep/日本.txt"} {
		dir := lockFixture(t, "minimal")
		full := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := folderHash(t, dir); err != nil || got != "" {
			t.Errorf("%q: hash %q %v, want \"\"", p, got, err)
		}
	}
}

// TestFolderHashRefusesLinkedAncestor: the folder is reached beneath its
// root without following a link.
func TestFolderHashRefusesLinkedAncestor(t *testing.T) {
	top := t.TempDir()
	real := lockFixture(t, "minimal")
	os.Symlink(filepath.Dir(real), filepath.Join(top, "via"))
	r, err := fsutil.OpenRoot(top, "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := FolderHash(context.Background(), r, "via/minimal"); err == nil {
		t.Fatal("hashed through a symlinked ancestor")
	}
}
