//go:build unix

package flowhelper_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
)

// launchEnv is a fake helper reachable the ways Launch finds Flow's Python:
// an explicit --flow-python, or an openadapt-flow script on PATH whose #!
// line names it.
type launchEnv struct {
	*fakeEnv
	bin     string // a PATH directory holding openadapt-flow
	environ []string
}

func newLaunchEnv(t *testing.T, flowVersionLine string) *launchEnv {
	t.Helper()
	f := newFake(t, "")
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	// A Python console script: its #! line names the fake interpreter.
	script := "#!" + f.python + "\n"
	if err := os.WriteFile(filepath.Join(bin, "openadapt-flow"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if flowVersionLine != "" {
		// A separate run command that reports a version (a shell script, so
		// it is not a Python console script).
		run := "#!/bin/sh\necho '" + flowVersionLine + "'\n"
		if err := os.WriteFile(filepath.Join(bin, "flow-run"), []byte(run), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	environ := []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + filepath.Dir(f.runs),
		"OPENADAPT_FAKE_HELPER_RECORD=" + f.record, "AWS_SECRET_ACCESS_KEY=planted-secret",
		"OPENADAPT_SYNTHETIC_DELIVERY_MARKER_ENABLED=1", "MY_PASSED=1", "NOT_PASSED=1"}
	return &launchEnv{fakeEnv: f, bin: bin, environ: environ}
}

func (e *launchEnv) options() flowhelper.LaunchOptions {
	return flowhelper.LaunchOptions{Environ: e.environ, StateDir: e.state, Instance: "launch-1",
		Timeouts: flowhelper.Timeouts{Hello: 10 * time.Second}}
}

func launch(t *testing.T, o flowhelper.LaunchOptions) (*flowhelper.Helper, error) {
	t.Helper()
	h, err := flowhelper.Launch(context.Background(), o)
	if err == nil {
		t.Cleanup(func() { _, _ = h.Close() })
	}
	return h, err
}

func TestLaunchFindsPythonAndBuildsEnv(t *testing.T) {
	t.Parallel()
	e := newLaunchEnv(t, "")
	o := e.options()
	o.PassEnv = []string{"MY_PASSED"}
	h, err := launch(t, o) // FlowCommand nil: openadapt-flow from the child's PATH
	if err != nil {
		t.Fatalf("Launch: %v (%v)", err, errors.Unwrap(err))
	}
	if got := h.Interpreter(); got.Path != e.python {
		t.Errorf("interpreter %+v, want %s from the #! line", got, e.python)
	}
	recs := fakehelper.Records(t, e.record)
	if len(recs) != 1 {
		t.Fatalf("%d starts", len(recs))
	}
	env := recs[0].Env
	for _, want := range []string{"PATH=" + e.bin + ":/usr/bin:/bin", "MY_PASSED=1"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s: %q", want, env)
		}
	}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name == "AWS_SECRET_ACCESS_KEY" || name == "NOT_PASSED" || name == "OPENADAPT_SYNTHETIC_DELIVERY_MARKER_ENABLED" {
			t.Errorf("env carries %s", name)
		}
	}
	noMarker := slices.DeleteFunc(slices.Clone(h.Env()), func(kv string) bool {
		return strings.HasPrefix(kv, "OPENADAPT_SYNTHETIC_DELIVERY_MARKER_ENABLED=")
	})
	if !slices.Equal(noMarker, env) {
		t.Errorf("Env() minus the marker %q, the helper saw %q", noMarker, env)
	}
}

func TestLaunchFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		edit  func(e *launchEnv, o *flowhelper.LaunchOptions)
		stage flowhelper.Stage
		msg   string
	}{
		{"no Flow command", func(e *launchEnv, o *flowhelper.LaunchOptions) { o.FlowCommand = []string{"no-such-flow"} },
			flowhelper.StageInterpreter, flowhelper.MsgFlowNotFound("no-such-flow")},
		{"a shell wrapper", func(e *launchEnv, o *flowhelper.LaunchOptions) { o.FlowCommand = []string{"flow-run"} },
			flowhelper.StageInterpreter, "the Flow Python interpreter could not be determined from flow-run; pass --flow-python"},
		{"missing --flow-python", func(e *launchEnv, o *flowhelper.LaunchOptions) { o.FlowPython = "/no/such/python3" },
			flowhelper.StageInterpreter, "the Flow helper could not be started with /no/such/python3"},
		{"the child PATH, not ours", func(e *launchEnv, o *flowhelper.LaunchOptions) { o.Environ = []string{"PATH=/usr/bin:/bin"} },
			flowhelper.StageInterpreter, flowhelper.MsgFlowNotFound("openadapt-flow")},
		{"run command version", func(e *launchEnv, o *flowhelper.LaunchOptions) {
			o.FlowPython, o.FlowCommand, o.CheckRunVersion = e.python, []string{"flow-run"}, true
		}, flowhelper.StageRunVersion, "the Flow helper runs openadapt-flow 1.32.0 but the run command reports 1.32.1; they must match"},
		{"operator mismatch", func(e *launchEnv, o *flowhelper.LaunchOptions) { o.FlowPython, o.Operator = e.python, "someone-else" },
			flowhelper.StageOperator, flowhelper.MsgOperator},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newLaunchEnv(t, "openadapt-flow 1.32.1")
			o := e.options()
			tc.edit(e, &o)
			h, err := flowhelper.Launch(context.Background(), o)
			var se *flowhelper.StartError
			if !errors.As(err, &se) || se.Stage != tc.stage || se.Msg != tc.msg {
				if h != nil {
					_, _ = h.Close()
				}
				t.Fatalf("Launch = %v (%#v), want stage %s %q", err, se, tc.stage, tc.msg)
			}
			if h != nil {
				t.Error("a failed Launch returned a helper")
			}
			if found := se.Interpreter.Path != ""; found != (tc.stage != flowhelper.StageInterpreter) {
				t.Errorf("interpreter %+v at stage %s", se.Interpreter, se.Stage)
			}
			// Nothing is left running: every started helper saw close or
			// was killed, and its private directory is gone.
			if _, err := os.Lstat(filepath.Join(e.state, "tmp", "helper-launch-1")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("private directory left: %v", err)
			}
		})
	}
	t.Run("same version passes", func(t *testing.T) {
		t.Parallel()
		e := newLaunchEnv(t, "openadapt-flow 1.32.0")
		o := e.options()
		o.FlowPython, o.FlowCommand, o.CheckRunVersion = e.python, []string{"flow-run"}, true
		if _, err := launch(t, o); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("version check only with --flow-python", func(t *testing.T) {
		t.Parallel()
		e := newLaunchEnv(t, "openadapt-flow 1.32.1")
		o := e.options()
		o.CheckRunVersion = true // the interpreter comes from openadapt-flow itself
		if _, err := launch(t, o); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLaunchRecordedAuthority: the helper gets the durable-authority
// database recorded in the state directory, and the notice fires only when
// it differs from the environment's.
func TestLaunchRecordedAuthority(t *testing.T) {
	t.Parallel()
	e := newLaunchEnv(t, "")
	if err := os.MkdirAll(e.state, 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "serve-home", "authority.sqlite3")
	if err := flowhelper.WriteAuthorityRecord(e.state, db); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		recorded bool
		envDB    string
		notice   bool
		want     string
	}{
		{"recorded differs", true, "", true, db},
		{"recorded equals", true, db, false, db},
		{"not asked", false, "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := e.options()
			o.Instance = "launch-" + strings.ReplaceAll(tc.name, " ", "-")
			o.FlowPython = e.python
			o.RecordedAuthority = tc.recorded
			if tc.envDB != "" {
				o.Environ = append(slices.Clone(o.Environ), flowhelper.AuthorityDBEnv+"="+tc.envDB)
			}
			notices := 0
			o.AuthorityNotice = func() { notices++ }
			h, err := launch(t, o)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, kv := range h.Env() {
				if v, ok := strings.CutPrefix(kv, flowhelper.AuthorityDBEnv+"="); ok {
					got = v
				}
			}
			if got != tc.want || (notices == 1) != tc.notice || notices > 1 {
				t.Errorf("authority %q notices %d, want %q notice %v", got, notices, tc.want, tc.notice)
			}
		})
	}
}

// TestLaunchSweeps: with OwnerLive, dead owners' private directories go
// before the helper starts; live ones stay.
func TestLaunchSweeps(t *testing.T) {
	t.Parallel()
	e := newLaunchEnv(t, "")
	for _, id := range []string{"dead-1", "live-1"} {
		if err := os.MkdirAll(filepath.Join(e.state, "tmp", "helper-"+id), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	o := e.options()
	o.FlowPython = e.python
	o.OwnerLive = func(id string) bool { return id == "live-1" || id == o.Instance }
	if _, err := launch(t, o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(e.state, "tmp", "helper-dead-1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dead owner's directory kept: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(e.state, "tmp", "helper-live-1")); err != nil {
		t.Errorf("live owner's directory removed: %v", err)
	}
}
