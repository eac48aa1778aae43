package cmd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Headed Continue through this project (needs OPENADAPT_REALFLOW_HEADED=1 and
// a display): the real binary runs `serve --allow-attended-actions --config
// DEPLOY --url URL --headed` on an Xvfb display; its embedded helper opens
// Flow's AttendedActionService, whose headed Chromium shows MockMed. A real
// governed run (Flow's run verb, profile standard, `drift=typelabel`) has
// halted on a durable pause at step_002 that allows continue. The scripted
// operator (realflow's tools/scripted_operator.py, real X input through
// xdotool) completes the step in that very window; then continue_attention
// over an MCP client with form elicitation must return Flow's completed
// decision, the run's report must become VERIFIED with exactly one MockMed
// record, and a retry with the same key after the item closed must replay the
// same decision without re-actuating anything.
//
// Heavy and optional: needs OPENADAPT_REALFLOW_HEADED=1 and DISPLAY
// (run it under $OPENADAPT_REALFLOW_DIR/bin/with-xvfb), besides the
// variables of TestRealFlowAttendedE2E. .ci/checks/50-real-flow.sh runs it
// when OPENADAPT_CI_HEADED_CONTINUE=1.

const realFlowHeadedSkip = "cmd: real-Flow headed Continue SKIPPED: set OPENADAPT_REALFLOW_HEADED=1 and run under $OPENADAPT_REALFLOW_DIR/bin/with-xvfb (see .ci/checks/50-real-flow.sh)"

func TestRealFlowHeadedContinue(t *testing.T) {
	if os.Getenv("OPENADAPT_REALFLOW_HEADED") != "1" || os.Getenv("DISPLAY") == "" {
		fmt.Fprintln(os.Stderr, realFlowHeadedSkip)
		t.Skip(realFlowHeadedSkip)
	}
	e := newRFE2E(t)
	t0 := time.Now()
	phase := func(what string) { t.Logf("headed continue: %s (%.1f s)", what, time.Since(t0).Seconds()) }

	// 1. A real governed run (Flow's run verb, profile standard, in place
	// under the runs dir with the test's authority database) halts on a
	// continuable durable pause at step_002. The tutorial bundle's mined
	// effect checks the recorded note, so the run types exactly that one.
	// (The run tool's own halt is TestRealFlowAttendedE2E's; this server's
	// admission gate would refuse a standard-profile run of a bundle the
	// ledger does not admit.)
	data, err := os.ReadFile(e.deploy)
	if err != nil {
		t.Fatal(err)
	}
	deploy := filepath.Join(filepath.Dir(e.deploy), "deploy-standard.yaml")
	os.WriteFile(deploy, []byte(strings.Replace(string(data), "profile: demo", "profile: standard", 1)), 0o600)
	params := filepath.Join(filepath.Dir(e.deploy), "params.json")
	os.WriteFile(params, []byte(`{"note": "Synthetic follow-up in two weeks"}`), 0o600)
	if err := os.MkdirAll(e.runs, 0o700); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(e.runs, "run-"+strings.Repeat("0", 23)+"1")
	flow := exec.Command(filepath.Join(e.dir, "bin", "openadapt-flow"), "run", filepath.Join(e.bundles, "tutorial"),
		"--config", deploy, "--url", e.base+"/?fault=ok&idempotency=demo&drift=typelabel#tasks",
		"--run-dir", runDir, "--params-file", params)
	flow.Env = e.env()
	out, err := flow.CombinedOutput()
	if code := flow.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("openadapt-flow run exited %d (want 1, halted): %v\n%.3000s", code, err, out)
	}
	phase("the run halted")

	// 2. The attended server with the live session: its browser opens at
	// the application URL (without the drift) on this DISPLAY.
	flowPython := filepath.Join(e.dir, "bin", "flow-python")
	live := e.base + "/?fault=ok&idempotency=demo#tasks"
	att := e.serve(true, "--allow-attended-actions", "--config", deploy, "--url", live, "--headed", "--flow-python", flowPython)
	if !strings.Contains(att.stderr.String(), "live Continue/Skip ready") {
		t.Fatalf("banner: %s", att.stderr)
	}
	q := att.call(t, "list_needs_attention", map[string]any{})
	items := q["items"].([]any)
	if len(items) != 1 || q["actions_enabled"] != true || q["live_actions_ready"] != true {
		t.Fatalf("queue %v\n%s", q, att.stderr)
	}
	it := items[0].(map[string]any)
	cp := it["capability"].(map[string]any)
	if !slices.Contains(cp["allowed_actions"].([]any), any("continue")) {
		t.Fatalf("item %v", it)
	}
	phase("the live session is open")

	// 3. The person (scripted) completes Open -> New Encounter -> Triage
	// in the service's window.
	op := exec.Command(flowPython, filepath.Join(e.dir, "tools", "scripted_operator.py"), "click",
		"--bundle", filepath.Join(e.bundles, "tutorial"), "--through", "2")
	op.Env = e.env()
	if out, err := op.CombinedOutput(); err != nil {
		t.Fatalf("scripted operator: %v\n%s", err, out)
	} else {
		t.Logf("scripted operator: %s", strings.TrimSpace(string(out)))
	}
	phase("the scripted operator completed the step")

	// 4. Continue over MCP (form elicitation accepted).
	args := map[string]any{"attention_id": it["id"], "capability_digest": cp["digest"],
		"idempotency_key": "headed-continue-key-0001", "human_completed": true}
	dec := att.call(t, "continue_attention", args)
	if dec["status"] != "completed" {
		dumpRun(t, e.runs)
	}
	if dec["status"] != "completed" || dec["success"] != true || dec["report_success"] != true ||
		dec["next_transition"] != "step_003" || !strings.HasPrefix(fmt.Sprint(dec["transition_receipt_digest"]), "sha256:") {
		t.Fatalf("continue = %v\n%s\n%s", dec, att.stderr, e.helperLogTail())
	}
	phase("continue_attention returned " + fmt.Sprint(dec["status"]))

	// Flow resumed the run to VERIFIED, with exactly one MockMed record.
	var rep struct {
		Outcome string `json:"execution_outcome"`
	}
	if data, err := os.ReadFile(filepath.Join(runDir, "report.json")); err != nil || json.Unmarshal(data, &rep) != nil || rep.Outcome != "VERIFIED" {
		t.Fatalf("report %q: %v %+v", runDir, err, rep)
	}
	if n := mockmedRecords(t, e.base); n != 1 {
		t.Fatalf("MockMed holds %d records, want 1", n)
	}
	// 5. The item is closed; the same key replays the same decision,
	// dispatching nothing (still one record).
	if q := att.call(t, "list_needs_attention", map[string]any{}); q["open_count"] != 0.0 {
		t.Fatalf("queue after continue %v", q)
	}
	again := att.call(t, "continue_attention", args)
	if again["decision_id"] != dec["decision_id"] || again["status"] != "completed" {
		t.Fatalf("replay %v vs %v", again, dec)
	}
	if n := mockmedRecords(t, e.base); n != 1 {
		t.Fatalf("after the replay MockMed holds %d records, want 1", n)
	}
	phase("the replay returned the same decision")
}

// mockmedRecords counts the records of MockMed's ground truth (GET /api/db).
func mockmedRecords(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/api/db")
	if err != nil {
		t.Fatalf("GET /api/db: %v", err)
	}
	defer resp.Body.Close()
	var db struct {
		Records []json.RawMessage `json:"records"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&db); err != nil || db.Records == nil {
		t.Fatalf("GET /api/db: %v", err)
	}
	return len(db.Records)
}

// dumpRun logs the halt of every run report under runs (synthetic MockMed
// data only), for a failure.
func dumpRun(t *testing.T, runs string) {
	_ = filepath.WalkDir(runs, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "report.json" {
			data, _ := os.ReadFile(p)
			var r map[string]any
			_ = json.Unmarshal(data, &r)
			h, _ := json.Marshal(map[string]any{"outcome": r["execution_outcome"], "halt": r["halt"]})
			t.Logf("%s: %.3000s", p, h)
		}
		return nil
	})
}
