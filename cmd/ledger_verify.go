package cmd

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/ledger"
)

// ledgerFlags are shared by `ledger verify` and `ledger admission`.
type ledgerFlags struct {
	asJSON        bool
	verbose       bool
	at            string
	evidenceRoot  string
	previous      []string
	signerRegPins []string
}

func (f *ledgerFlags) bind(c *cobra.Command) {
	fs := c.Flags()
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON document ("+ledger.MediaType+")")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "also print informational notes (and, for admission, the ledger table)")
	addQuietFlag(c)
	fs.StringVar(&f.at, "at", "", "evaluation instant: RFC 3339, or a date meaning 00:00:00Z (default: now, UTC, whole seconds)")
	fs.StringVar(&f.evidenceRoot, "evidence-root", "", "evidence-root directory for a ledger file (default: the file's directory)")
	fs.StringArrayVar(&f.previous, "previous-registry", nil, "an older evidence-registry revision (repeatable)")
	fs.StringArrayVar(&f.signerRegPins, "signer-registry-identity", nil,
		"pin this signer-registry identity instead of OpenAdapt's (repeatable; for test or private roots)")
}

// verifier builds the ledger verifier from the flags.
func (f *ledgerFlags) verifier(extra ...ledger.Option) (*ledger.Verifier, error) {
	trust := ledger.DefaultTrust()
	if len(f.signerRegPins) > 0 {
		trust.SignerRegistryIdentities = f.signerRegPins
	}
	var opts []ledger.Option
	if f.at != "" {
		t, err := parseAt(f.at)
		if err != nil {
			return nil, err
		}
		opts = append(opts, ledger.WithAt(t))
	}
	if f.evidenceRoot != "" {
		opts = append(opts, ledger.WithEvidenceRoot(f.evidenceRoot))
	}
	if len(f.previous) > 0 {
		opts = append(opts, ledger.WithPreviousRegistry(f.previous...))
	}
	v, err := ledger.NewVerifier(trust, append(opts, extra...)...)
	if err != nil {
		return nil, ledgerError(err)
	}
	return v, nil
}

// parseAt parses --at: an RFC 3339 time, or a plain date, which means
// 00:00:00Z that day.
func parseAt(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil // time.Parse gives UTC for a layout without a zone
	}
	return time.Time{}, usageErrorf("--at: want an RFC 3339 time such as 2026-11-30T00:00:00Z, or a date such as 2026-11-30 (midnight UTC)")
}

// ledgerError maps library errors: an invalid option is a usage error
// (exit 2); input that cannot be used (unreadable, not a ledger document) is
// a failed result (exit 1, failure code input_invalid), so that --json still
// prints one document.
func ledgerError(err error) error {
	if errors.Is(err, ledger.ErrOption) {
		return usageError(err)
	}
	return err
}

// writeLedgerResult prints the result (JSON or text), and the notes with
// --verbose, and returns errCheckFailed when the exit code is 1. For an
// admission query the text starts with the answer (cosign verify's "one
// answer first, details on request"): the decision line, the plain sentence
// when the ledger admits nothing, and the ledger table only with --verbose.
func writeLedgerResult(io *IO, f *ledgerFlags, res *ledger.Result) error {
	if f.verbose {
		for _, n := range res.Notes {
			fmt.Fprintf(io.Err, "openadapt-agent: note: %s\n", oneLine(n))
		}
	}
	switch {
	case f.asJSON:
		if err := writeJSON(io.Out, res); err != nil {
			return err
		}
	case res.Admission != nil:
		fmt.Fprintln(io.Out, admissionLine(res.Admission))
		if s := admitsNothing(res); s != "" && res.Admission.Decision != ledger.DecisionExempt {
			fmt.Fprintln(io.Out, s)
		}
		if f.verbose {
			fmt.Fprintln(io.Out)
			if err := res.WriteText(io.Out); err != nil {
				return err
			}
		}
	default:
		if err := res.WriteText(io.Out); err != nil {
			return err
		}
		if s := admitsNothing(res); s != "" {
			fmt.Fprintln(io.Out, s)
		}
	}
	if res.ExitCode != 0 {
		return errCheckFailed
	}
	return nil
}

func newLedgerVerifyCmd(io *IO) *cobra.Command {
	var (
		f                 ledgerFlags
		sig               sigFlags
		strict            bool
		requireActive     []string
		requireProduction bool
	)
	c := &cobra.Command{
		Use:   "verify [PATH]",
		Short: "Verify OpenAdapt admission ledgers offline and print per-target verdicts",
		Long: `Verify OpenAdapt's signed admission ledgers offline against the pinned trust
root and print each target's verdict, the product verdict and the workflow
admissions.

With no PATH it verifies the dated snapshot of OpenAdapt's published ledgers
embedded in the binary. PATH may be a ledger or projection file (its evidence
root defaults to the file's directory) or an evidence-root directory.

Verdicts are fail-closed: a target whose latest admission cannot be fully
checked is "not actively admitted". Exit 0 when every signature, digest and
binding that is present verified (integrity verified or incomplete) and every
--require-* holds; 1 when present evidence failed, a requirement is unmet,
evidence is incomplete under --strict, or an input cannot be read or is not a
ledger document; 2 for usage errors (stdout then stays empty).

With --bundle, the ledger FILE must also carry a valid Sigstore bundle
(keyless with --trusted-root and certificate identity flags, or --key); a
Sigstore pass never overrides a failed native check.`,
		Example: `  openadapt-agent ledger verify
  openadapt-agent ledger verify --json --at 2026-11-30T00:00:00Z
  openadapt-agent ledger verify --require-active agent
  openadapt-agent ledger verify ./evidence-root --strict`,
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			io.oneShotGC()
			var extra []ledger.Option
			if strict {
				extra = append(extra, ledger.WithStrict())
			}
			var targets []string
			for _, r := range requireActive {
				for _, t := range strings.Split(r, ",") {
					if t = strings.TrimSpace(t); t != "" {
						targets = append(targets, t)
					}
				}
			}
			if len(targets) > 0 {
				extra = append(extra, ledger.WithRequireActive(targets...))
			}
			if requireProduction {
				extra = append(extra, ledger.WithRequireProduction())
			}
			so, err := sig.options()
			if err != nil {
				return err
			}
			if sig.set() {
				if len(args) == 0 {
					return usageErrorf("--bundle needs a ledger FILE argument")
				}
				extra = append(extra, ledger.WithSigstore(so))
			}
			v, err := f.verifier(extra...)
			if err != nil {
				return err
			}
			src := ledger.Embedded()
			if len(args) == 1 {
				if err := operandError(args[0], true, true); err != nil {
					return fmt.Errorf("ledger verify: %w", err)
				}
				src = ledger.Path(args[0])
			}
			res, err := v.Verify(cmd.Context(), src)
			if err != nil {
				return ledgerError(fmt.Errorf("ledger verify: %w", err))
			}
			return writeLedgerResult(io, &f, res)
		},
	}
	f.bind(c)
	fs := c.Flags()
	fs.BoolVar(&strict, "strict", false, "exit 1 when evidence is incomplete")
	fs.StringArrayVar(&requireActive, "require-active", nil, "exit 1 unless TARGET is active (repeatable, or comma-separated)")
	fs.BoolVar(&requireProduction, "require-production", false, "exit 1 unless the product verdict is Production")
	sig.bind(fs, "Sigstore bundle over the ledger FILE's bytes (with --trusted-root or --key)")
	return c
}
