package ledger

import (
	"sort"
)

// MediaType is the media type of a [Result] rendered as JSON.
const MediaType = "application/vnd.openadapt-agent.ledger-verification+json;version=1"

// Integrity values (docs/ledger.md, Integrity and exit codes).
const (
	IntegrityVerified   = "verified"
	IntegrityIncomplete = "incomplete"
	IntegrityFailed     = "failed"
)

// Result is the outcome of a verification, and the JSON document that
// `ledger verify --json` prints (docs/ledger.md, Output). Fields are only ever added.
type Result struct {
	MediaType          string              `json:"mediaType"`
	At                 string              `json:"at"`
	Snapshot           *string             `json:"snapshot"`
	TrustRoot          TrustRootInfo       `json:"trust_root"`
	Registry           *RegistryInfo       `json:"registry"`
	Documents          []DocumentResult    `json:"documents"`
	Targets            []TargetResult      `json:"targets"`
	Product            *ProductResult      `json:"product"`
	WorkflowAdmissions []WorkflowAdmission `json:"workflow_admissions"`
	Admission          *AdmissionDecision  `json:"admission,omitempty"`
	Keyless            *KeylessResult      `json:"keyless"`
	Notes              []string            `json:"notes"`
	Integrity          string              `json:"integrity"`
	Requirements       string              `json:"requirements"`
	ExitCode           int                 `json:"exit_code"`
	unmet              []string
}

// TrustRootInfo names the signer registry in use and the pins.
type TrustRootInfo struct {
	SignerRegistryIdentity *string  `json:"signer_registry_identity_sha256"`
	Pinned                 []string `json:"pinned"`
}

// RegistryInfo describes the current evidence registry, when loaded.
type RegistryInfo struct {
	Revision int64  `json:"revision"`
	Head     string `json:"head"`
	SHA256   string `json:"sha256"`
}

// DocumentResult is one verified document.
type DocumentResult struct {
	Path   string  `json:"path"`
	Kind   string  `json:"kind"`
	SHA256 string  `json:"sha256"`
	Status string  `json:"status"`
	Detail *string `json:"detail"`
}

// TargetResult is one target's verdict.
type TargetResult struct {
	Target       string  `json:"target"`
	Verdict      string  `json:"verdict"`
	Reason       *string `json:"reason"`
	Detail       *string `json:"detail"`
	Cause        *string `json:"cause,omitempty"`
	Sequence     *int64  `json:"sequence"`
	AdmissionID  *string `json:"admission_id"`
	ObjectSHA256 *string `json:"object_sha256"`
	Version      *string `json:"version"`
	DeploymentID *string `json:"deployment_id"`
	IssuedAt     *string `json:"issued_at"`
	ExpiresAt    *string `json:"expires_at"`
}

// ProductResult is the product verdict (docs/ledger.md, Verdicts).
type ProductResult struct {
	Verdict         string `json:"verdict"`
	ActiveTargets   int    `json:"active_targets"`
	ExpectedTargets int    `json:"expected_targets"`
}

// WorkflowAdmission is one workflow-ledger row's verdict.
type WorkflowAdmission struct {
	Index         int     `json:"index"`
	Verdict       string  `json:"verdict"`
	Reason        *string `json:"reason"`
	Detail        *string `json:"detail"`
	Cause         *string `json:"cause,omitempty"`
	ObjectSHA256  *string `json:"object_sha256"`
	AdmissionID   *string `json:"admission_id"`
	BundleVersion *string `json:"bundle_version"`
	BundleSHA256  *string `json:"bundle_sha256"`
	EvidenceClass *string `json:"evidence_class"`
	IssuedAt      *string `json:"issued_at"`
	ExpiresAt     *string `json:"expires_at"`
	attributed    bool
}

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func targetResult(name string, st *targetState) TargetResult {
	tr := TargetResult{Target: name, Verdict: VerdictActive}
	if st.fail != nil {
		tr.Verdict = VerdictNotActive
		tr.Reason, tr.Detail, tr.Cause = strp(st.fail.reason), strp(st.fail.detail), strp(st.fail.cause)
	}
	if a := st.adm; a != nil {
		if a.sequence > 0 {
			n := a.sequence
			tr.Sequence = &n
		}
		tr.AdmissionID = strp(a.admissionID)
		tr.ObjectSHA256 = strp(a.obj.entry.SHA256)
		tr.Version, tr.DeploymentID = strp(a.version), strp(a.deployID)
		tr.IssuedAt, tr.ExpiresAt = strp(a.issuedStr), a.expiresStr
	}
	return tr
}

func workflowResult(i int, rs *rowState) WorkflowAdmission {
	w := WorkflowAdmission{Index: i, Verdict: VerdictActive, attributed: rs.attributed}
	if rs.fail != nil {
		w.Verdict = VerdictNotActive
		w.Reason, w.Detail, w.Cause = strp(rs.fail.reason), strp(rs.fail.detail), strp(rs.fail.cause)
	}
	if a := rs.adm; a != nil {
		w.ObjectSHA256 = strp(rs.objectSHA)
		w.AdmissionID = strp(a.admissionID)
		w.BundleVersion, w.BundleSHA256 = strp(a.bundleVer), strp(a.bundleSHA)
		w.EvidenceClass = strp(a.evClass)
		w.IssuedAt, w.ExpiresAt = strp(a.issuedStr), a.expiresStr
	}
	return w
}

// assemble combines the documents' outcomes into a Result (docs/ledger.md,
// Inputs: a
// ledger is authoritative over its projection, which must agree).
func (r *run) assemble(src Source, docs []*document, pins []string) *Result {
	res := &Result{
		MediaType:          MediaType,
		At:                 r.at.Format("2006-01-02T15:04:05Z"),
		TrustRoot:          TrustRootInfo{Pinned: append([]string{}, pins...)},
		Targets:            []TargetResult{},
		WorkflowAdmissions: []WorkflowAdmission{},
		Notes:              []string{},
	}
	if src.embedded {
		s := SnapshotDate
		res.Snapshot = &s
	}
	if r.reg != nil {
		res.Registry = &RegistryInfo{Revision: r.reg.revision, Head: r.reg.head, SHA256: r.reg.sha256}
	}
	if r.sr != nil {
		id := r.sr.identity
		res.TrustRoot.SignerRegistryIdentity = &id
	}
	var relLedger, tgtProj, wfLedger, wfProj *document
	for _, d := range docs {
		switch d.kind {
		case DocReleaseLedger:
			relLedger = d
		case DocTargetProjection:
			tgtProj = d
		case DocWorkflowLedger:
			wfLedger = d
		case DocWorkflowProjection:
			wfProj = d
		}
	}
	// Targets.
	var targets map[string]*targetState
	switch {
	case relLedger != nil && tgtProj != nil:
		targets = map[string]*targetState{}
		for k, v := range relLedger.targets {
			targets[k] = v
		}
		pinOK := false
		if src, ok := asObj(tgtProj.doc["source"]); ok {
			if files, ok := asObj(src["files"]); ok {
				if a, ok := asObj(files["admissions"]); ok {
					pinOK = a["sha256"] == sha256Digest(relLedger.raw)
				}
			}
		}
		for _, t := range targetNames {
			l, p := targets[t], tgtProj.targets[t]
			if !pinOK || !sameTarget(l, p) {
				targets[t] = &targetState{fail: mm("projection_disagrees"), adm: l.adm}
			}
		}
	case relLedger != nil:
		targets = relLedger.targets
	case tgtProj != nil:
		targets = tgtProj.targets
	}
	if targets != nil {
		active := 0
		for _, t := range sortedTargets() {
			tr := targetResult(t, targets[t])
			if tr.Verdict == VerdictActive {
				active++
			}
			res.Targets = append(res.Targets, tr)
		}
		p := &ProductResult{Verdict: "not_production", ActiveTargets: active, ExpectedTargets: len(targetNames)}
		if active == len(targetNames) {
			p.Verdict = "production"
		}
		res.Product = p
	}
	// Workflow rows.
	var rows []*rowState
	switch {
	case wfLedger != nil && wfProj != nil:
		rows = append([]*rowState{}, wfLedger.rows...)
		agree := len(wfLedger.rows) == len(wfProj.rows)
		for i, l := range rows {
			if !agree || !sameRow(l, wfProj.rows[i]) {
				rows[i] = &rowState{fail: mm("projection_disagrees"), adm: l.adm, attributed: l.attributed, objectSHA: l.objectSHA}
			}
		}
	case wfLedger != nil:
		rows = wfLedger.rows
	case wfProj != nil:
		rows = wfProj.rows
	}
	for i, rs := range rows {
		res.WorkflowAdmissions = append(res.WorkflowAdmissions, workflowResult(i, rs))
	}
	// Documents, each judged on the verdicts it produced.
	for _, d := range docs {
		dr := DocumentResult{Path: d.name, Kind: d.kind, SHA256: sha256Digest(d.raw), Detail: strp(d.detail)}
		var fs []*fail
		for _, t := range d.targets {
			fs = append(fs, t.fail)
		}
		for _, rw := range d.rows {
			fs = append(fs, rw.fail)
		}
		dr.Status = integrityOf(fs)
		if d.detail != "" && dr.Status == IntegrityVerified && isFailedDetail(d.detail) {
			dr.Status = IntegrityFailed
		}
		res.Documents = append(res.Documents, dr)
	}
	sort.SliceStable(res.Documents, func(i, j int) bool { return res.Documents[i].Path < res.Documents[j].Path })
	var all []*fail
	for _, t := range targets {
		all = append(all, t.fail)
	}
	for _, rw := range rows {
		all = append(all, rw.fail)
	}
	res.Integrity = integrityOf(all)
	for _, d := range res.Documents {
		if d.Status == IntegrityFailed {
			res.Integrity = IntegrityFailed
		}
	}
	res.Notes = append(res.Notes, r.notes...)
	return res
}

func sameTarget(a, b *targetState) bool {
	if (a.fail == nil) != (b.fail == nil) {
		return false
	}
	var sa, sb string
	if a.adm != nil {
		sa = a.adm.obj.entry.SHA256
	}
	if b.adm != nil {
		sb = b.adm.obj.entry.SHA256
	}
	return sa == sb
}

func sameRow(a, b *rowState) bool {
	return (a.fail == nil) == (b.fail == nil) && a.objectSHA == b.objectSHA
}

// isFailedDetail reports whether an unverifiable detail counts as failed
// integrity (docs/ledger.md, Integrity and exit codes).
func isFailedDetail(d string) bool {
	switch d {
	case "object_missing", "bundle_missing", "not_yet_valid", "no_admission":
		return false
	}
	return true
}

// integrityOf computes integrity (docs/ledger.md, Integrity and exit codes)
// over a set of outcomes.
func integrityOf(fs []*fail) string {
	out := IntegrityVerified
	for _, f := range fs {
		if f == nil {
			continue
		}
		switch f.reason {
		case ReasonMismatched:
			return IntegrityFailed
		case ReasonUnverifiable:
			d := f.detail
			if d == "ledger_row_unattributed" {
				d = f.cause
			}
			switch d {
			case "object_missing", "bundle_missing":
				out = IntegrityIncomplete
			case "not_yet_valid":
			default:
				return IntegrityFailed
			}
		}
	}
	return out
}

// finish applies --strict and the --require-* conditions and sets the exit
// code (docs/ledger.md, Integrity and exit codes).
func (v *Verifier) finish(res *Result) {
	res.Requirements = "none"
	if v.cfg.requireProduction || len(v.cfg.requireActive) > 0 {
		res.Requirements = "met"
		if v.cfg.requireProduction && (res.Product == nil || res.Product.Verdict != "production") {
			res.unmet = append(res.unmet, "product is not production")
		}
		for _, t := range v.cfg.requireActive {
			ok := false
			for _, tr := range res.Targets {
				if tr.Target == t && tr.Verdict == VerdictActive {
					ok = true
				}
			}
			if !ok {
				res.unmet = append(res.unmet, t+" is not active")
			}
		}
		if len(res.unmet) > 0 {
			res.Requirements = "unmet"
		}
	}
	switch {
	case res.Integrity == IntegrityFailed,
		res.Integrity == IntegrityIncomplete && v.cfg.strict,
		res.Requirements == "unmet":
		res.ExitCode = 1
	default:
		res.ExitCode = 0
	}
}
