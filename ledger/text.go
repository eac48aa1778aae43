package ledger

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// short shortens a digest to 8 hex digits for text output (docs/ledger.md, Output).
func short(d string) string {
	if strings.HasPrefix(d, "sha256:") && len(d) == 71 {
		return d[:15] + "…"
	}
	return d
}

func dash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

func statusText(verdict string) string {
	if verdict == VerdictActive {
		return "actively admitted"
	}
	return "not actively admitted"
}

// table pads columns to the widest cell plus two spaces; the last column is
// not padded.
type table struct {
	rows [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) widths() []int {
	var w []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(w) {
				w = append(w, 0)
			}
			if n := len([]rune(c)); n > w[i] {
				w[i] = n
			}
		}
	}
	return w
}

func (t *table) write(b *bufio.Writer, w []int) {
	for _, r := range t.rows {
		var line strings.Builder
		for i, c := range r {
			if i == len(r)-1 {
				line.WriteString(c)
				break
			}
			line.WriteString(c)
			line.WriteString(strings.Repeat(" ", w[i]-len([]rune(c))+2))
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
}

// incompleteCounts counts targets and rows that are unverifiable only
// because a referenced file is absent (docs/ledger.md, Integrity and exit codes).
func (r *Result) incompleteCounts() (targets, rows int) {
	inc := func(reason, detail, cause *string) bool {
		if dash(reason) != ReasonUnverifiable {
			return false
		}
		d := dash(detail)
		if d == "ledger_row_unattributed" {
			d = dash(cause)
		}
		return d == "object_missing" || d == "bundle_missing"
	}
	for _, t := range r.Targets {
		if inc(t.Reason, t.Detail, t.Cause) {
			targets++
		}
	}
	for _, w := range r.WorkflowAdmissions {
		if inc(w.Reason, w.Detail, w.Cause) {
			rows++
		}
	}
	return
}

// failedCounts counts targets and rows whose verdict makes integrity failed.
func (r *Result) failedCounts() (targets, rows int, details []string) {
	add := func(reason, detail, cause *string) bool {
		f := &fail{reason: dash(reason), detail: dash(detail), cause: dash(cause)}
		if integrityOf([]*fail{f}) != IntegrityFailed {
			return false
		}
		d := dash(detail)
		if !contains(details, d) {
			details = append(details, d)
		}
		return true
	}
	for _, t := range r.Targets {
		if add(t.Reason, t.Detail, t.Cause) {
			targets++
		}
	}
	for _, w := range r.WorkflowAdmissions {
		if add(w.Reason, w.Detail, w.Cause) {
			rows++
		}
	}
	return
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// resultLine is the text RESULT line (docs/ledger.md, Integrity and exit codes).
func (r *Result) resultLine() string {
	switch {
	case r.Integrity == IntegrityFailed:
		t, w, ds := r.failedCounts()
		for _, d := range r.Documents {
			if d.Status == IntegrityFailed && d.Detail != nil && !contains(ds, *d.Detail) {
				ds = append(ds, *d.Detail)
			}
		}
		if r.Keyless != nil && !r.Keyless.Verified && !contains(ds, "keyless_verification_failed") {
			ds = append(ds, "keyless_verification_failed")
		}
		return fmt.Sprintf("verification failed: %s, %s (%s)", plural(t, "target", "targets"),
			plural(w, "workflow row", "workflow rows"), strings.Join(ds, ", "))
	case r.Integrity == IntegrityIncomplete && r.ExitCode == 1 && r.Requirements != "unmet":
		t, w := r.incompleteCounts()
		return fmt.Sprintf("verification failed: evidence incomplete under --strict: %s, %s",
			plural(t, "target", "targets"), plural(w, "workflow row", "workflow rows"))
	case r.Requirements == "unmet":
		return "verified; requirement not met: " + strings.Join(r.unmet, "; ")
	case r.Integrity == IntegrityIncomplete:
		t, w := r.incompleteCounts()
		return fmt.Sprintf("verified; evidence incomplete: %s, %s (run with --strict to fail)",
			plural(t, "target", "targets"), plural(w, "workflow row", "workflow rows"))
	}
	return "verified"
}

// WriteText writes the human-readable report (docs/ledger.md, Output): results only.
// Notes are not included; print [Result.Notes] on stderr.
func (r *Result) WriteText(w io.Writer) error {
	b := bufio.NewWriter(w)
	head := "OpenAdapt ledger verification at " + r.At
	if r.Snapshot != nil {
		head += " (snapshot " + *r.Snapshot + ")"
	}
	fmt.Fprintln(b, head)
	trust := "signer registry "
	if r.TrustRoot.SignerRegistryIdentity != nil {
		trust += short(*r.TrustRoot.SignerRegistryIdentity) + " (pinned)"
	} else {
		var pins []string
		for _, p := range r.TrustRoot.Pinned {
			pins = append(pins, short(p))
		}
		trust += "not loaded (pinned " + strings.Join(pins, ", ") + ")"
	}
	reg := "registry not loaded"
	if r.Registry != nil {
		reg = fmt.Sprintf("registry rev %d head %s", r.Registry.Revision, short(r.Registry.Head))
	}
	// The first column is as wide as the target column.
	label := func(s string) string { return fmt.Sprintf("%-11s", s) }
	fmt.Fprintf(b, "trust root   %s   %s\n", trust, reg)
	if r.Product != nil {
		t := &table{}
		t.add("TARGET", "STATUS", "REASON", "DETAIL", "SEQ", "RELEASE", "ISSUED")
		for _, tr := range r.Targets {
			seq := "-"
			if tr.Sequence != nil {
				seq = fmt.Sprint(*tr.Sequence)
			}
			rel := dash(tr.Version)
			if tr.Version == nil && tr.DeploymentID != nil {
				rel = "deployment " + *tr.DeploymentID
			}
			detail := dash(tr.Detail)
			if tr.Cause != nil {
				detail += " (" + *tr.Cause + ")"
			}
			t.add(tr.Target, statusText(tr.Verdict), dash(tr.Reason), detail, seq, rel, dash(tr.IssuedAt))
		}
		w := t.widths()
		if w[0] < 9 {
			w[0] = 9
		}
		t.write(b, w)
		p := "Not Production"
		if r.Product.Verdict == "production" {
			p = "Production"
		}
		fmt.Fprintf(b, "%s%s (%d of %d targets actively admitted)\n", label("PRODUCT"), p, r.Product.ActiveTargets, r.Product.ExpectedTargets)
	}
	hasWorkflowDoc := false
	for _, d := range r.Documents {
		if d.Kind == DocWorkflowLedger || d.Kind == DocWorkflowProjection {
			hasWorkflowDoc = true
		}
	}
	if len(r.WorkflowAdmissions) > 0 || hasWorkflowDoc {
		fmt.Fprintln(b, "WORKFLOW ADMISSIONS")
		if len(r.WorkflowAdmissions) == 0 {
			fmt.Fprintln(b, "(none)")
		} else {
			t := &table{}
			t.add("#", "STATUS", "REASON", "DETAIL", "BUNDLE_VERSION", "BUNDLE_SHA256", "CLASS")
			for _, wa := range r.WorkflowAdmissions {
				detail := dash(wa.Detail)
				if wa.Cause != nil {
					detail += " (" + *wa.Cause + ")"
				}
				bs := "-"
				if wa.BundleSHA256 != nil {
					bs = short(*wa.BundleSHA256)
				}
				t.add(fmt.Sprint(wa.Index+1), statusText(wa.Verdict), dash(wa.Reason), detail, dash(wa.BundleVersion), bs, dash(wa.EvidenceClass))
			}
			t.write(b, t.widths())
		}
	}
	if k := r.Keyless; k != nil {
		line := "verified"
		switch {
		case !k.Verified:
			line = "failed: " + dash(k.Error)
		case k.Signer != nil:
			line += "; certificate " + k.Signer.SAN + " issuer " + k.Signer.Issuer
		case k.KeyHint != nil:
			line += "; key " + *k.KeyHint
		}
		if k.Verified && k.TlogLogIndex != nil {
			line += fmt.Sprintf("; tlog index %d", *k.TlogLogIndex)
		}
		fmt.Fprintf(b, "%s%s\n", label("SIGSTORE"), strings.ReplaceAll(line, "\n", " "))
	}
	if a := r.Admission; a != nil {
		line := ""
		switch a.Decision {
		case DecisionAdmitted:
			line = "admitted (admission " + short(dash(a.AdmissionID)) + ")"
		case DecisionExempt:
			line = "exempt (" + dash(a.Detail) + ")"
		default:
			line = "not admitted (" + dash(a.Reason) + " / " + dash(a.Detail) + ")"
		}
		fmt.Fprintf(b, "%s%s; profile %s\n", label("ADMISSION"), line, a.Profile)
	}
	if r.Admission == nil {
		fmt.Fprintf(b, "%s%s\n", label("RESULT"), r.resultLine())
	} else {
		res := "verified"
		switch r.Integrity {
		case IntegrityIncomplete:
			t, w := r.incompleteCounts()
			res = fmt.Sprintf("verified; evidence incomplete: %s, %s", plural(t, "target", "targets"), plural(w, "workflow row", "workflow rows"))
		case IntegrityFailed:
			res = r.resultLine()
		}
		fmt.Fprintf(b, "%s%s\n", label("LEDGER"), res)
	}
	return b.Flush()
}
