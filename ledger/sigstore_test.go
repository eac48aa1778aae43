package ledger

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"

	lg "github.com/OpenAdaptAI/openadapt-agent/internal/testing/ledgergen"
)

const (
	testSAN    = "https://github.com/example/ledger-publisher/.github/workflows/sign.yml@refs/heads/main"
	testIssuer = "https://token.actions.githubusercontent.com"
)

// virtualSigstoreFiles writes a keyless bundle and trusted root for
// artifact from sigstore-go's in-memory CA (see ledgergen).
func virtualSigstoreFiles(t *testing.T, artifact []byte) (bundlePath, rootPath string) {
	t.Helper()
	b, r, err := lg.VirtualSigstoreFiles(artifact, t.TempDir(), testSAN, testIssuer)
	if err != nil {
		t.Fatal(err)
	}
	return b, r
}

func TestVerifyArtifactKeylessVirtualSigstore(t *testing.T) {
	artifact := []byte(`{"schema_version":"openadapt.production-workflow-admissions/v1"}` + "\n")
	bp, rp := virtualSigstoreFiles(t, artifact)
	base := SigstoreOptions{BundlePath: bp, TrustedRootPath: rp, CertificateIdentity: testSAN,
		CertificateOIDCIssuer: testIssuer, InsecureIgnoreSCT: true}
	ctx := context.Background()

	res, err := VerifyArtifact(ctx, ArtifactBytes(artifact), base)
	if err != nil {
		t.Fatalf("keyless verification failed: %v", err)
	}
	if !res.Verified || res.Signer == nil || res.Signer.SAN != testSAN || res.Signer.Issuer != testIssuer {
		t.Fatalf("result = %+v", res)
	}
	if len(res.Timestamps) == 0 || res.TlogLogIndex == nil {
		t.Fatalf("want verified timestamps and a tlog index, got %+v", res)
	}

	regexp := base
	regexp.CertificateIdentity, regexp.CertificateIdentityRegexp = "", `^https://github\.com/example/`
	regexp.CertificateOIDCIssuer, regexp.CertificateOIDCIssuerRegexp = "", `^https://token\.actions\.`
	if _, err := VerifyArtifact(ctx, ArtifactBytes(artifact), regexp); err != nil {
		t.Fatalf("regexp identity: %v", err)
	}

	for name, tc := range map[string]struct {
		art  []byte
		opts func(o *SigstoreOptions)
	}{
		"other artifact bytes": {art: append([]byte{}, append(artifact, ' ')...)},
		"wrong identity":       {art: artifact, opts: func(o *SigstoreOptions) { o.CertificateIdentity = "https://github.com/OpenAdaptAI/x" }},
		"wrong issuer":         {art: artifact, opts: func(o *SigstoreOptions) { o.CertificateOIDCIssuer = "https://accounts.example.com" }},
		"SCT required":         {art: artifact, opts: func(o *SigstoreOptions) { o.InsecureIgnoreSCT = false }},
	} {
		t.Run(name, func(t *testing.T) {
			o := base
			if tc.opts != nil {
				tc.opts(&o)
			}
			res, err := VerifyArtifact(ctx, ArtifactBytes(tc.art), o)
			if !errors.Is(err, ErrSigstoreVerification) || res == nil || res.Verified || res.Error == nil {
				t.Fatalf("want a verification failure, got %+v, %v", res, err)
			}
		})
	}
}

func TestVerifyArtifactInputErrors(t *testing.T) {
	artifact := []byte("x")
	bp, rp := virtualSigstoreFiles(t, artifact)
	ctx := context.Background()
	for name, o := range map[string]SigstoreOptions{
		"no bundle":           {TrustedRootPath: rp},
		"no root or key":      {BundlePath: bp},
		"two identities":      {BundlePath: bp, TrustedRootPath: rp, CertificateIdentity: "a", CertificateIdentityRegexp: "b"},
		"missing identity":    {BundlePath: bp, TrustedRootPath: rp, CertificateOIDCIssuer: testIssuer},
		"missing issuer":      {BundlePath: bp, TrustedRootPath: rp, CertificateIdentity: testSAN},
		"unreadable bundle":   {BundlePath: bp + ".nope", TrustedRootPath: rp, CertificateIdentity: testSAN, CertificateOIDCIssuer: testIssuer},
		"unreadable root":     {BundlePath: bp, TrustedRootPath: rp + ".nope", CertificateIdentity: testSAN, CertificateOIDCIssuer: testIssuer},
		"key with cert flags": {BundlePath: bp, KeyPath: rp, CertificateIdentity: testSAN},
		"key for cert bundle": {BundlePath: bp, KeyPath: rp},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := VerifyArtifact(ctx, ArtifactBytes(artifact), o)
			if !errors.Is(err, ErrInput) {
				t.Fatalf("want an input error, got %v", err)
			}
		})
	}
}

// TestVerifyArtifactPublicGoodSCT exercises the SCT path offline: the real
// public-good npm provenance bundle for sigstore@1.3.0 against the
// 2026-08-21 public-good trusted root (and the 2023 one).
func TestVerifyArtifactPublicGoodSCT(t *testing.T) {
	dir := filepath.Join("..", "testdata", "sigstore")
	art, err := ArtifactDigest("sha512", "76176ffa33808b54602c7c35de5c6e9a4deb96066dba6533f50ac234f4f1f4c6b3527515dc17c06fbe2860030f410eee69ea20079bd3a2c6f3dcf3b329b10751")
	if err != nil {
		t.Fatal(err)
	}
	for _, rootFile := range []string{"trusted_root-public-good-2026-08-21.json", "trusted_root-public-good-2023.json"} {
		o := SigstoreOptions{
			BundlePath:                filepath.Join(dir, "npm-sigstore-1.3.0-provenance.sigstore.json"),
			TrustedRootPath:           filepath.Join(dir, rootFile),
			CertificateIdentityRegexp: "^https://github.com/sigstore/sigstore-js/",
			CertificateOIDCIssuer:     "https://token.actions.githubusercontent.com",
		}
		res, err := VerifyArtifact(context.Background(), art, o)
		if err != nil {
			t.Fatalf("%s: %v", rootFile, err)
		}
		if !strings.HasPrefix(res.Signer.SAN, "https://github.com/sigstore/sigstore-js/") || res.TlogLogIndex == nil {
			t.Fatalf("%s: result %+v", rootFile, res)
		}
		o.CertificateIdentityRegexp = "^https://github.com/OpenAdaptAI/"
		res, err = VerifyArtifact(context.Background(), art, o)
		if !errors.Is(err, ErrSigstoreVerification) || res.Verified {
			t.Fatalf("%s: an OpenAdaptAI identity must not match: %v", rootFile, err)
		}
	}
}

// TestVerifyArtifactByKey: a key-signed bundle (ECDSA P-256 message
// signature, no tlog) verifies with --key and --insecure-ignore-tlog only.
func TestVerifyArtifactByKey(t *testing.T) {
	artifact := []byte("ledger bytes\n")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(artifact)
	sig, err := ecdsa.SignASN1(rand.Reader, key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	pb := &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle.v0.3+json",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: "test-key"}},
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: digest[:]},
			Signature:     sig,
		}},
	}
	bj, err := (&sgbundle.Bundle{Bundle: pb}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	dir := t.TempDir()
	bp, kp := filepath.Join(dir, "b.json"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(bp, bj, 0o644)
	_ = os.WriteFile(kp, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
	ctx := context.Background()
	o := SigstoreOptions{BundlePath: bp, KeyPath: kp, InsecureIgnoreTlog: true}
	res, err := VerifyArtifact(ctx, ArtifactBytes(artifact), o)
	if err != nil || !res.Verified || res.KeyHint == nil || *res.KeyHint != "test-key" {
		t.Fatalf("key bundle: %+v, %v", res, err)
	}
	if _, err := VerifyArtifact(ctx, ArtifactBytes([]byte("other\n")), o); !errors.Is(err, ErrSigstoreVerification) {
		t.Fatalf("other bytes: want a verification failure, got %v", err)
	}
	o.InsecureIgnoreTlog = false
	if _, err := VerifyArtifact(ctx, ArtifactBytes(artifact), o); !errors.Is(err, ErrOption) {
		t.Fatalf("no tlog without --insecure-ignore-tlog: want an option error, got %v", err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der2, _ := x509.MarshalPKIXPublicKey(&other.PublicKey)
	_ = os.WriteFile(kp, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der2}), 0o644)
	o.InsecureIgnoreTlog = true
	if _, err := VerifyArtifact(ctx, ArtifactBytes(artifact), o); !errors.Is(err, ErrSigstoreVerification) {
		t.Fatalf("other key: want a verification failure, got %v", err)
	}
}

// TestVerifyArtifactKeylessBlob: a keyless message-signature bundle (what
// cosign sign-blob produces) from the in-memory CA.
func TestVerifyArtifactKeylessBlob(t *testing.T) {
	artifact := []byte("a ledger file\n")
	bp, rp, err := lg.VirtualSigstoreBlobFiles(artifact, t.TempDir(), testSAN, testIssuer)
	if err != nil {
		t.Fatal(err)
	}
	o := SigstoreOptions{BundlePath: bp, TrustedRootPath: rp, CertificateIdentity: testSAN,
		CertificateOIDCIssuer: testIssuer, InsecureIgnoreSCT: true}
	res, err := VerifyArtifact(context.Background(), ArtifactBytes(artifact), o)
	if err != nil || !res.Verified || res.Signer == nil || len(res.Timestamps) < 2 {
		t.Fatalf("blob bundle: %+v %v", res, err)
	}
	sum := sha256.Sum256(artifact)
	art, _ := ArtifactDigest("sha256", hex.EncodeToString(sum[:]))
	if _, err := VerifyArtifact(context.Background(), art, o); err != nil {
		t.Fatalf("by digest: %v", err)
	}
	if _, err := VerifyArtifact(context.Background(), ArtifactBytes([]byte("another file\n")), o); !errors.Is(err, ErrSigstoreVerification) {
		t.Fatalf("other bytes: %v", err)
	}
}
