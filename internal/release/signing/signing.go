// Package signing signs a release's checksums file as a Sigstore bundle
// with sigstore-go (docs/release.md, "Signing"). It is release tooling: the
// `sign` step of internal/release and the tests use it; the shipped binary
// never links it.
//
// Two ways to sign, both over the exact bytes of the file, both with a key
// pair that exists only in memory for this one signature (ECDSA P-256:
// sigstore-go v1.3.0 cannot verify pure-Ed25519 signatures over a blob):
//
//   - [SignWithKey]: the bundle carries only a hint of the public key, and
//     the public key is handed back to the caller to pass on out of band.
//     CI signs its snapshot releases this way and then forgets the key.
//   - [SignKeyless]: Fulcio certifies the key for an OIDC identity and Rekor
//     logs the signature, so a verifier needs the identity and the Sigstore
//     trusted root instead of a key. For tagged releases; it needs the
//     network and an OIDC token, so CI never runs it.
package signing

import (
	"context"
	"errors"
	"fmt"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/sign"
)

// ErrOption reports a missing or conflicting option.
var ErrOption = errors.New("invalid signing option")

// Public-good Sigstore instances, the defaults of [KeylessOptions].
const (
	PublicFulcio = "https://fulcio.sigstore.dev"
	PublicRekor  = "https://rekor.sigstore.dev"
)

// SignWithKey signs data with a fresh ECDSA P-256 key and returns the
// Sigstore bundle (JSON) and the PEM public key that verifies it. The
// private key is never written anywhere.
func SignWithKey(data []byte) (bundleJSON, publicKeyPEM []byte, err error) {
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("generating key: %w", err)
	}
	pb, err := sign.Bundle(&sign.PlainData{Data: data}, kp, sign.BundleOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("signing: %w", err)
	}
	pemText, err := kp.GetPublicKeyPem()
	if err != nil {
		return nil, nil, fmt.Errorf("public key: %w", err)
	}
	bj, err := (&bundle.Bundle{Bundle: pb}).MarshalJSON()
	if err != nil {
		return nil, nil, fmt.Errorf("encoding bundle: %w", err)
	}
	return append(bj, '\n'), []byte(pemText), nil
}

// KeylessOptions configures [SignKeyless].
type KeylessOptions struct {
	// IDToken is the OIDC identity token (for example GitHub Actions'
	// token for the audience "sigstore"). Required.
	IDToken string
	// FulcioURL and RekorURL default to the public-good instances.
	FulcioURL, RekorURL string
}

// SignKeyless signs data with a fresh key certified by Fulcio for the
// token's identity and logged in Rekor, and returns the bundle (JSON).
// It returns an error wrapping [ErrOption] when no token is given.
func SignKeyless(ctx context.Context, data []byte, o KeylessOptions) ([]byte, error) {
	if o.IDToken == "" {
		return nil, fmt.Errorf("%w: keyless signing needs an OIDC identity token", ErrOption)
	}
	if o.FulcioURL == "" {
		o.FulcioURL = PublicFulcio
	}
	if o.RekorURL == "" {
		o.RekorURL = PublicRekor
	}
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	pb, err := sign.Bundle(&sign.PlainData{Data: data}, kp, sign.BundleOptions{
		Context:                    ctx,
		CertificateProvider:        sign.NewFulcio(&sign.FulcioOptions{BaseURL: o.FulcioURL, Retries: 2}),
		CertificateProviderOptions: &sign.CertificateProviderOptions{IDToken: o.IDToken},
		TransparencyLogs:           []sign.Transparency{sign.NewRekor(&sign.RekorOptions{BaseURL: o.RekorURL, Retries: 2})},
	})
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	bj, err := (&bundle.Bundle{Bundle: pb}).MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encoding bundle: %w", err)
	}
	return append(bj, '\n'), nil
}
