package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

func intPtr(n int) *int { return &n }

// TestDecisionTableRows: one case per row of the decision table, each from
// the input that produces it (Flow's result through outcomeOf, a frozen
// record, or a run tool's failure code), with the expected fields written
// out here rather than read from the table. Every row is covered.
func TestDecisionTableRows(t *testing.T) {
	started := flowrun.Process{PID: 42, PGID: 42}
	res := func(v flowrun.Verdict, tx string) flowrun.Result {
		return flowrun.Result{Verdict: v, TransactionOutcome: tx, Process: started, ExitCode: intPtr(0)}
	}
	type want struct {
		changed string
		retry   bool
		next    string
		proof   string
	}
	outcomes := []struct {
		row    string
		result flowrun.Result
		want   want
	}{
		{caseSuccess, res(flowrun.Verdict{Status: flowrun.StatusSuccess}, ""), want{"yes", false, "none", "none"}},
		{caseVerified, res(flowrun.Verdict{Status: flowrun.StatusSuccess, Outcome: "VERIFIED"}, "VERIFIED"), want{"yes", false, "none", "local"}},
		{caseUnsignedProductionSuccess, res(flowrun.Verdict{Status: flowrun.StatusError, Outcome: "VERIFIED", Reason: flowrun.ReasonUnsignedProductionSuccess, EffectVerified: true}, "VERIFIED"),
			want{"yes", false, "none", "local"}},
		{caseHaltBeforeEffect, res(flowrun.Verdict{Status: flowrun.StatusHalt, Outcome: "HALTED"}, "HALTED_BEFORE_EFFECT"), want{"no", false, "wait_for_person", "none"}},
		{caseHalt, res(flowrun.Verdict{Status: flowrun.StatusHalt, Outcome: "HALTED"}, "RECONCILIATION_REQUIRED"), want{"unknown", false, "wait_for_person", "none"}},
		{caseHaltCompletedUnverified, res(flowrun.Verdict{Status: flowrun.StatusHalt, Outcome: "COMPLETED_UNVERIFIED"}, "COMPLETED_UNVERIFIED"), want{"unknown", false, "check_record", "none"}},
		{caseHaltRolledBack, res(flowrun.Verdict{Status: flowrun.StatusHalt, Outcome: "ROLLED_BACK"}, "ROLLED_BACK"), want{"unknown", false, "check_record", "none"}},
		{caseHaltNoReport, res(flowrun.Verdict{Status: flowrun.StatusHalt, Reason: flowrun.ReasonNoReport}, ""), want{"unknown", false, "check_record", "none"}},
		{caseRefused, flowrun.Result{Verdict: flowrun.Verdict{Status: flowrun.StatusRefused}, FailedChecks: []flowrun.FailedCheck{"not_certified"}, Process: started, ExitCode: intPtr(2)},
			want{"no", true, "fix_setup", "none"}},
		{caseTimeout, flowrun.Result{Verdict: flowrun.Verdict{Status: flowrun.StatusTimeout}, Process: started}, want{"unknown", false, "check_record", "none"}},
		{caseInterrupted, flowrun.Result{Verdict: flowrun.Verdict{Status: flowrun.StatusInterrupted}, Process: started}, want{"unknown", false, "check_record", "none"}},
		{caseError, res(flowrun.Verdict{Status: flowrun.StatusError, Outcome: "FAILED"}, "FAILED_PLATFORM"), want{"unknown", false, "check_record", "none"}},
		{caseNotStarted, flowrun.Result{Verdict: flowrun.Verdict{Status: flowrun.StatusError}}, want{"no", true, "fix_setup", "none"}},
	}
	covered := map[string]bool{}
	for _, c := range outcomes {
		t.Run(c.row, func(t *testing.T) {
			o := outcomeOf(c.result)
			if got := outcomeCase(&o); got != c.row {
				t.Fatalf("case %q, want %q", got, c.row)
			}
			d := decisionOfRun(&o, false)
			if (want{d.RecordChanged, d.SafeToRetry, d.NextStep, d.Proof}) != c.want {
				t.Errorf("%+v, want %+v", d, c.want)
			}
		})
		covered[c.row] = true
	}
	t.Run(caseRunning, func(t *testing.T) {
		d := decisionOfRun(nil, false)
		if (want{d.RecordChanged, d.SafeToRetry, d.NextStep, d.Proof}) != (want{"unknown", false, "call_get_run_report", "none"}) {
			t.Errorf("%+v", d)
		}
	})
	covered[caseRunning] = true
	codes := []struct {
		code Code
		want want
	}{
		{CodeInvalidArguments, want{"no", true, "fix_inputs", "none"}},
		{CodeUnknownWorkflow, want{"no", true, "fix_inputs", "none"}},
		{CodeWorkflowUnavailable, want{"no", true, "fix_setup", "none"}},
		{CodeRunToolsDisabled, want{"no", true, "fix_setup", "none"}},
		{CodeURLOverrideRefused, want{"no", true, "fix_inputs", "none"}},
		{CodeIdempotencyConflict, want{"no", false, "fix_inputs", "none"}},
		{CodeAdmissionRequired, want{"no", true, "fix_setup", "none"}},
		{CodeFlowNotFound, want{"no", true, "fix_setup", "none"}},
		{CodeInternalError, want{"no", false, "fix_setup", "none"}},
	}
	for _, c := range codes {
		t.Run(string(c.code), func(t *testing.T) {
			f := withDecision(fail(c.code))
			d := *f.decision
			if (want{d.RecordChanged, d.SafeToRetry, d.NextStep, d.Proof}) != c.want {
				t.Errorf("%+v, want %+v", d, c.want)
			}
		})
		covered[decisionKeyCodePrefix+string(c.code)] = true
	}
	for _, r := range decisionTable {
		if !covered[r.key] {
			t.Errorf("row %q has no test", r.key)
		}
	}
	if len(covered) != len(decisionTable) {
		t.Errorf("%d rows tested, table has %d", len(covered), len(decisionTable))
	}
	// A simulated change is shown by simulation; nothing else moves.
	for _, c := range outcomes {
		o := outcomeOf(c.result)
		real, sim := decisionOfRun(&o, false), decisionOfRun(&o, true)
		if real.Proof == proofLocal {
			real.Proof = proofSimulated
		}
		if real != sim {
			t.Errorf("%s: simulated %+v, real %+v", c.row, sim, real)
		}
	}
}

// TestDecisionConsistency projects every combination of frozen fields a
// record can hold (status, execution outcome, transaction outcome, effect
// flag, message key, failed checks; real and simulated) and checks that
// the decision fields agree with the rest of the projection and validate
// against the run result's schema.
func TestDecisionConsistency(t *testing.T) {
	statuses := []flowrun.Status{"", flowrun.StatusSuccess, flowrun.StatusHalt, flowrun.StatusRefused,
		flowrun.StatusTimeout, flowrun.StatusError, flowrun.StatusInterrupted}
	execs := []string{"", "VERIFIED", "COMPLETED_UNVERIFIED", "HALTED", "FAILED", "ROLLED_BACK"}
	txs := append([]string{""}, flowrun.TransactionOutcomes...)
	keys := []runstore.MessageKey{"a_key_of_another_build"}
	for k := range runMessages {
		keys = append(keys, k)
	}
	checks := [][]flowrun.FailedCheck{nil, {"other"}, {"not_certified", "a_newer_code", "not_certified"}}
	schema := resolveSchema(compact(runOutcomeSchema(false)))
	validated := map[string]bool{}
	n := 0
	for _, st := range statuses {
		for _, ex := range execs {
			for _, tx := range txs {
				for _, ev := range []bool{false, true} {
					for _, key := range keys {
						for _, fc := range checks {
							for _, sim := range []bool{false, true} {
								r := &runstore.File{SchemaVersion: runstore.SchemaVersion, RunID: "run-" + strings.Repeat("a", 24),
									WorkflowID: "workflow_" + strings.Repeat("b", 24), Phase: runstore.PhaseRunning}
								if st != "" {
									r.Phase = runstore.PhaseTerminal
									r.Outcome = &runstore.Outcome{Status: st, ExecutionOutcome: ex, TransactionOutcome: tx,
										EffectVerified: ev, MessageKey: key, FailedChecks: fc}
								} else if ex != "" || tx != "" || ev || fc != nil {
									continue
								}
								out := runOutcome{runCore: coreOf(r), runDecision: runDecisionOf(frozenOutcome(r), sim)}
								checkConsistent(t, out, sim)
								b, _ := json.Marshal(out)
								if !validated[string(b)] {
									validated[string(b)] = true
									if !validates(schema, b) {
										t.Fatalf("does not validate: %s", b)
									}
								}
								n++
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d combinations, %d distinct results", n, len(validated))
	// Every run tool failure says nothing changed, and validates.
	fs := resolveSchema(compact(runFailureSchema))
	for _, c := range allCodes {
		f := withDecision(fail(c))
		b, _ := json.Marshal(f)
		if !validates(fs, b) {
			t.Errorf("%s: %s does not validate", c, b)
		}
		if f.RecordChanged == changedYes || f.SafeToRetry && f.RecordChanged != changedNo {
			t.Errorf("%s: %+v", c, *f.decision)
		}
		if strings.Contains(f.Error.Message, "Nothing was executed") && f.RecordChanged != changedNo {
			t.Errorf("%s says nothing was executed: %+v", c, *f.decision)
		}
	}
	// Other tools' failures carry no decision fields.
	b, _ := json.Marshal(fail(CodeReportUnavailable))
	if string(b) != `{"error":{"code":"report_unavailable","message":"No run report is available for that run_id.","recovery":"Use a run_id that a run tool on this runs directory returned."}}` {
		t.Errorf("a read tool's failure: %s", b)
	}
}

func checkConsistent(t *testing.T, out runOutcome, sim bool) {
	t.Helper()
	d := out.runDecision
	bad := func(rule string) {
		t.Helper()
		b, _ := json.Marshal(out)
		t.Fatalf("%s: %s", rule, b)
	}
	if !slices.Contains(recordChangedValues, d.RecordChanged) || !slices.Contains(nextStepValues, d.NextStep) || !slices.Contains(proofValues, d.Proof) {
		bad("a value outside its enum")
	}
	st := out.Status
	if out.Success != (st == "success") {
		bad("success is status success")
	}
	if out.Success && (d.RecordChanged != changedYes || d.NextStep != stepNone || d.SafeToRetry) {
		bad("success changed the record, and is done")
	}
	if d.SafeToRetry && d.RecordChanged != changedNo {
		bad("safe to retry only when nothing was written")
	}
	if d.RecordChanged == changedNo && !(st == "refused" || st == "halt" || st == "error" && strings.Contains(out.Message, "nothing was executed")) {
		bad("record_changed no only for a refusal, a halt before effect, or a run that never started")
	}
	if d.RecordChanged == changedYes && !(out.Success || out.EffectVerified != nil) {
		bad("record_changed yes only for success or a verified effect")
	}
	if d.NextStep == stepNone && d.RecordChanged != changedYes {
		bad("nothing to do only once the change is made")
	}
	if out.EffectVerified != nil && (st != "error" || d.RecordChanged != changedYes || d.SafeToRetry || d.NextStep != stepNone) {
		bad("a verified effect is changed, done and never retried")
	}
	switch {
	case d.Proof == proofSealed:
		bad("this server never mints a Seal")
	case d.Proof == proofLocal && (sim || out.ExecutionOutcome != "VERIFIED"):
		bad("local proof is Flow's VERIFIED check")
	case d.Proof == proofSimulated && (!sim || out.ExecutionOutcome != "VERIFIED"):
		bad("simulated proof is a simulated VERIFIED change")
	case d.Proof != proofNone && d.RecordChanged != changedYes:
		bad("proof only of a change")
	}
	switch st {
	case "running":
		if d.RecordChanged != changedUnknown || d.SafeToRetry || d.NextStep != stepCallGetRunReport {
			bad("running")
		}
	case "timeout", "interrupted":
		if d.RecordChanged != changedUnknown || d.SafeToRetry || d.NextStep != stepCheckRecord {
			bad("timeout and interrupted are uncertain")
		}
	case "halt":
		if d.RecordChanged == changedYes || d.SafeToRetry || (d.NextStep != stepWaitForPerson && d.NextStep != stepCheckRecord) {
			bad("a halt waits for a person or a check")
		}
	case "refused":
		if d.RecordChanged != changedNo || !d.SafeToRetry || d.NextStep != stepFixSetup {
			bad("a refusal ran nothing")
		}
	}
	if (len(d.FailedChecks) > 0) != (st == "refused") {
		bad("failed_checks exactly on a refusal")
	}
	for i, c := range d.FailedChecks {
		if !flowrun.KnownFailedCheck(c) || slices.Contains(d.FailedChecks[:i], c) {
			bad("failed_checks are known codes, each once")
		}
	}
	claims := strings.Contains(out.Message, "the record did not change")
	if claims != (st == "halt" && d.RecordChanged == changedNo) {
		bad("the halt copy follows the transaction outcome")
	}
	if strings.Contains(strings.ToLower(out.Message), "nothing was executed") && d.RecordChanged != changedNo {
		bad("a message saying nothing ran says nothing changed")
	}
}

// TestRefusalChecksStayClosed: a governed refusal through the fake Flow
// (its report shape pinned to Flow 1.32's) freezes the check codes in the
// run record (format version 2) and shows them on the run result and
// get_run_report; Flow's own text (a planted secret in its gate detail)
// reaches neither the wire, stderr, the audit log nor the record.
func TestRefusalChecksStayClosed(t *testing.T) {
	t.Parallel()
	e, o := runEnv(t)
	s := start(t, o)
	r := s.call(s.runTool(), map[string]any{"note": "a", "scenario": "refuse=certification,interstitial_admission,something_new"})
	want := []any{"not_certified", "popup_handling_not_approved", "other"}
	if r["status"] != "refused" || !slices.Equal(anySlice(r["failed_checks"]), want) || r["safe_to_retry"] != true || r["next_step"] != "fix_setup" {
		t.Fatalf("%v", r)
	}
	runID := r["run_id"].(string)
	data, err := os.ReadFile(filepath.Join(e.runsDir, runstore.StateDirName, "runs", runID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := runstore.ParseFile(data, runID)
	if err != nil || f.SchemaVersion != 2 || !slices.Equal(f.Outcome.FailedChecks, []flowrun.FailedCheck{"not_certified", "popup_handling_not_approved", "other"}) {
		t.Fatalf("record %s: %v", data, err)
	}
	rep := s.call("get_run_report", map[string]any{"run_id": runID})
	if !slices.Equal(anySlice(rep["failed_checks"]), want) || rep["record_changed"] != "no" {
		t.Fatalf("%v", rep)
	}
	audit, _ := os.ReadFile(filepath.Join(e.runsDir, runstore.StateDirName, "audit.jsonl"))
	for where, text := range map[string]string{"wire": s.out(), "stderr": s.stderr.String(), "record": string(data), "audit log": string(audit)} {
		for _, secret := range []string{"SECRET-FLOW-DETAIL", "Jane Q. Doe", "[REFUSE]", "Certification passed", "s0003"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds %q", where, secret)
			}
		}
	}
}

// TestRunToolFailureDecision: a run tool's failure envelope carries the
// decision fields, a read tool's does not, and a run-shaped unknown name
// answers like a run tool.
func TestRunToolFailureDecision(t *testing.T) {
	t.Parallel()
	_, o := runEnv(t)
	o.FlowCLI = "/nonexistent/openadapt-flow"
	s := start(t, o)
	r := s.call(s.runTool(), map[string]any{"note": "a", "scenario": "x"})
	if errorCode(r) != "flow_not_found" || r["record_changed"] != "no" || r["safe_to_retry"] != true || r["next_step"] != "fix_setup" || r["proof"] != "none" {
		t.Fatalf("%v", r)
	}
	r = s.call(s.runTool(), map[string]any{"note": "a"})
	if errorCode(r) != "invalid_arguments" || r["next_step"] != "fix_inputs" || r["safe_to_retry"] != true {
		t.Fatalf("%v", r)
	}
	r = s.call("run_workflow_"+strings.Repeat("0", 24), map[string]any{})
	if errorCode(r) != "unknown_workflow" || r["next_step"] != "fix_inputs" {
		t.Fatalf("%v", r)
	}
	r = s.call("get_workflow", map[string]any{"workflow": "workflow_" + strings.Repeat("0", 24)})
	if errorCode(r) != "unknown_workflow" || len(r) != 1 {
		t.Fatalf("a read tool's failure: %v", r)
	}
}

func anySlice(v any) []any {
	s, _ := v.([]any)
	return s
}
