package ledger

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"time"
)

// signer is one validated signer of a signer registry (docs/ledger.md, Signer
// registry).
type signer struct {
	KeyID        string
	Algorithm    string // ed25519 | ecdsa-p256-sha256
	Origin       string // software | aws-kms | "" (inner)
	Outer        bool   // a public-trust signer
	PublicKey    any    // ed25519.PublicKey or *ecdsa.PublicKey
	PublicKeySHA string
	KMSArn       string
	Usages       []string
	Kinds        []string
	Workflows    []string
	RefPrefixes  []string
	Environments []string
	Active       bool
}

// signerRegistry is a validated signer registry.
type signerRegistry struct {
	identity  string
	sha256    string
	revision  int64
	generated time.Time
	expires   bool // expires_at is a time, not null
	signers   map[string]*signer
}

var ed25519SPKIPrefix = []byte{0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00}

// parseSignerRegistry validates a signer registry document (docs/ledger.md,
// Signer registry) and returns it, or false. The caller checks the pointer,
// pin and time.
func parseSignerRegistry(doc map[string]any) (*signerRegistry, bool) {
	if !exactKeys(doc, "schema_version", "revision", "generated_at", "expires_at", "signers") {
		return nil, false
	}
	if s, _ := getStr(doc, "schema_version"); s != schemaSignerRegistry {
		return nil, false
	}
	sr := &signerRegistry{signers: map[string]*signer{}}
	var ok bool
	if sr.revision, ok = getInt(doc, "revision"); !ok || sr.revision < 1 {
		return nil, false
	}
	if sr.generated, ok = getTime(doc, "generated_at"); !ok {
		return nil, false
	}
	exp, expNull, ok := getTimeOrNull(doc, "expires_at")
	if !ok || (!expNull && !exp.After(sr.generated)) {
		return nil, false
	}
	sr.expires = !expNull
	list, ok := asList(doc["signers"])
	if !ok || len(list) == 0 {
		return nil, false
	}
	for _, item := range list {
		m, ok := asObj(item)
		if !ok {
			return nil, false
		}
		s, ok := parseSigner(m, sr.generated, exp, expNull)
		if !ok || sr.signers[s.KeyID] != nil {
			return nil, false
		}
		sr.signers[s.KeyID] = s
	}
	return sr, true
}

func parseSigner(m map[string]any, generated, expires time.Time, expNull bool) (*signer, bool) {
	s := &signer{}
	s.Algorithm, _ = getStr(m, "algorithm")
	origin, hasOrigin := getStr(m, "key_origin")
	common := []string{"algorithm", "key_id", "public_key", "public_key_spki_der_base64", "public_key_sha256",
		"statement_schema_versions", "allowed_usages", "allowed_workflows", "allowed_ref_prefixes", "status", "revoked_at"}
	switch {
	case s.Algorithm == "ed25519" && hasOrigin && origin == "software":
		s.Outer, s.Origin = true, origin
		if !exactKeys(m, append(common, "key_origin", "signature_encoding", "allowed_kinds", "allowed_environments")...) {
			return nil, false
		}
	case s.Algorithm == "ecdsa-p256-sha256" && hasOrigin && origin == "aws-kms":
		s.Outer, s.Origin = true, origin
		if !exactKeys(m, append(common, "key_origin", "signature_encoding", "allowed_kinds", "allowed_environments", "kms_key_arn")...) {
			return nil, false
		}
	case s.Algorithm == "ed25519":
		if hasOrigin {
			if !exactKeys(m, append(common, "key_origin", "kms_key_arn", "signature_encoding", "allowed_environments")...) {
				return nil, false
			}
			s.Origin = origin
		} else if !exactKeys(m, common...) {
			return nil, false
		}
	default:
		return nil, false
	}
	var ok bool
	if s.KeyID, ok = getStr(m, "key_id"); !ok {
		return nil, false
	}
	// Encodings and derived values.
	pkStr, _ := getStr(m, "public_key")
	raw, err := base64.RawURLEncoding.Strict().DecodeString(pkStr)
	if err != nil || base64.RawURLEncoding.EncodeToString(raw) != pkStr {
		return nil, false
	}
	spkiStr, _ := getStr(m, "public_key_spki_der_base64")
	spki, err := base64.StdEncoding.Strict().DecodeString(spkiStr)
	if err != nil || base64.StdEncoding.EncodeToString(spki) != spkiStr {
		return nil, false
	}
	spkiSum := sha256.Sum256(spki)
	s.PublicKeySHA, _ = getStr(m, "public_key_sha256")
	if s.PublicKeySHA != "sha256:"+hex.EncodeToString(spkiSum[:]) {
		return nil, false
	}
	switch s.Algorithm {
	case "ed25519":
		if len(raw) != ed25519.PublicKeySize || string(spki) != string(append(append([]byte{}, ed25519SPKIPrefix...), raw...)) {
			return nil, false
		}
		s.PublicKey = ed25519.PublicKey(raw)
		rawSum := sha256.Sum256(raw)
		id16 := hex.EncodeToString(rawSum[:])[:16]
		want := "qa-ed25519-" + id16
		if s.Outer {
			want = "oa-public-trust-ed25519-" + id16
		}
		if s.KeyID != want {
			return nil, false
		}
	case "ecdsa-p256-sha256":
		pub, err := x509.ParsePKIXPublicKey(spki)
		if err != nil {
			return nil, false
		}
		ec, ok := pub.(*ecdsa.PublicKey)
		if !ok || ec.Curve != elliptic.P256() {
			return nil, false
		}
		point, err := ec.Bytes()
		if err != nil || len(raw) != 65 || string(point) != string(raw) {
			return nil, false
		}
		s.PublicKey = ec
		if s.KeyID != "oa-public-trust-p256-"+hex.EncodeToString(spkiSum[:])[:16] {
			return nil, false
		}
	}
	// Allowlists.
	schemas, ok := sortedUniqueNonEmpty(m["statement_schema_versions"])
	if !ok {
		return nil, false
	}
	if s.Usages, ok = sortedUniqueNonEmpty(m["allowed_usages"]); !ok {
		return nil, false
	}
	if s.Workflows, ok = sortedUniqueNonEmpty(m["allowed_workflows"]); !ok {
		return nil, false
	}
	if s.RefPrefixes, ok = sortedUniqueNonEmpty(m["allowed_ref_prefixes"]); !ok {
		return nil, false
	}
	if _, has := m["allowed_environments"]; has {
		if s.Environments, ok = sortedUniqueNonEmpty(m["allowed_environments"]); !ok {
			return nil, false
		}
	}
	if s.Outer {
		if s.Kinds, ok = sortedUniqueNonEmpty(m["allowed_kinds"]); !ok {
			return nil, false
		}
		for _, k := range s.Kinds {
			if _, reg := regularKinds[k]; !reg {
				return nil, false
			}
		}
		if !eqList(schemas, schemaOuterStatement) || !eqList(s.Usages, "production-public-evidence") ||
			!eqList(s.RefPrefixes, "refs/heads/main") {
			return nil, false
		}
		enc, _ := getStr(m, "signature_encoding")
		if s.Origin == "software" {
			if enc != "raw-64-base64-rfc4648-padded" ||
				!eqList(s.Workflows, "https://github.com/OpenAdaptAI/.github/.github/workflows/sign-production-evidence-software.yml@refs/heads/main") ||
				!eqList(s.Environments, "synthetic-qualification-evidence-decision") {
				return nil, false
			}
		} else {
			s.KMSArn, _ = getStr(m, "kms_key_arn")
			if enc != "asn1-der-low-s-base64-rfc4648-padded" || !isKMSArn(s.KMSArn) ||
				!eqList(s.Workflows, "https://github.com/OpenAdaptAI/.github/.github/workflows/sign-production-evidence.yml@refs/heads/main") ||
				!eqList(s.Environments, "public-trust-signing") {
				return nil, false
			}
		}
	} else {
		if !eqList(schemas, schemaInnerStatement) {
			return nil, false
		}
		for _, w := range s.Workflows {
			if !isInnerWF(w) {
				return nil, false
			}
		}
		for _, p := range s.RefPrefixes {
			if len(p) < 5 || p[:5] != "refs/" || containsDotDot(p) {
				return nil, false
			}
		}
		if s.Origin != "" {
			s.KMSArn, _ = getStr(m, "kms_key_arn")
		}
	}
	// Status.
	status, _ := getStr(m, "status")
	revokedAt, revNull, ok := getTimeOrNull(m, "revoked_at")
	if !ok {
		return nil, false
	}
	switch {
	case status == "active" && revNull:
		s.Active = true
	case status == "revoked" && !revNull:
		if revokedAt.Before(generated) || (!expNull && revokedAt.After(expires)) {
			return nil, false
		}
	default:
		return nil, false
	}
	return s, true
}

func eqList(l []string, want ...string) bool {
	if len(l) != len(want) {
		return false
	}
	for i := range l {
		if l[i] != want[i] {
			return false
		}
	}
	return true
}

func containsDotDot(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '.' && s[i+1] == '.' {
			return true
		}
	}
	return false
}

// refAllowed reports whether ref starts with one of the prefixes.
func refAllowed(prefixes []string, ref string) bool {
	for _, p := range prefixes {
		if len(ref) >= len(p) && ref[:len(p)] == p {
			return true
		}
	}
	return false
}
