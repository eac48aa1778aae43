package ledger

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"io/fs"
	"time"
)

// globals runs the global checks once per run (docs/ledger.md, What is
// checked): the registry, its history, the signer registry and the trust
// state. It returns "" or the global detail.
func (r *run) globals(ctx context.Context) string {
	if r.globalDone {
		return r.global
	}
	r.globalDone = true
	r.global = r.computeGlobals(ctx)
	return r.global
}

func (r *run) loadRegistry() string {
	if r.reg != nil || r.regDetail != "" {
		return r.regDetail
	}
	raw, err := readFS(r.root, "evidence-registry.json")
	if err != nil {
		r.regDetail = "registry_missing"
		return r.regDetail
	}
	r.regRaw = raw
	reg, d := parseRegistry(raw)
	if d != "" {
		r.regDetail = d
		return d
	}
	r.reg = reg
	return ""
}

func (r *run) computeGlobals(ctx context.Context) string {
	if d := r.loadRegistry(); d != "" {
		return d
	}
	var prev []*registry
	for _, raw := range r.cfg.previous {
		p, d := parseRegistry(raw)
		if d != "" {
			return d
		}
		prev = append(prev, p)
	}
	bound, d := headChain(r.reg, prev)
	if d != "" {
		return d
	}
	r.bound = bound
	if d := r.checkSignerRegistry(); d != "" {
		return d
	}
	if d := r.checkTrustState(ctx); d != "" {
		return d
	}
	return ""
}

// loadSignerRegistry reads and validates the signer registry named by a
// pointer (docs/ledger.md, Signer registry).
func (r *run) loadSignerRegistry(p signerPointer) (*signerRegistry, string) {
	raw, err := readFS(r.root, p.Path)
	if err != nil {
		return nil, "signer_registry_missing"
	}
	if sha256Digest(raw) != p.SHA256 {
		return nil, "signer_registry_invalid"
	}
	v, err := checkCanonicalLF(raw)
	if err != nil {
		return nil, "signer_registry_invalid"
	}
	doc, ok := asObj(v)
	if !ok {
		return nil, "signer_registry_invalid"
	}
	id, err := domainDigest(domSignerRegistry, doc)
	if err != nil || id != p.Identity {
		return nil, "signer_registry_invalid"
	}
	sr, ok := parseSignerRegistry(doc)
	if !ok || sr.revision != p.Revision {
		return nil, "signer_registry_invalid"
	}
	sr.identity, sr.sha256 = id, p.SHA256
	return sr, ""
}

func (r *run) checkSignerRegistry() string {
	if r.reg.signer == nil {
		return "signer_registry_missing"
	}
	sr, d := r.loadSignerRegistry(*r.reg.signer)
	if d != "" {
		return d
	}
	if !r.pins[sr.identity] {
		return "signer_registry_not_pinned"
	}
	// The newest upstream rule: a signer registry is valid until revoked.
	// (loadSignerRegistry's parse records it: the file is read once.)
	if sr.expires {
		return "signer_registry_invalid"
	}
	if sr.generated.After(r.at) {
		return "signer_registry_not_active"
	}
	r.sr = sr
	// Historical registries an object may bind: pinned, present and valid.
	r.srHistory = map[string]*signerRegistry{}
	for _, p := range r.reg.history {
		if p.Identity == sr.identity || !r.pins[p.Identity] {
			continue
		}
		if h, d := r.loadSignerRegistry(p); d == "" {
			// Keys must still be active in the current registry; that is
			// checked per admission as a revocation (docs/ledger.md, Revocation).
			r.srHistory[h.identity] = h
		}
	}
	return ""
}

var receiptIssuerKeys = []string{"repository", "repository_id", "repository_owner_id", "workflow", "ref", "source_commit", "environment"}

// receipt is a verified trust-state receipt.
type receipt struct {
	obj      *object
	id       string
	observed time.Time
	revision int64
	previous string
}

// checkTrustState verifies the authority receipt A and revocation receipt R
// (docs/ledger.md, Trust state) and records the accepted revocation states and
// the revoked set.
func (r *run) checkTrustState(ctx context.Context) string {
	ae := r.reg.lastOfKind(kindAuthority)
	re := r.reg.lastOfKind(kindRevocation)
	if ae == nil || re == nil {
		return "trust_state_missing"
	}
	a, d := r.verifyReceipt(ctx, ae)
	if d != "" {
		return d
	}
	rr, d := r.verifyReceipt(ctx, re)
	if d != "" {
		return d
	}
	// The receipts bind each other and the signer registry.
	ad, rd := a.obj.doc, rr.obj.doc
	if s, _ := getStr(ad, "signer_registry_sha256"); s != r.sr.sha256 {
		return "trust_state_invalid"
	}
	if s, _ := getStr(ad, "signer_registry_identity_sha256"); s != r.sr.identity {
		return "trust_state_invalid"
	}
	if n, _ := getInt(ad, "signer_registry_revision"); n != r.sr.revision {
		return "trust_state_invalid"
	}
	if s, _ := getStr(rd, "signer_registry_sha256"); s != r.sr.identity {
		return "trust_state_invalid"
	}
	if s, _ := getStr(rd, "authority_state_sha256"); s != a.id {
		return "trust_state_invalid"
	}
	r.authorityID = a.id
	// Accepted revocation states: R and its registered predecessors.
	r.acceptedRev = map[string]bool{rr.id: true}
	cur := rr
	for cur.previous != "" {
		var prevEntry *entry
		for _, e := range r.reg.entries {
			if e.Kind == kindRevocation && e.SemanticID == cur.previous {
				prevEntry = e
				break
			}
		}
		if prevEntry == nil {
			break
		}
		p, d := r.verifyReceipt(ctx, prevEntry)
		if d != "" || p.revision >= cur.revision || p.observed.After(cur.observed) {
			break
		}
		if r.acceptedRev[p.id] {
			break
		}
		r.acceptedRev[p.id] = true
		cur = p
	}
	// The revoked set (docs/ledger.md, Revocation).
	r.revoked = map[[2]string]bool{}
	revs, _ := asList(rd["revocations"])
	for _, it := range revs {
		m, _ := asObj(it)
		k, _ := getStr(m, "subject_kind")
		id, _ := getStr(m, "subject_id")
		r.revoked[[2]string{k, id}] = true
	}
	return ""
}

// verifyReceipt checks one trust-state receipt entry (docs/ledger.md, Trust
// state).
func (r *run) verifyReceipt(ctx context.Context, e *entry) (*receipt, string) {
	o, d := r.load(e)
	if d == "object_missing" {
		return nil, "trust_state_missing"
	}
	if d != "" {
		return nil, "trust_state_invalid"
	}
	// 1. Readback; the semantic identity is the receipt's own id field.
	if readback(o) != "" {
		return nil, "trust_state_invalid"
	}
	doc := o.doc
	isA := e.Kind == kindAuthority
	rc := &receipt{obj: o}
	// 2. Closed keys.
	if isA {
		if !exactKeys(doc, "schema_version", "authority_state_sha256", "status", "signer_registry_sha256",
			"signer_registry_identity_sha256", "signer_registry_revision", "evidence_authority_sha256", "observed_at",
			"not_before", "expires_at", "issuer_key_id", "algorithm", "signing_statement", "signature", "issuer") {
			return nil, "trust_state_invalid"
		}
		if s, _ := getStr(doc, "status"); s != "active" {
			return nil, "trust_state_invalid"
		}
		for _, k := range []string{"authority_state_sha256", "signer_registry_sha256", "signer_registry_identity_sha256", "evidence_authority_sha256"} {
			if _, ok := getDigest(doc, k); !ok {
				return nil, "trust_state_invalid"
			}
		}
		if n, ok := getInt(doc, "signer_registry_revision"); !ok || n < 1 {
			return nil, "trust_state_invalid"
		}
		rc.id, _ = getStr(doc, "authority_state_sha256")
	} else {
		if !exactKeys(doc, "schema_version", "revocation_state_sha256", "previous_revocation_state_sha256", "revision",
			"status", "authority_state_sha256", "signer_registry_sha256", "revocations", "observed_at", "not_before",
			"expires_at", "issuer_key_id", "algorithm", "signing_statement", "signature", "issuer") {
			return nil, "trust_state_invalid"
		}
		if s, _ := getStr(doc, "status"); s != "current" {
			return nil, "trust_state_invalid"
		}
		var ok bool
		if rc.revision, ok = getInt(doc, "revision"); !ok || rc.revision < 1 {
			return nil, "trust_state_invalid"
		}
		prev, isNull, ok := getStrOrNull(doc, "previous_revocation_state_sha256")
		if !ok || isNull != (rc.revision == 1) || (!isNull && !isDigest(prev)) {
			return nil, "trust_state_invalid"
		}
		rc.previous = prev
		for _, k := range []string{"revocation_state_sha256", "authority_state_sha256", "signer_registry_sha256"} {
			if _, ok := getDigest(doc, k); !ok {
				return nil, "trust_state_invalid"
			}
		}
		revs, ok := asList(doc["revocations"])
		if !ok {
			return nil, "trust_state_invalid"
		}
		seen := map[string]bool{}
		for _, it := range revs {
			m, ok := asObj(it)
			if !ok || !exactKeys(m, "subject_kind", "subject_id", "revoked_at", "reason_code") {
				return nil, "trust_state_invalid"
			}
			c, err := canonical(m)
			if err != nil || seen[string(c)] {
				return nil, "trust_state_invalid"
			}
			seen[string(c)] = true
		}
		rc.id, _ = getStr(doc, "revocation_state_sha256")
	}
	if s, _ := getStr(doc, "schema_version"); s != e.Schema {
		return nil, "trust_state_invalid"
	}
	if s, _ := getStr(doc, "algorithm"); s != "ed25519" {
		return nil, "trust_state_invalid"
	}
	// 3. Issuer.
	iss, _ := asObj(doc["issuer"])
	wantWF, wantEnv := ".github/workflows/qualification-revocation-state.yml", "qualification-revocation-state"
	if isA {
		wantWF, wantEnv = ".github/workflows/qualification-authority-state.yml", "qualification-authority-state"
	}
	if iss == nil || !exactKeys(iss, receiptIssuerKeys...) {
		return nil, "trust_state_invalid"
	}
	is := func(k string) string { s, _ := getStr(iss, k); return s }
	if is("repository") != opsRepo || is("repository_id") != opsRepoID || is("repository_owner_id") != evidenceRepoOwnerID ||
		is("ref") != "refs/heads/main" || !isHex40(is("source_commit")) || is("workflow") != wantWF ||
		is("environment") != wantEnv {
		return nil, "trust_state_invalid"
	}
	// 4. Window.
	nb, ok1 := getTime(doc, "not_before")
	obs, ok2 := getTime(doc, "observed_at")
	exp, expNull, ok3 := getTimeOrNull(doc, "expires_at")
	if !ok1 || !ok2 || !ok3 || nb.After(obs) || (!expNull && !obs.Before(exp)) {
		return nil, "trust_state_invalid"
	}
	rc.observed = obs
	if r.at.Before(nb) || (!expNull && !r.at.Before(exp)) {
		return nil, "trust_state_not_active"
	}
	// 5. Recompute the id.
	dom, idKey := domRevocationState, "revocation_state_sha256"
	sigDom := domRevocationReceiptSig
	if isA {
		dom, idKey, sigDom = domAuthorityState, "authority_state_sha256", domAuthorityReceiptSig
	}
	id, err := domainDigest(dom, without(doc, idKey, "signature", "signing_statement"))
	if err != nil || id != rc.id {
		return nil, "trust_state_invalid"
	}
	// 6. Signing statement.
	ss, _ := asObj(doc["signing_statement"])
	if ss == nil || !exactKeys(ss, "schema_version", "object_schema_version", "signature_domain",
		"unsigned_object_sha256", "unsigned_size_bytes", "commitment_scheme") {
		return nil, "trust_state_invalid"
	}
	unsigned, err := canonicalLF(without(doc, "signature", "signing_statement"))
	if err != nil {
		return nil, "trust_state_invalid"
	}
	sv := func(k string) string { s, _ := getStr(ss, k); return s }
	size, _ := getInt(ss, "unsigned_size_bytes")
	if sv("schema_version") != schemaInnerStatement || sv("object_schema_version") != e.Schema ||
		sv("signature_domain") != sigDom+"\x00" || sv("unsigned_object_sha256") != sha256Digest(unsigned) ||
		size != int64(len(unsigned)) || sv("commitment_scheme") != "sha256-canonical-json-lf" {
		return nil, "trust_state_invalid"
	}
	// 7. The inner signature: Ed25519 over canonical(signing_statement) + LF.
	sigStr, _ := getStr(doc, "signature")
	if !isSig86(sigStr) {
		return nil, "trust_state_invalid"
	}
	sig, err := base64.StdEncoding.DecodeString(sigStr)
	if err != nil {
		return nil, "trust_state_invalid"
	}
	kid, _ := getStr(doc, "issuer_key_id")
	sg := r.sr.signers[kid]
	if sg == nil || sg.Outer || len(kid) < 11 || kid[:11] != "qa-ed25519-" || !sg.Active || sg.Algorithm != "ed25519" ||
		!contains(sg.Usages, e.Kind) {
		return nil, "trust_state_invalid"
	}
	wf := "https://github.com/" + is("repository") + "/" + is("workflow") + "@" + is("ref")
	if !contains(sg.Workflows, wf) || !refAllowed(sg.RefPrefixes, is("ref")) {
		return nil, "trust_state_invalid"
	}
	msg, err := canonicalLF(ss)
	if err != nil {
		return nil, "trust_state_invalid"
	}
	pub, _ := sg.PublicKey.(ed25519.PublicKey)
	if pub == nil || !ed25519.Verify(pub, msg, sig) {
		return nil, "trust_state_invalid"
	}
	// 8. The outer bundle, when present.
	if be := r.reg.adjacentBundle(e); be != nil {
		if _, err := fs.Stat(r.root, be.Path); err != nil {
			r.note("receipt outer bundle not supplied (" + e.Kind + "); the inner signature authenticates it")
		} else if _, f := r.verifyPair(ctx, o, pairReceipt); f != nil {
			return nil, "trust_state_invalid"
		}
	}
	return rc, ""
}
