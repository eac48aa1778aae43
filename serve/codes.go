package serve

import (
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// Code is a stable failure-envelope code (docs/mcp.md "Error codes").
type Code string

// The failure codes, in the table order of docs/mcp.md "Error codes". The
// order is part of the wire: it is the enum order of the failure envelope.
const (
	CodeInvalidArguments       Code = "invalid_arguments"
	CodeUnknownWorkflow        Code = "unknown_workflow"
	CodeWorkflowUnavailable    Code = "workflow_unavailable"
	CodeRunToolsDisabled       Code = "run_tools_disabled"
	CodeURLOverrideRefused     Code = "url_override_refused"
	CodeIdempotencyConflict    Code = "idempotency_conflict"
	CodeAdmissionRequired      Code = "admission_required"
	CodeFlowNotFound           Code = "flow_not_found"
	CodeUnsafeRunID            Code = "unsafe_run_id"
	CodeReportUnavailable      Code = "report_unavailable"
	CodeAttentionNotFound      Code = "attention_not_found"
	CodeCapabilityStale        Code = "capability_stale"
	CodeActionNotAllowed       Code = "action_not_allowed"
	CodeElicitationUnsupported Code = "elicitation_unsupported"
	CodeOperatorDeclined       Code = "operator_declined"
	CodeDeliveryUncertain      Code = "delivery_uncertain"
	CodeAttendedUnavailable    Code = "attended_unavailable"
	CodeAdmitRefused           Code = "admit_refused"
	CodeAuthoringUnavailable   Code = "authoring_unavailable"
	CodeCoachOnly              Code = "coach_only"
	CodeResultTooLarge         Code = "result_too_large"
	CodeInternalError          Code = "internal_error"
	// CodeServerStopping answers a call that was waiting for the operator's
	// confirmation when the server began to stop (appended: the enum order
	// is wire).
	CodeServerStopping Code = "server_stopping"
)

// allCodes is the enum of the failure envelope, in table order.
var allCodes = []Code{
	CodeInvalidArguments, CodeUnknownWorkflow, CodeWorkflowUnavailable, CodeRunToolsDisabled,
	CodeURLOverrideRefused, CodeIdempotencyConflict, CodeAdmissionRequired, CodeFlowNotFound,
	CodeUnsafeRunID, CodeReportUnavailable, CodeAttentionNotFound, CodeCapabilityStale,
	CodeActionNotAllowed, CodeElicitationUnsupported, CodeOperatorDeclined, CodeDeliveryUncertain,
	CodeAttendedUnavailable, CodeAdmitRefused, CodeAuthoringUnavailable, CodeCoachOnly, CodeResultTooLarge, CodeInternalError,
	CodeServerStopping,
}

type codeCopy struct{ message, recovery string }

// copyFor is the fixed product copy of each code. Nothing here is ever
// formatted with caller input, names, paths or Flow output.
var copyFor = map[Code]codeCopy{
	CodeInvalidArguments: {
		"The arguments do not match this tool's input schema.",
		"Check the tool's input schema: send only the declared keys, every required key, and values of the declared types and formats (a run tool's invalid_inputs names each input it refused), then call again.",
	},
	CodeUnknownWorkflow: {
		"No workflow with that id is served here.",
		"Use an id returned by list_workflows or search_workflows on this server.",
	},
	CodeWorkflowUnavailable: {
		"This workflow is listed but could not be loaded safely, so it cannot run.",
		"Ask the operator to repair or re-export the bundle and restart the server. Do not retry unchanged.",
	},
	CodeRunToolsDisabled: {
		"Run tools are disabled on this server.",
		"The operator must restart the server with --allow-run to enable governed runs.",
	},
	CodeURLOverrideRefused: {
		"A per-call url is not accepted by this server. Nothing was executed.",
		"Call again without the url argument; the operator fixes the target URL at server start.",
	},
	CodeIdempotencyConflict: {
		"This idempotency_key is already bound to a different call. Nothing was executed.",
		"Reuse an idempotency_key only to retry the identical call; use a new key for a different call.",
	},
	CodeAdmissionRequired: {
		"No active workflow admission covers this exact bundle. Nothing was executed.",
		"Ask the Authority to admit this exact bundle version, or ask the operator to restart the server with --ledger pointing to a verified ledger that includes it. Do not retry unchanged.",
	},
	CodeFlowNotFound: {
		"The openadapt-flow command could not be found. Nothing was executed.",
		"Ask the operator to install openadapt-flow so that it is on the server's PATH, or to restart the server with --flow-cli naming the Flow command or --flow-python naming the Python interpreter of a Flow install.",
	},
	CodeUnsafeRunID: {
		"The run_id is not a well-formed run id.",
		"Pass a run_id exactly as a run tool returned it (run- followed by 24 hex characters).",
	},
	CodeReportUnavailable: {
		"No run report is available for that run_id.",
		"Use a run_id that a run tool on this runs directory returned.",
	},
	CodeAttentionNotFound: {
		"No current Needs Attention item has that id.",
		"Call list_needs_attention and use an id from its current items.",
	},
	CodeCapabilityStale: {
		"The capability digest is not the current one for this item. Nothing was dispatched.",
		"Reload the item with get_attention_item and use its current capability digest.",
	},
	CodeActionNotAllowed: {
		"The current capability does not allow this action. Nothing was dispatched.",
		"Reload the item with get_attention_item and choose one of its allowed actions.",
	},
	CodeElicitationUnsupported: {
		"This client cannot show the operator confirmation form. Nothing was dispatched.",
		"Use `openadapt-agent attention` in a terminal on this computer, where all attended actions are available with a typed confirmation.",
	},
	CodeOperatorDeclined: {
		"The local operator did not confirm this action. Nothing was dispatched.",
		"Do not retry unless the operator asks for it.",
	},
	CodeDeliveryUncertain: {
		"Flow did not return a safe terminal decision; delivery is uncertain.",
		"Inspect the durable audit and reconcile the live state with `openadapt-agent attention reconcile` on this computer; do not retry.",
	},
	CodeAttendedUnavailable: {
		"Attended actions are unavailable because the Flow helper stopped. Nothing was dispatched.",
		"Restart the server, or use `openadapt-agent attention` on this computer.",
	},
	CodeAdmitRefused: {
		"The admit confirmation was not a one-token ok.",
		"Ask the person to confirm with ok, yes, or enter.",
	},
	CodeAuthoringUnavailable: {
		"This authoring session lacks the needed capability. Nothing was minted.",
		"Use Flow's own authoring tools on this computer.",
	},
	CodeCoachOnly: {
		"This backend is coach-only; the agent cannot drive it.",
		"Let the person perform the step while you coach.",
	},
	CodeResultTooLarge: {
		"The result would exceed the 4 MiB frame limit.",
		"Call the listing again with a smaller limit and follow next_cursor page by page, or narrow the query; for a single item too large to return, ask the operator to inspect it on this computer.",
	},
	CodeInternalError: {
		"The server hit an unexpected internal failure. Nothing was executed.",
		"Ask the operator to check the server's local log; do not retry unchanged.",
	},
	CodeServerStopping: {
		"The server stopped while this action waited for the local operator's confirmation. Nothing was dispatched.",
		"Call again once the server is running again; the operator will be asked again.",
	},
}

// admissionMessage is the fixed refusal copy per ledger reason.
func admissionMessage(reason string) string {
	switch reason {
	case "missing", "expired", "revoked", "mismatched", "unverifiable":
	default:
		reason = "unverifiable"
	}
	return "No active workflow admission covers this exact bundle (ledger reason: " + reason + "). Nothing was executed."
}

// The message keys of frozen outcomes (internal/runstore stores them in
// the run record, so their values are part of the record format).
const (
	keySuccess                   runstore.MessageKey = "success"
	keyHaltHalted                runstore.MessageKey = "halt_halted"
	keyHaltBeforeEffect          runstore.MessageKey = "halt_halted_before_effect"
	keyHaltCompletedUnverified   runstore.MessageKey = "halt_completed_unverified"
	keyHaltRolledBack            runstore.MessageKey = "halt_rolled_back"
	keyHaltNoReport              runstore.MessageKey = "halt_no_report"
	keyHalt                      runstore.MessageKey = "halt"
	keyRefused                   runstore.MessageKey = "refused"
	keyTimeout                   runstore.MessageKey = "timeout"
	keyUnsignedProductionSuccess runstore.MessageKey = "unsigned_production_success"
	keyInterrupted               runstore.MessageKey = "interrupted"
	keyError                     runstore.MessageKey = "error"
	keyNotStarted                runstore.MessageKey = "not_started"
)

// runMessages is the fixed copy of each message key (docs/runs.md
// "Messages").
var runMessages = map[runstore.MessageKey]string{
	keySuccess:                   "The governed run completed and its persisted report confirms verified success.",
	keyHaltHalted:                "HALTED. The run stopped safely instead of guessing, but Flow did not prove that the record is unchanged. Review the local Needs Attention queue for protected evidence and check the record before any retry.",
	keyHaltBeforeEffect:          "HALTED. The run stopped safely instead of guessing, and the record did not change. Review the local Needs Attention queue for protected evidence.",
	keyHaltCompletedUnverified:   "The run completed, but its persisted evidence did not prove verified success. Review it locally before any retry.",
	keyHaltRolledBack:            "The configured compensating action completed. Review the local evidence before any further action.",
	keyHaltNoReport:              "The run ended without a report. Its live effect is uncertain; inspect the protected local run before any retry: openadapt-agent runs show RUN_ID --protected, on the computer that ran it.",
	keyHalt:                      "The governed run stopped safely instead of guessing. Review the local Needs Attention queue for protected evidence.",
	keyRefused:                   "A governed admission check refused the run. Nothing was executed.",
	keyTimeout:                   "The run exceeded its deadline and was stopped. Its live effect is uncertain; inspect the protected local run before any retry: openadapt-agent runs show RUN_ID --protected, on the computer that ran it.",
	keyUnsignedProductionSuccess: "The run reported VERIFIED under a production profile, so its effect was verified, but this local server cannot mint a Seal. Unsigned production success is failure: do not report it as done, and do not retry or repeat it.",
	keyInterrupted:               "The server stopped while this run was in progress, so it was interrupted. Its live effect is uncertain; inspect the protected local run before any retry: openadapt-agent runs show RUN_ID --protected, on the computer that ran it.",
	keyError:                     "The run could not produce a trustworthy terminal result. Inspect the protected local run and its evidence: openadapt-agent runs show RUN_ID --protected, on the computer that ran it.",
	keyNotStarted:                "Flow could not be started, so nothing was executed. Ask the operator to check the openadapt-flow installation on this computer.",
}

// keyStatus is the status each message key was made for, and statusKey
// each status's own copy.
var (
	keyStatus = map[runstore.MessageKey]flowrun.Status{
		keySuccess: flowrun.StatusSuccess, keyHaltHalted: flowrun.StatusHalt, keyHaltBeforeEffect: flowrun.StatusHalt,
		keyHaltCompletedUnverified: flowrun.StatusHalt, keyHaltRolledBack: flowrun.StatusHalt, keyHaltNoReport: flowrun.StatusHalt,
		keyHalt: flowrun.StatusHalt, keyRefused: flowrun.StatusRefused, keyTimeout: flowrun.StatusTimeout,
		keyUnsignedProductionSuccess: flowrun.StatusError, keyTutorialUnsigned: flowrun.StatusError,
		keyInterrupted: flowrun.StatusInterrupted, keyError: flowrun.StatusError, keyNotStarted: flowrun.StatusError,
	}
	statusKey = map[flowrun.Status]runstore.MessageKey{
		flowrun.StatusSuccess: keySuccess, flowrun.StatusHalt: keyHalt, flowrun.StatusRefused: keyRefused,
		flowrun.StatusTimeout: keyTimeout, flowrun.StatusInterrupted: keyInterrupted, flowrun.StatusError: keyError,
	}
)

// messageText is the fixed copy of k; a key this build does not know (a
// record written by another version) gets the generic error copy.
func messageText(k runstore.MessageKey) string {
	if m, ok := runMessages[k]; ok {
		return m
	}
	return runMessages[keyError]
}

// Fixed notes and other messages.
const (
	noteRunToolsDisabled = "Run tools are disabled unless the operator started the server with --allow-run."
	// noteCatalogAdvised: list_workflows above CatalogModeAdvisedAbove
	// workflows.
	noteCatalogAdvised = "This server serves more workflows than per-workflow tool mode suits (a tool per workflow); ask the operator to restart it with --tool-mode catalog, which serves them through search_workflows and run_workflow."

	msgRunning       = "The governed run is still in progress. Call get_run_report with this run_id and wait_ms for its outcome; do not start it again."
	msgProgress      = "Governed run in progress."
	certNotLoaded    = "The local bundle could not be loaded safely."
	certNotEvaluated = "Certification was not evaluated by this server."
	certPassed       = "The configured policy certification passed."
	certNotPassed    = "The configured policy certification did not pass."
)
