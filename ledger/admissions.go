package ledger

import (
	"context"
)

// Admissions is the per-bundle admission decision of one verified ledger
// (docs/ledger.md, Workflow admission gate): the ledger is verified once, then
// [Admissions.Decide] answers for any bundle without verifying again. It is
// the rule [Verifier.Admission] applies after its verification, so both give
// the same decision for the same query. serve uses it for the listing's
// admission state; a run asks [Verifier.Gate] afresh, so its windows are
// checked at the call.
type Admissions struct {
	res *Result
	// err, when set, is the answer to every query (the source has no
	// workflow document).
	err error
	// global, when set, is the reason and detail every query gets: a
	// ledger-wide check failed (a workflow document's own detail, keyless
	// verification, an unattributed row).
	global *[2]string
	// latest is the latest row for each bundle_sha256 (issued_at, then
	// ledger order), and labels the bundle_version labels of every row.
	latest map[string]*WorkflowAdmission
	labels map[string]bool
}

// Admissions verifies src and returns its per-bundle decisions. The error
// is [Verifier.Verify]'s (unreadable or unrecognised input).
func (v *Verifier) Admissions(ctx context.Context, src Source) (*Admissions, error) {
	res, err := v.Verify(ctx, src)
	if err != nil {
		return nil, err
	}
	return admissionsOf(res), nil
}

// Result is the verification the decisions come from.
func (a *Admissions) Result() *Result { return a.res }

// Decide answers q (docs/ledger.md, Workflow admission gate). The error wraps
// [ErrOption] for a malformed query, or is [ErrNoWorkflowDocument].
func (a *Admissions) Decide(q GateQuery) (AdmissionDecision, error) {
	if err := q.normalize(); err != nil {
		return AdmissionDecision{}, err
	}
	if d, ok := unverifiedDecision(q); ok {
		return d, nil
	}
	return a.decide(q)
}

// unverifiedDecision is the part of the decision that needs no ledger: a
// bundle that did not verify, and the demo profile (exempt).
func unverifiedDecision(q GateQuery) (AdmissionDecision, bool) {
	switch {
	case q.BundleErrorKind != "":
		return q.notAdmitted(ReasonUnverifiable, "bundle_"+q.BundleErrorKind), true
	case q.Profile == ProfileDemo:
		return q.exempt("demo_profile"), true
	}
	return AdmissionDecision{}, false
}

func admissionsOf(res *Result) *Admissions {
	a := &Admissions{res: res, latest: map[string]*WorkflowAdmission{}, labels: map[string]bool{}}
	hasWorkflowDoc := false
	globalDetail := ""
	for _, d := range res.Documents {
		if d.Kind == DocWorkflowLedger || d.Kind == DocWorkflowProjection {
			hasWorkflowDoc = true
			if d.Detail != nil && globalDetail == "" {
				globalDetail = *d.Detail
			}
		}
	}
	switch {
	case !hasWorkflowDoc:
		a.err = ErrNoWorkflowDocument
		return a
	case globalDetail == "projection_mismatch":
		a.global = &[2]string{ReasonMismatched, globalDetail}
	case globalDetail != "":
		a.global = &[2]string{ReasonUnverifiable, globalDetail}
	case res.Keyless != nil && !res.Keyless.Verified:
		a.global = &[2]string{ReasonUnverifiable, "keyless_verification_failed"}
	}
	rows := res.WorkflowAdmissions
	for i := range rows {
		w := &rows[i]
		if !w.attributed && a.global == nil {
			a.global = &[2]string{ReasonUnverifiable, "ledger_row_unattributed"}
		}
		if w.BundleVersion != nil {
			a.labels[*w.BundleVersion] = true
		}
		if w.BundleSHA256 == nil {
			continue
		}
		if l := a.latest[*w.BundleSHA256]; l == nil || deref(w.IssuedAt) >= deref(l.IssuedAt) {
			a.latest[*w.BundleSHA256] = w
		}
	}
	return a
}

// decide is the ledger part of the decision, for a normalized query.
func (a *Admissions) decide(q GateQuery) (AdmissionDecision, error) {
	if a.err != nil {
		return AdmissionDecision{}, a.err
	}
	if a.global != nil {
		return q.notAdmitted(a.global[0], a.global[1]), nil
	}
	latest := a.latest[q.BundleSHA256]
	switch {
	case latest == nil && q.BundleVersion != "" && a.labels[q.BundleVersion]:
		return q.notAdmitted(ReasonMismatched, "bundle_sha256_differs"), nil
	case latest == nil:
		return q.notAdmitted(ReasonMissing, "no_admission_for_bundle"), nil
	case q.BundleVersion != "" && deref(latest.BundleVersion) != q.BundleVersion:
		return q.notAdmitted(ReasonMismatched, "bundle_version_differs"), nil
	case latest.Verdict != VerdictActive:
		return q.notAdmitted(deref(latest.Reason), deref(latest.Detail)), nil
	}
	d := q.decision()
	d.Decision = DecisionAdmitted
	d.AdmissionID = latest.AdmissionID
	return d, nil
}

// decision is the empty decision for q.
func (q GateQuery) decision() AdmissionDecision {
	return AdmissionDecision{Profile: q.Profile, BundleVersion: strp(q.BundleVersion), BundleSHA256: strp(q.BundleSHA256)}
}

func (q GateQuery) notAdmitted(reason, detail string) AdmissionDecision {
	d := q.decision()
	d.Decision, d.Reason, d.Detail = DecisionNotAdmitted, strp(reason), strp(detail)
	return d
}

func (q GateQuery) exempt(detail string) AdmissionDecision {
	d := q.decision()
	d.Decision, d.Detail = DecisionExempt, strp(detail)
	return d
}
