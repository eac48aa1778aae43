package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/ledger"
)

func newLedgerAdmissionCmd(io *IO) *cobra.Command {
	var (
		f             ledgerFlags
		bundleDir     string
		ledgerPath    string
		profile       string
		bundleVersion string
		bundleSHA256  string
	)
	c := &cobra.Command{
		Use:   "admission (--bundle DIR | --bundle-sha256 DIGEST)",
		Short: "Is this exact workflow bundle actively admitted?",
		Long: `Answer whether an active workflow admission covers this exact bundle: the
bundle's bundle_sha256 ("sha256:" + its verified manifest content digest) must
match an admitted, active row of the workflow ledger (--ledger PATH, a file
or an evidence-root directory; default: the embedded snapshot).

--bundle DIR must fully verify; otherwise the answer is not admitted
(unverifiable, bundle_<error_kind>). --bundle-version L also requires the
row's bundle_version label to equal L. The demo profile is exempt.

Exit 0 admitted or exempt; 1 not admitted, or an input cannot be read; 2 for
usage errors (stdout then stays empty).

Environment: OPENADAPT_BUNDLE_KEY is the passphrase of sealed bundles
(workflow.json.enc); without it a sealed bundle fails with missing_key.`,
		Example: `  openadapt-agent ledger admission --bundle ./bundles/invoice-entry
  openadapt-agent ledger admission --bundle-sha256 sha256:5fc9… --bundle-version 0.0.0-synthetic --ledger ./evidence-root`,
		Args: noArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			io.oneShotGC()
			if (bundleDir == "") == (bundleSHA256 == "") {
				return usageErrorf("give exactly one of --bundle DIR and --bundle-sha256 DIGEST")
			}
			q := ledger.GateQuery{BundleSHA256: bundleSHA256, BundleVersion: bundleVersion, Profile: profile}
			if bundleDir != "" {
				if err := operandError(bundleDir, true, false); err != nil {
					return fmt.Errorf("ledger admission: --bundle: %w", err)
				}
				b, err := bundle.Load(bundleDir, bundle.WithContext(cmd.Context()))
				if b == nil {
					if errors.Is(err, bundle.ErrOption) {
						return usageErrorf("ledger admission: %w", err)
					}
					return usageErrorf("ledger admission: --bundle: %w", err)
				}
				switch {
				case b.Verified():
					q.BundleSHA256 = b.BundleSHA256()
				case b.ErrorKind != "":
					q.BundleErrorKind = string(b.ErrorKind)
					hintMissingKey(io.Err, []*bundle.Bundle{b})
				default:
					q.BundleErrorKind = string(b.Integrity) // legacy_unverified, content_verified
				}
			}
			v, err := f.verifier()
			if err != nil {
				return err
			}
			src := ledger.Embedded()
			if ledgerPath != "" {
				src = ledger.Path(ledgerPath)
			}
			res, err := v.Admission(cmd.Context(), src, q)
			if err != nil {
				return ledgerError(fmt.Errorf("ledger admission: %w", err))
			}
			return writeLedgerResult(io, &f, res)
		},
	}
	f.bind(c)
	fs := c.Flags()
	fs.StringVar(&bundleDir, "bundle", "", "workflow bundle directory (must fully verify)")
	fs.StringVar(&bundleSHA256, "bundle-sha256", "", "bundle_sha256 of an already verified bundle (sha256:<64 hex>)")
	fs.StringVar(&ledgerPath, "ledger", "", "workflow ledger file or evidence-root directory (default: embedded snapshot)")
	fs.StringVar(&profile, "profile", ledger.ProfileStandard, "run profile: demo, standard or regulated")
	fs.StringVar(&bundleVersion, "bundle-version", "", "also require the admission's bundle_version label to equal this")
	return c
}
