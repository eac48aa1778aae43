package serve

import (
	"slices"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// The decision fields (docs/runs.md "Decision fields"): what an agent must
// decide from a run result, stated as closed values instead of prose. Every
// run result carries them (a run tool's result, get_run_report's, the
// sandbox's), and so does a run tool's failure envelope. They are computed
// from the frozen outcome (or the failure code) through the one table
// below, never from Flow's text.

// The values of record_changed, next_step and proof. Their order is the
// enum order of the schemas (wire: new values are appended).
const (
	changedYes     = "yes"
	changedNo      = "no"
	changedUnknown = "unknown"

	stepNone             = "none"
	stepWaitForPerson    = "wait_for_person"
	stepCheckRecord      = "check_record"
	stepFixInputs        = "fix_inputs"
	stepFixSetup         = "fix_setup"
	stepRetry            = "retry"
	stepCallGetRunReport = "call_get_run_report"

	proofNone      = "none"
	proofLocal     = "local"
	proofSealed    = "sealed"
	proofSimulated = "simulated"
)

// decisionKeyCodePrefix starts the table key of a failure code's row.
const decisionKeyCodePrefix = "code:"

var (
	recordChangedValues = []string{changedYes, changedNo, changedUnknown}
	nextStepValues      = []string{stepNone, stepWaitForPerson, stepCheckRecord, stepFixInputs, stepFixSetup, stepRetry, stepCallGetRunReport}
	proofValues         = []string{proofNone, proofLocal, proofSealed, proofSimulated}
)

// decision is the decision fields of one result, in wire order.
type decision struct {
	RecordChanged string `json:"record_changed"`
	SafeToRetry   bool   `json:"safe_to_retry"`
	NextStep      string `json:"next_step"`
	Proof         string `json:"proof"`
}

// The cases of the table: one per kind of run result, and one per failure
// code a run tool can answer (decisionKeyCodePrefix + the code).
const (
	caseSuccess                   = "success"
	caseVerified                  = "success_verified"
	caseUnsignedProductionSuccess = "unsigned_production_success"
	caseHaltBeforeEffect          = "halt_before_effect"
	caseHalt                      = "halt"
	caseHaltCompletedUnverified   = "halt_completed_unverified"
	caseHaltRolledBack            = "halt_rolled_back"
	caseHaltNoReport              = "halt_no_report"
	caseRefused                   = "refused"
	caseTimeout                   = "timeout"
	caseInterrupted               = "interrupted"
	caseError                     = "error"
	caseNotStarted                = "not_started"
	caseRunning                   = "running"
)

// decisionTable is the one table (docs/runs.md "Decision fields"). A row
// names a case, the decision and, for the docs and the tests, what it
// covers. safe_to_retry is true only where the evidence proves nothing was
// written and the same call may then succeed; record_changed is "no" only
// where the evidence proves nothing was written; proof "local" only where
// Flow's own record check verified the change (a simulated run says
// "simulated" instead, decisionOfRun); never "sealed" (this server cannot
// mint a Seal).
var decisionTable = []struct {
	key, covers string
	d           decision
}{
	// Run results (the success branch), by frozen outcome.
	{caseSuccess, "success without an execution outcome (a legacy report)", decision{changedYes, false, stepNone, proofNone}},
	{caseVerified, "success with execution outcome VERIFIED", decision{changedYes, false, stepNone, proofLocal}},
	{caseUnsignedProductionSuccess, "error: production-eligible VERIFIED without a Seal (effect_verified)", decision{changedYes, false, stepNone, proofLocal}},
	{caseHaltBeforeEffect, "halt, HALTED with transaction outcome HALTED_BEFORE_EFFECT", decision{changedNo, false, stepWaitForPerson, proofNone}},
	{caseHalt, "halt, HALTED (or a legacy halt) with any other or no transaction outcome", decision{changedUnknown, false, stepWaitForPerson, proofNone}},
	{caseHaltCompletedUnverified, "halt, COMPLETED_UNVERIFIED", decision{changedUnknown, false, stepCheckRecord, proofNone}},
	{caseHaltRolledBack, "halt, ROLLED_BACK", decision{changedUnknown, false, stepCheckRecord, proofNone}},
	{caseHaltNoReport, "halt: Flow ended without a report", decision{changedUnknown, false, stepCheckRecord, proofNone}},
	{caseRefused, "refused: Flow's governed refusal before execution (exit 2), with failed_checks", decision{changedNo, true, stepFixSetup, proofNone}},
	{caseTimeout, "timeout", decision{changedUnknown, false, stepCheckRecord, proofNone}},
	{caseInterrupted, "interrupted", decision{changedUnknown, false, stepCheckRecord, proofNone}},
	{caseError, "error: FAILED, an inconsistent or unusable report, no report at exit 0, an inconsistent exit", decision{changedUnknown, false, stepCheckRecord, proofNone}},
	{caseNotStarted, "error: Flow provably never started (its process could not be created)", decision{changedNo, true, stepFixSetup, proofNone}},
	{caseRunning, "running", decision{changedUnknown, false, stepCallGetRunReport, proofNone}},
	// A run tool's failure envelope: nothing was started.
	{decisionKeyCodePrefix + string(CodeInvalidArguments), "the arguments or input values are invalid (invalid_inputs)", decision{changedNo, true, stepFixInputs, proofNone}},
	{decisionKeyCodePrefix + string(CodeUnknownWorkflow), "no such workflow", decision{changedNo, true, stepFixInputs, proofNone}},
	{decisionKeyCodePrefix + string(CodeWorkflowUnavailable), "the workflow cannot be loaded", decision{changedNo, true, stepFixSetup, proofNone}},
	{decisionKeyCodePrefix + string(CodeRunToolsDisabled), "run tools are off", decision{changedNo, true, stepFixSetup, proofNone}},
	{decisionKeyCodePrefix + string(CodeURLOverrideRefused), "a per-call url without the operator's permission", decision{changedNo, true, stepFixInputs, proofNone}},
	{decisionKeyCodePrefix + string(CodeIdempotencyConflict), "the key is bound to another call", decision{changedNo, false, stepFixInputs, proofNone}},
	{decisionKeyCodePrefix + string(CodeAdmissionRequired), "the admission gate refused", decision{changedNo, true, stepFixSetup, proofNone}},
	{decisionKeyCodePrefix + string(CodeFlowNotFound), "Flow is not installed or not found", decision{changedNo, true, stepFixSetup, proofNone}},
	{decisionKeyCodePrefix + string(CodeInternalError), "an internal failure before anything started", decision{changedNo, false, stepFixSetup, proofNone}},
}

// decisionFor is the table's decision for key; a key without a row (a
// failure code no run tool answers) is the most cautious decision.
func decisionFor(key string) decision {
	for _, r := range decisionTable {
		if r.key == key {
			return r.d
		}
	}
	return decision{changedUnknown, false, stepCheckRecord, proofNone}
}

// outcomeCase names the table row of a frozen outcome (nil: running).
func outcomeCase(o *runstore.Outcome) string {
	if o == nil {
		return caseRunning
	}
	switch o.Status {
	case flowrun.StatusSuccess:
		if o.ExecutionOutcome == flowrun.OutcomeVerified {
			return caseVerified
		}
		return caseSuccess
	case flowrun.StatusHalt:
		switch {
		case o.MessageKey == keyHaltNoReport:
			return caseHaltNoReport
		case o.ExecutionOutcome == flowrun.OutcomeCompletedUnverified:
			return caseHaltCompletedUnverified
		case o.ExecutionOutcome == flowrun.OutcomeRolledBack:
			return caseHaltRolledBack
		case (o.ExecutionOutcome == flowrun.OutcomeHalted || o.ExecutionOutcome == "") && o.TransactionOutcome == flowrun.TxHaltedBeforeEffect:
			return caseHaltBeforeEffect
		}
		return caseHalt
	case flowrun.StatusRefused:
		return caseRefused
	case flowrun.StatusTimeout:
		return caseTimeout
	case flowrun.StatusInterrupted:
		return caseInterrupted
	case flowrun.StatusError:
		switch {
		case o.EffectVerified && o.ExecutionOutcome == flowrun.OutcomeVerified:
			return caseUnsignedProductionSuccess
		case o.MessageKey == keyNotStarted:
			return caseNotStarted
		}
	}
	return caseError
}

// decisionOfRun is the decision of a run's frozen outcome (nil: running);
// a simulated run's change is shown by simulation, not by Flow's check.
func decisionOfRun(o *runstore.Outcome, simulated bool) decision {
	d := decisionFor(outcomeCase(o))
	if simulated && d.Proof == proofLocal {
		d.Proof = proofSimulated
	}
	return d
}

// failedChecksOf is a refusal's failed_checks on the wire: the frozen
// codes, a code this build does not know shown as "other", each once;
// "other" alone when none were frozen (a record written before they
// were). nil for every other status.
func failedChecksOf(o *runstore.Outcome) []flowrun.FailedCheck {
	if o == nil || o.Status != flowrun.StatusRefused {
		return nil
	}
	var out []flowrun.FailedCheck
	for _, c := range o.FailedChecks {
		if !flowrun.KnownFailedCheck(c) {
			c = flowrun.CheckOther
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		out = []flowrun.FailedCheck{flowrun.CheckOther}
	}
	return out
}

// runDecision is the decision fields at the end of a run result.
type runDecision struct {
	decision
	// FailedChecks is present on a governed refusal only.
	FailedChecks []flowrun.FailedCheck `json:"failed_checks,omitempty"`
}

func runDecisionOf(o *runstore.Outcome, simulated bool) runDecision {
	return runDecision{decision: decisionOfRun(o, simulated), FailedChecks: failedChecksOf(o)}
}

// withDecision adds a run tool's decision fields to its failure envelope.
func withDecision(f *failure) *failure {
	if f.decision == nil {
		d := decisionFor(decisionKeyCodePrefix + string(f.Error.Code))
		f.decision = &d
	}
	return f
}
