package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
)

// bundleVerificationMediaType identifies the `bundle verify --json` document.
const bundleVerificationMediaType = "application/vnd.openadapt-agent.bundle-verification+json;version=1"

type bundleVerifyOptions struct {
	paths       []string
	asJSON      bool
	allowLegacy bool
	protected   bool
}

func newBundleVerifyCmd(io *IO) *cobra.Command {
	var o bundleVerifyOptions
	c := &cobra.Command{
		Use:   "verify PATH...",
		Short: "Fully verify bundles exactly as openadapt-flow does",
		Long: `Fully verify every bundle under each PATH: the content digest and every listed
asset; sealed bundles are decrypted with OPENADAPT_BUNDLE_KEY. Each PATH is its own
discovery root: a bundle folder, or a folder whose immediate subfolders are bundles.

Prints one line per bundle: integrity, workflow id, digest or error kind, path.
--json prints one document; its parameters are the PHI-safe view: the names
serve serves (a name outside its name rule as an ASCII alias, marked
aliased), never secret or reserved ones (both counted in hidden_parameters), a
type outside Flow's enumeration as "other", and choices counted, not printed.
--protected shows them exactly as Flow's canonical schema, with a warning on
stderr.
Exit 0 when every bundle verified; 1 when any failed or is legacy-unverified (a
bundle without a manifest; --allow-legacy lets it pass with a warning), or when
a PATH does not exist or cannot be read (a failed entry: not_a_bundle or
unreadable, with no workflow id; the other PATHs are still reported); 2 for
usage errors.

Environment: OPENADAPT_BUNDLE_KEY is the passphrase of sealed bundles
(workflow.json.enc); without it a sealed bundle fails with missing_key.`,
		Example: `  openadapt-agent bundle verify ./bundles/invoice-entry
  openadapt-agent bundle verify --json ./bundles ./more-bundles
  OPENADAPT_BUNDLE_KEY=… openadapt-agent bundle verify ./sealed-bundles`,
		Args: minArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.paths = args
			return runBundleVerify(c.Context(), io, &o)
		},
	}
	c.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON document")
	c.Flags().BoolVar(&o.allowLegacy, "allow-legacy", false, "let legacy bundles without a manifest pass (with a warning)")
	c.Flags().BoolVar(&o.protected, "protected", false, "with --json, show parameters exactly as Flow's canonical schema (free-text names, types, choices, secrets)")
	addQuietFlag(c)
	return c
}

// discoverOperand discovers one operand. A root holding no bundle is
// reported as not_a_bundle. A root that cannot be used at all (missing, not a
// folder, unreadable) is a failed entry too (one bad operand is a failed
// entry, never a usage error that hides the others);
// only invalid options are returned as an error.
func discoverOperand(ctx context.Context, path string, opts ...bundle.Option) ([]*bundle.Bundle, error) {
	opts = append(opts, bundle.WithContext(ctx))
	bs, err := bundle.Discover(path, opts...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // SIGINT/SIGTERM: stop, print no partial result
		}
		if errors.Is(err, bundle.ErrRoot) {
			return []*bundle.Bundle{rootFailure(path, err)}, nil
		}
		return nil, usageErrorf("%s: %w", displayPath(path), err)
	}
	if len(bs) == 0 {
		b, err := bundle.Load(path, opts...)
		if b == nil {
			if ctx.Err() != nil {
				return nil, err
			}
			if errors.Is(err, bundle.ErrRoot) {
				return []*bundle.Bundle{rootFailure(path, err)}, nil
			}
			return nil, usageErrorf("%s: %w", displayPath(path), err)
		}
		bs = []*bundle.Bundle{b}
	}
	return bs, nil
}

// rootFailure is the failed entry of an operand that cannot be used as a
// discovery root: unreadable when permission is denied, otherwise
// not_a_bundle (it does not exist, or is not a folder).
func rootFailure(path string, err error) *bundle.Bundle {
	kind := bundle.KindNotABundle
	if errors.Is(err, fs.ErrPermission) {
		kind = bundle.KindUnreadable
	}
	return &bundle.Bundle{Dir: path, Integrity: bundle.Failed, ErrorKind: kind, Err: err}
}

// runBundleVerify verifies every operand. It stops promptly when ctx is
// done (SIGINT/SIGTERM, wired in Main): no further operand, bundle or file,
// and nothing on stdout but, with --json, the failure document.
func runBundleVerify(ctx context.Context, io *IO, o *bundleVerifyOptions) error {
	var all []*bundle.Bundle
	for _, p := range o.paths {
		bs, err := discoverOperand(ctx, p, bundle.WithLevel(bundle.Full))
		if err != nil {
			return err
		}
		all = append(all, bs...)
	}
	if o.protected {
		warnf(io.Err, "--protected prints protected data (free-text parameter names, types and choices, secret parameter names); keep it local")
	}
	ok := true
	for _, b := range all {
		switch b.Integrity {
		case bundle.Verified:
		case bundle.LegacyUnverified:
			if o.allowLegacy {
				warnf(io.Err, "%s: legacy bundle without a manifest is unverified; allowed by --allow-legacy", displayPath(b.Dir))
			} else {
				ok = false
			}
		default:
			ok = false
		}
	}
	var err error
	if o.asJSON {
		err = writeVerifyJSON(io.Out, all, o.protected)
	} else {
		err = writeVerifyLines(io.Out, all)
	}
	if err != nil {
		return err
	}
	hintMissingKey(io.Err, all)
	hintDeeper(io.Err, o.paths, all)
	if !ok {
		return errCheckFailed
	}
	return nil
}

// displayPath quotes a path that holds control or line-separator characters
// so it cannot forge output lines.
func displayPath(p string) string {
	if strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029' }) {
		return strconv.Quote(p)
	}
	return p
}

func writeVerifyLines(w io.Writer, bs []*bundle.Bundle) error {
	for _, b := range bs {
		detail := "unverified"
		switch b.Integrity {
		case bundle.Verified:
			detail = b.BundleSHA256()
		case bundle.Failed:
			detail = string(b.ErrorKind)
		}
		id := b.ID
		if workflowIDOf(b) == nil {
			id = "-"
		}
		if _, err := fmt.Fprintf(w, "%s %s %s %s\n", b.Integrity, id, detail, displayPath(b.Dir)); err != nil {
			return err
		}
	}
	return nil
}

// verifyEntry is one bundle of the verification document. Field names are a
// contract (acceptance checks read them).
type verifyEntry struct {
	Path            string  `json:"path"`
	Integrity       string  `json:"integrity"`
	ErrorKind       *string `json:"error_kind"`
	WorkflowID      *string `json:"workflow_id"`
	ContentDigest   *string `json:"content_digest"`
	BundleVersion   *string `json:"bundle_version"`
	Encrypted       bool    `json:"encrypted"`
	SchemaVersion   *int    `json:"schema_version"`
	StepCount       *int    `json:"step_count"`
	ActionStepCount *int    `json:"action_step_count"`
	// Parameters is null for a bundle that did not load; else the PHI-safe
	// view ([]bundle.SafeParam) by default, or Flow's exact canonical
	// schema ([]bundle.Param; docs/bundle.md, Parameters) with --protected.
	Parameters any `json:"parameters"`
	// HiddenParameters counts the names the safe view leaves out: present
	// (null for a bundle that did not load) in the default view, absent
	// with --protected, which hides nothing.
	HiddenParameters **bundle.HiddenParams `json:"hidden_parameters,omitempty"`
}

func newVerifyEntry(b *bundle.Bundle, protected bool) verifyEntry {
	e := verifyEntry{
		Path:          b.Dir,
		Integrity:     string(b.Integrity),
		WorkflowID:    workflowIDOf(b),
		ContentDigest: nullable(b.ContentDigest),
		BundleVersion: nullable(b.BundleVersion),
		Encrypted:     b.Encrypted,
	}
	if b.ErrorKind != "" {
		k := string(b.ErrorKind)
		e.ErrorKind = &k
	}
	if !protected {
		e.HiddenParameters = new(*bundle.HiddenParams)
	}
	if b.Loaded() {
		sv, sc, ac := b.SchemaVersion, b.StepCount, b.ActionStepCount
		e.SchemaVersion, e.StepCount, e.ActionStepCount = &sv, &sc, &ac
		if protected {
			params := b.Params
			if params == nil {
				params = []bundle.Param{}
			}
			e.Parameters = params
		} else {
			v := b.SafeView()
			e.Parameters, *e.HiddenParameters = v.Params, &v.Hidden
		}
	}
	return e
}

// workflowIDOf is the workflow id of b, or nil when b is no bundle at all
// (not_a_bundle, an unusable root): a made-up id would name nothing
// (docs/bundle.md, Workflow ids).
func workflowIDOf(b *bundle.Bundle) *string {
	if b.ErrorKind == bundle.KindNotABundle || b.ErrorKind == bundle.KindUnreadable && !b.Loaded() || b.ID == "" {
		return nil
	}
	return &b.ID
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func writeVerifyJSON(w io.Writer, bs []*bundle.Bundle, protected bool) error {
	doc := struct {
		MediaType string        `json:"mediaType"`
		Bundles   []verifyEntry `json:"bundles"`
	}{MediaType: bundleVerificationMediaType, Bundles: make([]verifyEntry, 0, len(bs))}
	for _, b := range bs {
		doc.Bundles = append(doc.Bundles, newVerifyEntry(b, protected))
	}
	return writeJSON(w, doc)
}
