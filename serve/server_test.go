package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func toolNames(s *session) []string {
	res, err := s.cs.ListTools(t_ctx(), nil)
	if err != nil {
		s.t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func TestRegistrationReadOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.demo("demo", testBundle{salt: "a"})
	for _, mode := range []string{"per-workflow", "catalog"} {
		o := e.opts()
		o.ToolMode = mode
		s := start(t, o)
		want := []string{"list_workflows", "get_workflow", "get_run_report", "list_needs_attention", "get_attention_item"}
		if mode == "catalog" {
			want[0] = "search_workflows"
		}
		if diff := cmp.Diff(want, toolNames(s)); diff != "" {
			t.Fatalf("%s tools (-want +got):\n%s", mode, diff)
		}
	}
}

func TestRegistrationRunTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.demo("b-demo", testBundle{salt: "a"})
	e.demo("a-demo", testBundle{salt: "b"})
	e.demo("dup", testBundle{salt: "a"}) // same content: _2
	e.demo("legacy", testBundle{salt: "c", noManif: true})
	e.demo("tampered", testBundle{salt: "d", tamper: true})
	e.demo("reserved", testBundle{salt: "e", params: map[string]string{"url": "x"}})
	// "a b" is served as a_b_c8687a, which another parameter already is.
	e.demo("collision", testBundle{salt: "f", params: map[string]string{"a b": "x", "a_b_c8687a": "y"}})
	o := e.opts()
	o.AllowRun = true
	s := start(t, o)
	names := toolNames(s)
	if len(names) != 8 {
		t.Fatalf("tools: %v", names)
	}
	runs := names[5:]
	if !slices.IsSorted(runs) {
		t.Fatalf("run tools not sorted: %v", runs)
	}
	nameRE := regexp.MustCompile(`^[a-z0-9_]{1,64}$`)
	for _, n := range names {
		if !nameRE.MatchString(n) {
			t.Fatalf("bad tool name %q", n)
		}
	}
	hasSuffix := false
	for _, r := range runs {
		if !regexp.MustCompile(`^run_workflow_[0-9a-f]{24}(_[1-9][0-9]*)?$`).MatchString(r) {
			t.Fatalf("run tool %q", r)
		}
		hasSuffix = hasSuffix || strings.HasSuffix(r, "_2")
	}
	if !hasSuffix {
		t.Fatalf("duplicate content did not get _2: %v", runs)
	}
	list := s.call("list_workflows", nil)
	ws := list["workflows"].([]any)
	if len(ws) != 7 {
		t.Fatalf("workflows: %d", len(ws))
	}
	unavailable := 0
	for _, w := range ws {
		m := w.(map[string]any)
		if m["available"] == false {
			unavailable++
			if m["step_count"] != nil || len(m["parameters"].([]any)) != 0 {
				t.Fatalf("unavailable workflow exposes structure: %v", m)
			}
		}
	}
	if unavailable != 4 {
		t.Fatalf("unavailable = %d", unavailable)
	}
	for _, n := range names {
		tl := s.tools[n]
		a := tl.Annotations
		if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil {
			t.Fatalf("%s: annotations not explicit", n)
		}
		isRun := strings.HasPrefix(n, "run_")
		if isRun != !a.ReadOnlyHint || isRun != *a.DestructiveHint || isRun == a.IdempotentHint || isRun != *a.OpenWorldHint {
			t.Fatalf("%s: annotations %+v", n, a)
		}
		if isRun != (tl.Meta["requires_seal"] == true) {
			t.Fatalf("%s: _meta %v", n, tl.Meta)
		}
		if tl.Title == "" {
			t.Fatalf("%s: no title", n)
		}
		out, _ := json.Marshal(tl.OutputSchema)
		if strings.Contains(string(out), "$ref") || strings.Contains(string(out), `"protected"`) {
			t.Fatalf("%s: outputSchema %s", n, out)
		}
	}
	// The wire carries the schema bytes exactly (the client decodes them
	// into a map, so read the server's side of the wire).
	want := `{"type":"object","properties":{"note":{"type":"string","description":"Value for the declared 'note' workflow parameter."},"idempotency_key":{"type":"string","minLength":16,"maxLength":200,"pattern":"^[A-Za-z0-9._:-]{16,200}$","description":"Optional retry key. Reuse it only to retry this exact call; the retry returns the original run and starts nothing new. Never put personal data in it."}},"required":["note"],"additionalProperties":false}`
	wire := s.out()
	if !strings.Contains(wire, `"inputSchema":`+want) {
		t.Fatalf("run input schema not on the wire as\n%s", want)
	}
	if !strings.Contains(wire, `"outputSchema":{"type":"object","oneOf":[`) {
		t.Fatal("outputSchema not oneOf[S,F] with type object first")
	}
	if strings.Contains(wire, "Follow-up") {
		t.Fatal("recorded value in schema")
	}
}

func TestInstructionsAndIdentity(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.demo("demo", testBundle{salt: "a"})
	s := start(t, e.opts())
	init := s.cs.InitializeResult()
	for _, sub := range []string{"only status 'success'", "requires_seal", "Never report a halted, refused, timed-out, or error run as a success", "running", "get_run_report", "wait_ms", "interrupted", "idempotency_key"} {
		if !strings.Contains(init.Instructions, sub) {
			t.Fatalf("instructions lack %q", sub)
		}
	}
	if init.ServerInfo.Name != "openadapt-agent" || init.ServerInfo.Title != "OpenAdapt Agent" || init.ServerInfo.Version != "test" {
		t.Fatalf("serverInfo %+v", init.ServerInfo)
	}
	caps, _ := json.Marshal(init.Capabilities)
	if string(caps) != `{"resources":{},"tools":{}}` {
		t.Fatalf("capabilities %s", caps)
	}
}

func TestRunOutcomes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.demo("demo", testBundle{params: map[string]string{"note": "x", "scenario": "y"}, salt: "a"})
	o := e.opts()
	o.AllowRun = true
	s := start(t, o)
	tool := s.runTool()
	// A HALTED report whose transaction outcome proves no effect.
	beforeEffect := filepath.Join(e.root, "before-effect.json")
	halted, err := os.ReadFile("../testdata/flow/reports/standard-halted/report.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(beforeEffect, bytes.Replace(halted, []byte(`"RECONCILIATION_REQUIRED"`), []byte(`"HALTED_BEFORE_EFFECT"`), 1), 0o600)
	// dec is record_changed/safe_to_retry/next_step/proof (docs/runs.md
	// "Decision fields"); checks the failed_checks of a refusal.
	cases := []struct {
		scenario string
		status   string
		outcome  string
		msg      string
		effect   bool
		dec      string
		checks   []any
	}{
		{"report=legacy-success;exit=0", "success", "", "verified success", false, "yes/false/none/none", nil},
		{"report=standard-verified;exit=0", "error", "VERIFIED", "Unsigned production success is failure", true, "yes/false/none/local", nil},
		{"report=standard-verified;exit=1", "error", "VERIFIED", "trustworthy terminal result", false, "unknown/false/check_record/none", nil},
		{"report=standard-halted;exit=1", "halt", "HALTED", "HALTED. The run stopped safely instead of guessing, but Flow did not prove that the record is unchanged.", false, "unknown/false/wait_for_person/none", nil},
		{"report=" + beforeEffect + ";exit=1", "halt", "HALTED", "HALTED. The run stopped safely instead of guessing, and the record did not change.", false, "no/false/wait_for_person/none", nil},
		{"report=demo-completed-unverified;exit=0", "halt", "COMPLETED_UNVERIFIED", "completed", false, "unknown/false/check_record/none", nil},
		{"report=standard-failed;exit=1", "error", "FAILED", "trustworthy terminal result", false, "unknown/false/check_record/none", nil},
		{"report=standard-rolled-back;exit=1", "halt", "ROLLED_BACK", "compensating action", false, "unknown/false/check_record/none", nil},
		{"report=legacy-success;exit=2", "refused", "", "Nothing was executed", false, "no/true/fix_setup/none", []any{"other"}},
		{"refuse=effect_coverage,certification", "refused", "", "Nothing was executed", false, "no/true/fix_setup/none", []any{"not_certified", "record_check_missing"}},
		{"refuse=load", "refused", "", "Nothing was executed", false, "no/true/fix_setup/none", []any{"workflow_unloadable"}},
		{"exit=0", "error", "", "trustworthy terminal result", false, "unknown/false/check_record/none", nil},
		{"exit=1", "halt", "", "ended without a report", false, "unknown/false/check_record/none", nil},
		{"exit=3", "halt", "", "ended without a report", false, "unknown/false/check_record/none", nil},
		{"exit=130", "halt", "", "ended without a report", false, "unknown/false/check_record/none", nil},
		{"mode=report-symlink;exit=1", "error", "", "trustworthy terminal result", false, "unknown/false/check_record/none", nil},
		{"mode=report-malformed;exit=1", "error", "", "trustworthy terminal result", false, "unknown/false/check_record/none", nil},
		{"mode=report-array;exit=1", "error", "", "trustworthy terminal result", false, "unknown/false/check_record/none", nil},
		{"mode=report-huge;exit=1", "error", "", "trustworthy terminal result", false, "unknown/false/check_record/none", nil},
		{"report=inconsistent-halted-success;exit=0", "error", "HALTED", "trustworthy terminal result", false, "unknown/false/check_record/none", nil},
	}
	if harnessEra(t) != "" {
		// Under TestProtocolEra2025 only the protocol envelope differs (the
		// outcome mapping is the same code): the first case of each status,
		// the success run first, is representative.
		seen, n := map[string]bool{}, 0
		for _, c := range cases {
			if !seen[c.status] {
				seen[c.status] = true
				cases[n] = c
				n++
			}
		}
		cases = cases[:n]
	}
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			r := s.call(tool, map[string]any{"note": "n", "scenario": c.scenario})
			if r["status"] != c.status {
				t.Fatalf("status %v want %s: %v", r["status"], c.status, r)
			}
			if got, _ := r["execution_outcome"].(string); got != c.outcome {
				t.Fatalf("outcome %q want %q", got, c.outcome)
			}
			if !strings.Contains(r["message"].(string), c.msg) {
				t.Fatalf("message %q lacks %q", r["message"], c.msg)
			}
			_, hasEffect := r["effect_verified"]
			if hasEffect != c.effect {
				t.Fatalf("effect_verified present=%v", hasEffect)
			}
			if r["success"] != (c.status == "success") || r["sealed"] != false || r["requires_seal"] != true || r["replayed"] != false {
				t.Fatalf("flags: %v", r)
			}
			_, hasNA := r["needs_attention"]
			if hasNA != (c.status == "halt") {
				t.Fatalf("needs_attention present=%v", hasNA)
			}
			if _, ok := r["protected"]; ok {
				t.Fatal("protected in default mode")
			}
			if got := fmt.Sprintf("%v/%v/%v/%v", r["record_changed"], r["safe_to_retry"], r["next_step"], r["proof"]); got != c.dec {
				t.Fatalf("decision %s, want %s", got, c.dec)
			}
			if got, _ := r["failed_checks"].([]any); !cmp.Equal(got, c.checks) {
				t.Fatalf("failed_checks %v, want %v", r["failed_checks"], c.checks)
			}
			rep := s.call("get_run_report", map[string]any{"run_id": r["run_id"]})
			for _, k := range []string{"status", "success", "execution_outcome", "effect_verified", "message", "workflow_id", "run_id",
				"record_changed", "safe_to_retry", "next_step", "proof", "failed_checks"} {
				if !cmp.Equal(rep[k], r[k]) {
					t.Fatalf("get_run_report %s = %v, run tool %v", k, rep[k], r[k])
				}
			}
		})
	}
	// The success run: argv order, params file mode, nothing in argv.
	inv := e.invocations()
	first := inv[0]
	if first.Argv[0] != "openadapt-flow" || first.Argv[1] != "run" || first.Argv[3] != "--run-dir" || first.Argv[5] != "--params-file" {
		t.Fatalf("argv %v", first.Argv)
	}
	for _, a := range first.Argv {
		if a == "n" {
			t.Fatal("parameter value in argv")
		}
	}
	if first.ParamsMode != "0600" || first.Params["note"] != "n" {
		t.Fatalf("params file %v %v", first.ParamsMode, first.Params)
	}
	if _, err := os.Stat(first.ParamsFile); !os.IsNotExist(err) {
		t.Fatal("params file left behind")
	}
	ents, _ := os.ReadDir(filepath.Join(e.runsDir, ".openadapt-agent", "tmp"))
	if len(ents) != 0 {
		t.Fatalf("tmp not empty: %v", ents)
	}
}
