package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	releaseverify "github.com/OpenAdaptAI/openadapt-agent/internal/release/verify"
)

func newReleaseVerifyCmd(io *IO) *cobra.Command {
	var (
		sig           sigFlags
		dir           string
		ignoreMissing bool
		asJSON        bool
	)
	c := &cobra.Command{
		Use:   "verify CHECKSUMS --bundle SIG",
		Short: "Verify a release's signed checksums file, then every artifact it lists",
		Long: `Verify a downloaded release offline. First the Sigstore bundle SIG must
verify over the exact bytes of CHECKSUMS (checksums.txt of the release):
with --key, the release's public key, which you got from somewhere you
already trust, never from the same download; or keyless, with
--trusted-root and the --certificate-identity and --certificate-oidc-issuer
of the release workflow. Then every artifact CHECKSUMS lists must be in
--dir (default: the folder of CHECKSUMS) and have the listed sha256; with
--ignore-missing, artifacts you did not download are skipped (at least one
must be there).

Prints one line per artifact ("ok", "MISMATCH", "MISSING", "UNREADABLE" or
"skipped", then its sha256 and name), or one JSON document with --json. Exit 0 when
the signature and every artifact verify; 1 when the signature does not
verify, CHECKSUMS is malformed, or an artifact is missing or differs (stdout
then lists every artifact checked); 2 for usage errors.`,
		Example: `  openadapt-agent release verify checksums.txt --bundle checksums.txt.sigstore.json \
      --key openadapt-agent-release.pub --insecure-ignore-tlog
  openadapt-agent release verify checksums.txt --bundle checksums.txt.sigstore.json \
      --trusted-root trusted_root.json \
      --certificate-identity-regexp '^https://github.com/OpenAdaptAI/openadapt-agent/' \
      --certificate-oidc-issuer https://token.actions.githubusercontent.com`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !sig.set() {
				return usageErrorf("release verify: --bundle is required (the Sigstore bundle over CHECKSUMS)")
			}
			so, err := sig.options()
			if err != nil {
				return fmt.Errorf("release verify: %w", err)
			}
			if err := operandError(args[0], false, true); err != nil {
				return fmt.Errorf("release verify: %w", err)
			}
			if dir != "" {
				if err := operandError(dir, true, false); err != nil {
					return fmt.Errorf("release verify: --dir: %w", err)
				}
			}
			res, err := releaseverify.Verify(cmd.Context(), args[0], releaseverify.Options{Sigstore: so, Dir: dir, IgnoreMissing: ignoreMissing})
			if res != nil && res.Signature != nil && !asJSON {
				writeReleaseLines(io, res)
			}
			if err != nil {
				return releaseVerifyError(err)
			}
			if asJSON {
				return writeJSON(io.Out, res)
			}
			return nil
		},
	}
	f := c.Flags()
	sig.bind(f, "Sigstore bundle over CHECKSUMS (checksums.txt.sigstore.json)")
	f.StringVar(&dir, "dir", "", "folder holding the artifacts (default: the folder of CHECKSUMS)")
	f.BoolVar(&ignoreMissing, "ignore-missing", false, "skip listed artifacts that are not in the folder (at least one must be)")
	f.BoolVar(&asJSON, "json", false, "print one JSON document ("+releaseverify.MediaType+")")
	addQuietFlag(c)
	return c
}

// writeReleaseLines prints the signature line and one line per artifact.
func writeReleaseLines(io *IO, res *releaseverify.Result) {
	s := res.Signature
	switch {
	case s.Signer != nil:
		fmt.Fprintf(io.Out, "ok signature %s %s (%s)\n", res.Checksums, s.Signer.SAN, s.Signer.Issuer)
	case s.KeyHint != nil:
		fmt.Fprintf(io.Out, "ok signature %s key %s\n", res.Checksums, *s.KeyHint)
	default:
		fmt.Fprintf(io.Out, "ok signature %s key\n", res.Checksums)
	}
	for _, a := range res.Artifacts {
		word := map[string]string{
			releaseverify.StatusOK:             "ok",
			releaseverify.StatusDigestMismatch: "MISMATCH",
			releaseverify.StatusMissing:        "MISSING",
			releaseverify.StatusUnreadable:     "UNREADABLE",
			releaseverify.StatusSkipped:        "skipped",
		}[a.Status]
		fmt.Fprintf(io.Out, "%s sha256:%s %s\n", word, a.SHA256, displayPath(a.Name))
	}
}

// releaseVerifyError maps the library's errors: option errors are usage
// errors (exit 2); everything else is a refusal (exit 1) with a failure code.
func releaseVerifyError(err error) error {
	err = fmt.Errorf("release verify: %w", err)
	switch {
	case errors.Is(err, releaseverify.ErrSignature):
		return withCode(codeSignatureInvalid, err)
	case errors.Is(err, releaseverify.ErrDigestMismatch):
		return withCode(codeDigestMismatch, err)
	case errors.Is(err, releaseverify.ErrMissing):
		return withCode(codeOperandMissing, err)
	case errors.Is(err, releaseverify.ErrChecksums):
		return withCode(codeInputInvalid, err)
	}
	return sigstoreError(err)
}
