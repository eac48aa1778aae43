package fakeflow

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMain(m *testing.M) {
	RunIfInvoked()
	os.Exit(m.Run())
}

const vectors = "../../../testdata/flow"

func abs(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(vectors, rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fake runs the installed fake with env and returns exit code, stdout, stderr.
func fake(t *testing.T, flow string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(flow, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func TestRunReportAndExit(t *testing.T) {
	flow := Install(t)
	dir := t.TempDir()
	params := filepath.Join(dir, "params.json")
	if err := os.WriteFile(params, []byte(`{"scenario":"exit=3;report=standard-halted","note":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(dir, "record.jsonl")
	runDir := filepath.Join(dir, "runs", "run-1")
	code, out, _ := fake(t, flow, []string{
		"OPENADAPT_FAKE_FLOW_REPORTS_DIR=" + abs(t, "reports"),
		"FAKE_FLOW_SCENARIO_PARAM=scenario",
		"FAKE_FLOW_RECORD=" + record,
		"FAKE_FLOW_STDOUT=Replay HALTED: x\n",
		"FAKE_FLOW_EXIT=0",
	}, "run", dir, "--run-dir", runDir, "--params-file", params, "--url", "http://x")
	if code != 3 || out != "Replay HALTED: x\n" {
		t.Errorf("exit %d stdout %q", code, out)
	}
	got, err := os.ReadFile(filepath.Join(runDir, "report.json"))
	want, _ := os.ReadFile(abs(t, "reports/standard-halted/report.json"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("report not copied: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(runDir, "report.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("report mode: %v %v", fi, err)
	}
	invs, err := ReadInvocations(record)
	if err != nil || len(invs) != 1 {
		t.Fatalf("%v %v", invs, err)
	}
	inv := invs[0]
	if diff := cmp.Diff([]string{Name, "run", dir, "--run-dir", runDir, "--params-file", params, "--url", "http://x"}, inv.Argv); diff != "" {
		t.Errorf("argv (-want +got):\n%s", diff)
	}
	if inv.RunDir != runDir || inv.ParamsFile != params || inv.ParamsMode != "0600" || inv.Params["note"] != "x" {
		t.Errorf("invocation %+v", inv)
	}
}

func TestReportShapes(t *testing.T) {
	flow := Install(t)
	for mode, check := range map[string]func(p string) bool{
		"report-symlink":   func(p string) bool { fi, err := os.Lstat(p); return err == nil && fi.Mode()&os.ModeSymlink != 0 },
		"report-dir":       func(p string) bool { fi, err := os.Lstat(p); return err == nil && fi.IsDir() },
		"report-huge":      func(p string) bool { fi, err := os.Lstat(p); return err == nil && fi.Size() > 16<<20 },
		"report-malformed": func(p string) bool { b, _ := os.ReadFile(p); return string(b) == `{"success": tru` },
		"report-array":     func(p string) bool { b, _ := os.ReadFile(p); return strings.HasPrefix(string(b), "[") },
		"no-run-dir":       func(p string) bool { _, err := os.Stat(filepath.Dir(p)); return os.IsNotExist(err) },
	} {
		runDir := filepath.Join(t.TempDir(), "run")
		code, _, _ := fake(t, flow, []string{"FAKE_FLOW_MODE=" + mode, "FAKE_FLOW_EXIT=1"}, "run", "/b", "--run-dir", runDir, "--params-file", "/nonexistent")
		if code != 1 || !check(filepath.Join(runDir, "report.json")) {
			t.Errorf("%s: exit %d, shape wrong", mode, code)
		}
	}
}

func TestEmitSkill(t *testing.T) {
	flow := Install(t)
	bundle := abs(t, "plain/mockmed-triage-v3")
	skill := abs(t, "skills/mockmed-triage-v3/mockmed-triage")
	for _, mode := range []string{"ok", "two-dirs", "no-bundle", "alter-copy", "exit1"} {
		t.Run(mode, func(t *testing.T) {
			out := t.TempDir()
			code, stdout, stderr := fake(t, flow, []string{"FAKE_FLOW_MODE=" + mode, "FAKE_FLOW_SKILL=" + skill}, "emit-skill", bundle, "--out", out)
			entries, _ := os.ReadDir(out)
			if mode == "exit1" {
				if code != 1 || !strings.Contains(stderr, "Traceback") || len(entries) != 0 {
					t.Errorf("exit %d, %d entries", code, len(entries))
				}
				return
			}
			dir := filepath.Join(out, "mockmed-triage")
			if code != 0 || stdout != "Skill written to "+dir+"\n" {
				t.Errorf("exit %d stdout %q", code, stdout)
			}
			wantEntries := 1
			if mode == "two-dirs" {
				wantEntries = 2
			}
			if len(entries) != wantEntries {
				t.Errorf("%d folders", len(entries))
			}
			md, _ := os.ReadFile(filepath.Join(dir, "SKILL.md"))
			src, _ := os.ReadFile(filepath.Join(skill, "SKILL.md"))
			if !bytes.Equal(md, src) {
				t.Error("SKILL.md differs from the fixture")
			}
			wf, err := os.ReadFile(filepath.Join(dir, "bundle", "workflow.json"))
			orig, _ := os.ReadFile(filepath.Join(bundle, "workflow.json"))
			switch mode {
			case "no-bundle":
				if err == nil {
					t.Error("bundle copied")
				}
			case "alter-copy":
				if bytes.Equal(wf, orig) {
					t.Error("copy not altered")
				}
			default:
				if !bytes.Equal(wf, orig) {
					t.Error("bundle copy differs")
				}
			}
		})
	}
}

func TestCertify(t *testing.T) {
	flow := Install(t)
	code, out, _ := fake(t, flow, []string{"FAKE_FLOW_CERTIFY_EXIT=2", "FAKE_FLOW_CERTIFY_STDOUT=FAIL"}, "certify", "/b", "--policy", "p")
	if code != 2 || out != "FAIL" {
		t.Errorf("exit %d out %q", code, out)
	}
	if code, _, errs := fake(t, flow, nil); code != 2 || !strings.HasPrefix(errs, "usage:") {
		t.Errorf("no args: exit %d %q", code, errs)
	}
	if code, _, errs := fake(t, flow, nil, "explode"); code != 2 || !strings.HasPrefix(errs, "usage:") {
		t.Errorf("unknown command: exit %d %q", code, errs)
	}
}

// TestBuild: the go-build helper gives a working fake.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("go build in -short mode")
	}
	flow := Build(t)
	if filepath.Base(flow) != Name {
		t.Errorf("name %q", flow)
	}
	if code, _, _ := fake(t, flow, []string{"FAKE_FLOW_EXIT=7"}, "run", "/b", "--run-dir", filepath.Join(t.TempDir(), "r"), "--params-file", "/p"); code != 7 {
		t.Errorf("exit %d", code)
	}
}

// TestRefusalReportShape pins the fake's governed refusal to the shape of
// Flow 1.32's run gate report (refuse.go, provenance): exit 2, no report,
// the report on stdout, one "  [REFUSE] <Title>: <detail>" line per
// refused gate in Flow's gate order, its offending steps on the next line,
// passed gates as "[PASS]", and the closing fail-closed line.
func TestRefusalReportShape(t *testing.T) {
	flow := Install(t)
	dir := t.TempDir()
	runDir := filepath.Join(dir, "runs", "run-1")
	code, out, _ := fake(t, flow, []string{"FAKE_FLOW_REFUSE=manifest_integrity,certification"},
		"run", dir, "--run-dir", runDir, "--params-file", filepath.Join(dir, "p.json"))
	want := "REFUSE: workflow 'Fake Workflow' under 'standard' profile vs policy 'clinical-write'\n" +
		"  [PASS] Execution profile: satisfied\n" +
		"  [REFUSE] Certification passed: " + refusalDetail + "\n" +
		"         steps: s0003, s0004\n" +
		"  [PASS] Identity coverage: satisfied\n" +
		"  [PASS] Effect coverage: satisfied\n" +
		"  [PASS] Approval fallback: satisfied\n" +
		"  [PASS] Interstitial admission: satisfied\n" +
		"  [PASS] Encrypted bundle: satisfied\n" +
		"  [REFUSE] Sealed manifest + version pin: " + refusalDetail + "\n" +
		"         steps: s0003, s0004\n" +
		"  -> RUN REFUSED (fail-closed): Certification passed, Sealed manifest + version pin. Nothing was executed.\n"
	if code != 2 || out != want {
		t.Errorf("exit %d, stdout (-want +got):\n%s", code, cmp.Diff(want, out))
	}
	if _, err := os.Stat(filepath.Join(runDir, "report.json")); !os.IsNotExist(err) {
		t.Errorf("a refusal wrote a report: %v", err)
	}
	for name, line := range map[string]string{
		"load":    "run REFUSED: bundle could not be loaded safely.",
		"surface": "run REFUSED: the standard profile requires an explicit execution surface;",
	} {
		code, out, _ := fake(t, flow, []string{"FAKE_FLOW_REFUSE=" + name}, "run", dir, "--run-dir", runDir, "--params-file", filepath.Join(dir, "p.json"))
		if code != 2 || !strings.HasPrefix(out, line) || strings.Count(out, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q", name, code, out)
		}
	}
	// The gate ids and titles are Flow's, in its render order.
	var titles []string
	for _, g := range gateOrder {
		titles = append(titles, g.id+"="+g.title)
	}
	wantTitles := []string{"execution_profile=Execution profile", "certification=Certification passed",
		"identity_coverage=Identity coverage", "effect_coverage=Effect coverage", "approval_fallback=Approval fallback",
		"interstitial_admission=Interstitial admission", "encryption=Encrypted bundle", "manifest_integrity=Sealed manifest + version pin"}
	if diff := cmp.Diff(wantTitles, titles); diff != "" {
		t.Errorf("gate titles (-want +got):\n%s", diff)
	}
}
