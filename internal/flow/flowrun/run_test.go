package flowrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakeflow"
)

func TestMain(m *testing.M) {
	fakeflow.RunIfInvoked()
	if slices.Contains(os.Args[1:], "-test.fuzzworker") {
		// A fuzz worker runs only a fuzz target, none of which spawns Flow;
		// building the shared fake at every worker start stalls fuzzing.
		os.Exit(m.Run())
	}
	flow, cleanup, err := fakeflow.BuildShared()
	if err != nil {
		fmt.Fprintln(os.Stderr, "flowrun tests: the shared fake Flow did not build; each test installs its own:", err)
	}
	sharedFlow = flow
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// sharedFlow is the fake Flow built once for the package without -race
// (fakeflow.BuildShared); "" means each test installs the test binary.
var sharedFlow string

func fakeFlow(t testing.TB) string {
	if sharedFlow != "" {
		return sharedFlow
	}
	return fakeflow.Install(t)
}

// harness holds one runs root with its state directory and the fake Flow.
type harness struct {
	flow      string
	runs      string
	paramsDir string
	bundle    string
	record    string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	root := t.TempDir()
	h := &harness{
		flow:   fakeFlow(t),
		runs:   filepath.Join(root, "runs"),
		bundle: filepath.Join(root, "bundle"),
		record: filepath.Join(root, "record.jsonl"),
	}
	h.paramsDir = filepath.Join(h.runs, ".openadapt-agent", "tmp")
	if err := os.MkdirAll(h.paramsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(h.bundle, 0o755); err != nil {
		t.Fatal(err)
	}
	return h
}

func absVector(t testing.TB, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(flowVectors, rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// request builds a run request whose fake Flow gets the given knobs.
func (h *harness) request(t *testing.T, knobs ...string) Request {
	env := []string{"PATH=" + os.Getenv("PATH"), "FAKE_FLOW_RECORD=" + h.record,
		"FAKE_FLOW_REPORTS_DIR=" + absVector(t, "reports")}
	for _, k := range knobs {
		env = append(env, "FAKE_FLOW_"+k)
	}
	return Request{
		Flow:         []string{h.flow},
		BundleDir:    h.bundle,
		RunsDir:      h.runs,
		RunID:        NewRunID(),
		ParamsDir:    h.paramsDir,
		Params:       map[string]string{"note": "Jane Roe MRN-9911"},
		Env:          env,
		Timeout:      time.Minute,
		TimeoutGrace: 2 * time.Second,
		CancelGrace:  2 * time.Second,
	}
}

func (h *harness) assertNoParamsFiles(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(h.paramsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("leftover file in the params directory: %s", e.Name())
	}
}

// TestOutcomeCases runs the fake Flow through every `outcome_cases` row of
// the MANIFEST: exit code × report, no report, timeout and launch failure.
func TestOutcomeCases(t *testing.T) {
	t.Parallel()
	var cases []outcomeCase
	for _, v := range loadManifest(t).Vectors {
		if v.Kind == "outcome_cases" {
			cases = v.Cases
		}
	}
	if len(cases) != 12 {
		t.Fatalf("found %d outcome cases, want 12", len(cases))
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%d_%s", i, c.ExitCode), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			var knobs []string
			if c.Report != nil {
				knobs = append(knobs, "REPORT="+absVector(t, *c.Report))
			}
			req := h.request(t, knobs...)
			switch code := string(c.ExitCode); code {
			case `"timeout"`:
				req.Env = append(req.Env, "FAKE_FLOW_MODE=hang-ignore-term")
				req.Timeout = 300 * time.Millisecond
				req.TimeoutGrace = 200 * time.Millisecond
			case `"launch_failed"`:
				req.Flow = []string{filepath.Join(t.TempDir(), "no-such-flow")}
			default:
				req.Env = append(req.Env, "FAKE_FLOW_EXIT="+code)
			}
			res := CLIRunner{}.Run(context.Background(), req)
			if res.Status != Status(c.ExpectedStatus) {
				t.Fatalf("status = %q, want %q (err %v)", res.Status, c.ExpectedStatus, res.Err)
			}
			if string(c.ExitCode) == `"launch_failed"` && !errors.Is(res.Err, ErrSpawn) {
				t.Errorf("launch failure err = %v, want ErrSpawn", res.Err)
			}
			h.assertNoParamsFiles(t)
		})
	}
}

// TestRunArgvEnvParams: the exact argv of a run, parameter values
// never in argv, the params file 0600 during the run and gone after, stdin
// the null device, and the child environment exactly as given.
func TestRunArgvEnvParams(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	req := h.request(t, "REPORT=legacy-success")
	req.URL = "https://app.example/x"
	req.Config = "/etc/flow/deploy.yaml"
	req.Policy = "clinical-write"
	req.ExtraArgs = []string{"--profile", "standard", "--allow-unencrypted"}
	var started Process
	req.Started = func(p Process) { started = p }
	res := CLIRunner{}.Run(context.Background(), req)
	if res.Status != StatusSuccess {
		t.Fatalf("status %q, err %v", res.Status, res.Err)
	}
	invs, err := fakeflow.ReadInvocations(h.record)
	if err != nil || len(invs) != 1 {
		t.Fatalf("invocations: %v, %v", invs, err)
	}
	inv := invs[0]
	paramsFile := filepath.Join(h.paramsDir, "params-"+req.RunID+".json")
	wantArgv := []string{"openadapt-flow", "run", h.bundle,
		"--run-dir", filepath.Join(h.runs, req.RunID),
		"--params-file", paramsFile,
		"--url", "https://app.example/x",
		"--config", "/etc/flow/deploy.yaml",
		"--policy", "clinical-write",
		"--profile", "standard", "--allow-unencrypted"}
	if diff := cmp.Diff(wantArgv, inv.Argv); diff != "" {
		t.Errorf("argv (-want +got):\n%s", diff)
	}
	for _, a := range inv.Argv {
		if strings.Contains(a, "Jane Roe") {
			t.Errorf("a parameter value reached argv: %q", a)
		}
	}
	if diff := cmp.Diff(map[string]any{"note": "Jane Roe MRN-9911"}, inv.Params); diff != "" {
		t.Errorf("params file content (-want +got):\n%s", diff)
	}
	if inv.ParamsMode != "0600" {
		t.Errorf("params file mode = %s, want 0600", inv.ParamsMode)
	}
	if _, err := os.Stat(paramsFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("params file still exists after the run: %v", err)
	}
	if !inv.StdinNull {
		t.Error("stdin is not the null device")
	}
	wantEnv := append([]string{}, req.Env...)
	slicesSort(wantEnv)
	if diff := cmp.Diff(wantEnv, inv.Env); diff != "" {
		t.Errorf("child env (-want +got):\n%s", diff)
	}
	if inv.PGID != inv.PID || inv.PID != started.PID || started.PGID != started.PID {
		t.Errorf("process group: fake pid %d pgid %d, Started %+v", inv.PID, inv.PGID, started)
	}
	if runtime.GOOS == "linux" && started.StartTime == 0 {
		t.Error("Started.StartTime is 0 on Linux")
	}
	if res.ExitCode == nil || *res.ExitCode != 0 || res.Report != ReportPresent {
		t.Errorf("exit %v report %v", res.ExitCode, res.Report)
	}
	if res.ReportPath != filepath.Join(h.runs, req.RunID, "report.json") {
		t.Errorf("ReportPath = %q", res.ReportPath)
	}
}

func slicesSort(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestChildEnvThroughFake: the allowlist as the fake sees it
// (docs/runs.md, "Child environment"), including an OPENADAPT_-prefixed fake knob.
func TestChildEnvThroughFake(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	server := []string{
		"PATH=/usr/bin:/bin", "HOME=/home/op", "LC_ALL=C.UTF-8", "XDG_RUNTIME_DIR=/run/user/1",
		"OPENADAPT_BUNDLE_KEY=k", "OPENADAPT_FAKE_FLOW_RECORD=" + h.record,
		"AWS_SECRET_ACCESS_KEY=x", "PYTHONPATH=/evil", "HTTPS_PROXY=http://proxy", "LD_PRELOAD=/evil.so",
	}
	req := h.request(t)
	req.Env = ChildEnv(server, []string{"HTTPS_PROXY"})
	if res := (CLIRunner{}).Run(context.Background(), req); res.Status != StatusError {
		t.Fatalf("status %q (want error: exit 0, no report)", res.Status)
	}
	invs, err := fakeflow.ReadInvocations(h.record)
	if err != nil || len(invs) != 1 {
		t.Fatalf("invocations: %v, %v", invs, err)
	}
	want := []string{"HOME=/home/op", "HTTPS_PROXY=http://proxy", "LC_ALL=C.UTF-8", "OPENADAPT_BUNDLE_KEY=k",
		"OPENADAPT_FAKE_FLOW_RECORD=" + h.record, "PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR=/run/user/1"}
	if diff := cmp.Diff(want, invs[0].Env); diff != "" {
		t.Errorf("child env (-want +got):\n%s", diff)
	}
}

// TestGracefulTermination: a Flow that honours SIGTERM ends on it; the
// SIGKILL grace (longer than go test's own timeout) is never waited out.
func TestGracefulTermination(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	req := h.request(t, "MODE=hang")
	req.Timeout = 200 * time.Millisecond
	req.TimeoutGrace = time.Hour
	if res := (CLIRunner{}).Run(context.Background(), req); res.Status != StatusTimeout {
		t.Fatalf("status %q", res.Status)
	}
	h.assertNoParamsFiles(t)
}

func TestCanceledBeforeStart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := CLIRunner{}.Run(ctx, h.request(t))
	if res.Status != StatusInterrupted {
		t.Errorf("status %q", res.Status)
	}
	if invs, _ := fakeflow.ReadInvocations(h.record); len(invs) != 0 {
		t.Errorf("Flow ran %d times", len(invs))
	}
	h.assertNoParamsFiles(t)
}

// TestCrash: death by signal is a nonzero exit; without a report it is halt
// with no_report, and with a success report it is never success.
func TestCrash(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := CLIRunner{}.Run(context.Background(), h.request(t, "MODE=crash", "SIGNAL=9"))
	if res.Status != StatusHalt || res.Reason != ReasonNoReport || res.ExitCode == nil || *res.ExitCode != -9 {
		t.Errorf("crash without report: %+v exit %v", res.Verdict, res.ExitCode)
	}
	res = CLIRunner{}.Run(context.Background(), h.request(t, "MODE=crash", "SIGNAL=15", "REPORT=legacy-success"))
	if res.Status != StatusError || res.Reason != ReasonInconsistentExit {
		t.Errorf("crash with success report: %+v", res.Verdict)
	}
}

// TestUnusableReports: every unusable report shape is error at exit 0 and 1
// and refused at exit 2.
func TestUnusableReports(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"report-symlink", "report-huge", "report-malformed", "report-array", "report-dir"} {
		for _, code := range []int{0, 1, 2} {
			t.Run(fmt.Sprintf("%s_%d", mode, code), func(t *testing.T) {
				t.Parallel()
				h := newHarness(t)
				res := CLIRunner{}.Run(context.Background(), h.request(t, "MODE="+mode, "EXIT="+strconv.Itoa(code)))
				want := StatusError
				if code == 2 {
					want = StatusRefused
				}
				if res.Status != want || res.Outcome != "" || res.Reason != "" {
					t.Fatalf("result %+v, want %s", res.Verdict, want)
				}
				if code != 2 && (res.Report != ReportUnusable || !errors.Is(res.Err, ErrReport)) {
					t.Errorf("report state %v err %v", res.Report, res.Err)
				}
				if res.Summary != (Summary{}) {
					t.Errorf("summary from an unusable report: %+v", res.Summary)
				}
			})
		}
	}
}

// TestHugeOutput: 24 MiB on each stream is drained into bounded tails.
func TestHugeOutput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := CLIRunner{}.Run(context.Background(), h.request(t, "OUTPUT_BYTES="+strconv.Itoa(24<<20), "EXIT=1"))
	if res.Status != StatusHalt || res.Reason != ReasonNoReport {
		t.Fatalf("result %+v", res.Verdict)
	}
	for name, s := range map[string]string{"stdout": res.StdoutTail, "stderr": res.StderrTail} {
		if n := len([]rune(s)); n != TailChars {
			t.Errorf("%s tail has %d characters, want %d", name, n, TailChars)
		}
		if !strings.Contains(s, "flow output line flow output line") || strings.Trim(s, "flowutpine \n") != "" {
			t.Errorf("%s tail is not the fake's output", name)
		}
	}
	// The kept stderr bytes come from the same capture: exactly the last
	// StderrKeepBytes of the stream, ending where the fake's output ends.
	if n := len(res.StderrKept); n != StderrKeepBytes {
		t.Errorf("kept %d stderr bytes, want %d", n, StderrKeepBytes)
	}
	if !strings.HasSuffix(string(res.StderrKept), res.StderrTail) {
		t.Error("the kept stderr does not end with the stderr tail")
	}
}

// TestHaltObject: the protected halt object is kept for protected export.
func TestHaltObject(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := CLIRunner{}.Run(context.Background(), h.request(t, "REPORT=standard-halted", "EXIT=1", "STDOUT=Replay HALTED: x\n"))
	if res.Status != StatusHalt || res.Outcome != OutcomeHalted {
		t.Fatalf("result %+v", res.Verdict)
	}
	if !strings.Contains(string(res.Halt), `"observed_texts"`) {
		t.Errorf("halt = %s", res.Halt)
	}
	if res.StdoutTail != "Replay HALTED: x\n" {
		t.Errorf("stdout tail %q", res.StdoutTail)
	}
	if res.Summary.StepsTotal == nil || *res.Summary.StepsTotal != 1 {
		t.Errorf("summary %+v", res.Summary)
	}
}

// TestConcurrentRuns: 32 simultaneous runs, each picking its own outcome
// through its parameters, give unmixed results (run under -race).
func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	scenarios := []struct {
		spec string
		want Verdict
	}{
		{"report=legacy-success;exit=0", Verdict{Status: StatusSuccess}},
		{"report=standard-halted;exit=1", Verdict{Status: StatusHalt, Outcome: OutcomeHalted}},
		{"report=standard-verified;exit=0", Verdict{Status: StatusError, Outcome: OutcomeVerified, Reason: ReasonUnsignedProductionSuccess, EffectVerified: true}},
		{"exit=2", Verdict{Status: StatusRefused}},
		{"exit=1", Verdict{Status: StatusHalt, Reason: ReasonNoReport}},
		{"report=demo-completed-unverified;exit=0", Verdict{Status: StatusHalt, Outcome: OutcomeCompletedUnverified}},
		{"report=standard-failed;exit=1", Verdict{Status: StatusError, Outcome: OutcomeFailed}},
		{"report=legacy-success;exit=1", Verdict{Status: StatusError, Reason: ReasonInconsistentExit}},
	}
	const n = 32
	var wg sync.WaitGroup
	results := make([]Result, n)
	reqs := make([]Request, n)
	for i := range n {
		reqs[i] = h.request(t, "SCENARIO_PARAM=scenario")
		reqs[i].Params = map[string]string{"scenario": scenarios[i%len(scenarios)].spec, "i": strconv.Itoa(i)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = CLIRunner{}.Run(context.Background(), reqs[i])
		}()
	}
	wg.Wait()
	for i, res := range results {
		if diff := cmp.Diff(scenarios[i%len(scenarios)].want, res.Verdict); diff != "" {
			t.Errorf("run %d (-want +got):\n%s", i, diff)
		}
		if res.RunDir != filepath.Join(h.runs, reqs[i].RunID) {
			t.Errorf("run %d: run dir %q", i, res.RunDir)
		}
	}
	invs, err := fakeflow.ReadInvocations(h.record)
	if err != nil || len(invs) != n {
		t.Fatalf("%d invocations, err %v", len(invs), err)
	}
	for _, inv := range invs {
		i, _ := strconv.Atoi(inv.Params["i"].(string))
		if inv.RunDir != filepath.Join(h.runs, reqs[i].RunID) {
			t.Errorf("run %d got run dir %q", i, inv.RunDir)
		}
	}
	h.assertNoParamsFiles(t)
}

func TestInvalidRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for name, mutate := range map[string]func(*Request){
		"no flow":         func(r *Request) { r.Flow = nil },
		"bad run id":      func(r *Request) { r.RunID = "../x" },
		"relative runs":   func(r *Request) { r.RunsDir = "runs" },
		"relative bundle": func(r *Request) { r.BundleDir = "b" },
		"relative params": func(r *Request) { r.ParamsDir = "tmp" },
	} {
		req := h.request(t)
		mutate(&req)
		res := CLIRunner{}.Run(context.Background(), req)
		if res.Status != StatusError || !errors.Is(res.Err, ErrInvalidRequest) {
			t.Errorf("%s: %+v %v", name, res.Verdict, res.Err)
		}
	}
	if invs, _ := fakeflow.ReadInvocations(h.record); len(invs) != 0 {
		t.Errorf("Flow ran %d times", len(invs))
	}
}

func TestParamsFileCollision(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	req := h.request(t, "REPORT=legacy-success")
	p := filepath.Join(h.paramsDir, ParamsFileName(req.RunID))
	if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := CLIRunner{}.Run(context.Background(), req)
	if res.Status != StatusError || !errors.Is(res.Err, ErrParamsFile) {
		t.Errorf("%+v %v", res.Verdict, res.Err)
	}
	if invs, _ := fakeflow.ReadInvocations(h.record); len(invs) != 0 {
		t.Errorf("Flow ran %d times", len(invs))
	}
}

func TestLookFlow(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if p, err := LookFlow([]string{h.flow, "x"}); err != nil || p != h.flow {
		t.Errorf("LookFlow(abs) = %q, %v", p, err)
	}
	for _, words := range [][]string{nil, {""}, {filepath.Join(t.TempDir(), "missing")}, {"openadapt-flow-definitely-not-on-path"}} {
		if _, err := LookFlow(words); !errors.Is(err, ErrFlowNotFound) {
			t.Errorf("LookFlow(%q) = %v", words, err)
		}
	}
}

// BenchmarkRun measures a whole run against an instant fake Flow: params
// file, spawn in a new group, wait, report read, classification.
func BenchmarkRun(b *testing.B) {
	root := b.TempDir()
	flow := fakeFlow(b)
	paramsDir := filepath.Join(root, "runs", ".openadapt-agent", "tmp")
	if err := os.MkdirAll(paramsDir, 0o700); err != nil {
		b.Fatal(err)
	}
	report, _ := filepath.Abs(filepath.Join(flowVectors, "reports/legacy-success/report.json"))
	req := Request{
		Flow: []string{flow}, BundleDir: root, RunsDir: filepath.Join(root, "runs"), ParamsDir: paramsDir,
		Params: map[string]string{"note": "x"},
		Env:    []string{"FAKE_FLOW_REPORT=" + report},
	}
	var lat []time.Duration
	for b.Loop() {
		req.RunID = NewRunID()
		t0 := time.Now()
		if res := (CLIRunner{}).Run(context.Background(), req); res.Status != StatusSuccess {
			b.Fatalf("status %q", res.Status)
		}
		lat = append(lat, time.Since(t0))
	}
	reportPercentiles(b, lat)
}

// reportPercentiles adds p50 and p90 latency metrics in milliseconds.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*9/10])/1e6, "p90-ms")
}

// BenchmarkOSExecFake is the same fake Flow run through plain os/exec
// (params file written once, no group, no report read): the process cost
// that BenchmarkRun adds this package's work to.
func BenchmarkOSExecFake(b *testing.B) {
	root := b.TempDir()
	flow := fakeFlow(b)
	params := filepath.Join(root, "params.json")
	if err := os.WriteFile(params, []byte(`{"note":"x"}`), 0o600); err != nil {
		b.Fatal(err)
	}
	report, _ := filepath.Abs(filepath.Join(flowVectors, "reports/legacy-success/report.json"))
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		cmd := exec.Command(flow, "run", root, "--run-dir", filepath.Join(root, "runs", NewRunID()), "--params-file", params)
		cmd.Env = []string{"FAKE_FLOW_REPORT=" + report}
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	reportPercentiles(b, lat)
}

// BenchmarkExecTrue is the spawn floor: /bin/true through Exec.
func BenchmarkExecTrue(b *testing.B) {
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if ex := Exec(context.Background(), Command{Args: []string{"/bin/true"}}); ex.Code != 0 {
			b.Fatalf("exit %d %v", ex.Code, ex.Err)
		}
		lat = append(lat, time.Since(t0))
	}
	reportPercentiles(b, lat)
}

// BenchmarkOSExecTrue is the floor without this package: os/exec of
// /bin/true with inherited output.
func BenchmarkOSExecTrue(b *testing.B) {
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	reportPercentiles(b, lat)
}

// BenchmarkClassify is the report read and classification of one run.
func BenchmarkClassify(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(flowVectors, "reports/standard-halted/report.json"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		v := ClassifyExit(1, ReportPresent, data)
		_ = summarize(data)
		if v.Status != StatusHalt {
			b.Fatal(v)
		}
	}
}
