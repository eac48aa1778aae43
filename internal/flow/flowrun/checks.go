package flowrun

import (
	"bytes"
	"strings"
)

// Failed checks (docs/runs.md "Failed checks"): when Flow refuses a run
// before execution (exit 2) it says why on stdout. The scanner below reads
// that stream line by line while it is drained, maps what it recognises to
// closed codes and keeps nothing else: no line outlives its own scan, and no
// part of Flow's text reaches a code, an error or a log.

// FailedCheck is a closed code naming a check Flow's admission refused.
// The values are part of the run record format and of the wire.
type FailedCheck string

// The failed-check codes, in wire order (new codes are appended).
const (
	CheckNoReadinessTest          FailedCheck = "no_readiness_test"
	CheckReadinessTestInvalid     FailedCheck = "readiness_test_invalid"
	CheckNotCertified             FailedCheck = "not_certified"
	CheckProfileNotMet            FailedCheck = "profile_not_met"
	CheckRightRecordCheckMissing  FailedCheck = "right_record_check_missing"
	CheckRecordCheckMissing       FailedCheck = "record_check_missing"
	CheckApprovalMissing          FailedCheck = "approval_missing"
	CheckPopupHandlingNotApproved FailedCheck = "popup_handling_not_approved"
	CheckNotEncrypted             FailedCheck = "not_encrypted"
	CheckIntegrityCheckFailed     FailedCheck = "integrity_check_failed"
	CheckWorkflowUnloadable       FailedCheck = "workflow_unloadable"
	CheckAppTargetMissing         FailedCheck = "app_target_missing"
	CheckURLOverrideNotAllowed    FailedCheck = "url_override_not_allowed"
	CheckOther                    FailedCheck = "other"
)

// FailedChecks is every code, in wire order.
var FailedChecks = []FailedCheck{
	CheckNoReadinessTest, CheckReadinessTestInvalid, CheckNotCertified, CheckProfileNotMet,
	CheckRightRecordCheckMissing, CheckRecordCheckMissing, CheckApprovalMissing,
	CheckPopupHandlingNotApproved, CheckNotEncrypted, CheckIntegrityCheckFailed,
	CheckWorkflowUnloadable, CheckAppTargetMissing, CheckURLOverrideNotAllowed, CheckOther,
}

// KnownFailedCheck reports whether c is one of [FailedChecks].
func KnownFailedCheck(c FailedCheck) bool {
	for _, k := range FailedChecks {
		if k == c {
			return true
		}
	}
	return false
}

// What Flow prints, and the code each line means.
//
// Provenance. Read (never copied) from Flow's public source,
// github.com/OpenAdaptAI/openadapt-flow at commit
// d1b054c718d60465fb8a2e1853e6a84c7f26dec2 ("chore: release 1.32.0"):
//   - openadapt_flow/run_gate.py: the gate titles (_GATE_TITLES) and the
//     line format of a failed gate, GateResult.render: two spaces,
//     "[REFUSE] ", the title, ": ", Flow's detail (and, on the next line,
//     the offending step ids). RunGateReport.render prints one such line per
//     gate after an "ADMIT:"/"REFUSE:" head line and ends with
//     "  -> RUN REFUSED (fail-closed): <titles>. Nothing was executed.";
//     the indexed copy of the same file (blob of commit
//     ca5ba40523580c090ff8ac81689d41f70087564e) has the same titles;
//   - openadapt_flow/__main__.py, the run command: print(report.render())
//     on stdout, then exit 2 when the gate refused; before the gate, the
//     one-line refusals "run REFUSED: bundle could not be loaded safely. …",
//     "run REFUSED: unknown execution profile …", "run REFUSED: the <p>
//     profile requires encrypted bundles; …", each on stdout with exit 2;
//   - openadapt_flow/surface_selection.py: explicit_surface_refusal, "run
//     REFUSED: the <p> profile requires an explicit execution surface; …".
//
// TestGateTitlesPinned (checks_test.go) and the fake Flow's refusal report
// (internal/testing/fakeflow) pin these shapes.
var gateTitles = map[string]FailedCheck{
	"Execution profile":             CheckProfileNotMet,
	"Certification passed":          CheckNotCertified,
	"Identity coverage":             CheckRightRecordCheckMissing,
	"Effect coverage":               CheckRecordCheckMissing,
	"Approval fallback":             CheckApprovalMissing,
	"Interstitial admission":        CheckPopupHandlingNotApproved,
	"Encrypted bundle":              CheckNotEncrypted,
	"Sealed manifest + version pin": CheckIntegrityCheckFailed,
}

// preGate are the one-line refusals Flow prints before its gate report:
// "run REFUSED: " and a sentence that starts with prefix and, when set,
// holds phrase. A refusal line matching none of them counts as
// [CheckOther].
var preGate = []struct {
	prefix, phrase string
	code           FailedCheck
}{
	{"bundle could not be loaded safely", "", CheckWorkflowUnloadable},
	{"unknown execution profile", "", CheckProfileNotMet},
	{"the ", " profile requires encrypted bundles", CheckNotEncrypted},
	{"the ", " profile requires an explicit execution surface", CheckAppTargetMissing},
}

const (
	refuseMark = "[REFUSE] "
	runRefused = "run REFUSED: "
	// maxScanLine bounds what the scanner holds of one line: the marks and
	// titles it matches are short and at the start of a line, so the rest of
	// a longer line is dropped unread.
	maxScanLine = 256
)

// CheckScanner reads Flow's stdout as it is drained and collects the failed
// checks it names. It holds at most [maxScanLine] bytes of the current line
// and the codes found (each at most once); it never returns or logs text.
// The zero value is ready; it is not safe for concurrent writes.
type CheckScanner struct {
	line    []byte
	found   []FailedCheck
	refusal bool // a refusal line that matched no code was seen
}

// Write scans p; it never fails.
func (s *CheckScanner) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxScanLine - len(s.line); room > 0 {
			s.line = append(s.line, chunk[:min(room, len(chunk))]...)
		}
		if i < 0 {
			break
		}
		s.endLine()
		p = p[i+1:]
	}
	return n, nil
}

// endLine scans the line held and forgets it.
func (s *CheckScanner) endLine() {
	s.scan(string(s.line))
	clear(s.line)
	s.line = s.line[:0]
}

func (s *CheckScanner) scan(line string) {
	t := strings.TrimLeft(line, " \t")
	if rest, ok := strings.CutPrefix(t, refuseMark); ok {
		title, _, ok := strings.Cut(rest, ":")
		if code, known := gateTitles[strings.TrimSpace(title)]; ok && known {
			s.add(code)
			return
		}
		s.refusal = true
		return
	}
	if rest, ok := strings.CutPrefix(t, runRefused); ok {
		for _, p := range preGate {
			if strings.HasPrefix(rest, p.prefix) && strings.Contains(rest, p.phrase) {
				s.add(p.code)
				return
			}
		}
		s.refusal = true
	}
}

func (s *CheckScanner) add(c FailedCheck) {
	for _, f := range s.found {
		if f == c {
			return
		}
	}
	s.found = append(s.found, c)
}

// Checks ends the scan (a last line without a newline counts) and returns
// the codes found, in the order Flow printed them, or [CheckOther] alone
// when nothing matched: a governed refusal always names at least one check.
func (s *CheckScanner) Checks() []FailedCheck {
	if len(s.line) > 0 {
		s.endLine()
	}
	if len(s.found) == 0 {
		return []FailedCheck{CheckOther}
	}
	out := append([]FailedCheck(nil), s.found...)
	if s.refusal {
		out = appendUnique(out, CheckOther)
	}
	return out
}

func appendUnique(cs []FailedCheck, c FailedCheck) []FailedCheck {
	for _, x := range cs {
		if x == c {
			return cs
		}
	}
	return append(cs, c)
}
