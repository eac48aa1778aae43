//go:build unix

package doctor

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/authoringstub"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/realflow"
)

// stubFlowPython is a `#!/bin/sh` wrapper around a system Python with the
// stub Flow on its path, shaped like realflow's bin/flow-python (the reason
// doctor needs --flow-python: a shell wrapper has no Python shebang).
func stubFlowPython(t *testing.T, st *authoringstub.Stub) string {
	t.Helper()
	p := filepath.Join(st.Root, "flow-python")
	script := "#!/bin/sh\nPYTHONPATH='" + authoringstub.FlowDir(t) + "' exec '" + st.Python + "' \"$@\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func authoringLine(t *testing.T, checks []Check) Check {
	t.Helper()
	for _, c := range byID(t, checks) {
		if c.ID == IDAuthoring {
			return c
		}
	}
	t.Fatalf("no authoring line in %+v", checks)
	return Check{}
}

// doctor's authoring line through the real embedded helper, with
// --flow-python naming a #!/bin/sh wrapper: available with the stub F1
// session, not available (a warning, never a failure) without it.
func TestAuthoringLineWithStubFlow(t *testing.T) {
	for _, tc := range []struct {
		mode   string
		knobs  []string
		status Status
		msg    string
		pinned bool
	}{
		{"full", nil, OK, "openadapt_flow.authoring is available with openadapt-flow 1.32.0: serve --authoring and authoring connect can run", true},
		{"", nil, Warn, "openadapt_flow.authoring is not available with openadapt-flow 1.32.0: serve --authoring and authoring connect fail closed", true},
		{"no_press", nil, Warn, "openadapt_flow.authoring of openadapt-flow 1.32.0 lacks the expected API (AuthoringSession.press): serve --authoring and authoring connect fail closed", true},
		// Each feature's own verdict: authoring runs on Flow 1.33, attended
		// actions and the tutorial do not.
		{"full", []string{"OPENADAPT_STUBFLOW_VERSION=1.33.0"}, OK, "openadapt_flow.authoring is available with openadapt-flow 1.33.0: serve --authoring and authoring connect can run", false},
	} {
		st := authoringstub.New(t, tc.mode, tc.knobs...)
		py := stubFlowPython(t, st)
		// The OPENADAPT_STUBFLOW_* knobs reach the helper by the child
		// environment's prefix; PYTHONPATH (which doctor drops) is set by
		// the wrapper, as realflow's wrapper sets its own.
		version := "1.32.0"
		if !tc.pinned {
			version = "1.33.0"
		}
		checks := HelperChecks(context.Background(), HelperOptions{FlowCLI: shWrapper(t, version), FlowPython: py,
			Environ: append(os.Environ(), st.Vars...)})
		c := authoringLine(t, checks)
		if c.Status != tc.status || c.Message != tc.msg {
			t.Errorf("mode %q: %+v", tc.mode, c)
		}
		m := byID(t, checks)
		if m[IDHelper].Status != OK || (m[IDAttended].Status == OK) != tc.pinned || (m[IDTutorial].Status == OK) != tc.pinned {
			t.Errorf("mode %q %v: helper %+v attended %+v tutorial %+v", tc.mode, tc.knobs, m[IDHelper], m[IDAttended], m[IDTutorial])
		}
	}
}

var realFlowDoctorSkip = realflow.SkipMessage("doctor: real-Flow authoring line")

// With real Flow and --flow-python DIR/bin/flow-python (a #!/bin/sh
// wrapper), doctor's authoring line follows authoring's own gate: not
// available on a Flow without openadapt_flow.authoring (1.32), available on
// one whose module fits the recorded API.
func TestRealFlowAuthoringLine(t *testing.T) {
	rf := realflow.Load(t, realFlowDoctorSkip)
	t.Setenv("HOME", t.TempDir())
	c := authoringLine(t, HelperChecks(context.Background(), HelperOptions{FlowCLI: rf.OpenadaptFlow, FlowPython: rf.FlowPython}))
	if c.Status == OK && c.Message == "openadapt_flow.authoring is available with openadapt-flow "+rf.FlowVersion+": serve --authoring and authoring connect can run" {
		t.Logf("authoring available: %s", c.Message)
		return
	}
	want := "openadapt_flow.authoring is not available with openadapt-flow " + rf.FlowVersion + ": serve --authoring and authoring connect fail closed"
	if c.Status != Warn || c.Message != want {
		t.Fatalf("%+v", c)
	}
}
