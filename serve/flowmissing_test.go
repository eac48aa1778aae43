//go:build unix

package serve

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
)

// flowNotFoundAnswer checks a flow_not_found answer: the code, the copy
// naming the program and the fix, and (on a run tool) the decision fields
// of a run Flow never started.
func flowNotFoundAnswer(t *testing.T, r map[string]any, run bool) {
	t.Helper()
	if errorCode(r) != "flow_not_found" {
		t.Fatalf("answer %v, want flow_not_found", r)
	}
	e := r["error"].(map[string]any)
	msg := e["message"].(string) + " " + e["recovery"].(string)
	for _, want := range []string{"openadapt-flow", "install openadapt-flow", "--flow-cli", "--flow-python"} {
		if !strings.Contains(msg, want) {
			t.Errorf("copy %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "could not be determined") {
		t.Errorf("copy %q", msg)
	}
	if run && (r["record_changed"] != "no" || r["safe_to_retry"] != true || r["next_step"] != "fix_setup" || r["proof"] != "none") {
		t.Errorf("decision fields %v", r)
	}
}

// TestFlowMissingAttended: --allow-run --allow-attended-actions over
// bundles, with no Flow installed, still starts: the run tool and Reject,
// Teach and Escalate answer flow_not_found (never attended_unavailable),
// the read tools work, and the banner names the program and the fix.
func TestFlowMissingAttended(t *testing.T) {
	t.Parallel()
	a := newAttEnv(t, "")
	o := a.opts()
	o.FlowPython = "" // only the missing Flow command decides
	o.AllowRun = true
	s := elicitSession(t, o, "2025-11-25", accept)
	b := s.srv.Banner()
	for _, want := range []string{"attended decisions unavailable (openadapt-flow not found)",
		"openadapt-flow was not found; run tools and attended actions will fail with flow_not_found; install openadapt-flow so that it is on PATH, or pass --flow-cli (the Flow command) or --flow-python"} {
		if !strings.Contains(b, want) {
			t.Errorf("banner lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(b, "could not be determined") {
		t.Errorf("banner %s", b)
	}
	got := toolNames(s)
	for _, want := range []string{"list_workflows", "get_run_report", "list_needs_attention", "reject_attention", "teach_attention", "escalate_attention"} {
		if !slices.Contains(got, want) {
			t.Errorf("no %s in %v", want, got)
		}
	}
	if slices.Contains(got, "continue_attention") {
		t.Errorf("live tools without a live session: %v", got)
	}
	for _, tool := range []string{"reject_attention", "teach_attention", "escalate_attention"} {
		confirm := map[string]string{"reject_attention": "confirmed_reject", "teach_attention": "request_demonstration", "escalate_attention": "request_assistance"}[tool]
		r := s.call(tool, map[string]any{"attention_id": a.item.ID, "capability_digest": a.item.Capability.Digest,
			"idempotency_key": "flow-missing-key-0001", confirm: true})
		flowNotFoundAnswer(t, r, false)
	}
	flowNotFoundAnswer(t, s.call(s.runTool(), map[string]any{"note": "a"}), true)
	if q := s.call("list_needs_attention", map[string]any{}); q["actions_enabled"] != false || q["open_count"] != 1.0 {
		t.Errorf("queue %v", q)
	}
	if r := s.call("list_workflows", map[string]any{}); r["workflows"] == nil {
		t.Errorf("list_workflows %v", r)
	}
}

// TestFlowMissingTutorial: --allow-run alone (the tutorial) without Flow
// starts with no workflow; run_local_quickstart is listed and answers
// flow_not_found with the decision fields of a run that never started.
func TestFlowMissingTutorial(t *testing.T) {
	t.Parallel()
	te := newTutEnv(t)
	o := te.opts()
	o.FlowPython = ""
	o.FlowCLI = filepath.Join(te.root, "no-such-openadapt-flow")
	s := start(t, o)
	b := s.srv.Banner()
	if !strings.Contains(b, "serving 0 workflow(s)") || !strings.Contains(b, "tutorial unavailable (openadapt-flow not found)") ||
		!strings.Contains(b, "openadapt-flow was not found; run tools will fail with flow_not_found; install openadapt-flow") {
		t.Fatalf("banner %s", b)
	}
	if got := toolNames(s); !slices.Contains(got, "run_local_quickstart") {
		t.Fatalf("tools %v", got)
	}
	flowNotFoundAnswer(t, s.call("run_local_quickstart", map[string]any{}), true)
	flowNotFoundAnswer(t, s.call("run_local_quickstart", map[string]any{"idempotency_key": "flow-missing-key-0002"}), true)
	if r := s.call("run_local_quickstart", map[string]any{"note": "x"}); errorCode(r) != "invalid_arguments" {
		t.Errorf("an unknown argument: %v", r)
	}

	// The tutorial without --allow-run: read tools only, nothing to run.
	o.AllowRun, o.Tutorial = false, true
	s2 := start(t, o)
	if got := toolNames(s2); slices.Contains(got, "run_local_quickstart") {
		t.Errorf("tools %v", got)
	}
	if !strings.Contains(s2.srv.Banner(), "tutorial unavailable (openadapt-flow not found)") {
		t.Errorf("banner %s", s2.srv.Banner())
	}
}

// TestFlowMissingAuthoring: --authoring still fails closed at startup, with
// the message that names the missing program and the fix.
func TestFlowMissingAuthoring(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	o := e.opts()
	o.Bundles, o.Authoring = "", true
	o.FlowCLI = filepath.Join(e.root, "no-such-openadapt-flow")
	_, err := New(o, nil)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Msg != flowhelper.MsgFlowNotFound(o.FlowCLI) {
		t.Fatalf("New = %v", err)
	}
}
