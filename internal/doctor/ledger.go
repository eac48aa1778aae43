package doctor

import (
	"context"
	"fmt"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/ledger"
)

// LedgerMaxAge is how old the embedded ledger snapshot may be before doctor
// warns: admissions are revoked and renewed upstream, and an old snapshot
// no longer shows them.
const LedgerMaxAge = 90 * 24 * time.Hour

// LedgerCheck is the [LedgerFunc] of the real machine: it verifies the ledger
// at path (a ledger file or evidence folder, "" for the snapshot embedded in
// the binary) offline against the pinned trust root at time now, and reports
// the snapshot's age and the verdict counts. Verdicts are facts about
// OpenAdapt's published evidence, so "not active" is not a failure here; a
// ledger that does not verify is, because serve's admission gate then
// refuses every run.
func LedgerCheck(ctx context.Context, path string, now time.Time) Check {
	c := Check{ID: IDLedger}
	src, what := ledger.Embedded(), "embedded snapshot"
	if path != "" {
		src, what = ledger.Path(path), "--ledger"
	}
	v, err := ledger.NewVerifier(ledger.DefaultTrust(), ledger.WithAt(now.UTC().Truncate(time.Second)))
	if err == nil {
		var r *ledger.Result
		r, err = v.Verify(ctx, src)
		if err == nil {
			return ledgerVerdicts(c, r, what, path == "", now)
		}
	}
	c.Status = Fail
	c.Message = what + " cannot be read as an admission ledger"
	c.Fix = "pass --ledger a ledger file or an evidence folder (as `openadapt-agent ledger verify` takes), or leave it out to use the embedded snapshot"
	return c
}

func ledgerVerdicts(c Check, r *ledger.Result, what string, embedded bool, now time.Time) Check {
	var targets, activeTargets, rows, activeRows int
	for _, t := range r.Targets {
		targets++
		if t.Verdict == ledger.VerdictActive {
			activeTargets++
		}
	}
	for _, w := range r.WorkflowAdmissions {
		rows++
		if w.Verdict == ledger.VerdictActive {
			activeRows++
		}
	}
	c.Message = what
	var age time.Duration
	if embedded {
		if d, err := time.Parse("2006-01-02", ledger.SnapshotDate); err == nil {
			age = now.Sub(d)
			c.Message += fmt.Sprintf(" of %s (%d days old)", ledger.SnapshotDate, int(age.Hours()/24))
		}
	}
	c.Message += fmt.Sprintf(": integrity %s", r.Integrity)
	if targets > 0 {
		c.Message += fmt.Sprintf("; %d of %d release targets actively admitted", activeTargets, targets)
	}
	if rows > 0 {
		c.Message += fmt.Sprintf("; %d of %d workflow admissions active", activeRows, rows)
	}
	unattributed := r.UnattributedRows()
	if unattributed > 0 {
		// Say plainly what "1 of 7 active" does not: the admission gate
		// refuses every query while any row is unattributed
		// (docs/ledger.md, "Workflow admission gate").
		c.Message += fmt.Sprintf("; this ledger admits no workflow bundle (%d unattributed workflow row(s) refuse every admission)", unattributed)
	}
	switch {
	case r.Integrity == ledger.IntegrityFailed:
		c.Status = Fail
		c.Fix = "the ledger does not verify, so serve's admission gate (standard and regulated profiles) refuses every run: use an untampered copy (`openadapt-agent ledger verify` shows which document fails)"
	case embedded && age > LedgerMaxAge:
		c.Status = Warn
		c.Fix = fmt.Sprintf("the embedded snapshot is older than %d days: pass --ledger with a current copy of OpenAdapt's published evidence, or upgrade openadapt-agent", int(LedgerMaxAge.Hours()/24))
	case unattributed > 0:
		c.Status = Warn
		c.Fix = "serve's standard and regulated profiles refuse every run under this ledger: pass --ledger with OpenAdapt's complete published evidence (every object its workflow rows reference), or use --profile demo for synthetic trials"
	default:
		c.Status = OK
	}
	return c
}
