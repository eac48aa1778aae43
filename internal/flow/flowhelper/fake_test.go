//go:build unix

package flowhelper_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
)

func init() { fakehelper.RunIfInvoked() }

type fakeEnv struct {
	python, state, record, runs string
	env                         []string
}

// newFake prepares a fake helper; knobs are OPENADAPT_FAKE_HELPER_* values.
func newFake(t *testing.T, mode string, rules ...fakehelper.Rule) *fakeEnv {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEnv{python: fakehelper.Install(t), state: filepath.Join(dir, "runs", ".openadapt-agent"),
		record: filepath.Join(dir, "record"), runs: filepath.Join(dir, "runs")}
	for _, d := range []string{f.runs, f.record} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(),
		"OPENADAPT_FAKE_HELPER_RECORD="+f.record,
		"OPENADAPT_FAKE_HELPER_MODE="+mode,
		"AWS_SECRET_ACCESS_KEY=planted-secret",
		"PYTHONPATH=/planted/pythonpath",
		"USER=spoofed-user",
		"OPENADAPT_SYNTHETIC_DELIVERY_MARKER_ENABLED=1")
	if len(rules) > 0 {
		env = append(env, "OPENADAPT_FAKE_HELPER_SCRIPT="+fakehelper.WriteScript(t, rules...))
	}
	f.env = flowrun.ChildEnv(env, nil)
	return f
}

func (f *fakeEnv) config(t *testing.T) flowhelper.Config {
	op, err := flowhelper.Operator()
	if err != nil {
		t.Fatal(err)
	}
	return flowhelper.Config{Interpreter: flowhelper.Interpreter{Path: f.python}, StateDir: f.state,
		Instance: "inst-1", Env: f.env, Operator: op,
		Timeouts: flowhelper.Timeouts{Hello: 10 * time.Second, ActAudit: 10 * time.Second, ActLive: 10 * time.Second}}
}

func (f *fakeEnv) start(t *testing.T) *flowhelper.Helper {
	t.Helper()
	h, err := flowhelper.Start(context.Background(), f.config(t))
	if err != nil {
		t.Fatalf("Start: %v (%v)", err, errors.Unwrap(err))
	}
	t.Cleanup(func() { _, _ = h.Close() })
	return h
}

func (f *fakeEnv) act(action, key string) flowhelper.ActRequest {
	op, _ := flowhelper.Operator()
	return flowhelper.ActRequest{RunsRoot: f.runs, AttentionID: strings.Repeat("a", 24),
		CapabilityDigest: "sha256:" + strings.Repeat("b", 64), IdempotencyKey: key, Action: action,
		Disposition: flowhelper.Dispositions[action], DecidedBy: "automation", Operator: op}
}

func TestLaunchContract(t *testing.T) {
	t.Parallel()
	f := newFake(t, "")
	cfg := f.config(t)
	cwd := t.TempDir()
	cfg.Dir = cwd
	h, err := flowhelper.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	priv := filepath.Join(f.state, "tmp", "helper-inst-1")
	for p, want := range map[string]os.FileMode{priv: 0o700, filepath.Join(priv, "flow_helper.py"): 0o600, filepath.Join(f.state, "logs"): 0o700} {
		st, err := os.Lstat(p)
		if err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %o", p, st.Mode(), err, want)
		}
	}
	recs := fakehelper.Records(t, f.record)
	if len(recs) != 1 {
		t.Fatalf("%d starts", len(recs))
	}
	r := recs[0]
	wantArgv := []string{f.python, "-B", filepath.Join(priv, "flow_helper.py"), "--in-fd", "4", "--out-fd", "5"}
	if !slices.Equal(r.Argv, wantArgv) {
		t.Errorf("argv %q, want %q", r.Argv, wantArgv)
	}
	if r.FDs["0"] != "devnull" || r.FDs["3"] != "devnull" || !strings.HasPrefix(r.FDs["1"], "fifo:") || r.FDs["1"] != r.FDs["2"] ||
		!strings.HasPrefix(r.FDs["4"], "fifo:") || !strings.HasPrefix(r.FDs["5"], "fifo:") || r.FDs["4"] == r.FDs["5"] || r.FDs["4"] == r.FDs["1"] {
		t.Errorf("fd table %v", r.FDs)
	}
	for fd := 6; fd < 10; fd++ {
		if k := r.FDs[string(rune('0'+fd))]; k != "closed" && k != "go-runtime" {
			t.Errorf("fd %d is %s, want closed", fd, k)
		}
	}
	for _, kv := range r.Env {
		name, _, _ := strings.Cut(kv, "=")
		if name == "AWS_SECRET_ACCESS_KEY" || name == "PYTHONPATH" || name == "OPENADAPT_SYNTHETIC_DELIVERY_MARKER_ENABLED" {
			t.Errorf("env carries %s", name)
		}
	}
	wantEnv := slices.DeleteFunc(slices.Clone(f.env), func(kv string) bool {
		return strings.HasPrefix(kv, "OPENADAPT_SYNTHETIC_DELIVERY_MARKER_ENABLED=")
	})
	if !slices.Equal(r.Env, wantEnv) {
		t.Errorf("env differs from ChildEnv minus the marker:\n got %q\nwant %q", r.Env, wantEnv)
	}
	if r.Cwd != cwd {
		t.Errorf("cwd %s, want %s", r.Cwd, cwd)
	}
	if r.PPID != os.Getpid() {
		t.Errorf("ppid %d", r.PPID)
	}
	if _, err := h.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := os.Stat(priv); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("private dir after Close: %v", err)
	}
	if _, err := os.Stat(h.LogPath); err != nil {
		t.Errorf("log: %v", err)
	}
}

// The operator never comes from USER (spoofed in newFake's environment).
func TestOperatorIgnoresUSER(t *testing.T) {
	t.Setenv("USER", "spoofed-user")
	t.Setenv("LOGNAME", "spoofed-user")
	op, err := flowhelper.Operator()
	if err != nil || op == "" || op == "spoofed-user" {
		t.Fatalf("Operator = %q, %v", op, err)
	}
}

func TestStartRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, mode, want string }{
		{"no hello", "no-hello", "the Flow helper could not be started with "},
		{"digest", "hello-sha=" + strings.Repeat("0", 64), "the Flow helper could not be started with "},
		{"protocol", "protocol=2", "the Flow helper could not be started with "},
		{"python 3.9", "python=3.9.18", "the Flow helper could not be started with "},
		{"python 3.13", "python=3.13.0", "the Flow helper could not be started with "},
		{"operator", "operator=someone-else", flowhelper.MsgOperator},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.mode)
			cfg := f.config(t)
			cfg.Timeouts.Hello = 2 * time.Second
			_, err := flowhelper.Start(context.Background(), cfg)
			var se *flowhelper.StartError
			if !errors.As(err, &se) {
				t.Fatalf("Start = %v", err)
			}
			want := tc.want
			if strings.HasSuffix(want, "with ") {
				want += f.python
			}
			if se.Msg != want {
				t.Fatalf("message %q, want %q", se.Msg, want)
			}
			if _, err := os.Stat(filepath.Join(f.state, "tmp", "helper-inst-1")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("private dir left: %v", err)
			}
		})
	}
	t.Run("flow not importable", func(t *testing.T) {
		f := newFake(t, "", fakehelper.Rule{Op: "hello", Error: fakehelper.ErrorFrame("unavailable", "flow_not_importable", false, "")})
		_, err := flowhelper.Start(context.Background(), f.config(t))
		if err == nil || err.Error() != "the Flow helper could not be started with "+f.python {
			t.Fatalf("Start = %v", err)
		}
	})
	t.Run("relative interpreter", func(t *testing.T) {
		_, err := flowhelper.Start(context.Background(), flowhelper.Config{Interpreter: flowhelper.Interpreter{Path: "python3"}})
		if err == nil || err.Error() != "the Flow helper could not be started with python3" {
			t.Fatalf("Start = %v", err)
		}
	})
	t.Run("instance dir exists", func(t *testing.T) {
		f := newFake(t, "")
		if err := os.MkdirAll(filepath.Join(f.state, "tmp", "helper-inst-1"), 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := flowhelper.Start(context.Background(), f.config(t)); err == nil {
			t.Fatal("Start succeeded over a pre-existing private dir")
		}
	})
}

func TestOps(t *testing.T) {
	t.Parallel()
	f := newFake(t, "")
	h := f.start(t)
	ctx := context.Background()
	if h.Hello().FlowVersion != "1.32.0" || !h.Hello().Capabilities.AttendedService {
		t.Errorf("hello %+v", h.Hello())
	}
	if _, err := h.Act(ctx, f.act("continue", "continue-key-00000001")); !isKind(err, "unavailable", "not_open") {
		t.Errorf("continue before open: %v", err)
	}
	url := "http://127.0.0.1:1/"
	info, err := h.CheckDeployment(ctx, flowhelper.DeploymentRequest{DeploymentConfig: "/x/deploy.yaml", URL: &url, Headed: true})
	if err != nil || info.BackendKind != "web" || !info.Headed || !info.URLPresent {
		t.Errorf("check = %+v, %v", info, err)
	}
	si, err := h.OpenService(ctx, flowhelper.DeploymentRequest{DeploymentConfig: "/x/deploy.yaml", Headed: true})
	if err != nil || si.BackendKind != "web" || !si.Headed {
		t.Errorf("open = %+v, %v", si, err)
	}
	if _, err := h.OpenService(ctx, flowhelper.DeploymentRequest{DeploymentConfig: "/x/deploy.yaml"}); !isKind(err, "invalid", "already_open") {
		t.Errorf("second open: %v", err)
	}
	for _, a := range []string{"continue", "skip", "reject", "teach", "escalate"} {
		d, err := h.Act(ctx, f.act(a, a+"-key-0000000001"))
		if err != nil || d.Check(a) != nil {
			t.Errorf("%s = %+v, %v", a, d, err)
		}
		r, err := h.Replay(ctx, flowhelper.ReplayRequest{Target: flowhelper.Target{RunsRoot: f.runs, AttentionID: strings.Repeat("a", 24), CapabilityDigest: "sha256:" + strings.Repeat("b", 64), IdempotencyKey: a + "-key-0000000001"}, Action: a, Disposition: flowhelper.Dispositions[a]})
		if err != nil || r.DecisionID != d.DecisionID {
			t.Errorf("replay %s = %+v, %v", a, r, err)
		}
	}
	op, _ := flowhelper.Operator()
	rc, err := h.Reconcile(ctx, flowhelper.ReconcileRequest{Target: flowhelper.Target{RunsRoot: f.runs, AttentionID: strings.Repeat("a", 24), CapabilityDigest: "sha256:" + strings.Repeat("b", 64), IdempotencyKey: "reconcile-key-000001"}, DecidedBy: "human", Operator: op})
	if err != nil || rc.Action != "reconcile" {
		t.Errorf("reconcile = %+v, %v", rc, err)
	}
	if p, err := h.ProbeAuthoring(ctx); p.Available() || p.Importable || err != nil {
		t.Errorf("probe = %+v, %v", p, err)
	}
	res, err := h.Close()
	if err != nil || !res.ServiceClosed {
		t.Errorf("close = %+v, %v", res, err)
	}
	// The requests on the wire: exact fields, increasing ids, hello first.
	reqs := fakehelper.Requests(t, f.record)
	if len(reqs) == 0 || reqs[0]["op"] != "hello" || len(reqs[0]) != 3 {
		t.Fatalf("first request %v", reqs[0])
	}
	last := 0.0
	for _, r := range reqs {
		id := r["id"].(float64)
		if id <= last || r["v"] != 1.0 {
			t.Errorf("request %v after id %v", r, last)
		}
		last = id
		if r["op"] == "authoring.probe" {
			// The probe carries the recorded API, exactly.
			want, _ := json.Marshal(map[string]any{"api": flowhelper.AuthoringAPI})
			var wantMap map[string]any
			_ = json.Unmarshal(want, &wantMap)
			got, _ := json.Marshal(r["api"])
			exp, _ := json.Marshal(wantMap["api"])
			if len(r) != 4 || !bytes.Equal(got, exp) {
				t.Errorf("probe request %v", r)
			}
		}
		if r["op"] == "attended.act" {
			keys := []string{}
			for k := range r {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if strings.Join(keys, ",") != "action,attention_id,capability_digest,decided_by,disposition,id,idempotency_key,op,operator,runs_root,v" {
				t.Errorf("act keys %v", keys)
			}
		}
	}
}

// hello never refuses a Flow version: each feature gates itself
// (docs/helper.md, Version gate). Attended actions and the tutorial name
// themselves when the version is not the pinned minor; authoring asks the
// probe, whatever the version.
func TestFeatureGates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, mode string
		pinned     bool
		attended   string // "" = passes
		authoring  string
	}{
		{"flow 1.32", "", true, "", "openadapt_flow.authoring is not available with openadapt-flow 1.32.0"},
		{"flow 1.33", "hello-version=1.33.0", false, "openadapt-flow 1.33.0 is not supported by attended actions; supported: 1.32.x",
			"openadapt_flow.authoring is not available with openadapt-flow 1.33.0"},
		{"flow dirty version", "hello-version=1.33.0;rm -rf", false, "openadapt-flow unknown is not supported by attended actions; supported: 1.32.x",
			"openadapt_flow.authoring is not available with openadapt-flow unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newFake(t, tc.mode).start(t)
			if h.Pinned() != tc.pinned {
				t.Fatalf("Pinned = %v", h.Pinned())
			}
			ctx := context.Background()
			check := func(f flowhelper.Feature, want string, stage flowhelper.Stage, sentinel error) {
				t.Helper()
				err := h.CheckFeature(ctx, f)
				var se *flowhelper.StartError
				switch {
				case want == "" && err != nil:
					t.Errorf("%s: %v", f, err)
				case want != "" && (!errors.As(err, &se) || se.Msg != want || se.Stage != stage || !errors.Is(err, sentinel)):
					t.Errorf("%s = %v, want %q", f, err, want)
				}
			}
			check(flowhelper.FeatureAttended, tc.attended, flowhelper.StageFlowVersion, flowhelper.ErrUnsupportedFlow)
			check(flowhelper.FeatureTutorial, strings.Replace(tc.attended, "attended actions", "the tutorial", 1), flowhelper.StageFlowVersion, flowhelper.ErrUnsupportedFlow)
			check(flowhelper.FeatureAuthoring, tc.authoring, flowhelper.StageAuthoring, flowhelper.ErrAuthoringUnavailable)
		})
	}
}

func isKind(err error, kind, reason string) bool {
	var he *flowhelper.Error
	return errors.As(err, &he) && he.Kind == kind && he.Reason == reason
}

// Every error kind and reason decodes exactly (the inputs of the
// decision classification).
func TestErrorFrames(t *testing.T) {
	t.Parallel()
	type row struct {
		kind, reason string
		dispatched   bool
	}
	rows := []row{{"refused", "", true}, {"refused", "", false}, {"refused", "operator_mismatch", false}, {"refused", "attention_not_found", false},
		{"busy", "", true}, {"invalid", "bad_request", false}, {"unavailable", "live_session", false},
		{"uncertain", "journal_in_flight", true}, {"uncertain", "", true}, {"internal", "", true}, {"internal", "", false}}
	var rules []fakehelper.Rule
	for i, r := range rows {
		rules = append(rules, fakehelper.Rule{Op: "attended.act", Match: map[string]any{"idempotency_key": keyN(i)},
			Error: fakehelper.ErrorFrame(r.kind, r.reason, r.dispatched, "openadapt_flow.x.Refused", "openadapt_flow.x.Refused", "builtins.RuntimeError")})
	}
	f := newFake(t, "", rules...)
	h := f.start(t)
	for i, r := range rows {
		_, err := h.Act(context.Background(), f.act("escalate", keyN(i)))
		var he *flowhelper.Error
		if !errors.As(err, &he) || he.Kind != r.kind || he.Reason != r.reason || he.Dispatched != r.dispatched ||
			he.FlowType != "openadapt_flow.x.Refused" || len(he.MRO) != 2 {
			t.Errorf("row %v: %#v", r, err)
		}
	}
	if !h.Alive() {
		t.Fatal("error frames killed the helper")
	}
}

func keyN(i int) string { return "key-for-row-000000" + string(rune('a'+i)) }

// Replies may come out of order: a slow continue answered after a teach.
func TestOutOfOrder(t *testing.T) {
	t.Parallel()
	f := newFake(t, "", fakehelper.Rule{Op: "attended.act", Match: map[string]any{"action": "escalate"}, WaitForKey: "teach-key-0000000001",
		Reply: json.RawMessage(`{"decision":{"decision_id":"` + strings.Repeat("e", 32) + `","action":"escalate","status":"escalated","message":"m","report_success":null,"next_transition":null,"transition_receipt_digest":null}}`)})
	h := f.start(t)
	var wg sync.WaitGroup
	var escErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, escErr = h.Act(context.Background(), f.act("escalate", "escalate-key-0000001"))
	}()
	// The teach is sent after the escalate frame (ids increase); the fake
	// answers the escalate only after the teach.
	for len(fakehelper.Requests(t, f.record)) < 2 {
		runtimeGosched()
	}
	if _, err := h.Act(context.Background(), f.act("teach", "teach-key-0000000001")); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if escErr != nil {
		t.Fatal(escErr)
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, then string
	}{
		{"crash", "crash"}, {"garbage", "garbage"}, {"oversize", "oversize"}, {"dup id", "dup-id"},
		{"wrong id", "wrong-id"}, {"partial frame", "partial-frame"}, {"exit after reply", "exit:0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, "", fakehelper.Rule{Op: "attended.act", Then: tc.then,
				Reply: json.RawMessage(`{"decision":{"decision_id":"` + strings.Repeat("e", 32) + `","action":"escalate","status":"escalated","message":"m","report_success":null,"next_transition":null,"transition_receipt_digest":null}}`)})
			cfg := f.config(t)
			var deaths int
			var mu sync.Mutex
			died := make(chan struct{})
			cfg.OnDead = func() { mu.Lock(); deaths++; mu.Unlock(); close(died) }
			h, err := flowhelper.Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			_, err = h.Act(context.Background(), f.act("escalate", "escalate-key-0000001"))
			var te *flowhelper.TransportError
			switch tc.then {
			case "dup-id", "exit:0":
				// The first reply is valid; the helper dies right after.
				if err != nil {
					t.Fatalf("act: %v", err)
				}
			default:
				if !errors.As(err, &te) || !te.Written || !errors.Is(err, flowhelper.ErrDead) {
					t.Fatalf("act = %v, want a written TransportError", err)
				}
			}
			<-died
			<-h.Done()
			_, err = h.Act(context.Background(), f.act("teach", "teach-key-0000000001"))
			if !errors.As(err, &te) || te.Written {
				t.Fatalf("after death: %v, want an unwritten TransportError", err)
			}
			mu.Lock()
			if deaths != 1 {
				t.Errorf("OnDead called %d times", deaths)
			}
			mu.Unlock()
			if n := len(fakehelper.Records(t, f.record)); n != 1 {
				t.Errorf("%d spawns: a dead helper must never be restarted", n)
			}
		})
	}
}

func TestHangPastDeadline(t *testing.T) {
	t.Parallel()
	f := newFake(t, "", fakehelper.Rule{Op: "attended.act", Then: "hang"})
	cfg := f.config(t)
	cfg.Timeouts.ActAudit = 300 * time.Millisecond
	h, err := flowhelper.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	_, err = h.Act(context.Background(), f.act("escalate", "escalate-key-0000001"))
	var te *flowhelper.TransportError
	if !errors.As(err, &te) || !te.Written || !errors.Is(err, flowhelper.ErrDeadline) {
		t.Fatalf("act = %v", err)
	}
	<-h.Done()
	if err := syscall.Kill(-h.PID(), 0); err == nil {
		// The group is SIGKILLed; give the reaper its moment via Close.
		h.Close()
		if err := syscall.Kill(-h.PID(), 0); err == nil {
			t.Error("the helper's process group is still alive")
		}
	}
}

// Noise on stdout goes to the protected log, never into the protocol.
func TestStdoutNoiseAndLog(t *testing.T) {
	t.Parallel()
	const canary = "CANARY-7f3c-PHI"
	f := newFake(t, "print-stdout", fakehelper.Rule{Op: "attended.act", Then: "stdout:" + canary,
		Reply: json.RawMessage(`{"decision":{"decision_id":"` + strings.Repeat("e", 32) + `","action":"escalate","status":"escalated","message":"Flow says ` + canary + `","report_success":null,"next_transition":null,"transition_receipt_digest":null}}`)})
	cfg := f.config(t)
	var mirror bytes.Buffer
	h, err := flowhelper.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := h.Act(context.Background(), f.act("escalate", "escalate-key-0000001"))
	if err != nil || d.Status != "escalated" {
		t.Fatalf("act = %+v, %v", d, err)
	}
	h.Close()
	log, _ := os.ReadFile(h.LogPath)
	if !bytes.Contains(log, []byte(canary)) || !bytes.Contains(log, []byte("decision "+strings.Repeat("e", 32)+": Flow says")) {
		t.Errorf("log lacks the helper output:\n%s", log)
	}
	if mirror.Len() != 0 {
		t.Errorf("mirror without export: %q", mirror.String())
	}
	// With a mirror (export) each line is prefixed.
	f2 := newFake(t, "print-stdout")
	cfg2 := f2.config(t)
	cfg2.Mirror = &syncBuffer{}
	h2, err := flowhelper.Start(context.Background(), cfg2)
	if err != nil {
		t.Fatal(err)
	}
	h2.Close()
	if got := cfg2.Mirror.(*syncBuffer).String(); !strings.HasPrefix(got, "flow-helper: fakehelper: noise on stdout") {
		t.Errorf("mirror %q", got)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A helper ignoring SIGTERM is SIGKILLed; Close returns within 4 s + slack.
func TestCloseIgnoreTerm(t *testing.T) {
	t.Parallel()
	f := newFake(t, "ignore-term", fakehelper.Rule{Op: "close", Then: "hang"})
	h := f.start(t)
	begin := time.Now()
	h.Close()
	if d := time.Since(begin); d > 8*time.Second {
		t.Errorf("Close took %v", d)
	}
	if err := syscall.Kill(-h.PID(), 0); err == nil {
		t.Error("group alive after Close")
	}
}

// A grandchild holding fd 5 does not hide the helper's exit (cmd.Wait).
func TestLeakPipe(t *testing.T) {
	t.Parallel()
	f := newFake(t, "leak-pipe", fakehelper.Rule{Op: "attended.act", Then: "crash"})
	h := f.start(t)
	_, err := h.Act(context.Background(), f.act("escalate", "escalate-key-0000001"))
	if !errors.Is(err, flowhelper.ErrDead) {
		t.Fatalf("act = %v", err)
	}
	<-h.Done()
}

func TestSweep(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	for _, d := range []string{"tmp/helper-dead", "tmp/helper-live", "logs"} {
		if err := os.MkdirAll(filepath.Join(state, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-8 * 24 * time.Hour)
	for _, n := range []string{"helper-dead.log", "helper-live.log", "helper-fresh.log"} {
		p := filepath.Join(state, "logs", n)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if n != "helper-fresh.log" {
			_ = os.Chtimes(p, old, old)
		}
	}
	flowhelper.Sweep(state, func(id string) bool { return id == "live" }, time.Now())
	for p, want := range map[string]bool{"tmp/helper-dead": false, "tmp/helper-live": true, "logs/helper-dead.log": false,
		"logs/helper-live.log": true, "logs/helper-fresh.log": true} {
		_, err := os.Stat(filepath.Join(state, p))
		if (err == nil) != want {
			t.Errorf("%s exists=%v, want %v", p, err == nil, want)
		}
	}
}
