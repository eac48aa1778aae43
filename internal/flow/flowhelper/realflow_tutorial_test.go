package flowhelper_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
)

// TestRealFlowTutorialPrepare runs the embedded tutorial.prepare against real
// Flow 1.32 (docs/helper.md, "Ops"), starting from a copy of the one
// cold preparation .ci/checks/50-real-flow.sh makes with `openadapt-agent
// tutorial prepare` (OPENADAPT_REALFLOW_TUTORIAL_DIR), or
// cold itself (about a minute) with OPENADAPT_REALFLOW_TUTORIAL_DIR=cold.
func TestRealFlowTutorialPrepare(t *testing.T) {
	rf := needRealFlow(t)
	e := newRFEnv(t)
	work := filepath.Join(e.Runs, "synthetic-tutorial")
	shared := os.Getenv("OPENADAPT_REALFLOW_TUTORIAL_DIR")
	if shared == "" {
		t.Skip("flowhelper: the real-Flow tutorial test shares 50-real-flow.sh's preparation: set OPENADAPT_REALFLOW_TUTORIAL_DIR=<runs>/synthetic-tutorial (or =cold)")
	}
	if shared != "cold" {
		if err := os.CopyFS(filepath.Join(work, "bundle"), os.DirFS(filepath.Join(shared, "bundle"))); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(shared, "prepared.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "prepared.json"), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	} else if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	prepare := func(h *flowhelper.Helper, instance string) (flowhelper.TutorialResult, []string, error) {
		var phases []string
		res, err := h.PrepareTutorial(context.Background(), flowhelper.TutorialRequest{WorkDir: work, Reuse: true, Instance: instance},
			func(p flowhelper.TutorialProgress) { phases = append(phases, p.Phase) })
		return res, phases, err
	}
	start := func(instance string) *flowhelper.Helper {
		h, err := flowhelper.Start(context.Background(), flowhelper.Config{
			Interpreter: flowhelper.Interpreter{Path: rf.FlowPython},
			StateDir:    filepath.Join(e.Runs, ".openadapt-agent"), Instance: instance, Env: e.Env})
		if err != nil {
			t.Fatalf("Start: %v (%v)", err, errors.Unwrap(err))
		}
		t.Cleanup(func() { _, _ = h.Close() })
		return h
	}
	h1 := start("1111111111111111")
	r1, phases, err := prepare(h1, "1111111111111111")
	if err != nil {
		t.Fatalf("prepare: %v (phases %v; see %s)", err, phases, h1.LogPath)
	}
	t.Logf("first preparation: reused=%v phases %v", r1.Reused, phases)
	if r1.BundleDir != filepath.Join(work, "bundle") || !strings.HasPrefix(r1.BaseURL, "http://127.0.0.1:") ||
		r1.URL != r1.BaseURL+"?fault=ok&idempotency=demo#tasks" || len(r1.ContentDigest) != 64 {
		t.Fatalf("result %+v", r1)
	}
	for _, p := range []string{r1.DeploymentConfig, filepath.Join(work, "prepared.json")} {
		if st, err := os.Lstat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want 0600", p, st, err)
		}
	}
	// MockMed serves its system of record for the helper's lifetime.
	resp, err := http.Get(r1.BaseURL + "api/db")
	if err != nil {
		t.Fatalf("MockMed: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"records"`) {
		t.Fatalf("MockMed /api/db: %s", body)
	}

	// A second server on the same runs dir reuses the bundle while the first
	// is live, on its own port and deployment file.
	h2 := start("2222222222222222")
	r2, phases, err := prepare(h2, "2222222222222222")
	if err != nil || !r2.Reused || r2.ContentDigest != r1.ContentDigest || r2.DeploymentConfig == r1.DeploymentConfig || r2.BaseURL == r1.BaseURL {
		t.Fatalf("reuse: %+v %v %v", r2, phases, err)
	}
	for _, p := range phases {
		if p == "record" {
			t.Fatalf("reuse recorded again: %v", phases)
		}
	}

	// A bundle in use by a live server is never removed: with prepared.json
	// no longer matching, a third preparation must rebuild, and fails at
	// "replace" instead, leaving the bundle as it was.
	pj := filepath.Join(work, "prepared.json")
	orig, err := os.ReadFile(pj)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pj, []byte(strings.Replace(string(orig), "1.32", "9.99", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	h3 := start("3333333333333333")
	_, phases, err = prepare(h3, "3333333333333333")
	var he *flowhelper.Error
	if !errors.As(err, &he) || he.Reason != "tutorial_failed" || phases[len(phases)-1] != "replace" {
		t.Fatalf("in-use rebuild: err %v phases %v", err, phases)
	}
	if _, err := os.Stat(filepath.Join(work, "bundle", "workflow.json")); err != nil {
		t.Fatalf("the in-use bundle was removed: %v", err)
	}
	if err := os.WriteFile(pj, orig, 0o600); err != nil {
		t.Fatal(err)
	}

	// Close stops MockMed: the port refuses afterwards.
	for _, h := range []*flowhelper.Helper{h1, h2, h3} {
		if cr, err := h.Close(); err != nil || (h != h3 && !cr.MockmedStopped) {
			t.Errorf("close: %+v %v", cr, err)
		}
	}
	if resp, err := http.Get(r1.BaseURL + "api/db"); err == nil {
		resp.Body.Close()
		t.Fatal("MockMed still answers after close")
	}
}
