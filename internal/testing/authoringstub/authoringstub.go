// Package authoringstub sets up the fake authoring session of
// testdata/stubflow, shaped like Flow's openadapt_flow.authoring module
// (docs/helper.md, Test doubles), for tests that run the real embedded Flow
// helper: a system Python 3.10–3.12, the stub Flow package on
// PYTHONPATH, the OPENADAPT_STUBFLOW_AUTHORING* knobs and the session's call
// log. Test support only; never linked into the binary.
//
// The knobs (read by testdata/stubflow/openadapt_flow/authoring.py):
//   - OPENADAPT_STUBFLOW_AUTHORING: "" (the module is absent), "full" (with
//     admit), "no_admit", "noapi" (neither open_session nor AuthoringSession);
//   - OPENADAPT_STUBFLOW_AUTHORING_TREE: "small", "hostile500", "empty";
//   - OPENADAPT_STUBFLOW_AUTHORING_CLICK=crash: a click without a receipt;
//   - OPENADAPT_STUBFLOW_AUTHORING_OBSERVE=exit: the helper process dies
//     inside observe;
//   - OPENADAPT_STUBFLOW_AUTHORING_LOG: where every session call is logged.
package authoringstub

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// PassEnv are the extra names a stub session needs in the helper's child
// environment (flowrun.ChildEnv's passEnv, serve's and connect's
// --pass-env); the OPENADAPT_* knobs pass by the allowlist's prefix.
var PassEnv = []string{"PYTHONPATH"}

var (
	pyOnce sync.Once
	py     string
)

// Python is a Python 3.10–3.12 from PATH for the real embedded helper; the
// test is skipped, with a message naming why, when there is none.
func Python(t testing.TB) string {
	t.Helper()
	pyOnce.Do(func() {
		for _, name := range []string{"python3", "python3.12", "python3.11", "python3.10"} {
			p, err := exec.LookPath(name)
			if err != nil {
				continue
			}
			out, err := exec.Command(p, "-c", "import sys;print('%d.%d'%sys.version_info[:2])").Output()
			if v := strings.TrimSpace(string(out)); err == nil && (v == "3.10" || v == "3.11" || v == "3.12") {
				py = p
				return
			}
		}
	})
	if py == "" {
		NoPython(t, "authoring stub-Flow tests")
	}
	return py
}

// NoPython stops a test that needs a Python 3.10–3.12 when there is none:
// in CI (CI=true, where .ci/run installs one) it fails; elsewhere it skips,
// saying so on stderr too, so a run without -v shows it.
func NoPython(t testing.TB, who string) {
	t.Helper()
	msg := who + " SKIPPED: no Python 3.10-3.12 on PATH"
	if os.Getenv("CI") == "true" {
		t.Fatal(who + ": no Python 3.10-3.12 on PATH, and CI must run them (.ci/run installs one)")
	}
	fmt.Fprintln(os.Stderr, msg)
	t.Skip(msg)
}

// FlowDir is the absolute path of testdata/stubflow (the stub Flow package
// root), found from the test's working directory up to go.mod.
func FlowDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata", "stubflow")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("authoringstub: no go.mod above the test's directory")
		}
		dir = parent
	}
}

// Stub is one prepared stub-Flow authoring environment.
type Stub struct {
	Python string // the interpreter for --flow-python / flowhelper.Interpreter
	Root   string // a fresh temporary directory (symlinks resolved)
	Log    string // the session's call log
	// Vars are the environment entries that select the stub: PYTHONPATH, the
	// mode, the log, and the extra knobs given to New.
	Vars []string
}

// New prepares the stub with mode as OPENADAPT_STUBFLOW_AUTHORING ("" = the
// module is absent) and extra knobs as NAME=VALUE entries.
func New(t testing.TB, mode string, knobs ...string) *Stub {
	t.Helper()
	p := Python(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &Stub{Python: p, Root: root, Log: filepath.Join(root, "session.log")}
	s.Vars = append([]string{"PYTHONPATH=" + FlowDir(t), "OPENADAPT_STUBFLOW_AUTHORING=" + mode,
		"OPENADAPT_STUBFLOW_AUTHORING_LOG=" + s.Log}, knobs...)
	return s
}

// Setenv sets the stub's variables in this process for the test (for code
// that reads os.Environ, such as the CLI run in-process).
func (s *Stub) Setenv(t *testing.T) {
	t.Helper()
	for _, kv := range s.Vars {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Calls are the session calls the stub logged, in order (none when the
// session never opened).
func (s *Stub) Calls(t testing.TB) []map[string]any {
	t.Helper()
	f, err := os.Open(s.Log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("authoringstub: a bad log line %q: %v", sc.Bytes(), err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// CallNames are the names of the logged calls, joined by commas.
func (s *Stub) CallNames(t testing.TB) string {
	t.Helper()
	var names []string
	for _, c := range s.Calls(t) {
		n, _ := c["call"].(string)
		names = append(names, n)
	}
	return strings.Join(names, ",")
}
