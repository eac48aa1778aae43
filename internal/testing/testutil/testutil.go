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
