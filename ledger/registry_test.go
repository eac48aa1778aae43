package ledger

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"math/big"
	"os"
	"path/filepath"
	"testing"

	lg "github.com/OpenAdaptAI/openadapt-agent/internal/testing/ledgergen"
)

// The legacy empty registry (no signer_registry_history) uses the head form
// without that field (docs/ledger.md, Registry).
func TestLegacyRegistryHead(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "ledger", "extra", "evidence-registry.rev1-legacy-empty.json"))
	if err != nil {
		t.Fatal(err)
	}
	reg, d := parseRegistry(raw)
	if d != "" || !reg.legacy || reg.head[:15] != "sha256:1b0c8362" {
		t.Fatalf("legacy registry: %q %+v", d, reg)
	}
}

// The live registry recomputes to head d00a5f4f… with 74 entries.
func TestLiveRegistryHead(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "ledger", "snapshot", "evidence-registry.json"))
	if err != nil {
		t.Fatal(err)
	}
	reg, d := parseRegistry(raw)
	if d != "" || len(reg.entries) != 74 || reg.head[:15] != "sha256:d00a5f4f" || reg.revision != 3 {
		t.Fatalf("live registry: %q", d)
	}
}

// TestPreviousRegistryChain: rows bound to an older revision verify through
// the append-only chain (docs/ledger.md, Registry).
func TestPreviousRegistryChain(t *testing.T) {
	var prev map[string]any
	o := genOptions(t)
	o.StaticTargets = nil
	o.Hooks.AfterBuild = func(r *lg.Root) {
		prev = lg.Clone(r.Registry).(map[string]any)
		// Revision 2 keeps revision 1's entries (an exact prefix).
		r.Registry["revision"] = int64(2)
		r.Registry["previous_registry_head_sha256"] = prev["registry_head_sha256"]
		r.RecomputeHead()
		// The ledgers keep their revision-1 references.
	}
	dir, r := generate(t, o)
	prevPath := filepath.Join(t.TempDir(), "rev1.json")
	if err := lg.WriteJSON(prevPath, prev); err != nil {
		t.Fatal(err)
	}
	// Bound through previous_registry_head_sha256 alone.
	res := verifyGenerated(t, dir, r, wfDoc)
	if res.Integrity != IntegrityVerified || res.WorkflowAdmissions[0].Verdict != VerdictActive {
		t.Fatalf("rev-1 rows: %s %+v", res.Integrity, res.WorkflowAdmissions[0])
	}
	// With the previous registry supplied, the chain is checked.
	res = verifyGenerated(t, dir, r, wfDoc, WithPreviousRegistry(prevPath))
	if res.Integrity != IntegrityVerified {
		t.Fatalf("with previous registry: %s", res.Integrity)
	}
	// A previous registry that is not a prefix breaks the chain.
	bad := lg.Clone(prev).(map[string]any)
	es := bad["entries"].([]any)
	bad["entries"] = es[:len(es)-2]
	r2 := &lg.Root{Registry: bad}
	r2.RecomputeHead()
	badPath := filepath.Join(t.TempDir(), "bad.json")
	_ = lg.WriteJSON(badPath, bad)
	res = verifyGenerated(t, dir, r, wfDoc, WithPreviousRegistry(badPath))
	if d := deref(res.WorkflowAdmissions[0].Detail); d != "registry_not_append_only" {
		t.Fatalf("broken chain: %q", d)
	}
}

// The P-256 key-id derivation vector (docs/ledger.md, Trust root).
func TestP256KeyIDVector(t *testing.T) {
	d, _ := hex.DecodeString("2f29c1f30c9db50a15e08ddd4f5f49d1f5c621d40ad72835d11065448148d8c7")
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	if err != nil {
		t.Fatal(err)
	}
	spki, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(spki)
	point, _ := k.PublicKey.Bytes()
	m := map[string]any{
		"algorithm": "ecdsa-p256-sha256", "key_origin": "aws-kms",
		"key_id":                     "oa-public-trust-p256-93dbc7899ed2892d",
		"kms_key_arn":                "arn:aws:kms:us-east-1:992382684924:key/12345678-1234-1234-1234-123456789abc",
		"public_key":                 base64.RawURLEncoding.EncodeToString(point),
		"public_key_spki_der_base64": base64.StdEncoding.EncodeToString(spki),
		"public_key_sha256":          "sha256:" + hex.EncodeToString(sum[:]),
		"signature_encoding":         "asn1-der-low-s-base64-rfc4648-padded",
		"statement_schema_versions":  []any{schemaOuterStatement},
		"allowed_usages":             []any{"production-public-evidence"},
		"allowed_kinds":              []any{"qualification-release"},
		"allowed_workflows":          []any{"https://github.com/OpenAdaptAI/.github/.github/workflows/sign-production-evidence.yml@refs/heads/main"},
		"allowed_ref_prefixes":       []any{"refs/heads/main"},
		"allowed_environments":       []any{"public-trust-signing"},
		"status":                     "active", "revoked_at": nil,
	}
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != "sha256:93dbc7899ed2892d0215567d8f8f7a2b00d44246d8c6a9f8cb40c4355c1234d3" {
		t.Fatalf("public_key_sha256 %s", got)
	}
	s, ok := parseSigner(m, genNow, genNow, true)
	if !ok || s.KeyID != "oa-public-trust-p256-93dbc7899ed2892d" {
		t.Fatalf("KMS signer rejected")
	}
	m["key_id"] = "oa-public-trust-p256-93dbc7899ed2892e"
	if _, ok := parseSigner(m, genNow, genNow, true); ok {
		t.Fatal("wrong derived key id accepted")
	}
	// Strict DER, low S (docs/ledger.md, Signatures): a high-S twin of a valid
	// signature is refused, as is a non-minimal DER spelling.
	msg := sha256.Sum256([]byte("pae"))
	for i := 0; i < 8; i++ {
		r, sv, err := ecdsa.Sign(rand.Reader, k, msg[:])
		if err != nil {
			t.Fatal(err)
		}
		n := k.Curve.Params().N
		low, high := sv, new(big.Int).Sub(n, sv)
		if low.Cmp(new(big.Int).Rsh(n, 1)) > 0 {
			low, high = high, low
		}
		lowDER, _ := asn1.Marshal(struct{ R, S *big.Int }{r, low})
		highDER, _ := asn1.Marshal(struct{ R, S *big.Int }{r, high})
		if !strictLowSDER(&k.PublicKey, lowDER) || strictLowSDER(&k.PublicKey, highDER) {
			t.Fatal("low-S rule")
		}
		if strictLowSDER(&k.PublicKey, append(lowDER, 0)) {
			t.Fatal("trailing bytes accepted")
		}
	}
}
