package cmd

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/OpenAdaptAI/openadapt-agent/ledger"
)

// sigFlags are the cosign-compatible Sigstore verification flags
// (docs/ledger.md, Sigstore bundles over a ledger), shared by `ledger verify
// FILE --bundle SIG` and `skill verify FILE --bundle SIG`. Bind them with
// [sigFlags.bind], then call [sigFlags.options] and pass the result to
// [ledger.VerifyArtifact] (or [ledger.WithSigstore]). Everything is offline:
// --trusted-root is a local file, never TUF or the network.
type sigFlags struct {
	bundle             string
	trustedRoot        string
	key                string
	identity           string
	identityRegexp     string
	oidcIssuer         string
	oidcIssuerRegexp   string
	insecureIgnoreSCT  bool
	insecureIgnoreTlog bool
}

// bind registers the flags on fs. bundleUsage describes --bundle, whose
// meaning differs per command.
func (f *sigFlags) bind(fs *pflag.FlagSet, bundleUsage string) {
	fs.StringVar(&f.bundle, "bundle", "", bundleUsage)
	f.bindRest(fs)
}

// bindRest registers every flag except --bundle (for commands whose --bundle
// means something else, such as `ledger admission`).
func (f *sigFlags) bindRest(fs *pflag.FlagSet) {
	fs.StringVar(&f.trustedRoot, "trusted-root", "", "local Sigstore trusted_root.json (no TUF, no network)")
	fs.StringVar(&f.key, "key", "", "PEM public key for a key-signed Sigstore bundle")
	fs.StringVar(&f.identity, "certificate-identity", "", "expected certificate SAN (exact)")
	fs.StringVar(&f.identityRegexp, "certificate-identity-regexp", "", "expected certificate SAN (regexp)")
	fs.StringVar(&f.oidcIssuer, "certificate-oidc-issuer", "", "expected OIDC issuer of the certificate (exact)")
	fs.StringVar(&f.oidcIssuerRegexp, "certificate-oidc-issuer-regexp", "", "expected OIDC issuer of the certificate (regexp)")
	fs.BoolVar(&f.insecureIgnoreSCT, "insecure-ignore-sct", false, "do not require an embedded SCT in the certificate")
	fs.BoolVar(&f.insecureIgnoreTlog, "insecure-ignore-tlog", false, "do not require a transparency-log entry")
}

// set reports whether a Sigstore bundle was given.
func (f *sigFlags) set() bool { return f.bundle != "" }

// anyVerificationFlag reports whether a flag other than --bundle was given.
func (f *sigFlags) anyVerificationFlag() bool {
	return f.trustedRoot != "" || f.key != "" || f.identity != "" || f.identityRegexp != "" ||
		f.oidcIssuer != "" || f.oidcIssuerRegexp != "" || f.insecureIgnoreSCT || f.insecureIgnoreTlog
}

// options validates the flags and returns the Sigstore options. Missing or
// conflicting flags are usage errors (exit 2).
func (f *sigFlags) options() (ledger.SigstoreOptions, error) {
	if !f.set() {
		if f.anyVerificationFlag() {
			return ledger.SigstoreOptions{}, usageErrorf("Sigstore verification flags need --bundle")
		}
		return ledger.SigstoreOptions{}, nil
	}
	o := ledger.SigstoreOptions{
		BundlePath:                  f.bundle,
		TrustedRootPath:             f.trustedRoot,
		KeyPath:                     f.key,
		CertificateIdentity:         f.identity,
		CertificateIdentityRegexp:   f.identityRegexp,
		CertificateOIDCIssuer:       f.oidcIssuer,
		CertificateOIDCIssuerRegexp: f.oidcIssuerRegexp,
		InsecureIgnoreSCT:           f.insecureIgnoreSCT,
		InsecureIgnoreTlog:          f.insecureIgnoreTlog,
	}
	if err := o.Validate(); err != nil {
		return o, usageError(err)
	}
	return o, nil
}

// sigstoreError maps an error of [ledger.VerifyArtifact]: bad options are
// usage errors (exit 2); unreadable material and a bundle that does not
// verify are failed checks (exit 1).
func sigstoreError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ledger.ErrOption) {
		return usageError(err)
	}
	return err
}
