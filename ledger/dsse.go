package ledger

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/asn1"
	"encoding/base64"
	"math/big"
	"time"

	ssldsse "github.com/secure-systems-lab/go-securesystemslib/dsse"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore/pkg/signature"
	sigdsse "github.com/sigstore/sigstore/pkg/signature/dsse"
)

// statement is a verified public-trust signing statement (docs/ledger.md,
// Signatures).
type statement struct {
	doc       map[string]any
	signer    *signer
	boundID   string // signer_registry_sha256: the bound registry identity
	authority string // "" when absent
	revState  string
	issued    time.Time
	notBefore time.Time
	expires   time.Time
	expNull   bool
}

// pairMode selects which signature checks apply (docs/ledger.md,
// Signatures).
type pairMode int

const (
	pairAdmission pairMode = iota // admission objects: every binding
	pairReceipt                   // receipts' outer bundles: no trust binding or object-field equality
)

var statementKeys = []string{
	"schema_version", "object_kind", "object_schema_version", "object_media_type", "object_sha256",
	"object_size_bytes", "semantic_identity_sha256", "source_issuer", "signer_registry_sha256",
	"authority_state_sha256", "revocation_state_sha256", "issued_at", "not_before", "expires_at",
	"request_id_sha256", "signing_authority", "key_id", "signature_profile",
}

var issuerKeys = []string{"repository", "repository_id", "repository_owner_id", "workflow", "ref", "source_commit", "environment"}

// canonicalB64 decodes canonical padded standard base64: decoding and
// re-encoding must give the same string (docs/ledger.md, Signatures).
func canonicalB64(s string) ([]byte, bool) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || base64.StdEncoding.EncodeToString(b) != s {
		return nil, false
	}
	return b, true
}

// verifyPair verifies the signature bundle of a regular object o
// (docs/ledger.md, Signatures). It returns the statement and "" or a
// failure. The trust-state binding is left to the caller (bindTrust),
// because workflow rows check it later than the signature.
func (r *run) verifyPair(ctx context.Context, o *object, mode pairMode) (*statement, *fail) {
	be := r.reg.adjacentBundle(o.entry)
	if be == nil {
		return nil, uv("bundle_missing")
	}
	raw, err := readFS(r.root, be.Path)
	if err != nil {
		return nil, uv("bundle_missing")
	}
	if int64(len(raw)) != be.Size || sha256Digest(raw) != be.SHA256 {
		return nil, uv("bundle_digest_mismatch")
	}
	v, err := checkCanonicalLF(raw)
	if err != nil {
		return nil, uv("bundle_not_canonical")
	}
	id, err := domainDigest(domBundleIdentity, map[string]any{
		"kind": be.Kind, "object_sha256": be.SHA256, "subject_sha256": be.Subject,
	})
	if err != nil || id != be.SemanticID {
		return nil, uv("semantic_identity_mismatch")
	}
	// The bundle's shape, on the raw JSON: the protobuf parse loses key order and
	// base64 spelling.
	doc, _ := asObj(v)
	if doc == nil || !exactKeys(doc, "dsseEnvelope", "mediaType", "verificationMaterial") {
		return nil, uv("bundle_malformed")
	}
	if s, _ := getStr(doc, "mediaType"); s != mediaSigstoreBundle {
		return nil, uv("bundle_malformed")
	}
	vm, _ := asObj(doc["verificationMaterial"])
	if vm == nil || !exactKeys(vm, "publicKey") {
		return nil, uv("bundle_malformed")
	}
	pk, _ := asObj(vm["publicKey"])
	if pk == nil || !exactKeys(pk, "hint") {
		return nil, uv("bundle_malformed")
	}
	hint, ok := getStr(pk, "hint")
	if !ok {
		return nil, uv("bundle_malformed")
	}
	env, _ := asObj(doc["dsseEnvelope"])
	if env == nil || !exactKeys(env, "payload", "payloadType", "signatures") {
		return nil, uv("bundle_malformed")
	}
	if s, _ := getStr(env, "payloadType"); s != payloadTypeStatement {
		return nil, uv("bundle_malformed")
	}
	payloadB64, _ := getStr(env, "payload")
	payload, ok := canonicalB64(payloadB64)
	if !ok || len(payload) == 0 {
		return nil, uv("bundle_malformed")
	}
	sigs, _ := asList(env["signatures"])
	// Exactly one signature: go-securesystemslib prints to stdout when two
	// signatures share a key id, which would corrupt --json (docs/ledger.md,
	// Signatures).
	if len(sigs) != 1 {
		return nil, uv("bundle_malformed")
	}
	sig0, _ := asObj(sigs[0])
	if sig0 == nil || !exactKeys(sig0, "keyid", "sig") {
		return nil, uv("bundle_malformed")
	}
	keyid, ok1 := getStr(sig0, "keyid")
	sigB64, ok2 := getStr(sig0, "sig")
	sigBytes, ok3 := canonicalB64(sigB64)
	if !ok1 || !ok2 || !ok3 {
		return nil, uv("bundle_malformed")
	}
	// Parse as a Sigstore bundle v0.3 with sigstore-go.
	var sb sgbundle.Bundle
	if err := sb.UnmarshalJSON(raw); err != nil || sb.GetDsseEnvelope() == nil {
		return nil, uv("bundle_malformed")
	}

	// The signing statement.
	st, f := parseStatement(payload)
	if f != nil {
		return nil, f
	}
	// Key selection and authorization.
	if keyid != hint || keyid != st.keyID {
		return nil, uv("key_id_mismatch")
	}
	bound := r.boundSigners(st.s.boundID, mode)
	algo := "ed25519"
	if st.profile == "aws-kms-p256-dsse-v1" {
		algo = "ecdsa-p256-sha256"
	}
	sg := bound[keyid]
	if sg == nil || sg.Algorithm != algo || !sg.Outer {
		return nil, uv("key_id_mismatch")
	}
	// Authorization.
	auth := st.authority
	wfURL := "https://github.com/" + evidenceRepo + "/" + auth["workflow"] + "@" + auth["ref"]
	if !contains(sg.Kinds, st.kind) || !contains(sg.Workflows, wfURL) || !refAllowed(sg.RefPrefixes, auth["ref"]) ||
		!contains(sg.Environments, auth["environment"]) {
		return nil, uv("signer_not_authorized")
	}
	switch st.profile {
	case "software-ed25519-dsse-v1":
		if sg.Origin != "software" || auth["key_origin"] != "software" {
			return nil, uv("signer_not_authorized")
		}
	case "aws-kms-p256-dsse-v1":
		if sg.Origin != "aws-kms" || auth["kms_key_arn"] != sg.KMSArn {
			return nil, uv("signer_not_authorized")
		}
	}
	// The signature over the PAE, through the sigstore DSSE
	// verifier adapter with the registry key id.
	if !verifyDSSE(ctx, sg, keyid, payloadB64, sigB64, sigBytes) {
		return nil, uv("signature_invalid")
	}
	st.s.signer = sg
	st.s.doc = st.doc

	// Bind the statement to the reference and the object.
	e := o.entry
	if st.kind != e.Kind || st.schema != e.Schema || st.media != e.Media || st.objSHA != sha256Digest(o.raw) ||
		st.objSize != int64(len(o.raw)) || st.semID != e.SemanticID {
		return nil, mm("statement_binding_mismatch")
	}
	if mode == pairAdmission {
		iss, _ := asObj(o.doc["issuer"])
		if iss == nil || !exactKeys(iss, issuerKeys...) || !jsonEqual(iss, st.doc["source_issuer"]) {
			return nil, mm("statement_binding_mismatch")
		}
		if s, _ := getStr(o.doc, "signer_registry_sha256"); s != st.s.boundID {
			return nil, mm("statement_binding_mismatch")
		}
		if a, has := o.doc["authority_state_sha256"]; has && a != any(st.s.authority) {
			return nil, mm("statement_binding_mismatch")
		}
		if s, _ := getStr(o.doc, "revocation_state_sha256"); s != st.s.revState {
			return nil, mm("statement_binding_mismatch")
		}
	}
	return &st.s, nil
}

// bindTrust checks that the statement binds the current trust state.
func (r *run) bindTrust(s *statement) *fail {
	if !r.pins[s.boundID] || (s.boundID != r.sr.identity && r.srHistory[s.boundID] == nil) {
		return mm("trust_state_mismatch")
	}
	if s.authority != r.authorityID {
		return mm("trust_state_mismatch")
	}
	if !r.acceptedRev[s.revState] {
		return mm("trust_state_mismatch")
	}
	return nil
}

// boundSigners returns the signers of the registry the statement binds: the
// current one, or a pinned, present and valid historical one
// (docs/ledger.md, Signer registry).
func (r *run) boundSigners(identity string, mode pairMode) map[string]*signer {
	if mode == pairReceipt || identity == r.sr.identity {
		return r.sr.signers
	}
	if h := r.srHistory[identity]; h != nil {
		return h.signers
	}
	return r.sr.signers
}

type parsedStatement struct {
	s         statement
	doc       map[string]any
	kind      string
	schema    string
	media     string
	objSHA    string
	objSize   int64
	semID     string
	keyID     string
	profile   string
	authority map[string]string
}

// parseStatement checks the decoded payload (docs/ledger.md, Signatures):
// canonical + LF, the 18 keys and their formats. Equality with the object is
// checked later.
func parseStatement(payload []byte) (*parsedStatement, *fail) {
	bad := uv("statement_malformed")
	v, err := checkCanonicalLF(payload)
	if err != nil {
		return nil, bad
	}
	doc, _ := asObj(v)
	if doc == nil || !exactKeys(doc, statementKeys...) {
		return nil, bad
	}
	p := &parsedStatement{doc: doc}
	var ok bool
	if s, _ := getStr(doc, "schema_version"); s != schemaOuterStatement {
		return nil, bad
	}
	if p.kind, ok = getStr(doc, "object_kind"); !ok || !isKind(p.kind) {
		return nil, bad
	}
	if p.schema, ok = getStr(doc, "object_schema_version"); !ok {
		return nil, bad
	}
	if p.media, ok = getStr(doc, "object_media_type"); !ok {
		return nil, bad
	}
	if p.objSHA, ok = getDigest(doc, "object_sha256"); !ok {
		return nil, bad
	}
	if p.objSize, ok = getInt(doc, "object_size_bytes"); !ok || p.objSize < 1 {
		return nil, bad
	}
	if p.semID, ok = getDigest(doc, "semantic_identity_sha256"); !ok {
		return nil, bad
	}
	si, _ := asObj(doc["source_issuer"])
	if si == nil || !exactKeys(si, issuerKeys...) {
		return nil, bad
	}
	for _, k := range issuerKeys {
		if _, ok := getStr(si, k); !ok {
			return nil, bad
		}
	}
	if p.s.boundID, ok = getDigest(doc, "signer_registry_sha256"); !ok {
		return nil, bad
	}
	if p.s.authority, ok = getDigest(doc, "authority_state_sha256"); !ok {
		return nil, bad
	}
	if p.s.revState, ok = getDigest(doc, "revocation_state_sha256"); !ok {
		return nil, bad
	}
	if p.s.issued, ok = getTime(doc, "issued_at"); !ok {
		return nil, bad
	}
	if p.s.notBefore, ok = getTime(doc, "not_before"); !ok || p.s.notBefore.After(p.s.issued) {
		return nil, bad
	}
	if p.s.expires, p.s.expNull, ok = getTimeOrNull(doc, "expires_at"); !ok || (!p.s.expNull && !p.s.expires.After(p.s.issued)) {
		return nil, bad
	}
	if _, ok = getDigest(doc, "request_id_sha256"); !ok {
		return nil, bad
	}
	if p.keyID, ok = getStr(doc, "key_id"); !ok {
		return nil, bad
	}
	p.profile, _ = getStr(doc, "signature_profile")
	sa, _ := asObj(doc["signing_authority"])
	if sa == nil {
		return nil, bad
	}
	p.authority = map[string]string{}
	for k, v := range sa {
		s, ok := v.(string)
		if !ok {
			return nil, bad
		}
		p.authority[k] = s
	}
	a := p.authority
	commonOK := a["repository"] == evidenceRepo && a["repository_id"] == evidenceRepoID &&
		a["repository_owner_id"] == evidenceRepoOwnerID && a["ref"] == "refs/heads/main" &&
		isHex40(a["source_commit"]) && a["environment"] != ""
	switch p.profile {
	case "software-ed25519-dsse-v1":
		if !exactKeys(sa, append(append([]string{}, issuerKeys...), "key_origin")...) || !commonOK ||
			a["workflow"] != ".github/workflows/sign-production-evidence-software.yml" || a["key_origin"] != "software" ||
			!isOAEd(p.keyID) {
			return nil, bad
		}
	case "aws-kms-p256-dsse-v1":
		if !exactKeys(sa, append(append([]string{}, issuerKeys...), "aws_account_id", "aws_region", "kms_key_arn",
			"kms_key_spec", "kms_signing_algorithm", "kms_message_type", "role_arn")...) || !commonOK ||
			a["workflow"] != ".github/workflows/sign-production-evidence.yml" || a["aws_account_id"] != "992382684924" ||
			a["aws_region"] != "us-east-1" || !isKMSArn(a["kms_key_arn"]) || a["kms_key_spec"] != "ECC_NIST_P256" ||
			a["kms_signing_algorithm"] != "ECDSA_SHA_256" || a["kms_message_type"] != "DIGEST" ||
			a["role_arn"] != "arn:aws:iam::992382684924:role/openadapt-public-trust-signer" || !isOAP256(p.keyID) {
			return nil, bad
		}
	default:
		return nil, bad
	}
	return p, nil
}

// verifyDSSE verifies one DSSE signature over PAE(payloadType, payload)
// through sigstore's DSSE verifier adapter, giving it the registry key id
// (docs/ledger.md, Signatures). sigstore-go's high-level verifier cannot be
// used: it derives a SHA256 key id that never matches the registry's and skips
// the signature.
func verifyDSSE(ctx context.Context, sg *signer, keyid, payloadB64, sigB64 string, sigBytes []byte) bool {
	var (
		sv  signature.Verifier
		err error
	)
	switch pub := sg.PublicKey.(type) {
	case ed25519.PublicKey:
		if len(sigBytes) != ed25519.SignatureSize {
			return false
		}
		sv, err = signature.LoadVerifier(pub, crypto.Hash(0))
	case *ecdsa.PublicKey:
		// LoadVerifier accepts IEEE P1363 and high-S signatures; the KMS
		// profile requires strict DER with s ≤ n/2.
		if !strictLowSDER(pub, sigBytes) {
			return false
		}
		sv, err = signature.LoadVerifier(pub, crypto.SHA256)
	default:
		return false
	}
	if err != nil {
		return false
	}
	ev, err := ssldsse.NewEnvelopeVerifier(&sigdsse.VerifierAdapter{SignatureVerifier: sv, Pub: sg.PublicKey, PubKeyID: keyid})
	if err != nil {
		return false
	}
	env := &ssldsse.Envelope{
		PayloadType: payloadTypeStatement,
		Payload:     payloadB64,
		Signatures:  []ssldsse.Signature{{KeyID: keyid, Sig: sigB64}},
	}
	accepted, err := ev.Verify(ctx, env)
	return err == nil && len(accepted) == 1
}

func strictLowSDER(pub *ecdsa.PublicKey, sig []byte) bool {
	var rs struct{ R, S *big.Int }
	rest, err := asn1.Unmarshal(sig, &rs)
	if err != nil || len(rest) != 0 || rs.R == nil || rs.S == nil || rs.R.Sign() <= 0 || rs.S.Sign() <= 0 {
		return false
	}
	again, err := asn1.Marshal(rs)
	if err != nil || string(again) != string(sig) {
		return false
	}
	half := new(big.Int).Rsh(pub.Curve.Params().N, 1)
	return rs.S.Cmp(half) <= 0
}
