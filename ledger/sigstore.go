package ledger

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// SigstoreOptions configures the verification of an ordinary Sigstore bundle
// over an artifact (docs/ledger.md, Sigstore bundles over a ledger). Field
// names follow cosign's flags. Everything is local: there is no TUF and no
// network, ever.
type SigstoreOptions struct {
	// BundlePath is the Sigstore bundle (v0.1–v0.3 JSON). Required.
	BundlePath string
	// TrustedRootPath is a local trusted_root.json. Required for certificate
	// bundles, and for key bundles that carry tlog entries or timestamps.
	TrustedRootPath string
	// KeyPath is a PEM public key (ECDSA P-256/P-384, or Ed25519 for DSSE).
	KeyPath string
	// Exactly one of CertificateIdentity / CertificateIdentityRegexp, and
	// exactly one of CertificateOIDCIssuer / CertificateOIDCIssuerRegexp, is
	// required for a certificate bundle.
	CertificateIdentity         string
	CertificateIdentityRegexp   string
	CertificateOIDCIssuer       string
	CertificateOIDCIssuerRegexp string
	// InsecureIgnoreSCT drops the embedded-SCT requirement.
	InsecureIgnoreSCT bool
	// InsecureIgnoreTlog drops the transparency-log requirement.
	InsecureIgnoreTlog bool
}

func (o SigstoreOptions) validate() error {
	switch {
	case o.BundlePath == "":
		return fmt.Errorf("%w: a sigstore bundle path is required", ErrOption)
	case o.TrustedRootPath == "" && o.KeyPath == "":
		return fmt.Errorf("%w: --bundle needs --trusted-root or --key", ErrOption)
	case o.CertificateIdentity != "" && o.CertificateIdentityRegexp != "":
		return fmt.Errorf("%w: give only one of --certificate-identity and --certificate-identity-regexp", ErrOption)
	case o.CertificateOIDCIssuer != "" && o.CertificateOIDCIssuerRegexp != "":
		return fmt.Errorf("%w: give only one of --certificate-oidc-issuer and --certificate-oidc-issuer-regexp", ErrOption)
	case o.KeyPath != "" && (o.CertificateIdentity != "" || o.CertificateIdentityRegexp != "" ||
		o.CertificateOIDCIssuer != "" || o.CertificateOIDCIssuerRegexp != ""):
		return fmt.Errorf("%w: certificate identity flags do not apply with --key", ErrOption)
	}
	return nil
}

// Validate reports a missing or conflicting option as an error wrapping
// [ErrOption].
func (o SigstoreOptions) Validate() error { return o.validate() }

// Artifact is what a Sigstore bundle signs: the artifact's bytes, or only its
// digest.
type Artifact struct {
	data      []byte
	hasData   bool
	algorithm string
	digest    []byte
}

// ArtifactBytes is an artifact given by its exact bytes.
func ArtifactBytes(b []byte) Artifact { return Artifact{data: b, hasData: true} }

// ArtifactDigest is an artifact given by its digest: algorithm sha256,
// sha384 or sha512 and the lowercase hex digest. It returns an error wrapping
// [ErrOption] for a malformed digest.
func ArtifactDigest(algorithm, hexDigest string) (Artifact, error) {
	size := map[string]int{"sha256": 32, "sha384": 48, "sha512": 64}[algorithm]
	d, err := hex.DecodeString(hexDigest)
	if size == 0 || err != nil || len(d) != size || strings.ToLower(hexDigest) != hexDigest {
		return Artifact{}, fmt.Errorf("%w: artifact digest must be sha256|sha384|sha512 and lowercase hex", ErrOption)
	}
	return Artifact{algorithm: algorithm, digest: d}, nil
}

// readNoPath reads a regular file of at most lim (internal/util/fsutil); its
// error omits the path.
func readNoPath(ctx context.Context, p string, lim fsutil.Limit) ([]byte, error) {
	b, err := fsutil.ReadFile(ctx, p, lim)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, pe.Err
	}
	return b, err
}

// KeylessResult records a Sigstore bundle check (docs/ledger.md, Sigstore
// bundles over a ledger). It is the `keyless` member of the verification JSON.
type KeylessResult struct {
	Verified     bool                `json:"verified"`
	Error        *string             `json:"error"`
	Signer       *CertificateSigner  `json:"signer,omitempty"`
	KeyHint      *string             `json:"key_hint,omitempty"`
	Timestamps   []SigstoreTimestamp `json:"timestamps"`
	TlogLogIndex *int64              `json:"tlog_log_index"`
}

// CertificateSigner is the verified Fulcio identity.
type CertificateSigner struct {
	SAN    string `json:"san"`
	Issuer string `json:"issuer"`
}

// SigstoreTimestamp is one verified observer timestamp.
type SigstoreTimestamp struct {
	Type string `json:"type"`
	Time string `json:"time"`
	URI  string `json:"uri"`
}

// VerifyArtifact verifies the Sigstore bundle o.BundlePath over the artifact,
// fully offline, with sigstore-go v1.3.0 (docs/ledger.md, Sigstore bundles
// over a ledger): keyless with a certificate identity and issuer against
// o.TrustedRootPath, or by key.
//
// Unreadable or unparseable material (bundle, trusted root, key) and missing
// or conflicting options return (nil, error wrapping [ErrSigstoreInput] or
// [ErrOption]): exit 2. A bundle that does not verify returns a result with
// Verified false and Error set, together with an error wrapping
// [ErrSigstoreVerification]. The verification never reads the wall clock:
// certificates are checked at their observer timestamps.
func VerifyArtifact(ctx context.Context, art Artifact, o SigstoreOptions) (*KeylessResult, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Read the files here (not with LoadJSONFromPath / NewTrustedRootFromPath)
	// so that error texts name only the file, never its full path. The
	// parse is the same: UnmarshalJSON refuses bundles v0.4 and later.
	bj, err := readNoPath(ctx, o.BundlePath, fsutil.SigstoreBundle)
	if err != nil {
		return nil, fmt.Errorf("%w: reading bundle %s: %v", ErrSigstoreInput, filepath.Base(o.BundlePath), err)
	}
	b := &sgbundle.Bundle{}
	if err := b.UnmarshalJSON(bj); err != nil {
		return nil, fmt.Errorf("%w: loading bundle %s: %v", ErrSigstoreInput, filepath.Base(o.BundlePath), err)
	}
	var tr *root.TrustedRoot
	if o.TrustedRootPath != "" {
		rj, err := readNoPath(ctx, o.TrustedRootPath, fsutil.TrustedRoot)
		if err != nil {
			return nil, fmt.Errorf("%w: reading trusted root %s: %v", ErrSigstoreInput, filepath.Base(o.TrustedRootPath), err)
		}
		if tr, err = root.NewTrustedRootFromJSON(rj); err != nil {
			return nil, fmt.Errorf("%w: loading trusted root %s: %v", ErrSigstoreInput, filepath.Base(o.TrustedRootPath), err)
		}
	}
	vc, err := b.VerificationContent()
	if err != nil {
		return nil, fmt.Errorf("%w: bundle verification material: %v", ErrSigstoreInput, err)
	}
	entries, _ := b.TlogEntries()
	sigTS, _ := b.Timestamps()
	hasObservers := len(entries) > 0 || len(sigTS) > 0

	var (
		material   root.TrustedMaterial
		vopts      []verify.VerifierOption
		policyOpts []verify.PolicyOption
		res        = &KeylessResult{Timestamps: []SigstoreTimestamp{}}
	)
	if cert := vc.Certificate(); cert != nil {
		if o.KeyPath != "" {
			return nil, fmt.Errorf("%w: the bundle carries a certificate; use --trusted-root and identity flags, not --key", ErrOption)
		}
		if tr == nil {
			return nil, fmt.Errorf("%w: a certificate bundle needs --trusted-root", ErrOption)
		}
		if (o.CertificateIdentity == "") == (o.CertificateIdentityRegexp == "") {
			return nil, fmt.Errorf("%w: exactly one of --certificate-identity and --certificate-identity-regexp is required", ErrOption)
		}
		if (o.CertificateOIDCIssuer == "") == (o.CertificateOIDCIssuerRegexp == "") {
			return nil, fmt.Errorf("%w: exactly one of --certificate-oidc-issuer and --certificate-oidc-issuer-regexp is required", ErrOption)
		}
		id, err := verify.NewShortCertificateIdentity(o.CertificateOIDCIssuer, o.CertificateOIDCIssuerRegexp,
			o.CertificateIdentity, o.CertificateIdentityRegexp)
		if err != nil {
			return nil, fmt.Errorf("%w: certificate identity: %v", ErrOption, err)
		}
		material = tr
		if !o.InsecureIgnoreSCT {
			vopts = append(vopts, verify.WithSignedCertificateTimestamps(1))
		}
		if !o.InsecureIgnoreTlog {
			vopts = append(vopts, verify.WithTransparencyLog(1))
		}
		vopts = append(vopts, verify.WithObserverTimestamps(1))
		policyOpts = append(policyOpts, verify.WithCertificateIdentity(id))
	} else {
		if o.KeyPath == "" {
			return nil, fmt.Errorf("%w: the bundle is signed by a key; --key is required", ErrOption)
		}
		pemBytes, err := readNoPath(ctx, o.KeyPath, fsutil.Key)
		if err != nil {
			return nil, fmt.Errorf("%w: reading key %s: %v", ErrSigstoreInput, filepath.Base(o.KeyPath), err)
		}
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
		if err != nil {
			return nil, fmt.Errorf("%w: key %s is not a PEM public key", ErrSigstoreInput, filepath.Base(o.KeyPath))
		}
		hash := crypto.SHA256
		switch k := pub.(type) {
		case *ecdsa.PublicKey:
			if k.Curve == elliptic.P384() {
				hash = crypto.SHA384
			} else if k.Curve == elliptic.P521() {
				hash = crypto.SHA512
			}
		case ed25519.PublicKey:
			hash = crypto.Hash(0)
		}
		sv, err := signature.LoadVerifier(pub, hash)
		if err != nil {
			return nil, fmt.Errorf("%w: unsupported key type", ErrSigstoreInput)
		}
		keyMaterial := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
			return root.NewExpiringKey(sv, time.Time{}, time.Time{}), nil
		})
		if pk := vc.PublicKey(); pk != nil {
			h := pk.Hint()
			res.KeyHint = &h
		}
		policyOpts = append(policyOpts, verify.WithKey())
		if hasObservers && tr == nil && o.InsecureIgnoreTlog {
			// No trusted root to check the log entries or timestamps
			// against, and the log was waived: verify by the key alone.
			hasObservers = false
		}
		if hasObservers {
			if tr == nil {
				return nil, fmt.Errorf("%w: the bundle carries tlog entries or timestamps; --trusted-root is required", ErrOption)
			}
			material = root.TrustedMaterialCollection{tr, keyMaterial}
			if !o.InsecureIgnoreTlog {
				vopts = append(vopts, verify.WithTransparencyLog(1))
			}
			vopts = append(vopts, verify.WithObserverTimestamps(1))
		} else {
			if !o.InsecureIgnoreTlog {
				return nil, fmt.Errorf("%w: the bundle has no transparency-log entry; pass --insecure-ignore-tlog to accept it", ErrOption)
			}
			material = keyMaterial
			vopts = append(vopts, verify.WithNoObserverTimestamps())
		}
	}
	v, err := verify.NewVerifier(material, vopts...)
	if err != nil {
		return nil, fmt.Errorf("%w: building verifier: %v", ErrOption, err)
	}
	// Readers are consumed: build a fresh reader and policy for this call.
	var artOpt verify.ArtifactPolicyOption
	if art.hasData {
		artOpt = verify.WithArtifact(bytes.NewReader(art.data))
	} else if art.algorithm != "" {
		artOpt = verify.WithArtifactDigest(art.algorithm, art.digest)
	} else {
		return nil, fmt.Errorf("%w: no artifact", ErrOption)
	}
	vr, err := v.Verify(b, verify.NewPolicy(artOpt, policyOpts...))
	if err != nil {
		msg := err.Error()
		res.Error = &msg
		return res, fmt.Errorf("%w: %v", ErrSigstoreVerification, err)
	}
	res.Verified = true
	if vr.Signature != nil && vr.Signature.Certificate != nil {
		c := vr.Signature.Certificate
		res.Signer = &CertificateSigner{SAN: c.SubjectAlternativeName, Issuer: c.Extensions.Issuer}
	}
	for _, ts := range vr.VerifiedTimestamps {
		res.Timestamps = append(res.Timestamps, SigstoreTimestamp{Type: ts.Type, Time: ts.Timestamp.UTC().Format(time.RFC3339), URI: ts.URI})
	}
	if len(entries) > 0 {
		idx := entries[0].LogIndex()
		res.TlogLogIndex = &idx
	}
	return res, nil
}
