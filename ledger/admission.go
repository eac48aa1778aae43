package ledger

import (
	"time"
)

// admission holds the fields of a release or workflow admission object that
// verdicts and output need.
type admission struct {
	obj         *object
	admissionID string
	target      string
	sequence    int64
	previous    string
	version     string
	deployID    string
	bundleVer   string
	bundleSHA   string
	evClass     string
	issuedStr   string
	expiresStr  *string
	issued      time.Time
	notBefore   time.Time
	expires     time.Time
	expNull     bool
}

var releaseKeys = []string{
	"schema_version", "admission_id_sha256", "evidence_class", "target", "verdict", "claim_scope",
	"release_identity", "release", "release_sha256", "artifact_inventory_sha256",
	"publication_staging", "publication_staging_sha256",
	"production_acceptance_summary_reference", "production_acceptance_summary_bundle_reference",
	"authority_state_sha256", "revocation_state_sha256", "signer_registry_sha256", "publication_policy_sha256",
	"issued_at", "not_before", "expires_at", "issuer",
}

var workflowKeys = []string{
	"schema_version", "admission_id_sha256", "evidence_class",
	"organization_id_sha256", "workflow_id_sha256", "workflow_version_id_sha256",
	"bundle_version", "bundle_sha256", "admitted_runtime_sha256",
	"application_contract_sha256", "environment_contract_sha256", "input_contract_sha256", "action_contract_sha256",
	"identity_contract_sha256", "effect_contract_sha256", "policy_contract_sha256",
	"evidence_authority_sha256", "campaign_artifact_sha256", "campaign_permit_sha256",
	"decision_receipt_reference", "decision_receipt_bundle_reference",
	"signer_registry_sha256", "revocation_state_sha256",
	"entity_class", "campaign_summary", "local_identity_opening",
	"verdict", "issued_at", "not_before", "expires_at", "issuer",
}

// attribution extracts what output needs from an attributed object, without
// judging it; it tolerates any shape.
func attribution(o *object) *admission {
	a := &admission{obj: o}
	d := o.doc
	a.admissionID, _ = getStr(d, "admission_id_sha256")
	a.target, _ = getStr(d, "target")
	a.bundleVer, _ = getStr(d, "bundle_version")
	a.bundleSHA, _ = getStr(d, "bundle_sha256")
	a.evClass, _ = getStr(d, "evidence_class")
	a.issuedStr, _ = getStr(d, "issued_at")
	if s, ok := getStr(d, "expires_at"); ok {
		a.expiresStr = &s
	}
	if ri, ok := asObj(d["release_identity"]); ok {
		a.sequence, _ = getInt(ri, "sequence")
		a.previous, _ = getStr(ri, "previous_admission_sha256")
	}
	if rel, ok := asObj(d["release"]); ok {
		a.version, _ = getStr(rel, "version")
		a.deployID, _ = getStr(rel, "deployment_id")
	}
	return a
}

// checkIssuer checks an admission's 7-key issuer with the .github constants.
func checkIssuer(v any, workflow, environment string) bool {
	iss, ok := asObj(v)
	if !ok || !exactKeys(iss, issuerKeys...) {
		return false
	}
	is := func(k string) string { s, _ := getStr(iss, k); return s }
	return is("repository") == evidenceRepo && is("repository_id") == evidenceRepoID &&
		is("repository_owner_id") == evidenceRepoOwnerID && is("workflow") == workflow && is("ref") == "refs/heads/main" &&
		is("environment") == environment && isHex40(is("source_commit"))
}

// checkWindow parses the admission window. ok=false is object_invalid;
// ordered=false is window_invalid.
func (a *admission) checkWindow() (ok, ordered bool) {
	var ok1, ok2, ok3 bool
	a.issued, ok1 = getTime(a.obj.doc, "issued_at")
	a.notBefore, ok2 = getTime(a.obj.doc, "not_before")
	a.expires, a.expNull, ok3 = getTimeOrNull(a.obj.doc, "expires_at")
	if !ok1 || !ok2 || !ok3 {
		return false, false
	}
	return true, !a.notBefore.After(a.issued) && (a.expNull || a.issued.Before(a.expires))
}

// checkRefPair validates a (object, bundle) reference pair that an
// admission names but this tool does not follow (docs/ledger.md, Objects):
// the reference shape rules and the recomputed entry digest only.
func checkRefPair(objRef, bundleRef any, kind string) bool {
	o, err1 := ParseReference(objRef)
	b, err2 := ParseReference(bundleRef)
	if err1 != nil || err2 != nil {
		return false
	}
	return o.Kind == kind && b.Kind == kind+bundleSuffix && b.SubjectSHA256 == o.ObjectSHA256
}

func digestsPresent(d map[string]any, keys ...string) bool {
	for _, k := range keys {
		if _, ok := getDigest(d, k); !ok {
			return false
		}
	}
	return true
}

// checkRelease validates a release admission (docs/ledger.md, Objects). It
// returns "" or a failure.
func checkRelease(a *admission) *fail {
	d := a.obj.doc
	bad := uv("object_invalid")
	if !exactKeys(d, releaseKeys...) {
		return bad
	}
	if s, _ := getStr(d, "schema_version"); s != schemaRelease {
		return bad
	}
	if s, _ := getStr(d, "verdict"); s != "accepted" {
		return bad
	}
	if s, _ := getStr(d, "evidence_class"); s != "private-customer" && s != "remote-safe-synthetic" {
		return bad
	}
	if _, ok := targetContracts[a.target]; !ok {
		return bad
	}
	if _, ok := getStr(d, "claim_scope"); !ok {
		return bad
	}
	if !digestsPresent(d, "admission_id_sha256", "release_sha256", "artifact_inventory_sha256", "publication_staging_sha256",
		"authority_state_sha256", "revocation_state_sha256", "signer_registry_sha256", "publication_policy_sha256") {
		return bad
	}
	ri, ok := asObj(d["release_identity"])
	if !ok || !exactKeys(ri, "schema_version", "channel", "sequence", "previous_admission_sha256") {
		return bad
	}
	if s, _ := getStr(ri, "schema_version"); s != "openadapt.monotonic-production-release/v1" {
		return bad
	}
	if s, _ := getStr(ri, "channel"); s != "production" {
		return bad
	}
	seq, ok := getInt(ri, "sequence")
	if !ok || seq < 1 {
		return bad
	}
	prev, isNull, ok := getStrOrNull(ri, "previous_admission_sha256")
	if !ok || (seq == 1) != isNull || (!isNull && !isDigest(prev)) {
		return bad
	}
	if !checkIssuer(d["issuer"], ".github/workflows/issue-production-release-admission.yml", "production-release-admission") {
		return bad
	}
	rel, ok := asObj(d["release"])
	if !ok || !exactKeys(rel, "schema_version", "kind", "source_repository", "source_repository_id", "source_commit",
		"version", "tag", "deployment_id", "deployment_sha256", "artifacts") {
		return bad
	}
	if s, _ := getStr(rel, "schema_version"); s != "openadapt.production-release-candidate/v1" {
		return bad
	}
	relKind, _ := getStr(rel, "kind")
	if _, ok := getStr(rel, "source_repository"); !ok {
		return bad
	}
	if _, ok := getStr(rel, "source_repository_id"); !ok {
		return bad
	}
	if s, _ := getStr(rel, "source_commit"); !isHex40(s) {
		return bad
	}
	arts, ok := asList(rel["artifacts"])
	if !ok || len(arts) == 0 {
		return bad
	}
	ver, verNull, okV := getStrOrNull(rel, "version")
	tag, tagNull, okT := getStrOrNull(rel, "tag")
	did, didNull, okD := getStrOrNull(rel, "deployment_id")
	dsha, dshaNull, okS := getStrOrNull(rel, "deployment_sha256")
	if !okV || !okT || !okD || !okS {
		return bad
	}
	pkgOK := !verNull && !tagNull && len(ver) <= 64 && isVersion(ver) && tag == "v"+ver
	depOK := !didNull && !dshaNull && isDeployID(did) && isDigest(dsha)
	switch relKind {
	case "package":
		if !pkgOK || !didNull || !dshaNull {
			return bad
		}
	case "deployment":
		if !depOK || !verNull || !tagNull {
			return bad
		}
	case "hybrid":
		if !pkgOK || !depOK {
			return bad
		}
	default:
		return bad
	}
	if !checkRefPair(d["production_acceptance_summary_reference"], d["production_acceptance_summary_bundle_reference"], kindSummary) {
		return bad
	}
	if _, ok := asObj(d["publication_staging"]); !ok {
		return bad
	}
	ok, ordered := a.checkWindow()
	if !ok {
		return bad
	}
	// Derived values.
	id, err := domainDigest(domReleaseAdmission, without(d, "admission_id_sha256"))
	if err != nil || id != a.admissionID {
		return uv("admission_id_mismatch")
	}
	claim := d["claim_scope"]
	if x, err := domainDigest(domReleaseCandidate, map[string]any{"target": a.target, "claim_scope": claim, "release": rel}); err != nil || x != d["release_sha256"] {
		return uv("derived_digest_mismatch")
	}
	if x, err := domainDigest(domArtifactInventory, map[string]any{"target": a.target, "claim_scope": claim, "artifacts": rel["artifacts"]}); err != nil || x != d["artifact_inventory_sha256"] {
		return uv("derived_digest_mismatch")
	}
	staging, _ := asObj(d["publication_staging"])
	if x, err := domainDigest(domStaging, staging); err != nil || x != d["publication_staging_sha256"] {
		return uv("derived_digest_mismatch")
	}
	for _, sd := range []struct{ field, key, dom string }{
		{"tag_rulesets_sha256", "tag_rulesets", domTagRulesets},
		{"immutable_releases_sha256", "immutable_releases", domImmutableReleases},
		{"tag_ref_state_sha256", "tag_ref_state", domTagRefState},
	} {
		if want, has := staging[sd.field]; has {
			if x, err := domainDigest(sd.dom, staging[sd.key]); err != nil || x != want {
				return uv("derived_digest_mismatch")
			}
		}
	}
	if !ordered {
		return uv("window_invalid")
	}
	// Contract, checked last.
	c := targetContracts[a.target]
	if s, _ := getStr(d, "claim_scope"); s != c.claimScope {
		return mm("target_contract_mismatch")
	}
	if !contains(c.kinds, relKind) {
		return mm("target_contract_mismatch")
	}
	if s, _ := getStr(rel, "source_repository"); s != c.sourceRepo {
		return mm("target_contract_mismatch")
	}
	if s, _ := getStr(rel, "source_repository_id"); s != c.sourceRepoID {
		return mm("target_contract_mismatch")
	}
	return nil
}

// checkWorkflow validates a workflow admission (docs/ledger.md, Objects).
func checkWorkflow(a *admission) *fail {
	d := a.obj.doc
	bad := uv("object_invalid")
	if !exactKeys(d, workflowKeys...) {
		return bad
	}
	if s, _ := getStr(d, "schema_version"); s != schemaWorkflow {
		return bad
	}
	if s, _ := getStr(d, "verdict"); s != "accepted" {
		return bad
	}
	if s, _ := getStr(d, "evidence_class"); s != "private-customer" && s != "remote-safe-synthetic" {
		return bad
	}
	for k := range d {
		if len(k) > 7 && k[len(k)-7:] == "_sha256" {
			if _, ok := getDigest(d, k); !ok {
				return bad
			}
		}
	}
	if bv, ok := getStr(d, "bundle_version"); !ok || len(bv) > 64 || !isVersion(bv) {
		return bad
	}
	if s, ok := getStr(d, "entity_class"); !ok || !isEntity(s) {
		return bad
	}
	if _, ok := asObj(d["campaign_summary"]); !ok {
		return bad
	}
	lio, ok := asObj(d["local_identity_opening"])
	if !ok || !exactKeys(lio, "schema_version", "algorithm", "required", "customer_controlled_secret_required",
		"exact_contract_match_required", "revalidation_before_actuation", "maximum_age_seconds") {
		return bad
	}
	if s, _ := getStr(lio, "schema_version"); s != "openadapt.qualification-local-identity-opening/v1" {
		return bad
	}
	if s, _ := getStr(lio, "algorithm"); s != "hmac-sha256" {
		return bad
	}
	for _, k := range []string{"required", "customer_controlled_secret_required", "exact_contract_match_required", "revalidation_before_actuation"} {
		if b, ok := getBool(lio, k); !ok || !b {
			return bad
		}
	}
	if n, ok := getInt(lio, "maximum_age_seconds"); !ok || n != 60 {
		return bad
	}
	if !checkRefPair(d["decision_receipt_reference"], d["decision_receipt_bundle_reference"], kindDecision) {
		return bad
	}
	if !checkIssuer(d["issuer"], ".github/workflows/issue-qualification-admission.yml", "qualification-admission") {
		return bad
	}
	ok, ordered := a.checkWindow()
	if !ok {
		return bad
	}
	id, err := domainDigest(domWorkflowAdmission, without(d, "admission_id_sha256"))
	if err != nil || id != a.admissionID {
		return uv("admission_id_mismatch")
	}
	if !ordered {
		return uv("window_invalid")
	}
	return nil
}
