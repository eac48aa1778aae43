// Package testutil holds helpers shared by the project's tests: the -update
// flag for golden files, a golden-file comparison and the -test.parallel
// default of packages whose tests mostly wait.
//
// Import it from every package that has goldens, so that
//
//	go test ./cmd ./skill ./templates ./serve ./bundle ./ledger -update
//
// is accepted by each of them.
package testutil

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files with the current output")

// Update reports whether the test binary was started with -update.
func Update() bool { return *update }

// Golden compares got with the file at path. With -update it rewrites the
// file (creating parent folders) instead, and the test passes.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if Update() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("creating golden folder: %v", err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("writing golden %s: %v", path, err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden %s (run with -update to create it): %v", path, err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s mismatch (-want +got):\n%s", path, cmp.Diff(string(want), string(got)))
	}
}

// Parallel raises -test.parallel to n unless the command line set it. Call
// it from TestMain, before m.Run, in a package whose parallel tests mostly
// wait (on fake Flow processes, run waits and timeouts) rather than compute:
// the default, GOMAXPROCS, would run only two of them at once on a 2-core
// machine and leave it idle for the rest.
func Parallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// CopyTree copies the files under src into dst (folders 0755), passing each
// file through each: its slash-separated path relative to src, its bytes and
// its mode in, the path, bytes and mode to write out. A nil each copies
// verbatim with the source mode.
func CopyTree(t testing.TB, src, dst string, each func(rel string, data []byte, mode fs.FileMode) (string, []byte, fs.FileMode)) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out, mode := filepath.ToSlash(rel), fi.Mode().Perm()
		if each != nil {
			out, data, mode = each(out, data, mode)
		}
		o := filepath.Join(dst, filepath.FromSlash(out))
		if err := os.WriteFile(o, data, mode); err != nil {
			return err
		}
		return os.Chmod(o, mode) // whatever the umask
	})
	if err != nil {
		t.Fatal(err)
	}
}
