package authoring_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/authoring"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/realflow"
)

var realFlowSkip = realflow.SkipMessage("authoring: real-Flow contract test")

// Authoring's gate against real Flow: a Flow without
// openadapt_flow.authoring (1.32) fails closed with the dependency error; a
// Flow with it passes the probe of the recorded API (its session is not
// opened here: that needs a browser or a desktop).
func TestRealFlowAuthoringFailsClosed(t *testing.T) {
	rf := realflow.Load(t, realFlowSkip)
	T, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(T, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	o := authoring.OpenOptions{
		Helper: flowhelper.LaunchOptions{FlowPython: rf.FlowPython, StateDir: state, Instance: "realflow-authoring",
			Environ: append(os.Environ(), "HOME="+filepath.Join(T, "home"))},
		BackendKind: "linux", OutDir: filepath.Join(T, "out"),
	}
	available, v, err := authoring.Probe(context.Background(), o)
	if err != nil || v != rf.FlowVersion {
		t.Fatalf("Probe = %v %q %v", available, v, err)
	}
	if available {
		t.Logf("openadapt-flow %s has an openadapt_flow.authoring of the expected API", v)
		return
	}
	_, err = authoring.Open(context.Background(), o)
	var ue *authoring.UnavailableError
	if !errors.As(err, &ue) || err.Error() != "openadapt_flow.authoring is not available with openadapt-flow "+rf.FlowVersion {
		t.Fatalf("Open = %v", err)
	}
}
