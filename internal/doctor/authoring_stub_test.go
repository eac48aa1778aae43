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
		status Status
		msg    string
	}{
		{"full", OK, "openadapt_flow.authoring is available with openadapt-flow 1.32.0: serve --authoring and authoring connect can run"},
		{"", Warn, "openadapt_flow.authoring is not available with openadapt-flow 1.32.0: serve --authoring and authoring connect fail closed"},
	} {
		st := authoringstub.New(t, tc.mode)
		py := stubFlowPython(t, st)
		// The OPENADAPT_STUBFLOW_* knobs reach the helper by the child
		// environment's prefix; PYTHONPATH (which doctor drops) is set by
		// the wrapper, as realflow's wrapper sets its own.
		c := authoringLine(t, HelperChecks(context.Background(), HelperOptions{FlowCLI: shWrapper(t, "1.32.0"), FlowPython: py,
			Environ: append(os.Environ(), st.Vars...)}))
		if c.Status != tc.status || c.Message != tc.msg {
			t.Errorf("mode %q: %+v", tc.mode, c)
		}
	}
}

var realFlowDoctorSkip = realflow.SkipMessage("doctor: real-Flow authoring line")

// With real Flow 1.32.0 and --flow-python DIR/bin/flow-python (a #!/bin/sh
// wrapper), doctor says authoring is not available.
func TestRealFlowAuthoringLine(t *testing.T) {
	rf := realflow.Load(t, realFlowDoctorSkip)
	t.Setenv("HOME", t.TempDir())
	c := authoringLine(t, HelperChecks(context.Background(), HelperOptions{FlowCLI: rf.OpenadaptFlow, FlowPython: rf.FlowPython}))
	want := "openadapt_flow.authoring is not available with openadapt-flow " + rf.FlowVersion + ": serve --authoring and authoring connect fail closed"
	if c.Status != Warn || c.Message != want {
		t.Fatalf("%+v", c)
	}
}
