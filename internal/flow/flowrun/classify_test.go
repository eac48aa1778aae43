package flowrun

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const flowVectors = "../../../testdata/flow"

type manifest struct {
	Vectors []struct {
		ID       string          `json:"id"`
		Path     *string         `json:"path"`
		Kind     string          `json:"kind"`
		Expected json.RawMessage `json:"expected"`
		Cases    []outcomeCase   `json:"cases"`
	} `json:"vectors"`
}

type outcomeCase struct {
	ExitCode       json.RawMessage `json:"exit_code"`
	Report         *string         `json:"report"`
	ExpectedStatus string          `json:"expected_status"`
}

type reportExpected struct {
	Status                    string            `json:"status"`
	ReportStatus              string            `json:"report_status"`
	ExecutionOutcome          *string           `json:"execution_outcome"`
	UnsignedProductionSuccess bool              `json:"unsigned_production_success"`
	FlowValidates             bool              `json:"flow_validates"`
	Summary                   json.RawMessage   `json:"summary"`
	FlowExitCode              *int              `json:"flow_exit_code"`
	RunStatusByExitCode       map[string]string `json:"run_status_by_exit_code"`
}

func loadManifest(t testing.TB) manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(flowVectors, "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestReportVectors checks every `report` vector: report status, outcome,
// the unsigned-production reason, the public summary, the run status at
// each exit code, and whether Flow's validator accepts it.
func TestReportVectors(t *testing.T) {
	n := 0
	for _, v := range loadManifest(t).Vectors {
		if v.Kind != "report" {
			continue
		}
		n++
		t.Run(v.ID, func(t *testing.T) {
			var exp reportExpected
			if err := json.Unmarshal(v.Expected, &exp); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(flowVectors, *v.Path))
			if err != nil {
				t.Fatal(err)
			}
			want := Verdict{Status: Status(exp.ReportStatus)}
			if exp.ExecutionOutcome != nil {
				want.Outcome = *exp.ExecutionOutcome
			}
			if exp.UnsignedProductionSuccess {
				want.Reason = ReasonUnsignedProductionSuccess
				want.EffectVerified = true
			}
			if diff := cmp.Diff(want, classifyReport(data)); diff != "" {
				t.Errorf("classifyReport (-want +got):\n%s", diff)
			}
			if exp.Status != exp.ReportStatus {
				t.Errorf("manifest status %q != report_status %q", exp.Status, exp.ReportStatus)
			}
			for codeStr, status := range exp.RunStatusByExitCode {
				code, _ := strconv.Atoi(codeStr)
				got := ClassifyExit(code, ReportPresent, data)
				if got.Status != Status(status) {
					t.Errorf("ClassifyExit(%d) status = %q, want %q", code, got.Status, status)
				}
				if got.EffectVerified != (code == 0 && exp.UnsignedProductionSuccess) {
					t.Errorf("ClassifyExit(%d) EffectVerified = %v", code, got.EffectVerified)
				}
				if code == 2 && got.Outcome != "" {
					t.Errorf("ClassifyExit(2) echoes outcome %q", got.Outcome)
				}
			}
			if exp.FlowExitCode != nil {
				if got := ClassifyExit(*exp.FlowExitCode, ReportPresent, data); got.Status != Status(exp.Status) {
					t.Errorf("at Flow's own exit %d: status %q, want %q", *exp.FlowExitCode, got.Status, exp.Status)
				}
			}
			gotSummary, _ := json.Marshal(summarize(data))
			var a, b any
			_ = json.Unmarshal(exp.Summary, &a)
			_ = json.Unmarshal(gotSummary, &b)
			if diff := cmp.Diff(a, b); diff != "" {
				t.Errorf("summarize (-want +got):\n%s", diff)
			}
			if err := CheckReport(data); (err == nil) != exp.FlowValidates {
				t.Errorf("CheckReport = %v, flow_validates = %v", err, exp.FlowValidates)
			}
		})
	}
	if n != 8 {
		t.Errorf("found %d report vectors, want 8", n)
	}
}

// TestAttentionReportsValidate: the attention vectors hold only Flow-valid
// reports, so CheckReport must accept them all.
func TestAttentionReportsValidate(t *testing.T) {
	for _, rel := range []string{"run-0001", "run-0002", "run-0003", "run-0004", "nightly/run-0005"} {
		data, err := os.ReadFile(filepath.Join(flowVectors, "attended/runs", rel, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckReport(data); err != nil {
			t.Errorf("%s: %v", rel, err)
		}
	}
}

// TestInconsistentShapes holds one fixture per numbered inconsistent precise
// shape of the report table (error, outcome preserved), plus the rules that
// report no outcome.
func TestInconsistentShapes(t *testing.T) {
	env := `{"outcome":"HALTED","profile":"standard","production_eligible":false,"execution_completed":false,"model_calls":0,"external_network_calls":"unknown"}`
	halted := `"execution_outcome":"HALTED","execution_profile":"standard","production_eligible":false,"execution_completed":false,"model_calls":0,"external_network_calls":"unknown"`
	tests := []struct {
		name    string
		report  string
		outcome string
	}{
		{"1 success not boolean", `{"execution_outcome":"HALTED","success":"yes"}`, "HALTED"},
		{"1 success absent", `{"execution_outcome":"HALTED"}`, "HALTED"},
		{"1 success number", `{"execution_outcome":"COMPLETED_UNVERIFIED","success":1}`, "COMPLETED_UNVERIFIED"},
		{"2 unknown profile", `{"execution_outcome":"HALTED","success":false,"execution_profile":"production"}`, "HALTED"},
		{"2 profile not string", `{"execution_outcome":"HALTED","success":false,"execution_profile":1}`, "HALTED"},
		{"3 production_eligible not boolean", `{"execution_outcome":"HALTED","success":false,"production_eligible":"false"}`, "HALTED"},
		{"4 eligible but not VERIFIED", `{"execution_outcome":"HALTED","success":false,"execution_profile":"standard","production_eligible":true}`, "HALTED"},
		{"4 eligible VERIFIED under demo", `{"execution_outcome":"VERIFIED","success":true,"execution_profile":"demo","production_eligible":true}`, "VERIFIED"},
		{"5 envelope not object", `{"execution_outcome":"HALTED","success":false,"outcome_envelope":[]}`, "HALTED"},
		{"5 envelope outcome differs", `{"execution_outcome":"HALTED","success":false,"outcome_envelope":{"outcome":"FAILED"}}`, "HALTED"},
		{"6 profile differs from envelope", `{` + halted + `,"success":false,"outcome_envelope":` + replace(env, `"profile":"standard"`, `"profile":"regulated"`) + `}`, "HALTED"},
		{"6 eligible differs from envelope", `{` + halted + `,"success":false,"outcome_envelope":` + replace(env, `"production_eligible":false`, `"production_eligible":null`) + `}`, "HALTED"},
		{"6 completed differs from envelope", `{` + halted + `,"success":false,"outcome_envelope":` + replace(env, `"execution_completed":false`, `"execution_completed":true`) + `}`, "HALTED"},
		{"6 model_calls differs from envelope", `{` + halted + `,"success":false,"outcome_envelope":` + replace(env, `"model_calls":0`, `"model_calls":1`) + `}`, "HALTED"},
		{"6 network differs from envelope", `{` + halted + `,"success":false,"outcome_envelope":` + replace(env, `"external_network_calls":"unknown"`, `"external_network_calls":"observed"`) + `}`, "HALTED"},
		{"6 key missing from envelope", `{` + halted + `,"success":false,"outcome_envelope":{"outcome":"HALTED"}}`, "HALTED"},
		{"7 VERIFIED under demo", `{"execution_outcome":"VERIFIED","success":true,"execution_profile":"demo"}`, "VERIFIED"},
		{"7 VERIFIED without profile", `{"execution_outcome":"VERIFIED","success":true}`, "VERIFIED"},
		{"7 VERIFIED null profile", `{"execution_outcome":"VERIFIED","success":true,"execution_profile":null}`, "VERIFIED"},
		{"8 VERIFIED success false", `{"execution_outcome":"VERIFIED","success":false,"execution_profile":"standard"}`, "VERIFIED"},
		{"9 HALTED success true", `{"execution_outcome":"HALTED","success":true,"execution_profile":"standard"}`, "HALTED"},
		{"9 FAILED success true", `{"execution_outcome":"FAILED","success":true}`, "FAILED"},
		{"9 ROLLED_BACK success true", `{"execution_outcome":"ROLLED_BACK","success":true}`, "ROLLED_BACK"},
		{"rule 1 array", `[{"success":true}]`, ""},
		{"rule 1 string", `"success"`, ""},
		{"rule 1 invalid JSON", `{"success":tru`, ""},
		{"rule 1 empty", ``, ""},
		// Refused by the strict core (encoding/json took the last duplicate,
		// replaced bad UTF-8 and accepted the lone surrogate): rule 1.
		{"rule 1 duplicate key", `{"success":false,"success":true}`, ""},
		{"rule 1 nested duplicate key", `{"success":true,"halt":{"reason":"a","reason":"b"}}`, ""},
		{"rule 1 invalid UTF-8", "{\"success\":true,\"started_at\":\"\xff\"}", ""},
		{"rule 1 lone surrogate", `{"success":true,"started_at":"\udc00"}`, ""},
		{"rule 1 integer over CPython's digit bound", `{"success":true,"x":` + strings.Repeat("9", 4301) + `}`, ""},
		{"rule 1 byte order mark", "\ufeff{\"success\":true}", ""},
		{"rule 2 legacy success not boolean", `{"success":"true"}`, ""},
		{"rule 2 legacy success absent", `{"halt":null}`, ""},
		{"rule 3 unknown outcome", `{"execution_outcome":"SUCCEEDED","success":true}`, ""},
		{"rule 3 outcome lowercase", `{"execution_outcome":"verified","success":true,"execution_profile":"standard"}`, ""},
		{"rule 3 outcome not string", `{"execution_outcome":1,"success":true}`, ""},
		{"rule 13 FAILED", `{"execution_outcome":"FAILED","success":false,"execution_profile":"standard"}`, "FAILED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := Verdict{Status: StatusError, Outcome: tt.outcome}
			if diff := cmp.Diff(want, classifyReport([]byte(tt.report))); diff != "" {
				t.Errorf("classifyReport (-want +got):\n%s", diff)
			}
			// Never success at any exit.
			for _, code := range []int{0, 1, 3, 130, -9} {
				if got := ClassifyExit(code, ReportPresent, []byte(tt.report)); got.Status == StatusSuccess || got.EffectVerified {
					t.Errorf("ClassifyExit(%d) = %+v", code, got)
				}
			}
		})
	}
}

func replace(s, old, new string) string {
	if !strings.Contains(s, old) {
		panic("replace: " + old + " not found")
	}
	return strings.Replace(s, old, new, 1)
}

// TestConsistentShapes covers the success, halt and unsigned paths.
func TestConsistentShapes(t *testing.T) {
	verified := func(extra string) string {
		return `{"execution_outcome":"VERIFIED","success":true,"execution_profile":"standard"` + extra + `}`
	}
	tests := []struct {
		name   string
		report string
		want   Verdict
	}{
		{"legacy success", `{"success":true}`, Verdict{Status: StatusSuccess}},
		{"legacy success null outcome", `{"success":true,"execution_outcome":null}`, Verdict{Status: StatusSuccess}},
		{"legacy halt", `{"success":false,"halt":{"reason":"x"}}`, Verdict{Status: StatusHalt}},
		{"VERIFIED not eligible (qualification)", verified(`,"production_eligible":false`), Verdict{Status: StatusSuccess, Outcome: "VERIFIED"}},
		{"VERIFIED eligible absent", verified(``), Verdict{Status: StatusSuccess, Outcome: "VERIFIED"}},
		{"VERIFIED eligible null", verified(`,"production_eligible":null`), Verdict{Status: StatusSuccess, Outcome: "VERIFIED"}},
		{"VERIFIED regulated eligible", `{"execution_outcome":"VERIFIED","success":true,"execution_profile":"regulated","production_eligible":true}`,
			Verdict{Status: StatusError, Outcome: "VERIFIED", Reason: ReasonUnsignedProductionSuccess, EffectVerified: true}},
		{"HALTED", `{"execution_outcome":"HALTED","success":false}`, Verdict{Status: StatusHalt, Outcome: "HALTED"}},
		{"ROLLED_BACK", `{"execution_outcome":"ROLLED_BACK","success":false}`, Verdict{Status: StatusHalt, Outcome: "ROLLED_BACK"}},
		{"COMPLETED_UNVERIFIED demo success", `{"execution_outcome":"COMPLETED_UNVERIFIED","success":true,"execution_profile":"demo"}`, Verdict{Status: StatusHalt, Outcome: "COMPLETED_UNVERIFIED"}},
		{"passed count without a required count", `{"execution_outcome":"COMPLETED_UNVERIFIED","success":true,"execution_profile":"demo","execution_completed":true,"outcome_envelope":{"outcome":"COMPLETED_UNVERIFIED","profile":"demo","execution_completed":true,"required_contracts":{},"passed_contracts":{"effect":1}}}`, Verdict{Status: StatusHalt, Outcome: "COMPLETED_UNVERIFIED"}},
		{"envelope numbers compare by value", `{"execution_outcome":"HALTED","success":false,"model_calls":0,"outcome_envelope":{"outcome":"HALTED","model_calls":0.0}}`, Verdict{Status: StatusHalt, Outcome: "HALTED"}},
		{"null envelope is absent", `{"execution_outcome":"HALTED","success":false,"outcome_envelope":null}`, Verdict{Status: StatusHalt, Outcome: "HALTED"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, classifyReport([]byte(tt.report))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			_ = CheckReport([]byte(tt.report)) // never panics
		})
	}
	if err := CheckReport([]byte(tests[len(tests)-3].report)); !errors.Is(err, ErrReportInvalid) {
		t.Errorf("a passed count with no required count: CheckReport = %v", err)
	}
}

// TestClassifyExit pins the run-status invariants (docs/runs.md, "Run
// status").
func TestClassifyExit(t *testing.T) {
	unsigned := []byte(`{"execution_outcome":"VERIFIED","success":true,"execution_profile":"standard","production_eligible":true}`)
	legacyOK := []byte(`{"success":true}`)
	tests := []struct {
		name   string
		code   int
		state  ReportState
		report []byte
		want   Verdict
	}{
		{"exit 2 ignores report", 2, ReportPresent, legacyOK, Verdict{Status: StatusRefused}},
		{"exit 2 unusable", 2, ReportUnusable, nil, Verdict{Status: StatusRefused}},
		{"exit 2 absent", 2, ReportAbsent, nil, Verdict{Status: StatusRefused}},
		{"exit 0 absent", 0, ReportAbsent, nil, Verdict{Status: StatusError}},
		{"exit 0 unusable", 0, ReportUnusable, nil, Verdict{Status: StatusError}},
		{"exit 1 unusable", 1, ReportUnusable, nil, Verdict{Status: StatusError}},
		{"exit 1 absent", 1, ReportAbsent, nil, Verdict{Status: StatusHalt, Reason: ReasonNoReport}},
		{"exit 3 absent", 3, ReportAbsent, nil, Verdict{Status: StatusHalt, Reason: ReasonNoReport}},
		{"exit 130 absent", 130, ReportAbsent, nil, Verdict{Status: StatusHalt, Reason: ReasonNoReport}},
		{"signal absent", -9, ReportAbsent, nil, Verdict{Status: StatusHalt, Reason: ReasonNoReport}},
		{"exit 0 legacy success", 0, ReportPresent, legacyOK, Verdict{Status: StatusSuccess}},
		{"exit 1 legacy success", 1, ReportPresent, legacyOK, Verdict{Status: StatusError, Reason: ReasonInconsistentExit}},
		{"exit 0 unsigned", 0, ReportPresent, unsigned, Verdict{Status: StatusError, Outcome: "VERIFIED", Reason: ReasonUnsignedProductionSuccess, EffectVerified: true}},
		{"exit 1 unsigned is inconsistent_exit", 1, ReportPresent, unsigned, Verdict{Status: StatusError, Outcome: "VERIFIED", Reason: ReasonInconsistentExit}},
		{"signal with success report", -15, ReportPresent, legacyOK, Verdict{Status: StatusError, Reason: ReasonInconsistentExit}},
		{"present but not an object", 0, ReportPresent, []byte(`[]`), Verdict{Status: StatusError}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ClassifyExit(tt.code, tt.state, tt.report)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	got := summarize([]byte(`{"results":[{"ok":true},{"ok":"true","skipped":true},{"ok":1},"x"],
		"heal_count":true,"model_calls":2.0,"total_ms":-1,"screenshots_may_leave_box":"no","diagnostic":"Jane Roe"}`))
	b, _ := json.Marshal(got)
	if string(b) != `{"steps_total":4,"steps_ok":1,"steps_skipped":1}` {
		t.Errorf("summarize = %s", b)
	}
	got = summarize([]byte(`{"results":{},"heal_count":3,"model_calls":0,"total_ms":0,"screenshots_may_leave_box":true}`))
	b, _ = json.Marshal(got)
	if string(b) != `{"heal_count":3,"model_calls":0,"total_ms":0,"screenshots_may_leave_box":true}` {
		t.Errorf("summarize = %s", b)
	}
	if b, _ := json.Marshal(summarize([]byte(`nope`))); string(b) != `{}` {
		t.Errorf("summarize(invalid) = %s", b)
	}
}

// FuzzClassify: no input panics, success needs a JSON true, and the unsigned
// reason always comes with EffectVerified and status error.
func FuzzClassify(f *testing.F) {
	m := loadManifest(f)
	for _, v := range m.Vectors {
		if v.Kind == "report" {
			data, _ := os.ReadFile(filepath.Join(flowVectors, *v.Path))
			f.Add(data, 0)
		}
	}
	f.Add([]byte(`{"success":true}`), 1)
	f.Fuzz(func(t *testing.T, report []byte, code int) {
		v := classifyReport(report)
		if (v.Reason == ReasonUnsignedProductionSuccess) != v.EffectVerified {
			t.Fatalf("reason/effect mismatch: %+v", v)
		}
		if v.Status == StatusSuccess {
			var obj map[string]json.RawMessage
			if json.Unmarshal(report, &obj) != nil || string(obj["success"]) != "true" {
				t.Fatalf("success without success:true: %+v", v)
			}
		}
		e := ClassifyExit(code, ReportPresent, report)
		if e.Status == StatusSuccess && code != 0 {
			t.Fatalf("success at exit %d", code)
		}
		_ = summarize(report)
		_ = CheckReport(report)
	})
}

// TestCheckReportRules mutates Flow-valid vectors one rule at a time; each
// mutation must make CheckReport refuse the report (Flow's RunReport and
// ExecutionOutcomeEnvelope validators), while the vectors themselves pass.
func TestCheckReportRules(t *testing.T) {
	load := func(name string) map[string]any {
		data, err := os.ReadFile(filepath.Join(flowVectors, "reports", name, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	env := func(m map[string]any) map[string]any { return m["outcome_envelope"].(map[string]any) }
	tests := []struct {
		name   string
		vector string
		mutate func(m map[string]any)
	}{
		{"qualification marker without a case binding", "standard-halted", func(m map[string]any) { m["qualification_evidence_only"] = true }},
		{"execution_completed null beside an envelope", "standard-halted", func(m map[string]any) { m["execution_completed"] = nil }},
		{"passed exceeds required", "standard-halted", func(m map[string]any) {
			env(m)["passed_contracts"].(map[string]any)["identity"] = 2.0
		}},
		{"negative count", "standard-halted", func(m map[string]any) {
			env(m)["required_contracts"].(map[string]any)["effect"] = -1.0
		}},
		{"completed outcome without completion", "demo-completed-unverified", func(m map[string]any) {
			m["execution_completed"] = false
			env(m)["execution_completed"] = false
		}},
		{"duplicate evidence class", "standard-verified", func(m map[string]any) {
			env(m)["evidence_classes"] = []any{"authorization", "authorization"}
		}},
		{"postcondition evidence count", "standard-halted", func(m map[string]any) { env(m)["postcondition_evidence"] = []any{} }},
		{"postcondition class without a passed postcondition", "standard-halted", func(m map[string]any) {
			env(m)["evidence_classes"] = []any{"authorization", "postcondition"}
		}},
		{"evidence bound to another contract", "standard-verified", func(m map[string]any) {
			env(m)["postcondition_evidence"].([]any)[0].(map[string]any)["workflow_contract_sha256"] = "00"
		}},
		{"VERIFIED with an unpassed contract", "standard-verified", func(m map[string]any) {
			env(m)["passed_contracts"].(map[string]any)["effect"] = 0.0
		}},
		{"VERIFIED without authorization", "standard-verified", func(m map[string]any) {
			env(m)["required_contracts"].(map[string]any)["authorization"] = 0.0
			env(m)["passed_contracts"].(map[string]any)["authorization"] = 0.0
		}},
		{"VERIFIED neither eligible nor qualification-only", "standard-verified", func(m map[string]any) {
			m["production_eligible"] = false
			env(m)["production_eligible"] = false
		}},
		{"compensation without ROLLED_BACK", "standard-halted", func(m map[string]any) {
			env(m)["compensation_actions"] = 1.0
			env(m)["evidence_classes"] = []any{"authorization", "compensation"}
		}},
		{"ROLLED_BACK without compensation", "standard-rolled-back", func(m map[string]any) {
			env(m)["compensation_actions"] = 0.0
		}},
		{"compensation class without actions", "standard-rolled-back", func(m map[string]any) {
			env(m)["evidence_classes"] = []any{"authorization", "identity", "postcondition"}
		}},
		{"result ok not boolean", "legacy-success", func(m map[string]any) { m["results"].([]any)[0].(map[string]any)["ok"] = "yes" }},
		{"halt not an object", "legacy-halt", func(m map[string]any) { m["halt"] = "stopped" }},
		{"observed_texts not strings", "legacy-halt", func(m map[string]any) { m["halt"].(map[string]any)["observed_texts"] = []any{1.0} }},
		{"started_at not a string", "legacy-halt", func(m map[string]any) { m["started_at"] = 5.0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := load(tt.vector)
			before, _ := json.Marshal(m)
			if err := CheckReport(before); err != nil {
				t.Fatalf("vector %s invalid before mutation: %v", tt.vector, err)
			}
			tt.mutate(m)
			after, _ := json.Marshal(m)
			if err := CheckReport(after); !errors.Is(err, ErrReportInvalid) {
				t.Errorf("CheckReport = %v, want ErrReportInvalid", err)
			}
		})
	}
}
