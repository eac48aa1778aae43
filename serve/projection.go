package serve

import "github.com/OpenAdaptAI/openadapt-agent/internal/flowrun"

// Allowlist projections (§6). Every wire value is built here from typed
// fields; protected blocks exist only when protected export is on.

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

// workflowP is P (§5.1).
type workflowP struct {
	ID         string              `json:"id"`
	Available  bool                `json:"available"`
	StepCount  *int                `json:"step_count"`
	Parameters []paramP            `json:"parameters"`
	Encrypted  bool                `json:"encrypted"`
	Admission  string              `json:"admission"`
	Protected  *workflowProtectedP `json:"protected,omitempty"`
}

type listingProtectedP struct {
	BundlesDir string `json:"bundles_dir"`
}

type listWorkflowsP struct {
	SchemaVersion            int                `json:"schema_version"`
	RunToolsEnabled          bool               `json:"run_tools_enabled"`
	ProtectedExportEnabled   bool               `json:"protected_export_enabled"`
	SyntheticDefaultsEnabled bool               `json:"synthetic_recorded_defaults_enabled"`
	AdmissionGate            string             `json:"admission_gate"`
	Workflows                []workflowP        `json:"workflows"`
	Note                     *string            `json:"note"`
	Protected                *listingProtectedP `json:"protected,omitempty"`
}

type searchWorkflowsP struct {
	SchemaVersion            int                `json:"schema_version"`
	RunToolsEnabled          bool               `json:"run_tools_enabled"`
	ProtectedExportEnabled   bool               `json:"protected_export_enabled"`
	SyntheticDefaultsEnabled bool               `json:"synthetic_recorded_defaults_enabled"`
	AdmissionGate            string             `json:"admission_gate"`
	TotalMatches             int                `json:"total_matches"`
	Workflows                []workflowP        `json:"workflows"`
	NextCursor               *string            `json:"next_cursor"`
	Note                     *string            `json:"note"`
	Protected                *listingProtectedP `json:"protected,omitempty"`
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
	ID            string              `json:"id"`
	Available     bool                `json:"available"`
	StepCount     *int                `json:"step_count"`
	Parameters    []paramP            `json:"parameters"`
	Encrypted     bool                `json:"encrypted"`
	Admission     string              `json:"admission"`
	SchemaVersion *int                `json:"schema_version"`
	Certification certificationP      `json:"certification"`
	Protected     *workflowProtectedP `json:"protected,omitempty"`
}

// projectWorkflow builds P for w.
func (s *Server) projectWorkflow(w *workflow) workflowP {
	p := workflowP{
		ID:         w.id,
		Available:  w.available,
		Parameters: []paramP{},
		Encrypted:  w.encrypted,
		Admission:  s.admissionState(w),
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

type runOutcomeP struct {
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
	Replayed         bool            `json:"replayed"`
	NeedsAttention   *attentionSlot  `json:"needs_attention,omitempty"`
	Protected        *runProtectedP  `json:"protected,omitempty"`
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

type runReportP struct {
	SchemaVersion    int               `json:"schema_version"`
	Status           string            `json:"status"`
	Success          bool              `json:"success"`
	WorkflowID       string            `json:"workflow_id"`
	RunID            string            `json:"run_id"`
	Message          string            `json:"message"`
	Summary          flowrun.Summary   `json:"summary"`
	ExecutionOutcome string            `json:"execution_outcome,omitempty"`
	EffectVerified   *bool             `json:"effect_verified,omitempty"`
	Sealed           bool              `json:"sealed"`
	RequiresSeal     bool              `json:"requires_seal"`
	Protected        *reportProtectedP `json:"protected,omitempty"`
}
