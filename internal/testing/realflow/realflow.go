// Package realflow finds a prepared openadapt-flow runtime for the tests
// that run against real Flow. Test support only.
//
// A prepared runtime is a folder named by OPENADAPT_REALFLOW_DIR that holds
// two executables: bin/openadapt-flow (Flow's command line) and
// bin/flow-python (the Python interpreter Flow is installed in). Anyone with
// a Flow install can make one with two symbolic links or wrapper scripts.
// Without it the real-Flow tests skip, and print why on stderr too, so a CI
// log shows the skip without -v.
package realflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// EnvDir names the prepared runtime's folder.
const EnvDir = "OPENADAPT_REALFLOW_DIR"

// Info describes a prepared runtime.
type Info struct {
	Dir           string
	OpenadaptFlow string // Dir/bin/openadapt-flow
	FlowPython    string // Dir/bin/flow-python
	FlowVersion   string // the installed openadapt-flow distribution's version
	// WithXvfb is Dir/bin/with-xvfb when that optional wrapper exists
	// (headed checks only), else "".
	WithXvfb string
}

// SkipMessage is the one wording of a real-Flow skip: who skipped what, and
// how to make it run.
func SkipMessage(who string) string {
	return who + " SKIPPED: set " + EnvDir + " to a prepared Flow runtime (a folder with bin/openadapt-flow and bin/flow-python)"
}

// Locate reads the runtime that OPENADAPT_REALFLOW_DIR names. It returns
// (nil, nil) when the variable is unset, and an error naming the problem
// when it is set but the folder is not a prepared runtime.
func Locate(ctx context.Context) (*Info, error) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		return nil, nil
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	info := &Info{
		Dir:           dir,
		OpenadaptFlow: filepath.Join(dir, "bin", "openadapt-flow"),
		FlowPython:    filepath.Join(dir, "bin", "flow-python"),
	}
	for _, p := range []string{info.OpenadaptFlow, info.FlowPython} {
		if err := executable(p); err != nil {
			return nil, fmt.Errorf("%s=%s is not a prepared Flow runtime: %w", EnvDir, dir, err)
		}
	}
	if x := filepath.Join(dir, "bin", "with-xvfb"); executable(x) == nil {
		info.WithXvfb = x
	}
	v, err := flowVersion(ctx, info.FlowPython)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: reading the openadapt-flow version: %w", EnvDir, dir, err)
	}
	info.FlowVersion = v
	return info, nil
}

// Load is Locate for one test: it skips t with skip (a SkipMessage) when
// no runtime is named, and fails t when the named one is unusable.
func Load(t testing.TB, skip string) Info {
	t.Helper()
	info, err := Locate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info == nil {
		fmt.Fprintln(os.Stderr, skip)
		t.Skip(skip)
	}
	return *info
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// flowVersion asks the runtime's own interpreter for the installed
// distribution's version (the same metadata Flow's --version reads).
func flowVersion(ctx context.Context, python string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	const prog = `import importlib.metadata as m, json; print(json.dumps(m.version("openadapt-flow")))`
	out, err := exec.CommandContext(ctx, python, "-c", prog).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", err
	}
	var v string
	if err := json.Unmarshal(out, &v); err != nil || v == "" {
		return "", fmt.Errorf("unexpected output %q", out)
	}
	return v, nil
}
