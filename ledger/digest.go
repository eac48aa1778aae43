package ledger

import (
	"crypto/sha256"
	"encoding/hex"
)

// sha256Digest returns "sha256:" + lowercase hex of sha256(b).
func sha256Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// domainDigest is D(domain, v) = H(domain ‖ NUL ‖ canonical(v))
// (docs/ledger.md, Canonical objects).
func domainDigest(domain string, v any) (string, error) {
	s := canonPool.Get().(*canonScratch)
	defer canonPool.Put(s)
	b := append(append(s.a[:0], domain...), 0)
	b, err := appendCanonical(b, v)
	s.a = b
	if err != nil {
		return "", err
	}
	return sha256Digest(b), nil
}

// Domains (docs/ledger.md, Canonical objects). The trailing NUL is added by
// domainDigest.
const (
	domRegistryEntry        = "OpenAdapt production evidence registry entry v1"
	domRegistryHead         = "OpenAdapt production evidence registry head v2"
	domSemantic             = "OpenAdapt production evidence semantic identity v1"
	domBundleIdentity       = "OpenAdapt production evidence Sigstore bundle identity v1"
	domDecisionReceipt      = "OpenAdapt qualification decision receipt series identity v1"
	domSignerRegistry       = "OpenAdapt qualification signer registry v2"
	domReleaseAdmission     = "OpenAdapt qualification release admission v2"
	domReleaseCandidate     = "OpenAdapt production release candidate v1"
	domArtifactInventory    = "OpenAdapt production release artifact inventory v1"
	domStaging              = "OpenAdapt production release staging evidence v1"
	domTagRulesets          = "OpenAdapt production release tag rulesets v1"
	domImmutableReleases    = "OpenAdapt production immutable releases response v1"
	domTagRefState          = "OpenAdapt production release tag ref state v1"
	domWorkflowAdmission    = "OpenAdapt qualification admission v4"
	domAuthorityState       = "OpenAdapt qualification authority state identity v2"
	domRevocationState      = "OpenAdapt qualification revocation state identity v1"
	domAuthorityReceiptSig  = "OpenAdapt qualification authority state receipt v2"
	domRevocationReceiptSig = "OpenAdapt qualification revocation state receipt v1"
)
