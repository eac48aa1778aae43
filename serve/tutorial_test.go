//go:build unix

package serve

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/tutorial"
)

// tutEnv is tutorial mode with the fake helper (which "prepares" by copying
// the real Flow-made tutorial bundle from testdata) and the fake Flow.
type tutEnv struct {
	*env
	python string
	hrec   string
}

const tutDigest = "a2e6f6d7dc98c7ec859499f2bf07c7a5d741a553968d97a5a5c8bb524a2e411a"

func newTutEnv(t *testing.T, rules ...fakehelper.Rule) *tutEnv {
	t.Helper()
	e := newEnv(t)
	src, _ := filepath.Abs("../testdata/tutorial/bundle")
	te := &tutEnv{env: e, python: fakehelper.Install(t), hrec: filepath.Join(e.root, "helper-record")}
	if err := os.Mkdir(te.hrec, 0o700); err != nil {
		t.Fatal(err)
	}
	e.environ = append(e.environ, "OPENADAPT_FAKE_HELPER_TUTORIAL_BUNDLE="+src, "OPENADAPT_FAKE_HELPER_RECORD="+te.hrec,
		"OPENADAPT_FAKE_FLOW_REPORT=standard-verified", "OPENADAPT_FAKE_FLOW_VERSION=1.32.0")
	if len(rules) > 0 {
		e.environ = append(e.environ, "OPENADAPT_FAKE_HELPER_SCRIPT="+fakehelper.WriteScript(t, rules...))
	}
	return te
}

func (te *tutEnv) opts() Options {
	o := te.env.opts()
	o.Bundles = ""
	o.AllowRun = true
	o.FlowPython = te.python
	return o
}

func (te *tutEnv) work() string { return filepath.Join(te.runsDir, tutorial.DirName) }

// TestTutorialQuickstart: serve --allow-run without --bundles prepares the
// tutorial, registers exactly run_local_quickstart, runs it through the
// shared run pipeline with the tutorial argv, and reports an unsigned
// production success with its own
// message; the second start reuses; shutdown stops MockMed and leaves no
// helper process.
func TestTutorialQuickstart(t *testing.T) {
	t.Parallel()
	te := newTutEnv(t)
	s := start(t, te.opts())
	errOut := s.stderr.String()
	for _, want := range []string{"serve: synthetic tutorial: recording the synthetic demonstration in a browser (",
		"serve: synthetic tutorial ready (prepared) in "} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if b := s.srv.Banner(); !strings.Contains(b, "serving 1 workflow(s)") || !strings.Contains(b, "run tools enabled") ||
		!strings.Contains(b, "tutorial enabled") || strings.Contains(b, "admission gate off") ||
		!strings.Contains(b, "; admission: only the prepared tutorial bundle is exempt, bound to its content digest sha256:"+s.srv.tutorial.sess.ContentDigest+";") {
		t.Errorf("banner %q", b)
	}
	var names []string
	for n := range s.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	if !slices.Contains(names, "run_local_quickstart") || slices.ContainsFunc(names, func(n string) bool {
		return strings.HasPrefix(n, "run_") && n != "run_local_quickstart"
	}) {
		t.Fatalf("tools %v: the only run tool must be run_local_quickstart", names)
	}
	tool := s.tools["run_local_quickstart"]
	in, _ := json.Marshal(tool.InputSchema)
	var gotIn, wantIn any
	_ = json.Unmarshal(in, &gotIn)
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{"idempotency_key":{"type":"string","minLength":16,"maxLength":200,"pattern":"^[A-Za-z0-9._:-]{16,200}$","description":"Optional retry key. Reuse it only to retry this exact call; the retry returns the original run and starts nothing new. Never put personal data in it."}},"required":[],"additionalProperties":false}`), &wantIn)
	if a, b := mustJSON(gotIn), mustJSON(wantIn); a != b {
		t.Errorf("input schema %s", in)
	}
	if tool.Meta["requires_seal"] != true || tool.Annotations.ReadOnlyHint || !*tool.Annotations.DestructiveHint ||
		!strings.Contains(tool.Description, "governed") {
		t.Errorf("tool %+v", tool)
	}
	lw := s.call("list_workflows", map[string]any{})
	ws, _ := lw["workflows"].([]any)
	if len(ws) != 1 || ws[0].(map[string]any)["id"] != "local_quickstart" || len(ws[0].(map[string]any)["parameters"].([]any)) != 0 {
		t.Fatalf("list_workflows %v", lw)
	}
	if g := s.call("get_workflow", map[string]any{"workflow": "local_quickstart"}); g["id"] != "local_quickstart" {
		t.Fatalf("get_workflow %v", g)
	}

	// Only idempotency_key: the note is the server's.
	if r := s.call("run_local_quickstart", map[string]any{"note": "x"}); errorCode(r) != "invalid_arguments" {
		t.Errorf("note argument: %v", r)
	}
	if r := s.call("run_local_quickstart", map[string]any{"url": "http://x"}); errorCode(r) != "url_override_refused" {
		t.Errorf("url argument: %v", r)
	}
	if n := len(te.invocations()); n != 0 {
		t.Fatalf("%d runs after refusals", n)
	}
	key := map[string]any{"idempotency_key": "tutorial-key-000001"}
	r := s.call("run_local_quickstart", key)
	if r["status"] != "error" || r["success"] != false || r["execution_outcome"] != "VERIFIED" || r["effect_verified"] != true ||
		r["sealed"] != false || r["requires_seal"] != true || r["workflow_id"] != "local_quickstart" {
		t.Fatalf("unsigned production success: %v", r)
	}
	msg, _ := r["message"].(string)
	for _, want := range []string{"Unsigned production success is failure", "tutorial completed", "Nothing needs to be retried"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	// The replay and the report carry the same frozen tutorial copy.
	again := s.call("run_local_quickstart", key)
	if again["replayed"] != true || again["run_id"] != r["run_id"] || again["message"] != msg {
		t.Errorf("replay %v", again)
	}
	if rep := s.call("get_run_report", map[string]any{"run_id": r["run_id"]}); rep["message"] != msg || rep["effect_verified"] != true {
		t.Errorf("report %v", rep)
	}
	inv := te.invocations()
	if len(inv) != 1 {
		t.Fatalf("%d runs, want 1", len(inv))
	}
	argv := inv[0].Argv
	work := te.work()
	dep := filepath.Join(work, "deployment-"+s.srv.instance+".yaml")
	wantTail := []string{"--url", "http://127.0.0.1:9/?fault=ok&idempotency=demo#tasks", "--config", dep, "--profile", "standard"}
	if argv[1] != "run" || argv[2] != filepath.Join(work, "bundle") || !slices.Equal(argv[len(argv)-6:], wantTail) ||
		slices.Contains(argv, "--approve-unverified-writes") {
		t.Errorf("argv %q", argv)
	}
	if p := inv[0].Params; len(p) != 1 || p["note"] != tutorial.Note {
		t.Errorf("params file %v", p)
	}
	// The exemption record exists while the server runs, and both per-instance
	// files are gone after shutdown; MockMed is reported stopped.
	rec := tutorial.StatePath(s.srv.state.Dir(), s.srv.instance)
	if _, err := os.Stat(rec); err != nil {
		t.Fatalf("exemption record: %v", err)
	}
	pid := helperPID(t, te.hrec)
	s.srv.Close()
	for _, p := range []string{rec, dep} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after shutdown", p)
		}
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("helper %d still alive after shutdown", pid)
	}
	var closed bool
	for _, q := range fakehelper.Requests(t, te.hrec) {
		if q["op"] == "close" {
			closed = true
		}
	}
	if !closed {
		t.Error("no close sent to the helper (MockMed not stopped)")
	}

	// Second start: reuse.
	s2 := start(t, te.opts())
	if !strings.Contains(s2.stderr.String(), "ready (reused)") || strings.Contains(s2.stderr.String(), "recording the synthetic") {
		t.Errorf("second start did not reuse:\n%s", s2.stderr.String())
	}
}

func helperPID(t *testing.T, dir string) int {
	t.Helper()
	recs := fakehelper.Records(t, dir)
	if len(recs) == 0 {
		t.Fatal("no helper start recorded")
	}
	return recs[len(recs)-1].PID
}

// TestTutorialReadOnly: --tutorial without --allow-run serves the read
// tools over the prepared bundle and no run tool.
func TestTutorialReadOnly(t *testing.T) {
	t.Parallel()
	te := newTutEnv(t)
	o := te.opts()
	o.AllowRun, o.Tutorial = false, true
	s := start(t, o)
	for n := range s.tools {
		if strings.HasPrefix(n, "run_") {
			t.Errorf("run tool %s registered without --allow-run", n)
		}
	}
	if lw := s.call("list_workflows", map[string]any{}); len(lw["workflows"].([]any)) != 1 || lw["run_tools_enabled"] != false {
		t.Errorf("list_workflows %v", lw)
	}
	if r := s.call("run_local_quickstart", map[string]any{}); errorCode(r) != "run_tools_disabled" {
		t.Errorf("run_local_quickstart without --allow-run: %v", r)
	}
}

// TestTutorialPrepareFails: a failed preparation is the exit-2 message with
// the phase, and nothing of the helper's detail.
func TestTutorialPrepareFails(t *testing.T) {
	t.Parallel()
	te := newTutEnv(t, fakehelper.Rule{Op: "tutorial.prepare", Progress: []string{"lock", "mockmed", "compile"},
		Error: fakehelper.ErrorFrame("internal", "tutorial_failed", false, "openadapt_flow.tutorial.TutorialError"), Then: "stderr:Jane Roe MRN-9911"})
	var stderr syncBuffer
	_, err := New(te.opts(), &stderr)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Msg != "synthetic tutorial failed at compile; see the protected local log" {
		t.Fatalf("err %v", err)
	}
	if strings.Contains(stderr.String(), "MRN") {
		t.Errorf("helper detail on stderr:\n%s", stderr.String())
	}
	// The helper was stopped: no process is left behind.
	if err := syscall.Kill(helperPID(t, te.hrec), 0); err == nil {
		t.Error("helper left running after a failed start")
	}
}

// TestTutorialHelperDies: MockMed lives in the helper; once it dies,
// run_local_quickstart is internal_error before any spawn.
func TestTutorialHelperDies(t *testing.T) {
	t.Parallel()
	te := newTutEnv(t)
	s := start(t, te.opts())
	pid := helperPID(t, te.hrec)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.srv.helper.h.Done()
	if r := s.call("run_local_quickstart", map[string]any{}); errorCode(r) != "internal_error" {
		t.Errorf("after the helper died: %v", r)
	}
	if n := len(te.invocations()); n != 0 {
		t.Errorf("%d runs spawned without MockMed", n)
	}
}

// TestTutorialExemptionBound: the gate exemption is bound to the prepared
// digest and re-verified at every call; a changed bundle or record is
// admission_required with nothing started.
func TestTutorialExemptionBound(t *testing.T) {
	t.Parallel()
	te := newTutEnv(t)
	s := start(t, te.opts())
	rec := tutorial.StatePath(s.srv.state.Dir(), s.srv.instance)
	raw, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	// Another digest in the record.
	if err := os.WriteFile(rec, []byte(strings.Replace(string(raw), tutDigest, strings.Repeat("1", 64), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := s.call("run_local_quickstart", map[string]any{}); errorCode(r) != "admission_required" {
		t.Errorf("other recorded digest: %v", r)
	}
	if err := os.WriteFile(rec, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	// The bundle changed after preparation.
	p := filepath.Join(te.work(), "bundle", "templates", "step_000.png")
	orig, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte("changed"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := s.call("run_local_quickstart", map[string]any{}); errorCode(r) != "admission_required" {
		t.Errorf("changed bundle: %v", r)
	}
	if err := os.WriteFile(p, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := len(te.invocations()); n != 0 {
		t.Fatalf("%d runs despite refusals", n)
	}
	if r := s.call("run_local_quickstart", map[string]any{}); r["execution_outcome"] != "VERIFIED" {
		t.Errorf("restored: %v", r)
	}
	// A lying helper (digest differs from the bundle) fails startup.
	te2 := newTutEnv(t)
	te2.environ = append(te2.environ, "OPENADAPT_FAKE_HELPER_TUTORIAL_DIGEST="+strings.Repeat("2", 64))
	if _, err := New(te2.opts(), nil); err == nil || !strings.Contains(err.Error(), "synthetic tutorial failed at bundle") {
		t.Errorf("lying helper: %v", err)
	}
}

// TestTutorialFlagRefusals: tutorial mode refuses the flags that would add
// to its fixed argv or arguments, exit 2, before any helper.
func TestTutorialFlagRefusals(t *testing.T) {
	t.Parallel()
	te := newTutEnv(t)
	for name, edit := range map[string]func(*Options){
		"extra-run-arg":      func(o *Options) { o.ExtraRunArgs = []string{"--approve-unverified-writes"} },
		"url override":       func(o *Options) { o.AllowURLOverride = true },
		"synthetic defaults": func(o *Options) { o.AllowSyntheticRecordedDefaults = true },
	} {
		o := te.opts()
		edit(&o)
		_, err := New(o, nil)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Msg != "--tutorial cannot be combined with --extra-run-arg, --allow-url-override, or --allow-synthetic-recorded-defaults" {
			t.Errorf("%s: %v", name, err)
		}
	}
	if recs, _ := os.ReadDir(te.hrec); len(recs) != 0 {
		t.Error("a helper started despite a refused flag")
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestTutorialCatalog: catalog mode registers run_local_quickstart too, and
// run_workflow accepts local_quickstart with no parameters.
func TestTutorialCatalog(t *testing.T) {
	t.Parallel()
	te := newTutEnv(t)
	o := te.opts()
	o.ToolMode = "catalog"
	s := start(t, o)
	if s.tools["run_local_quickstart"] == nil || s.tools["run_workflow"] == nil {
		t.Fatalf("tools %v", s.tools)
	}
	if r := s.call("run_workflow", map[string]any{"workflow_id": "local_quickstart", "params": map[string]any{"note": "x"}}); errorCode(r) != "invalid_arguments" {
		t.Errorf("params: %v", r)
	}
	r := s.call("run_workflow", map[string]any{"workflow_id": "local_quickstart", "params": map[string]any{}})
	if r["execution_outcome"] != "VERIFIED" || !strings.Contains(r["message"].(string), "Unsigned production success is failure") {
		t.Errorf("run_workflow: %v", r)
	}
}
