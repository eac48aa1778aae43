//go:build unix

package serve

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flowSandboxOpts are the sandbox on the flow engine over the fake helper
// and the fake Flow of the tutorial tests.
func (te *tutEnv) flowSandboxOpts(engine string) Options {
	o := te.opts()
	o.AllowRun, o.Sandbox, o.SandboxEngine = false, true, engine
	return o
}

// TestSandboxFlowEngine: the flow engine runs Flow's synthetic tutorial for
// sandbox_unsigned_production_success (through the tutorial's own run
// call, so Flow runs once) and names its engine; the other cases stay
// simulated and start nothing; get_run_report answers the Flow run.
func TestSandboxFlowEngine(t *testing.T) {
	t.Parallel()
	te := newTutEnv(t)
	s := start(t, te.flowSandboxOpts(EngineFlow))
	if b := s.srv.Banner(); !strings.Contains(b, "SANDBOX") || !strings.Contains(b, "engine flow") {
		t.Errorf("banner %q", b)
	}
	if _, ok := s.tools["run_local_quickstart"]; ok {
		t.Error("the flow engine registered run_local_quickstart")
	}
	if !strings.HasPrefix(s.tools[sandboxTool(sandboxUnsignedProd)].Description, sandboxFlowDescription) {
		t.Errorf("description %q", s.tools[sandboxTool(sandboxUnsignedProd)].Description)
	}
	got := s.call(sandboxTool(sandboxUnsignedProd), map[string]any{})
	if got["status"] != "error" || got["effect_verified"] != true || got["sandbox_engine"] != "flow" || got["sandbox_case"] != sandboxUnsignedProd ||
		got["proof"] != "local" || got["record_changed"] != "yes" || got["safe_to_retry"] != false || got["workflow_id"] != sandboxWorkflowID(sandboxUnsignedProd) ||
		!strings.HasPrefix(got["message"].(string), sandboxFlowNote) {
		t.Fatalf("flow result %v", got)
	}
	te.wantRuns(1)
	rep := s.call(toolGetRunReport, map[string]any{"run_id": got["run_id"]})
	if rep["status"] != "error" || rep["sandbox_engine"] != "flow" || rep["workflow_id"] != sandboxWorkflowID(sandboxUnsignedProd) {
		t.Errorf("report %v", rep)
	}
	sim := s.call(sandboxTool(sandboxSuccess), map[string]any{})
	if sim["status"] != "success" || sim["sandbox_engine"] != "simulated" || sim["proof"] != "simulated" {
		t.Errorf("simulated case on the flow engine %v", sim)
	}
	te.wantRuns(1)
}

// TestSandboxAutoEngine: auto is the flow engine when the helper starts and
// passes the tutorial's version gate, else simulated; without Flow it
// starts nothing and writes nothing.
func TestSandboxAutoEngine(t *testing.T) {
	t.Parallel()
	t.Run("flow", func(t *testing.T) {
		t.Parallel()
		te := newTutEnv(t)
		s := start(t, te.flowSandboxOpts(EngineAuto))
		if s.srv.sandbox.engine != EngineFlow {
			t.Fatalf("auto chose %s", s.srv.sandbox.engine)
		}
	})
	t.Run("wrong Flow version", func(t *testing.T) {
		t.Parallel()
		te := newTutEnv(t)
		te.environ = append(te.environ, "OPENADAPT_FAKE_HELPER_MODE=hello-version=1.33.0")
		s := start(t, te.flowSandboxOpts(EngineAuto))
		if s.srv.sandbox.engine != EngineSimulated || !strings.Contains(s.stderr.String(), "sandbox engine auto: Flow's tutorial is not usable here") {
			t.Fatalf("auto chose %s; stderr %s", s.srv.sandbox.engine, s.stderr.String())
		}
	})
	t.Run("no Flow", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		o := sandboxOpts(t, root)
		o.SandboxEngine = EngineAuto
		o.LookPath = func(string) (string, error) { return "", errors.New("not found") }
		s := start(t, o)
		if s.srv.sandbox.engine != EngineSimulated || !strings.Contains(s.stderr.String(), "openadapt-flow was not found; using the simulated engine") {
			t.Fatalf("auto chose %s; stderr %s", s.srv.sandbox.engine, s.stderr.String())
		}
		if _, err := os.Stat(filepath.Join(root, "runs")); !errors.Is(err, os.ErrNotExist) {
			t.Error("auto without Flow wrote the runs folder")
		}
	})
}
