//go:build unix

package flowhelper_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/authoringstub"
)

var (
	stubPythonOnce sync.Once
	stubPython     string
)

// systemPython finds a Python 3.10–3.12 for the real program with the stub
// Flow (docs/helper.md, "Test doubles"); tests skip with a message without
// one.
func systemPython(t *testing.T) string {
	t.Helper()
	stubPythonOnce.Do(func() {
		for _, name := range []string{"python3", "python3.12", "python3.11", "python3.10"} {
			p, err := exec.LookPath(name)
			if err != nil {
				continue
			}
			out, err := exec.Command(p, "-c", "import sys;print('%d.%d'%sys.version_info[:2])").Output()
			v := strings.TrimSpace(string(out))
			if err == nil && (v == "3.10" || v == "3.11" || v == "3.12") {
				stubPython = p
				return
			}
		}
	})
	if stubPython == "" {
		authoringstub.NoPython(t, "flowhelper: stub-Flow tests")
	}
	return stubPython
}

type stubEnv struct {
	python, runs, state, runDir, id, log string
	env                                  []string
}

func newStub(t *testing.T, vars ...string) *stubEnv {
	t.Helper()
	py := systemPython(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	stub, err := filepath.Abs("../../../testdata/stubflow")
	if err != nil {
		t.Fatal(err)
	}
	s := &stubEnv{python: py, runs: filepath.Join(dir, "runs"), state: filepath.Join(dir, "runs", ".openadapt-agent"), log: filepath.Join(dir, "stub.log")}
	s.runDir = filepath.Join(s.runs, "run-a")
	if err := os.MkdirAll(s.runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.runDir, "report.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.id = attentionID("run-a")
	env := append(os.Environ(), "PYTHONPATH="+stub, "OPENADAPT_STUBFLOW_LOG="+s.log)
	for _, v := range vars {
		if strings.HasPrefix(v, "PYTHONPATH=") {
			v = strings.ReplaceAll(v, "STUB", stub)
		}
		env = append(env, v)
	}
	s.env = flowrun.ChildEnv(env, []string{"PYTHONPATH"})
	return s
}

func (s *stubEnv) config(t *testing.T) flowhelper.Config {
	op, err := flowhelper.Operator()
	if err != nil {
		t.Fatal(err)
	}
	return flowhelper.Config{Interpreter: flowhelper.Interpreter{Path: s.python}, StateDir: s.state, Instance: "stub",
		Env: s.env, Operator: op}
}

func (s *stubEnv) start(t *testing.T) *flowhelper.Helper {
	t.Helper()
	h, err := flowhelper.Start(context.Background(), s.config(t))
	if err != nil {
		t.Fatalf("Start: %v (%v)", err, errors.Unwrap(err))
	}
	t.Cleanup(func() { _, _ = h.Close() })
	return h
}

func (s *stubEnv) act(action, key string) flowhelper.ActRequest {
	op, _ := flowhelper.Operator()
	return flowhelper.ActRequest{RunsRoot: s.runs, AttentionID: s.id, CapabilityDigest: "sha256:" + strings.Repeat("d", 64),
		IdempotencyKey: key, Action: action, Disposition: flowhelper.Dispositions[action], DecidedBy: "automation", Operator: op}
}

func TestStubHelloAndVersionPin(t *testing.T) {
	t.Parallel()
	h := newStub(t).start(t)
	if hl := h.Hello(); hl.FlowVersion != "1.32.0" || !hl.Capabilities.AttendedService || !hl.Capabilities.Tutorial || hl.Capabilities.Authoring {
		t.Errorf("hello %+v", hl)
	}
	if !h.Pinned() {
		t.Error("1.32.0 is not pinned")
	}
	// hello answers on another version; the pinned features refuse it, and
	// the helper refuses their ops too.
	s := newStub(t, "OPENADAPT_STUBFLOW_VERSION=1.33.0")
	h33, err := flowhelper.Start(context.Background(), s.config(t))
	if err != nil {
		t.Fatalf("1.33.0: %v", err)
	}
	defer h33.Close()
	if hl := h33.Hello(); hl.FlowSupported || h33.Pinned() || !hl.Capabilities.AttendedService {
		t.Errorf("1.33.0 hello %+v", hl)
	}
	if err := h33.CheckFeature(context.Background(), flowhelper.FeatureAttended); err == nil ||
		err.Error() != "openadapt-flow 1.33.0 is not supported by attended actions; supported: 1.32.x" || !errors.Is(err, flowhelper.ErrUnsupportedFlow) {
		t.Errorf("1.33.0 attended: %v", err)
	}
	if _, err := h33.Act(context.Background(), s.act("teach", "k-0000000000000001")); !isKind(err, "unavailable", "flow_version_unsupported") {
		t.Errorf("1.33.0 act: %v", err)
	}
	s = newStub(t, "OPENADAPT_STUBFLOW_IMPORT_FAIL=1")
	if _, err := flowhelper.Start(context.Background(), s.config(t)); err == nil || err.Error() != "the Flow helper could not be started with "+s.python {
		t.Errorf("import failure: %v", err)
	}
	log, _ := os.ReadFile(filepath.Join(s.state, "logs", "helper-stub.log"))
	if !strings.Contains(string(log), "CANARY-IMPORT") {
		t.Errorf("the traceback belongs in the protected log:\n%s", log)
	}
}

// An import-time print goes to fd 1 (the stderr pipe), never fd 5.
func TestStubImportPrint(t *testing.T) {
	t.Parallel()
	s := newStub(t, "OPENADAPT_STUBFLOW_IMPORT_PRINT=1")
	h := s.start(t)
	if _, err := h.Act(context.Background(), s.act("escalate", "escalate-key-0000001")); err != nil {
		t.Fatal(err)
	}
	h.Close()
	log, _ := os.ReadFile(h.LogPath)
	if !strings.Contains(string(log), "stubflow: import-time print on stdout") {
		t.Errorf("log:\n%s", log)
	}
}

// The helper's error classification, every branch, through the real
// program.
func TestStubClassification(t *testing.T) {
	t.Parallel()
	const refusedType = "openadapt_flow.runtime.durable.attended.AttendedActionRefused"
	for _, tc := range []struct {
		mode, action, kind, reason string
		dispatched                 bool
	}{
		{"refused", "escalate", "refused", "", true},
		{"busy", "escalate", "busy", "", true},
		{"busy", "reject", "busy", "", true},
		{"busy-inflight", "reject", "uncertain", "journal_in_flight", true},
		{"busy-inflight-other", "reject", "uncertain", "pause_delivery_unresolved", true},
		{"busy-inflight", "escalate", "busy", "", true}, // teach/escalate: no journal probe
		{"unreadable", "continue", "uncertain", "journal_unreadable", true},
		{"unreadable", "reject", "busy", "", true},
		{"timeout", "escalate", "uncertain", "", true},
		{"internal", "teach", "internal", "", true},
		{"validation", "teach", "invalid", "bad_request", false},
	} {
		t.Run(tc.mode+"/"+tc.action, func(t *testing.T) {
			s := newStub(t, "OPENADAPT_STUBFLOW_ACT="+tc.mode)
			h := s.start(t)
			ctx := context.Background()
			if flowhelper.IsLive(tc.action) {
				if err := os.WriteFile(filepath.Join(s.runs, "d.json"), []byte(`{"kind":"web","url":"http://x/","headed":true}`), 0o600); err != nil {
					t.Fatal(err)
				}
				if _, err := h.OpenService(ctx, flowhelper.DeploymentRequest{DeploymentConfig: filepath.Join(s.runs, "d.json")}); err != nil {
					t.Fatal(err)
				}
			}
			_, err := h.Act(ctx, s.act(tc.action, "the-key-000000000001"))
			var he *flowhelper.Error
			if !errors.As(err, &he) || he.Kind != tc.kind || he.Reason != tc.reason || he.Dispatched != tc.dispatched {
				t.Fatalf("err = %#v, want %s/%s dispatched=%v", err, tc.kind, tc.reason, tc.dispatched)
			}
			if strings.Contains(fmt.Sprintf("%#v", he), "CANARY") {
				t.Errorf("Flow text in the error frame: %#v", he)
			}
			if tc.mode == "refused" && (he.FlowType != refusedType || len(he.MRO) == 0 || he.MRO[0] != refusedType) {
				t.Errorf("flow_type %q mro %v", he.FlowType, he.MRO)
			}
			if !h.Alive() {
				t.Error("an error frame killed the helper")
			}
		})
	}
}

func TestStubServiceOpen(t *testing.T) {
	t.Parallel()
	write := func(s *stubEnv, body string) string {
		p := filepath.Join(s.runs, "deploy.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct{ name, open, body, kind, reason string }{
		{"missing", "", "", "invalid", "deployment_config"},
		{"unparsable", "", "{", "invalid", "deployment_config"},
		{"headless", "", `{"kind":"web","url":"http://x/"}`, "invalid", "deployment_unusable"},
		{"value error", "value_error", `{"kind":"web","url":"http://x/","headed":true}`, "invalid", "deployment_unusable"},
		{"timeout", "timeout", `{"kind":"web","url":"http://x/","headed":true}`, "unavailable", "executor_timeout"},
		{"launch", "launch_error", `{"kind":"web","url":"http://x/","headed":true}`, "unavailable", "live_session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStub(t, "OPENADAPT_STUBFLOW_OPEN="+tc.open)
			h := s.start(t)
			p := filepath.Join(s.runs, "absent.json")
			if tc.body != "" {
				p = write(s, tc.body)
			}
			_, err := h.OpenService(context.Background(), flowhelper.DeploymentRequest{DeploymentConfig: p})
			if !isKind(err, tc.kind, tc.reason) {
				t.Fatalf("open = %v", err)
			}
		})
	}
	// Overrides: --url and --headed make a headless, url-less config usable.
	s := newStub(t)
	h := s.start(t)
	p := write(s, `{"kind":"web"}`)
	url := "http://127.0.0.1:9/"
	info, err := h.CheckDeployment(context.Background(), flowhelper.DeploymentRequest{DeploymentConfig: p})
	if err != nil || info.Headed || info.URLPresent || info.BackendKind != "web" {
		t.Errorf("check without overrides = %+v, %v", info, err)
	}
	info, err = h.CheckDeployment(context.Background(), flowhelper.DeploymentRequest{DeploymentConfig: p, URL: &url, Headed: true})
	if err != nil || !info.Headed || !info.URLPresent {
		t.Errorf("check with overrides = %+v, %v", info, err)
	}
	si, err := h.OpenService(context.Background(), flowhelper.DeploymentRequest{DeploymentConfig: p, URL: &url, Headed: true})
	if err != nil || !si.Headed {
		t.Fatalf("open = %+v, %v", si, err)
	}
	d, err := h.Act(context.Background(), s.act("continue", "continue-key-0000001"))
	if err != nil || d.Status != "completed" || d.Check("continue") != nil || *d.NextTransition != "step_003" {
		t.Fatalf("continue = %+v, %v", d, err)
	}
	res, err := h.Close()
	if err != nil || !res.ServiceClosed {
		t.Errorf("close = %+v, %v", res, err)
	}
	log, _ := os.ReadFile(s.log)
	if !strings.Contains(string(log), "service closed") {
		t.Errorf("service.close not called: %q", log)
	}
}

// Requests with the same (run dir, key) are serialized: the second becomes
// Flow's replay, never a concurrent execution.
func TestStubSameKeySerialized(t *testing.T) {
	t.Parallel()
	s := newStub(t, "OPENADAPT_STUBFLOW_ACT=slow")
	h := s.start(t)
	var wg sync.WaitGroup
	ids := make([]string, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := h.Act(context.Background(), s.act("escalate", "same-key-00000000001"))
			ids[i], errs[i] = d.DecisionID, err
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || ids[0] != ids[1] {
		t.Fatalf("ids %v errs %v", ids, errs)
	}
	log, _ := os.ReadFile(s.log)
	if got := string(log); got != "start same-key-00000000001\nend same-key-00000000001\n" {
		t.Errorf("stub log %q", got)
	}
}

// fds 4/5 are not inherited by Flow's children; "" and the CWD are off
// sys.path; operator and decided_by reach Flow.
func TestStubProcessHygiene(t *testing.T) {
	t.Parallel()
	s := newStub(t, "OPENADAPT_STUBFLOW_ACT=probe", "PYTHONPATH=:STUB")
	cfg := s.config(t)
	cfg.Dir = s.runs
	h, err := flowhelper.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	d, err := h.Act(context.Background(), s.act("teach", "teach-key-0000000001"))
	if err != nil {
		t.Fatal(err)
	}
	var probe struct {
		ChildFDs  string `json:"child_fds"`
		CwdOnPath bool   `json:"cwd_on_path"`
		Operator  string `json:"operator"`
		DecidedBy string `json:"decided_by"`
	}
	if err := json.Unmarshal([]byte(d.Message), &probe); err != nil {
		t.Fatalf("probe %q: %v", d.Message, err)
	}
	op, _ := flowhelper.Operator()
	if probe.ChildFDs != "closed,closed" || probe.CwdOnPath || probe.Operator != op || probe.DecidedBy != "automation" {
		t.Errorf("probe %+v", probe)
	}
}

// rawHelper runs the embedded program on raw pipes, for frames Helper never sends.
type rawHelper struct {
	cmd *exec.Cmd
	w   *os.File
	r   *bufio.Reader
}

func startRaw(t *testing.T, s *stubEnv) *rawHelper {
	t.Helper()
	dir := t.TempDir()
	prog := filepath.Join(dir, "flow_helper.py")
	if err := os.WriteFile(prog, flowhelper.Program(), 0o600); err != nil {
		t.Fatal(err)
	}
	reqR, reqW, _ := os.Pipe()
	respR, respW, _ := os.Pipe()
	devnull, _ := os.Open(os.DevNull)
	cmd := exec.Command(s.python, "-B", prog, "--in-fd", "4", "--out-fd", "5")
	cmd.Env = s.env
	cmd.ExtraFiles = []*os.File{devnull, reqR, respW}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reqR.Close()
	respW.Close()
	devnull.Close()
	rh := &rawHelper{cmd: cmd, w: reqW, r: bufio.NewReaderSize(respR, 1<<20)}
	t.Cleanup(func() { reqW.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return rh
}

func (r *rawHelper) send(t *testing.T, line string) {
	t.Helper()
	if _, err := r.w.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
}

func (r *rawHelper) recv(t *testing.T) map[string]any {
	t.Helper()
	line, err := r.r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("reading a frame: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("frame %q: %v", line, err)
	}
	return m
}

func errOf(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return "ok"
	}
	return fmt.Sprintf("%v/%v", e["kind"], e["reason"])
}

func (r *rawHelper) exitCode(t *testing.T) int {
	t.Helper()
	err := r.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

func TestStubRawFrames(t *testing.T) {
	t.Parallel()
	s := newStub(t)
	r := startRaw(t, s)
	r.send(t, `{"v":1,"id":1,"op":"attended.act"}`)
	if m := r.recv(t); errOf(m) != "invalid/hello_required" || m["id"] != 1.0 {
		t.Fatalf("before hello: %v", m)
	}
	r.send(t, `{"v":1,"id":2,"op":"hello","extra":1}`)
	if m := r.recv(t); errOf(m) != "invalid/bad_request" {
		t.Fatalf("hello with an unknown key: %v", m)
	}
	r.send(t, `{"v":1,"id":3,"op":"hello"}`)
	if m := r.recv(t); errOf(m) != "ok" {
		t.Fatalf("hello: %v", m)
	}
	r.send(t, `{"v":1,"id":4,"op":"tutorial.nope"}`)
	if m := r.recv(t); errOf(m) != "invalid/unknown_op" {
		t.Fatalf("unknown op: %v", m)
	}
	r.send(t, `{"v":1,"id":5,"op":"attended.act","runs_root":"`+s.runs+`","attention_id":"`+s.id+`","capability_digest":"sha256:`+strings.Repeat("d", 64)+`","idempotency_key":"k-000000000000001","action":"teach","disposition":"teach_requested","decided_by":"unknown","operator":"x"}`)
	if m := r.recv(t); errOf(m) != "invalid/bad_request" {
		t.Fatalf("decided_by unknown: %v", m)
	}
	r.send(t, `{"v":1,"id":6,"op":"attended.act","runs_root":"relative","attention_id":"`+s.id+`","capability_digest":"sha256:`+strings.Repeat("d", 64)+`","idempotency_key":"k-000000000000001","action":"teach","disposition":"teach_requested","decided_by":"automation","operator":"x"}`)
	if m := r.recv(t); errOf(m) != "invalid/bad_request" {
		t.Fatalf("relative runs_root: %v", m)
	}
	r.send(t, `{"v":1,"id":7,"op":"attended.act","runs_root":"`+s.runs+`","attention_id":"`+s.id+`","capability_digest":"sha256:`+strings.Repeat("d", 64)+`","idempotency_key":"k-000000000000001","action":"teach","disposition":"needs_assistance","decided_by":"automation","operator":"x"}`)
	if m := r.recv(t); errOf(m) != "invalid/bad_request" {
		t.Fatalf("wrong disposition: %v", m)
	}
	r.send(t, `{"v":1,"id":8,"op":"close","drain_s":NaN}`)
	if m := r.recv(t); errOf(m) != "invalid/bad_frame" || m["id"] != nil {
		t.Fatalf("NaN: %v", m)
	}
	if c := r.exitCode(t); c != 3 {
		t.Errorf("exit %d after a bad frame, want 3", c)
	}

	for _, tc := range []struct{ name, line, want string }{
		{"not an object", `[1,2]`, "invalid/bad_frame"},
		{"not json", `hello`, "invalid/bad_frame"},
		{"id zero", `{"v":1,"id":0,"op":"hello"}`, "invalid/bad_frame"},
		{"bool id", `{"v":1,"id":true,"op":"hello"}`, "invalid/bad_frame"},
		{"v 2", `{"v":2,"id":1,"op":"hello"}`, "invalid/bad_frame"},
		{"oversize", `{"v":1,"id":1,"op":"hello","x":"` + strings.Repeat("a", flowhelper.MaxFrame) + `"}`, "invalid/frame_too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRaw(t, s)
			r.send(t, tc.line)
			if m := r.recv(t); errOf(m) != tc.want || m["id"] != nil {
				t.Fatalf("frame: %v", m)
			}
			if c := r.exitCode(t); c != 3 {
				t.Errorf("exit %d, want 3", c)
			}
		})
	}
	t.Run("ids must increase", func(t *testing.T) {
		r := startRaw(t, s)
		r.send(t, `{"v":1,"id":5,"op":"hello"}`)
		r.recv(t)
		r.send(t, `{"v":1,"id":5,"op":"authoring.probe"}`)
		if m := r.recv(t); errOf(m) != "invalid/bad_frame" {
			t.Fatalf("reused id: %v", m)
		}
		if c := r.exitCode(t); c != 3 {
			t.Errorf("exit %d", c)
		}
	})
}

// SIGTERM and EOF run the close sequence despite a hung worker (os._exit).
func TestStubSignalAndEOFWithHungWorker(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"sigterm", "eof"} {
		t.Run(how, func(t *testing.T) {
			s := newStub(t, "OPENADAPT_STUBFLOW_ACT=hang")
			if err := syscall.Mkfifo(s.log, 0o600); err != nil {
				t.Fatal(err)
			}
			s.env = append(s.env, "OPENADAPT_STUBFLOW_HANG_MARK=1")
			r := startRaw(t, s)
			r.send(t, `{"v":1,"id":1,"op":"hello"}`)
			r.recv(t)
			op, _ := flowhelper.Operator()
			r.send(t, `{"v":1,"id":2,"op":"attended.act","runs_root":"`+s.runs+`","attention_id":"`+s.id+`","capability_digest":"sha256:`+strings.Repeat("d", 64)+`","idempotency_key":"k-000000000000001","action":"teach","disposition":"teach_requested","decided_by":"automation","operator":"`+op+`"}`)
			// The stub writes "hang start" to the FIFO once the worker is inside Flow.
			fifo, err := os.Open(s.log)
			if err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(fifo).ReadString('\n')
			fifo.Close()
			if err != nil || line != "hang start\n" {
				t.Fatalf("fifo %q %v", line, err)
			}
			if how == "sigterm" {
				_ = r.cmd.Process.Signal(syscall.SIGTERM)
			} else {
				r.w.Close()
			}
			if c := r.exitCode(t); c != 0 {
				t.Errorf("exit %d, want 0", c)
			}
		})
	}
}
