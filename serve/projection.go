package serve

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/labels"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// Allowlist projections (§6). Every wire value is built here from typed
// fields: the failure envelope F, P and the listings, get_workflow's S, the
// queue, R and R′. Protected blocks exist only when protected export is on.
// Shared cores are embedded, in the key order the goldens pin.

// failure is the body of the failure envelope F (§3.1).
type failure struct {
	Error failureBody `json:"error"`
}

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
	return &failure{failureBody{code, c.message, c.recovery}}
}

func failAdmission(reason string) *failure {
	f := fail(CodeAdmissionRequired)
	f.Error.Message = admissionMessage(reason)
	return f
}

type paramP struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required"`
}

type workflowProtectedP struct {
	Slug           string            `json:"slug"`
	Name           *string           `json:"name"`
	BundleDir      string            `json:"bundle_dir"`
	RecordedParams map[string]string `json:"recorded_params"`
	StepIntents    []string          `json:"step_intents"`
	LoadError      *string           `json:"load_error"`
}

// workflowCoreP is the part of P that get_workflow's S shares.
type workflowCoreP struct {
	ID string `json:"id"`
	// Label and Description are the operator's --labels text, omitted when
	// not set (notes/LABELS.md).
	Label       string `json:"label,omitempty"`
	Description string `json:"description,omitempty"`
	Available   bool   `json:"available"`
	// UnavailableReason is bundle's reason code, present exactly when
	// Available is false (issue 11 item 3; round2-decisions 8).
	UnavailableReason string   `json:"unavailable_reason,omitempty"`
	StepCount         *int     `json:"step_count"`
	Parameters        []paramP `json:"parameters"`
	Encrypted         bool     `json:"encrypted"`
	Admission         string   `json:"admission"`
}

// workflowP is P (§5.1).
type workflowP struct {
	workflowCoreP
	Protected *workflowProtectedP `json:"protected,omitempty"`
}

type listingProtectedP struct {
	BundlesDir string `json:"bundles_dir"`
}

// listingHeadP opens list_workflows' and search_workflows' S.
type listingHeadP struct {
	SchemaVersion            int    `json:"schema_version"`
	RunToolsEnabled          bool   `json:"run_tools_enabled"`
	ProtectedExportEnabled   bool   `json:"protected_export_enabled"`
	SyntheticDefaultsEnabled bool   `json:"synthetic_recorded_defaults_enabled"`
	AdmissionGate            string `json:"admission_gate"`
}

type listWorkflowsP struct {
	listingHeadP
	Workflows []workflowP        `json:"workflows"`
	Note      *string            `json:"note"`
	Protected *listingProtectedP `json:"protected,omitempty"`
}

type searchWorkflowsP struct {
	listingHeadP
	TotalMatches int                `json:"total_matches"`
	Workflows    []workflowP        `json:"workflows"`
	NextCursor   *string            `json:"next_cursor"`
	Note         *string            `json:"note"`
	Protected    *listingProtectedP `json:"protected,omitempty"`
}

type certProtectedP struct {
	Certified *bool  `json:"certified"`
	ExitCode  *int   `json:"exit_code"`
	Detail    string `json:"detail"`
}

type certificationP struct {
	Certified *bool           `json:"certified"`
	Message   string          `json:"message"`
	Protected *certProtectedP `json:"protected,omitempty"`
}

// getWorkflowP is get_workflow's S (§5.2).
type getWorkflowP struct {
	workflowCoreP
	SchemaVersion *int                `json:"schema_version"`
	Certification certificationP      `json:"certification"`
	Protected     *workflowProtectedP `json:"protected,omitempty"`
}

// listingHead is the head of a listing.
func (s *Server) listingHead() listingHeadP {
	return listingHeadP{
		SchemaVersion:            1,
		RunToolsEnabled:          s.opts.AllowRun,
		ProtectedExportEnabled:   s.opts.AllowProtectedExport,
		SyntheticDefaultsEnabled: s.opts.AllowSyntheticRecordedDefaults,
		AdmissionGate:            s.gateName(),
	}
}

func (s *Server) listingProtected() *listingProtectedP {
	if !s.opts.AllowProtectedExport {
		return nil
	}
	// Several roots: joined with the OS path-list separator, in order.
	return &listingProtectedP{BundlesDir: strings.Join(s.opts.roots(), string(filepath.ListSeparator))}
}

// projectWorkflow builds P for w.
func (s *Server) projectWorkflow(w *workflow) workflowP {
	p := workflowP{workflowCoreP: workflowCoreP{
		ID:         w.id,
		Available:  w.available,
		Parameters: []paramP{},
		// An unavailable workflow always carries a code; one without a
		// bundle reason (none today) would say unreadable, never nothing.
		UnavailableReason: unavailableReason(w),
		Encrypted:         w.encrypted,
		Admission:         s.admissionState(w),
	}}
	if l := s.prep.labels.Get(w.id); l != (labels.Entry{}) {
		p.Label, p.Description = l.Label, l.Description
	}
	if w.available {
		n := w.stepCount
		p.StepCount = &n
		for _, name := range w.sortedParams() {
			p.Parameters = append(p.Parameters, paramP{name, "string", !s.opts.AllowSyntheticRecordedDefaults})
		}
	}
	if s.opts.AllowProtectedExport {
		p.Protected = protectedWorkflow(w)
	}
	return p
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

func protectedWorkflow(w *workflow) *workflowProtectedP {
	rec := w.recorded
	if rec == nil {
		rec = map[string]string{}
	}
	intents := w.intents
	if intents == nil {
		intents = []string{}
	}
	return &workflowProtectedP{
		Slug:           w.slug,
		Name:           w.name,
		BundleDir:      w.dir,
		RecordedParams: rec,
		StepIntents:    intents,
		LoadError:      w.loadErr,
	}
}

// admissionState is P's admission field (§5.1).
func (s *Server) admissionState(w *workflow) string {
	if !s.gateOn() {
		return "not_required"
	}
	if !w.available {
		return "not_actively_admitted"
	}
	if s.listingAdmitted(w) {
		return "active"
	}
	return "not_actively_admitted"
}

func (s *Server) note() *string {
	if s.opts.AllowRun {
		return nil
	}
	n := noteRunToolsDisabled
	return &n
}

func (s *Server) gateName() string {
	if s.gateOn() {
		return s.prep.profile
	}
	return "off"
}

// Run outcome R (§5.6) and report R′ (§5.3).

type runProtectedP struct {
	Workflow   *string `json:"workflow"`
	RunDir     string  `json:"run_dir"`
	ReportPath *string `json:"report_path"`
	ExitCode   *int    `json:"exit_code"`
	Detail     string  `json:"detail"`
	Halt       any     `json:"halt"`
	StdoutTail *string `json:"stdout_tail"`
	StderrTail *string `json:"stderr_tail"`
}

// runCoreP is the part of R that R′ shares.
type runCoreP struct {
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

// runOutcomeP is R (§5.6).
type runOutcomeP struct {
	runCoreP
	Replayed       bool           `json:"replayed"`
	NeedsAttention *attentionSlot `json:"needs_attention,omitempty"`
	Protected      *runProtectedP `json:"protected,omitempty"`
}

// attentionSlot serializes as the item A or as null; a nil *attentionSlot
// omits the key.
type attentionSlot struct{ item any }

func (a *attentionSlot) MarshalJSON() ([]byte, error) {
	if a.item == nil {
		return []byte("null"), nil
	}
	return encodeJSON(a.item, false)
}

type reportProtectedP struct {
	RunDir        string `json:"run_dir"`
	Report        any    `json:"report"`
	ReportOmitted bool   `json:"report_omitted"`
}

// runReportP is R′ (§5.3).
type runReportP struct {
	runCoreP
	Protected *reportProtectedP `json:"protected,omitempty"`
}

type queueP struct {
	OpenCount        int              `json:"open_count"`
	ActionsEnabled   bool             `json:"actions_enabled"`
	LiveActionsReady bool             `json:"live_actions_ready"`
	Items            []attention.Item `json:"items"`
}

// runCore projects a run record: "running" until its outcome is frozen.
func runCore(r *runstore.File) runCoreP {
	out := runCoreP{SchemaVersion: 1, WorkflowID: r.WorkflowID, RunID: r.RunID, Sealed: false, RequiresSeal: true}
	if r.Phase != runstore.PhaseTerminal || r.Outcome == nil {
		out.Status = "running"
		out.Message = msgRunning
		return out
	}
	o := r.Outcome
	out.Status = string(o.Status)
	out.Success = o.Status == flowrun.StatusSuccess
	out.Message = messageText(o.MessageKey)
	out.Summary = o.Summary
	out.ExecutionOutcome = o.ExecutionOutcome
	if o.EffectVerified {
		out.EffectVerified = boolPtr(true)
	}
	return out
}

// projectRun builds R from a record; a halted run carries its fresh Needs
// Attention item (or null).
func (s *Server) projectRun(r *runstore.File, replayed bool) runOutcomeP {
	out := runOutcomeP{runCoreP: runCore(r), Replayed: replayed}
	if r.Outcome != nil && r.Outcome.Status == flowrun.StatusHalt && r.Phase == runstore.PhaseTerminal {
		out.NeedsAttention = &attentionSlot{item: s.attentionForRun(r.RunID)}
	}
	if s.opts.AllowProtectedExport {
		out.Protected = s.protectedRun(r)
	}
	return out
}

func (s *Server) protectedRun(r *runstore.File) *runProtectedP {
	p := &runProtectedP{RunDir: filepath.Join(s.prep.runsDir, r.RunID), ExitCode: r.ExitCode}
	if w := s.cat.byID[r.WorkflowID]; w != nil {
		p.Workflow = w.name
	}
	if lr := s.runs.get(r.RunID); lr != nil {
		p.Detail = "The run is still in progress."
		return p
	}
	status := "running"
	if r.Outcome != nil {
		status = string(r.Outcome.Status)
	}
	p.Detail = "Outcome " + strings.ReplaceAll(status, "_", " ") + "."
	fin := s.runs.endedRun(r.RunID)
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

// projectReport builds R′ from a record.
func (s *Server) projectReport(r *runstore.File) runReportP {
	out := runReportP{runCoreP: runCore(r)}
	if !s.opts.AllowProtectedExport {
		return out
	}
	p := &reportProtectedP{RunDir: filepath.Join(s.prep.runsDir, r.RunID)}
	if data, state, _ := flowrun.ReadReport(s.prep.runsDir, r.RunID); state == flowrun.ReportPresent {
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
