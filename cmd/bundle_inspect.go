package cmd

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
)

// bundleInspectionMediaType identifies the `bundle inspect --json` document.
const bundleInspectionMediaType = "application/vnd.openadapt-agent.bundle-inspection+json;version=1"

type bundleInspectOptions struct {
	path      string
	asJSON    bool
	protected bool
}

func newBundleInspectCmd(io *IO) *cobra.Command {
	var o bundleInspectOptions
	c := &cobra.Command{
		Use:   "inspect PATH",
		Short: "Show the PHI-safe metadata of bundles (--protected adds names, intents, values)",
		Long: `Fully verify and describe every bundle under PATH (a bundle folder, or a folder
whose immediate subfolders are bundles).

By default only PHI-safe facts are shown, each validated against a closed set:
opaque id, integrity, digests, counts, the parameter names serve serves (a name
outside its name rule as an ASCII alias; secret and reserved names are
counted, never printed), Flow's parameter types (any
other type as "other"), the number of choices, the compiler version and
certification status ("other" when not a version or one of Flow's labels).
--protected shows every value as the bundle holds it and adds the display name,
slugs, step intents and recorded example values, with a warning on stderr. Exit 0 when every bundle verified; 1
otherwise (a PATH that is missing or unreadable is a failed entry); 2 for
usage errors.

Environment: OPENADAPT_BUNDLE_KEY is the passphrase of sealed bundles
(workflow.json.enc); without it a sealed bundle fails with missing_key.`,
		Example: `  openadapt-agent bundle inspect ./bundles/invoice-entry
  openadapt-agent bundle inspect --json ./bundles
  openadapt-agent bundle inspect --protected ./bundles/invoice-entry`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.path = args[0]
			return runBundleInspect(c.Context(), io, &o)
		},
	}
	c.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON document")
	c.Flags().BoolVar(&o.protected, "protected", false, "also print protected data: names, step intents, recorded values")
	return c
}

type inspectCertification struct {
	// ProvenanceCertified is named for what it is, Flow's unprotected
	// provenance claim (docs/bundle.md, Manifests), not a verified fact.
	ProvenanceCertified *bool  `json:"provenance_certified"`
	CertificationStatus string `json:"certification_status"`
}

type inspectProtected struct {
	Name           string              `json:"name"`
	AgentSlug      string              `json:"agent_slug"`
	SkillSlug      string              `json:"skill_slug"`
	StepIntents    []string            `json:"step_intents"`
	RecordedParams []inspectNamedValue `json:"recorded_params"`
	SpecExamples   []inspectNamedValue `json:"spec_examples"`
}

type inspectNamedValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type inspectEntry struct {
	verifyEntry
	// LegacyParams are the legacy params names in JSON order; by default
	// only those the safe view shows (the others are counted in
	// hidden_parameters).
	LegacyParams []string `json:"legacy_params"`
	// SecretParams lists secret_params with --protected only; the default
	// view gives SecretParamCount instead.
	SecretParams     *[]string             `json:"secret_params,omitempty"`
	SecretParamCount *int                  `json:"secret_param_count,omitempty"`
	ManifestSource   *string               `json:"manifest_source"`
	CompilerVersion  *string               `json:"compiler_version"`
	Certification    *inspectCertification `json:"certification"`
	Protected        *inspectProtected     `json:"protected,omitempty"`
}

// newInspectEntry builds one entry. By default every bundle-supplied text is
// validated against a closed set first (docs/bundle.md, Parameters):
// parameters as in
// `bundle verify --json`, the compiler version as a version token and the
// certification status as one of Flow's labels, else "other".
func newInspectEntry(b *bundle.Bundle, protected bool) inspectEntry {
	e := inspectEntry{
		verifyEntry:     newVerifyEntry(b, protected),
		ManifestSource:  nullable(b.ManifestSource),
		CompilerVersion: nullable(bundle.SafeVersion(b.CompilerVersion)),
	}
	status := func(s string) string { return bundle.SafeCertificationStatus(s) }
	if protected {
		e.CompilerVersion = nullable(b.CompilerVersion)
		status = func(s string) string { return s }
	}
	if b.Loaded() {
		if protected {
			e.LegacyParams = orEmpty(b.LegacyParams)
			sp := orEmpty(b.SecretParams)
			e.SecretParams = &sp
		} else {
			v := b.SafeView()
			n := v.SecretParamCount
			e.LegacyParams, e.SecretParamCount = v.LegacyParams, &n
		}
	}
	if p := b.Provenance; p != nil {
		e.Certification = &inspectCertification{ProvenanceCertified: p.Certified, CertificationStatus: status(p.CertificationStatus)}
	}
	if protected {
		if p, err := b.Protected(); err == nil {
			ip := &inspectProtected{
				Name: p.Name, AgentSlug: p.AgentSlug, SkillSlug: p.SkillSlug,
				StepIntents:    orEmpty(p.StepIntents),
				RecordedParams: []inspectNamedValue{},
				SpecExamples:   []inspectNamedValue{},
			}
			for _, nv := range p.RecordedParams {
				ip.RecordedParams = append(ip.RecordedParams, inspectNamedValue{nv.Name, nv.Value})
			}
			for _, nv := range p.SpecExamples {
				ip.SpecExamples = append(ip.SpecExamples, inspectNamedValue{nv.Name, nv.Value})
			}
			e.Protected = ip
		}
	}
	return e
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func runBundleInspect(ctx context.Context, io *IO, o *bundleInspectOptions) error {
	bs, err := discoverOperand(ctx, o.path, bundle.WithLevel(bundle.Full))
	if err != nil {
		return err
	}
	if o.protected {
		warnf(io.Err, "--protected prints protected data (workflow names, step intents, recorded values, free-text parameter names, types and choices); keep it local")
	}
	entries := make([]inspectEntry, 0, len(bs))
	for _, b := range bs {
		entries = append(entries, newInspectEntry(b, o.protected))
	}
	if o.asJSON {
		err = writeJSON(io.Out, struct {
			MediaType string         `json:"mediaType"`
			Bundles   []inspectEntry `json:"bundles"`
		}{bundleInspectionMediaType, entries})
	} else {
		err = writeInspectText(io.Out, entries)
	}
	if err != nil {
		return err
	}
	hintMissingKey(io.Err, bs)
	for _, b := range bs {
		if !b.Verified() {
			return errCheckFailed
		}
	}
	return nil
}

func requiredWord(r bool) string {
	if r {
		return "required"
	}
	return "optional"
}

// quoteText renders a protected or free-text value on one line.
func quoteText(s string) string { return strconv.Quote(s) }

func writeInspectText(w io.Writer, entries []inspectEntry) error {
	var sb strings.Builder
	line := func(k, v string) { fmt.Fprintf(&sb, "%-18s %s\n", k+":", v) }
	orDash := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	intOrDash := func(p *int) string {
		if p == nil {
			return "-"
		}
		return strconv.Itoa(*p)
	}
	for i, e := range entries {
		if i > 0 {
			sb.WriteByte('\n')
		}
		line("path", displayPath(e.Path))
		line("workflow_id", orDash(e.WorkflowID))
		line("integrity", e.Integrity)
		line("error_kind", orDash(e.ErrorKind))
		line("encrypted", strconv.FormatBool(e.Encrypted))
		line("content_digest", orDash(e.ContentDigest))
		line("bundle_version", orDash(e.BundleVersion))
		line("schema_version", intOrDash(e.SchemaVersion))
		line("step_count", intOrDash(e.StepCount))
		line("action_step_count", intOrDash(e.ActionStepCount))
		line("manifest_source", orDash(e.ManifestSource))
		line("compiler_version", orDash(e.CompilerVersion))
		cert := "-"
		if c := e.Certification; c != nil {
			cert = "unknown"
			if c.ProvenanceCertified != nil {
				cert = strconv.FormatBool(*c.ProvenanceCertified)
			}
			if c.CertificationStatus != "" {
				cert += " (" + c.CertificationStatus + ")"
			}
		}
		line("provenance_certified", cert+" [unprotected provenance, informational]")
		switch ps := e.Parameters.(type) {
		case []bundle.SafeParam:
			line("parameters", strconv.Itoa(len(ps)))
			for _, p := range ps {
				flags := []string{p.Type, requiredWord(p.Required)}
				if p.ChoiceCount > 0 {
					flags = append(flags, "choices="+strconv.Itoa(p.ChoiceCount))
				}
				if p.Aliased {
					flags = append(flags, "alias")
				}
				fmt.Fprintf(&sb, "  - %s (%s)\n", quoteText(p.Name), strings.Join(flags, ", "))
			}
			if h := *e.HiddenParameters; h != nil {
				line("hidden_parameters", fmt.Sprintf("%d (secret %d, refused name %d)", h.Total(), h.Secret, h.RefusedName))
			}
		case []bundle.Param:
			line("parameters", strconv.Itoa(len(ps)))
			for _, p := range ps {
				typ := p.Type
				if bundle.SafeType(typ) != typ {
					typ = quoteText(typ)
				}
				flags := []string{typ, requiredWord(p.Required)}
				if p.Secret {
					flags = append(flags, "secret")
				}
				if len(p.Choices) > 0 {
					cs := make([]string, len(p.Choices))
					for i, c := range p.Choices {
						cs[i] = quoteText(c)
					}
					flags = append(flags, "choices=["+strings.Join(cs, " ")+"]")
				}
				if bundle.Aliased(p.Name) && !p.Secret {
					flags = append(flags, "alias="+bundle.ParamAlias(p.Name))
				}
				fmt.Fprintf(&sb, "  - %s (%s)\n", quoteText(p.Name), strings.Join(flags, ", "))
			}
		}
		if p := e.Protected; p != nil {
			line("name", quoteText(p.Name))
			line("agent_slug", p.AgentSlug)
			line("skill_slug", p.SkillSlug)
			line("step_intents", strconv.Itoa(len(p.StepIntents)))
			for j, in := range p.StepIntents {
				fmt.Fprintf(&sb, "  %d. %s\n", j+1, quoteText(in))
			}
			line("recorded_params", strconv.Itoa(len(p.RecordedParams)))
			for _, nv := range p.RecordedParams {
				fmt.Fprintf(&sb, "  - %s = %s\n", quoteText(nv.Name), quoteText(nv.Value))
			}
			line("spec_examples", strconv.Itoa(len(p.SpecExamples)))
			for _, nv := range p.SpecExamples {
				fmt.Fprintf(&sb, "  - %s = %s\n", quoteText(nv.Name), quoteText(nv.Value))
			}
		}
	}
	_, err := io.WriteString(w, sb.String())
	return err
}
