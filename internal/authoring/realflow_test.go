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

// Against real Flow 1.32.0 the session fails closed with the dependency
// error: 1.32 has no openadapt_flow.authoring.
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
	_, err = authoring.Open(context.Background(), authoring.OpenOptions{
		Helper: flowhelper.LaunchOptions{FlowPython: rf.FlowPython, StateDir: state, Instance: "realflow-authoring",
			Environ: append(os.Environ(), "HOME="+filepath.Join(T, "home"))},
		BackendKind: "linux", OutDir: filepath.Join(T, "out"),
	})
	var ue *authoring.UnavailableError
	if !errors.As(err, &ue) || err.Error() != "openadapt_flow.authoring is not available with openadapt-flow "+rf.FlowVersion {
		t.Fatalf("Open = %v", err)
	}
}
