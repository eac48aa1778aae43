package flowrun

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGateTitlesPinned pins the table of Flow 1.32's gate titles
// (checks.go, provenance) to their codes, one row per title.
func TestGateTitlesPinned(t *testing.T) {
	want := map[string]FailedCheck{
		"Execution profile":             "profile_not_met",
		"Certification passed":          "not_certified",
		"Identity coverage":             "right_record_check_missing",
		"Effect coverage":               "record_check_missing",
		"Approval fallback":             "approval_missing",
		"Interstitial admission":        "popup_handling_not_approved",
		"Encrypted bundle":              "not_encrypted",
		"Sealed manifest + version pin": "integrity_check_failed",
	}
	if diff := cmp.Diff(want, gateTitles); diff != "" {
		t.Errorf("gate titles (-want +got):\n%s", diff)
	}
	for title, code := range want {
		var s CheckScanner
		s.Write([]byte("  [REFUSE] " + title + ": detail with a secret: 123\n"))
		if got := s.Checks(); !slices.Equal(got, []FailedCheck{code}) {
			t.Errorf("%s: %v, want [%s]", title, got, code)
		}
	}
}

// TestFailedCheckCodes pins the closed codes and their wire order.
func TestFailedCheckCodes(t *testing.T) {
	want := []FailedCheck{"no_readiness_test", "readiness_test_invalid", "not_certified", "profile_not_met",
		"right_record_check_missing", "record_check_missing", "approval_missing", "popup_handling_not_approved",
		"not_encrypted", "integrity_check_failed", "workflow_unloadable", "app_target_missing",
		"url_override_not_allowed", "other"}
	if diff := cmp.Diff(want, FailedChecks); diff != "" {
		t.Errorf("codes (-want +got):\n%s", diff)
	}
	for _, c := range want {
		if !KnownFailedCheck(c) {
			t.Errorf("%s not known", c)
		}
	}
	if KnownFailedCheck("Other") || KnownFailedCheck("") {
		t.Error("an unknown code is known")
	}
}

func TestCheckScanner(t *testing.T) {
	long := strings.Repeat("x", 10000)
	cases := []struct {
		name, stdout string
		want         []FailedCheck
	}{
		{"nothing printed", "", []FailedCheck{"other"}},
		{"usage error", "usage: openadapt-flow run [-h]\n", []FailedCheck{"other"}},
		{"gate report", "REFUSE: workflow 'x' vs policy 'p'\n  [PASS] Execution profile: ok\n  [REFUSE] Effect coverage: a: b\n         steps: s1\n  [REFUSE] Certification passed: no\n  -> RUN REFUSED (fail-closed): Effect coverage, Certification passed. Nothing was executed.\n",
			[]FailedCheck{"record_check_missing", "not_certified"}},
		{"repeated title", "  [REFUSE] Encrypted bundle: a\n  [REFUSE] Encrypted bundle: b\n", []FailedCheck{"not_encrypted"}},
		{"an unknown gate beside a known one", "  [REFUSE] Readiness test: none\n  [REFUSE] Encrypted bundle: a\n", []FailedCheck{"not_encrypted", "other"}},
		{"only an unknown gate", "  [REFUSE] Something new: x\n", []FailedCheck{"other"}},
		{"warning is not a refusal", "  [WARN] Encrypted bundle: plaintext template\n", []FailedCheck{"other"}},
		{"no trailing newline", "  [REFUSE] Approval fallback: x", []FailedCheck{"approval_missing"}},
		{"CRLF", "  [REFUSE] Identity coverage: x\r\n", []FailedCheck{"right_record_check_missing"}},
		{"title after a long line", long + "\n  [REFUSE] Interstitial admission: x\n", []FailedCheck{"popup_handling_not_approved"}},
		{"mark deep in a long line", long + "  [REFUSE] Interstitial admission: x\n", []FailedCheck{"other"}},
		{"long detail", "  [REFUSE] Execution profile: " + long + "\n", []FailedCheck{"profile_not_met"}},
		{"unloadable", "run REFUSED: bundle could not be loaded safely. Verify the bundle path. Nothing was executed.\n", []FailedCheck{"workflow_unloadable"}},
		{"unknown profile", "run REFUSED: unknown execution profile 'x'; expected one of: demo. Nothing was executed.\n", []FailedCheck{"profile_not_met"}},
		{"encryption required", "run REFUSED: the regulated profile requires encrypted bundles; --allow-unencrypted cannot weaken a named profile.\n", []FailedCheck{"not_encrypted"}},
		{"no surface", "NOTE: x\nrun REFUSED: the standard profile requires an explicit execution surface; there is no implicit browser default.\n", []FailedCheck{"app_target_missing"}},
		{"other pre-gate refusal", "run REFUSED: managed dispatch binding is invalid. Nothing was executed.\n", []FailedCheck{"other"}},
		{"a title in prose", "the Encrypted bundle: was fine\nREFUSE: workflow\n", []FailedCheck{"other"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Whole, then one byte at a time: a line split across writes
			// scans the same.
			var whole, bytewise CheckScanner
			whole.Write([]byte(c.stdout))
			for i := 0; i < len(c.stdout); i++ {
				bytewise.Write([]byte{c.stdout[i]})
			}
			if got := whole.Checks(); !slices.Equal(got, c.want) {
				t.Errorf("whole: %v, want %v", got, c.want)
			}
			if got := bytewise.Checks(); !slices.Equal(got, c.want) {
				t.Errorf("bytewise: %v, want %v", got, c.want)
			}
		})
	}
}

// TestCheckScannerBounded: the scanner holds at most one capped line, and
// nothing of the text once a line has ended.
func TestCheckScannerBounded(t *testing.T) {
	var s CheckScanner
	chunk := bytes.Repeat([]byte("SECRET "), 1<<16)
	for i := 0; i < 16; i++ {
		if n, err := s.Write(chunk); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
		if len(s.line) > maxScanLine || cap(s.line) > 2*maxScanLine {
			t.Fatalf("line held %d bytes (cap %d)", len(s.line), cap(s.line))
		}
	}
	s.Write([]byte("\n"))
	if len(s.line) != 0 || bytes.Contains(s.line[:cap(s.line)], []byte("SECRET")) {
		t.Error("the ended line is still held")
	}
}

// TestRunFailedChecks runs the fake Flow's refusals (its shapes pinned to
// Flow's by fakeflow's TestRefusalReportShape): the codes are frozen in
// the result, in Flow's gate order, and no other status gets any.
func TestRunFailedChecks(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cases := []struct {
		knob string
		want []FailedCheck
	}{
		{"REFUSE=execution_profile,certification,identity_coverage,effect_coverage,approval_fallback,interstitial_admission,encryption,manifest_integrity",
			[]FailedCheck{"profile_not_met", "not_certified", "right_record_check_missing", "record_check_missing",
				"approval_missing", "popup_handling_not_approved", "not_encrypted", "integrity_check_failed"}},
		{"REFUSE=manifest_integrity,certification", []FailedCheck{"not_certified", "integrity_check_failed"}},
		{"REFUSE=readiness_test", []FailedCheck{"other"}},
		{"REFUSE=encryption,readiness_test", []FailedCheck{"not_encrypted", "other"}},
		{"REFUSE=load", []FailedCheck{"workflow_unloadable"}},
		{"REFUSE=unknown_profile", []FailedCheck{"profile_not_met"}},
		{"REFUSE=encryption_profile", []FailedCheck{"not_encrypted"}},
		{"REFUSE=surface", []FailedCheck{"app_target_missing"}},
		{"REFUSE=citrix", []FailedCheck{"other"}},
		{"EXIT=2", []FailedCheck{"other"}},
	}
	for _, c := range cases {
		res := CLIRunner{}.Run(t.Context(), h.request(t, c.knob))
		if res.Status != StatusRefused || !slices.Equal(res.FailedChecks, c.want) {
			t.Errorf("%s: %s %v, want refused %v", c.knob, res.Status, res.FailedChecks, c.want)
		}
		if res.TransactionOutcome != "" || res.Outcome != "" {
			t.Errorf("%s: a refusal kept %q %q", c.knob, res.Outcome, res.TransactionOutcome)
		}
	}
	// Refusal-shaped output at another exit is not a refusal.
	res := CLIRunner{}.Run(t.Context(), h.request(t, "STDOUT=  [REFUSE] Encrypted bundle: x\n", "EXIT=1"))
	if res.Status == StatusRefused || res.FailedChecks != nil {
		t.Errorf("exit 1: %s %v", res.Status, res.FailedChecks)
	}
}

// TestRunTransactionOutcome: the report's transaction_outcome is kept when
// it is one of Flow's values and the report was classified.
func TestRunTransactionOutcome(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cases := []struct {
		knobs []string
		want  string
	}{
		{[]string{"REPORT=standard-halted", "EXIT=1"}, "RECONCILIATION_REQUIRED"},
		{[]string{"REPORT=standard-verified"}, "VERIFIED"},
		{[]string{"REPORT=legacy-halt", "EXIT=1"}, ""},
		{[]string{`REPORT_JSON={"success": false, "execution_outcome": "HALTED", "transaction_outcome": "HALTED_BEFORE_EFFECT"}`, "EXIT=1"}, "HALTED_BEFORE_EFFECT"},
		{[]string{`REPORT_JSON={"success": false, "execution_outcome": "HALTED", "transaction_outcome": "halted_before_effect"}`, "EXIT=1"}, ""},
		{[]string{`REPORT_JSON={"success": false, "execution_outcome": "HALTED", "transaction_outcome": ["HALTED_BEFORE_EFFECT"]}`, "EXIT=1"}, ""},
		{[]string{`REPORT_JSON={"success": false, "execution_outcome": "HALTED", "transaction_outcome": "SOMETHING_NEW"}`, "EXIT=1"}, ""},
		{[]string{"REPORT=standard-halted", "EXIT=2"}, ""},
	}
	for _, c := range cases {
		res := CLIRunner{}.Run(t.Context(), h.request(t, c.knobs...))
		if res.TransactionOutcome != c.want {
			t.Errorf("%v: %q, want %q", c.knobs, res.TransactionOutcome, c.want)
		}
	}
}
