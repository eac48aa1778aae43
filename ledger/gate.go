package ledger

import (
	"context"
	"fmt"
	"time"
)

// Profiles (docs/ledger.md, Workflow admission gate). The gate is on for
// standard and regulated.
const (
	ProfileDemo      = "demo"
	ProfileStandard  = "standard"
	ProfileRegulated = "regulated"
)

// Decisions (docs/ledger.md, Workflow admission gate).
const (
	DecisionAdmitted    = "admitted"
	DecisionExempt      = "exempt"
	DecisionNotAdmitted = "not_admitted"
)

// There is no compiled-in synthetic-tutorial allowlist: the only tutorial
// exemption lives in serve, bound to the bundle digest that server prepared
// itself and recorded in its state directory. The ledger gate never exempts
// a bundle by digest or by a label such as 0.0.0-synthetic; only the demo
// profile is exempt here.

// AdmissionDecision answers "is there an active workflow admission for this
// exact bundle at T?" (docs/ledger.md, Workflow admission gate). It is the
// `admission` member of the JSON result of `ledger admission`.
type AdmissionDecision struct {
	// Decision is admitted, exempt or not_admitted.
	Decision string `json:"decision"`
	// Reason is null unless not_admitted: missing, expired, revoked,
	// mismatched or unverifiable. It is the only part of the decision that
	// serve may show.
	Reason *string `json:"reason"`
	// Detail is a stable snake_case code (docs/ledger.md, Verdicts), e.g.
	// demo_profile, no_admission_for_bundle, bundle_sha256_differs,
	// object_missing.
	Detail *string `json:"detail"`
	// AdmissionID is the admission_id_sha256 of the admitting row.
	AdmissionID   *string `json:"admission_id"`
	Profile       string  `json:"profile"`
	BundleVersion *string `json:"bundle_version"`
	BundleSHA256  *string `json:"bundle_sha256"`
}

// Admitted reports whether the decision lets a run proceed (admitted or
// exempt).
func (d AdmissionDecision) Admitted() bool {
	return d.Decision == DecisionAdmitted || d.Decision == DecisionExempt
}

// ReasonCode returns the reason, or "" when there is none.
func (d AdmissionDecision) ReasonCode() string {
	if d.Reason == nil {
		return ""
	}
	return *d.Reason
}

// DetailCode returns the detail, or "" when there is none.
func (d AdmissionDecision) DetailCode() string {
	if d.Detail == nil {
		return ""
	}
	return *d.Detail
}

// GateQuery is one admission question.
type GateQuery struct {
	// BundleSHA256 is "sha256:" + the verified manifest content_digest of
	// the bundle (never Flow's computed bundle_version).
	BundleSHA256 string
	// BundleVersion is an optional label (e.g. "0.0.0-synthetic"). When set,
	// the admitting row's bundle_version must equal it; serve passes none.
	BundleVersion string
	// Profile is demo, standard (the default when empty) or regulated.
	Profile string
	// BundleErrorKind, when set, says the bundle directory did not fully
	// verify; the answer is then not_admitted, unverifiable,
	// bundle_<kind>, and the ledger is not consulted.
	BundleErrorKind string
}

func (q *GateQuery) normalize() error {
	switch q.Profile {
	case "":
		q.Profile = ProfileStandard
	case ProfileDemo, ProfileStandard, ProfileRegulated:
	default:
		return fmt.Errorf("%w: unknown profile %q (want demo, standard or regulated)", ErrOption, q.Profile)
	}
	if q.BundleErrorKind == "" && !isDigest(q.BundleSHA256) {
		return fmt.Errorf("%w: bundle sha256 must be sha256: and 64 lowercase hex digits", ErrOption)
	}
	if q.BundleVersion != "" && (len(q.BundleVersion) > 64 || !isVersion(q.BundleVersion)) {
		return fmt.Errorf("%w: bundle version label is not a version", ErrOption)
	}
	return nil
}

// CheckWorkflowAdmission is the one call serve's admission gate needs
// (docs/ledger.md, Workflow admission gate). It verifies src (the embedded snapshot,
// [Embedded], or a ledger file or evidence-root directory, [Path]) against
// the pinned trust root at instant at, and answers whether an active workflow
// admission covers the bundle whose bundle_sha256 is given. label is an
// optional bundle_version label; serve passes "".
//
// The profile is standard: callers only ask for standard and regulated runs
// (demo is exempt and never consults the ledger; use [Verifier.Gate] for
// other profiles). A ledger that fails verification gives not_admitted with
// reason unverifiable. The error is reserved for unreadable or unrecognised
// input (wrapping [ErrInput]) and a malformed query (wrapping [ErrOption]);
// callers should treat an error as not admitted (reason unverifiable) too.
//
// Verdicts use exact bundle_sha256 equality, no fallback to older
// admissions, and no clock-skew allowance.
func CheckWorkflowAdmission(ctx context.Context, src Source, bundleSHA256, label string, at time.Time) (AdmissionDecision, error) {
	v, err := NewVerifier(DefaultTrust(), WithAt(at))
	if err != nil {
		return AdmissionDecision{}, err
	}
	return v.Gate(ctx, src, GateQuery{BundleSHA256: bundleSHA256, BundleVersion: label, Profile: ProfileStandard})
}

// Gate answers an admission query against src; see [Verifier.Admission].
func (v *Verifier) Gate(ctx context.Context, src Source, q GateQuery) (AdmissionDecision, error) {
	res, err := v.Admission(ctx, src, q)
	if err != nil {
		return AdmissionDecision{}, err
	}
	return *res.Admission, nil
}

// Admission verifies src and answers the admission query (docs/ledger.md,
// Workflow admission gate). The returned result carries the verification
// (workflow rows, integrity) and the decision in [Result.Admission]; its
// ExitCode is 0 for admitted or exempt and 1 for not_admitted.
func (v *Verifier) Admission(ctx context.Context, src Source, q GateQuery) (*Result, error) {
	if err := q.normalize(); err != nil {
		return nil, err
	}
	finish := func(res *Result, dec AdmissionDecision) *Result {
		res.Admission = &dec
		res.ExitCode = 0
		if !dec.Admitted() {
			res.ExitCode = 1
		}
		return res
	}
	// Checked first: the bundle directory must fully verify, and demo is
	// exempt. Neither consults the ledger.
	if dec, ok := unverifiedDecision(q); ok {
		r := &Result{MediaType: MediaType, At: v.evalTime().Format("2006-01-02T15:04:05Z"),
			TrustRoot: TrustRootInfo{Pinned: append([]string{}, v.list...)}, Documents: []DocumentResult{},
			Targets: []TargetResult{}, WorkflowAdmissions: []WorkflowAdmission{}, Notes: []string{},
			Integrity: IntegrityVerified, Requirements: "none"}
		if src.embedded {
			s := SnapshotDate
			r.Snapshot = &s
		}
		return finish(r, dec), nil
	}
	res, err := v.Verify(ctx, src)
	if err != nil {
		return nil, err
	}
	// The ledger part of the decision is the per-bundle rule of
	// admissions.go, so Admission and [Admissions.Decide] cannot differ.
	dec, err := admissionsOf(res).decide(q)
	if err != nil {
		return nil, err
	}
	return finish(res, dec), nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
