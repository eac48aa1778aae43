package cmd

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/ledger"
)

// addQuietFlag adds --quiet/-q to a command whose output is for people: the
// command then prints nothing on stdout and answers with its exit code only
// (errors and warnings still go to stderr). It conflicts with --json and
// --verbose.
func addQuietFlag(c *cobra.Command) {
	c.Flags().BoolP("quiet", "q", false, "print nothing on stdout; the exit code is the answer (errors still go to stderr)")
}

// applyQuiet runs before every command (root's PersistentPreRunE): with
// --quiet, stdout is discarded.
func applyQuiet(io *IO, c *cobra.Command) error {
	f := c.Flags().Lookup("quiet")
	if f == nil || f.Value.String() != "true" {
		return nil
	}
	for _, other := range []string{"json", "verbose"} {
		if o := c.Flags().Lookup(other); o != nil && o.Value.String() == "true" {
			return usageErrorf("--quiet and --%s are exclusive", other)
		}
	}
	io.Out = quietWriter{io.Out}
	return nil
}

// quietWriter discards everything; it keeps the original writer so that the
// failure-document logic still sees a countingWriter underneath.
type quietWriter struct{ io.Writer }

func (quietWriter) Write(p []byte) (int, error) { return len(p), nil }

// admissionLine is the one-line answer of an admission query.
func admissionLine(a *ledger.AdmissionDecision) string {
	deref := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	switch a.Decision {
	case ledger.DecisionAdmitted:
		return fmt.Sprintf("admitted: admission %s (profile %s)", deref(a.AdmissionID), a.Profile)
	case ledger.DecisionExempt:
		return fmt.Sprintf("exempt: %s (profile %s)", deref(a.Detail), a.Profile)
	default:
		return fmt.Sprintf("not admitted: %s / %s (profile %s)", deref(a.Reason), deref(a.Detail), a.Profile)
	}
}

// admitsNothing is the plain sentence saying that a workflow ledger with an
// unattributed row admits no bundle at all (docs/ledger.md, Workflow
// admission gate), or "".
func admitsNothing(res *ledger.Result) string {
	n := res.UnattributedRows()
	if n == 0 {
		return ""
	}
	rows := "row"
	if n > 1 {
		rows = "rows"
	}
	return fmt.Sprintf("This ledger admits no workflow bundle: %d of its %d workflow %s cannot be attributed to a bundle, and one such row refuses every admission; pass --ledger with complete evidence (the standard and regulated profiles refuse every run until then).",
		n, len(res.WorkflowAdmissions), rows)
}
