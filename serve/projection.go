package serve

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// Allowlist projections (docs/runs.md "Projections"; docs/mcp.md "Read
// tools"). Every wire value is built from these typed fields: the failure
// envelope, the listing entries and listings, get_workflow's result, the
// Needs Attention queue, a run tool's result and get_run_report's.
// Protected blocks exist only when protected export is on.
// Shared cores are embedded, in the key order the goldens pin.

// failure is the body of the failure envelope (docs/mcp.md "Result
// envelopes"). A run tool's failure also carries, for invalid input
// values, invalid_inputs, then the decision fields (decision.go); every
// other tool's failure is the error object alone.
type failure struct {
	Error failureBody `json:"error"`
	// InvalidInputs names each invalid input and its problem, never the
	// value (invalid_arguments of a run tool only).
	InvalidInputs []inputProblem `json:"invalid_inputs,omitempty"`
	*decision
	// A sandbox run tool's failure ends with the sandbox mark (sandbox.go).
	*sandboxMark
}

// inputProblem is one invalid input of a run call: the input's name as the
// tool's schema declares it (absent for an undeclared input, whose name is
// the caller's text) and a closed problem code (inputProblems).
type inputProblem struct {
	Input   string `json:"input,omitempty"`
	Problem string `json:"problem"`
}

// inputProblems are the problem codes of invalid_inputs, in wire order
// (new codes are appended).
var inputProblems = []string{"missing", "unknown_input", "wrong_type", "not_a_date", "not_allowed",
	"too_short", "too_long", "pattern", "below_minimum", "above_maximum"}

type failureBody struct {
	Code     Code   `json:"code"`
	Message  string `json:"message"`
	Recovery string `json:"recovery"`
}

func fail(code Code) *failure {
	c, ok := copyFor[code]
	if !ok {
		panic("serve: no copy for code " + string(code))
	}
	return &failure{Error: failureBody{code, c.message, c.recovery}}
}

func failAdmission(reason string) *failure {
	f := fail(CodeAdmissionRequired)
	f.Error.Message = admissionMessage(reason)
	return f
}

// paramEntry is one declared parameter of a listing entry: its wire name,
// the JSON type a run call sends, whether it is required, its format, and
// the workflow card's description and constraints (each omitted when
// unset).
type paramEntry struct {
	Name        string          `json:"name"`
	Type        string          `json:"type"`
	Required    bool            `json:"required"`
	Format      string          `json:"format,omitempty"`
	Description string          `json:"description,omitempty"`
	Enum        []string        `json:"enum,omitempty"`
	Pattern     string          `json:"pattern,omitempty"`
	MinLength   *int            `json:"minLength,omitempty"`
	MaxLength   *int            `json:"maxLength,omitempty"`
	Minimum     json.RawMessage `json:"minimum,omitempty"`
	Maximum     json.RawMessage `json:"maximum,omitempty"`
}

type workflowProtectedBlock struct {
	Slug           string            `json:"slug"`
	Name           *string           `json:"name"`
	BundleDir      string            `json:"bundle_dir"`
	RecordedParams map[string]string `json:"recorded_params"`
	StepIntents    []string          `json:"step_intents"`
	LoadError      *string           `json:"load_error"`
}

// workflowCore is the part of a listing entry that get_workflow's result
// shares.
type workflowCore struct {
	ID string `json:"id"`
	// Label and Description are the operator's --labels text, else the
	// workflow card's name and purpose; omitted when neither is set.
	Label       string `json:"label,omitempty"`
	Description string `json:"description,omitempty"`
	Available   bool   `json:"available"`
	// UnavailableReason is bundle's reason code, present exactly when
	// Available is false.
	UnavailableReason string       `json:"unavailable_reason,omitempty"`
	StepCount         *int         `json:"step_count"`
	Parameters        []paramEntry `json:"parameters"`
	Encrypted         bool         `json:"encrypted"`
	Admission         string       `json:"admission"`
	// Name is the workflow card's name, accepted wherever the id is, and
	// DoneMeans its done_means; omitted when not set.
	Name      string `json:"name,omitempty"`
	DoneMeans string `json:"done_means,omitempty"`
}

// workflowEntry is one workflow in list_workflows and search_workflows.
type workflowEntry struct {
	workflowCore
	Protected *workflowProtectedBlock `json:"protected,omitempty"`
}

type listingProtectedBlock struct {
	BundlesDir string `json:"bundles_dir"`
}

// listingHead opens list_workflows' and search_workflows' results.
type listingHead struct {
	SchemaVersion            int    `json:"schema_version"`
	RunToolsEnabled          bool   `json:"run_tools_enabled"`
	ProtectedExportEnabled   bool   `json:"protected_export_enabled"`
	SyntheticDefaultsEnabled bool   `json:"synthetic_recorded_defaults_enabled"`
	AdmissionGate            string `json:"admission_gate"`
}

type workflowList struct {
	listingHead
	TotalMatches int                    `json:"total_matches"`
	Workflows    []workflowEntry        `json:"workflows"`
	NextCursor   *string                `json:"next_cursor"`
	Note         *string                `json:"note"`
	Protected    *listingProtectedBlock `json:"protected,omitempty"`
}

type workflowSearch struct {
	listingHead
	TotalMatches int                    `json:"total_matches"`
	Workflows    []workflowEntry        `json:"workflows"`
	NextCursor   *string                `json:"next_cursor"`
	Note         *string                `json:"note"`
	Protected    *listingProtectedBlock `json:"protected,omitempty"`
}

type certificationProtectedBlock struct {
	Certified *bool  `json:"certified"`
	ExitCode  *int   `json:"exit_code"`
	Detail    string `json:"detail"`
}

type certification struct {
	Certified *bool                        `json:"certified"`
	Message   string                       `json:"message"`
	Protected *certificationProtectedBlock `json:"protected,omitempty"`
}

// workflowDetail is get_workflow's result.
type workflowDetail struct {
	workflowCore
	SchemaVersion *int                    `json:"schema_version"`
	Certification certification           `json:"certification"`
	Protected     *workflowProtectedBlock `json:"protected,omitempty"`
}

func unavailableReason(w *workflow) string {
	switch {
	case w.available:
		return ""
	case w.reason == bundle.Available:
		return string(bundle.Unreadable)
	}
	return string(w.reason)
}

func protectedWorkflow(w *workflow) *workflowProtectedBlock {
	rec := w.recorded
	if rec == nil {
		rec = map[string]string{}
	}
	intents := w.intents
	if intents == nil {
		intents = []string{}
	}
	return &workflowProtectedBlock{
		Slug:           w.slug,
		Name:           w.name,
		BundleDir:      w.dir,
		RecordedParams: rec,
		StepIntents:    intents,
		LoadError:      w.loadErr,
	}
}

// A run tool's result and get_run_report's (docs/runs.md "Projections").

type runProtectedBlock struct {
	Workflow   *string `json:"workflow"`
	RunDir     string  `json:"run_dir"`
	ReportPath *string `json:"report_path"`
	ExitCode   *int    `json:"exit_code"`
	Detail     string  `json:"detail"`
	Halt       any     `json:"halt"`
	StdoutTail *string `json:"stdout_tail"`
	StderrTail *string `json:"stderr_tail"`
}

// runCore is the part of a run tool's result that get_run_report's shares.
type runCore struct {
	SchemaVersion    int             `json:"schema_version"`
	Status           string          `json:"status"`
	Success          bool            `json:"success"`
	WorkflowID       string          `json:"workflow_id"`
	RunID            string          `json:"run_id"`
	Message          string          `json:"message"`
	Summary          flowrun.Summary `json:"summary"`
	ExecutionOutcome string          `json:"execution_outcome,omitempty"`
	EffectVerified   *bool           `json:"effect_verified,omitempty"`
	Sealed           bool            `json:"sealed"`
	RequiresSeal     bool            `json:"requires_seal"`
}

// runOutcome is a run tool's result.
type runOutcome struct {
	runCore
	Replayed       bool               `json:"replayed"`
	NeedsAttention *attentionSlot     `json:"needs_attention,omitempty"`
	Protected      *runProtectedBlock `json:"protected,omitempty"`
	runDecision
}

// attentionSlot serializes as a Needs Attention item or as null; a nil
// *attentionSlot omits the key.
type attentionSlot struct{ item any }

func (a *attentionSlot) MarshalJSON() ([]byte, error) {
	if a.item == nil {
		return []byte("null"), nil
	}
	return encodeJSON(a.item, false)
}

type reportProtectedBlock struct {
	RunDir        string `json:"run_dir"`
	Report        any    `json:"report"`
	ReportOmitted bool   `json:"report_omitted"`
}

// runReport is get_run_report's result.
type runReport struct {
	runCore
	Protected *reportProtectedBlock `json:"protected,omitempty"`
	runDecision
}

type attentionQueue struct {
	OpenCount        int              `json:"open_count"`
	ActionsEnabled   bool             `json:"actions_enabled"`
	LiveActionsReady bool             `json:"live_actions_ready"`
	Items            []attention.Item `json:"items"`
	NextCursor       *string          `json:"next_cursor"`
}

// frozenOutcome is r's frozen outcome, nil while it runs.
func frozenOutcome(r *runstore.File) *runstore.Outcome {
	if r.Phase != runstore.PhaseTerminal {
		return nil
	}
	return r.Outcome
}

// coreOf projects a run record: "running" until its outcome is frozen.
func coreOf(r *runstore.File) runCore {
	out := runCore{SchemaVersion: 1, WorkflowID: r.WorkflowID, RunID: r.RunID, Sealed: false, RequiresSeal: true}
	o := frozenOutcome(r)
	if o == nil {
		out.Status = "running"
		out.Message = msgRunning
		return out
	}
	out.Status = string(o.Status)
	out.Success = o.Status == flowrun.StatusSuccess
	out.Message = messageOf(o)
	out.Summary = o.Summary
	out.ExecutionOutcome = o.ExecutionOutcome
	if outcomeCase(o) == caseUnsignedProductionSuccess {
		out.EffectVerified = boolPtr(true)
	}
	return out
}

// messageOf is the fixed copy of a frozen outcome, in agreement with its
// status and its decision whatever key the record froze (an older build's,
// or one that does not belong to the status). A halt's copy follows its
// decision case (so a HALTED halt says the record did not change exactly
// when Flow's transaction outcome proves it); the unsigned-success copy (or
// the tutorial's) goes with the verified effect it describes; any other key
// is shown only with the status it was made for, else the status's own.
func messageOf(o *runstore.Outcome) string {
	key := o.MessageKey
	switch c := outcomeCase(o); c {
	case caseHaltBeforeEffect:
		key = keyHaltBeforeEffect
	case caseHalt:
		key = keyHalt
		if o.ExecutionOutcome == flowrun.OutcomeHalted {
			key = keyHaltHalted
		}
	case caseHaltCompletedUnverified:
		key = keyHaltCompletedUnverified
	case caseHaltRolledBack:
		key = keyHaltRolledBack
	case caseHaltNoReport:
		key = keyHaltNoReport
	case caseUnsignedProductionSuccess:
		if key != keyTutorialUnsigned {
			key = keyUnsignedProductionSuccess
		}
	default:
		if st, ok := keyStatus[key]; !ok || st != o.Status || key == keyUnsignedProductionSuccess || key == keyTutorialUnsigned {
			key = statusKey[o.Status]
		}
	}
	return messageText(key)
}

// projectRun builds a run tool's result from a record; a halted run
// carries its fresh Needs Attention item (or null).
func (t *runTools) projectRun(r *runstore.File, replayed bool) runOutcome {
	out := runOutcome{runCore: coreOf(r), Replayed: replayed, runDecision: runDecisionOf(frozenOutcome(r), false)}
	if r.Outcome != nil && r.Outcome.Status == flowrun.StatusHalt && r.Phase == runstore.PhaseTerminal {
		out.NeedsAttention = &attentionSlot{item: attentionForRun(t.runsDir, r.RunID)}
	}
	if t.opts.AllowProtectedExport {
		out.Protected = t.protectedRun(r)
	}
	return out
}

func (t *runTools) protectedRun(r *runstore.File) *runProtectedBlock {
	p := &runProtectedBlock{RunDir: filepath.Join(t.runsDir, r.RunID), ExitCode: r.ExitCode}
	if w := t.cat.byID[r.WorkflowID]; w != nil {
		p.Workflow = w.name
	}
	if lr := t.manager.get(r.RunID); lr != nil {
		p.Detail = "The run is still in progress."
		return p
	}
	status := "running"
	if r.Outcome != nil {
		status = string(r.Outcome.Status)
	}
	p.Detail = "Outcome " + strings.ReplaceAll(status, "_", " ") + "."
	fin := t.manager.endedRun(r.RunID)
	if fin == nil {
		return p
	}
	fin.mu.Lock()
	defer fin.mu.Unlock()
	if res := fin.ended; res != nil {
		p.StdoutTail, p.StderrTail = &res.StdoutTail, &res.StderrTail
		if fin.froze {
			if res.Halt != nil {
				p.Halt = res.Halt
			}
			if res.ReportPath != "" {
				p.ReportPath = &res.ReportPath
			}
			p.Detail = "Flow finished with status " + string(fin.rec.Outcome.Status) + "."
		}
	}
	return p
}

// projectReport builds get_run_report's result from a record.
func (t *runTools) projectReport(r *runstore.File) runReport {
	out := runReport{runCore: coreOf(r), runDecision: runDecisionOf(frozenOutcome(r), false)}
	if !t.opts.AllowProtectedExport {
		return out
	}
	p := &reportProtectedBlock{RunDir: filepath.Join(t.runsDir, r.RunID)}
	if data, state, _ := flowrun.ReadReport(t.runsDir, r.RunID); state == flowrun.ReportPresent {
		if len(data) > 1<<20 {
			p.ReportOmitted = true
		} else {
			var v map[string]any
			if json.Unmarshal(data, &v) == nil {
				p.Report = v
			}
		}
	}
	out.Protected = p
	return out
}
