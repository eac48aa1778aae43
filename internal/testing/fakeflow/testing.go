package fakeflow

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RunIfInvoked runs the fake and exits the process when the current
// executable was started under the fake's name ([Name]). Call it first in a
// test package's TestMain, before m.Run, so that [Install] works:
//
//	func TestMain(m *testing.M) {
//		fakeflow.RunIfInvoked()
//		os.Exit(m.Run())
//	}
func RunIfInvoked() {
	if filepath.Base(os.Args[0]) == Name {
		os.Exit(Main())
	}
}

// Install returns the absolute path of an executable named [Name] in a fresh
// directory of t.TempDir(). It is the running test binary under that name
// (a symlink, or a copy where symlinks are unavailable), so the test
// package's TestMain must call [RunIfInvoked]. Put filepath.Dir of the
// result on PATH to exercise the default Flow command lookup.
func Install(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("fakeflow: locating the test binary: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "fakeflow-bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("fakeflow: %v", err)
	}
	dst := filepath.Join(dir, Name)
	if err := os.Symlink(exe, dst); err == nil {
		return dst
	}
	if err := copyFile(exe, dst, 0o755); err != nil {
		t.Fatalf("fakeflow: copying the test binary: %v", err)
	}
	return dst
}

// Build compiles ./internal/testing/fakeflow/cmd/fakeflow with `go build` into a
// fresh directory of t.TempDir() and returns the path of the executable,
// named [Name]. It needs the go command and the module source (always true
// under `go test`) and takes a link step per call, so prefer [Install] in
// packages that can add the TestMain hook.
func Build(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fakeflow-bin")
	dst := filepath.Join(dir, Name)
	cmd := exec.Command("go", "build", "-o", dst, "github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakeflow/cmd/fakeflow")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fakeflow: go build: %v\n%s", err, out)
	}
	return dst
}

// BuildShared compiles the fake once, without the race detector, into a
// fresh temporary directory and returns its path and a cleanup. A test
// package calls it from TestMain and hands the path to every test: each fake
// Flow run then starts a small stdlib-only program instead of re-executing
// the (race-instrumented) test binary, which is most of a run's cost under
// `go test -race`. Callers fall back to [Install] when it fails.
func BuildShared() (path string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "fakeflow-")
	if err != nil {
		return "", func() {}, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	dst := filepath.Join(dir, Name)
	cmd := exec.Command("go", "build", "-o", dst, "github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakeflow/cmd/fakeflow")
	// The fake must not inherit the race build of the test command.
	cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", func() {}, &buildError{err: err, out: out}
	}
	return dst, cleanup, nil
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string {
	return "fakeflow: go build: " + e.err.Error() + "\n" + string(e.out)
}
