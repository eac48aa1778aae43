package flowhelper_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/realflow"
)

var realFlowSkip = realflow.SkipMessage("flowhelper: real-Flow contract tests")

var theRealFlow *realflow.Info

func needRealFlow(t *testing.T) *realflow.Info {
	t.Helper()
	if theRealFlow == nil {
		t.Skip(realFlowSkip)
	}
	return theRealFlow
}

// rfEnv is an isolated HOME and authority database shared by the helper
// and every Flow child of one test: runs and decisions must share one
// journal.
type rfEnv struct {
	T, Home, Runs, DB string
	Env               []string
}

func newRFEnv(t *testing.T) rfEnv {
	t.Helper()
	T, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := rfEnv{T: T, Home: filepath.Join(T, "home"), Runs: filepath.Join(T, "runs"), DB: filepath.Join(T, "authority", "authority.sqlite3")}
	for _, d := range []string{e.Home, e.Runs} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "OPENADAPT_DURABLE_AUTHORITY_DB=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+e.Home, "OPENADAPT_DURABLE_AUTHORITY_DB="+e.DB)
	e.Env = flowrun.ChildEnv(env, nil)
	return e
}

type pause struct {
	RunDir           string   `json:"run_dir"`
	AttentionID      string   `json:"attention_id"`
	CapabilityDigest string   `json:"capability_digest"`
	AllowedActions   []string `json:"allowed_actions"`
}

func (e rfEnv) makePause(t *testing.T, rf *realflow.Info, name string) pause {
	t.Helper()
	cmd := exec.Command(rf.FlowPython, "testdata/realflow/make_pause.py", e.Runs, name)
	cmd.Env = e.Env
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("make_pause: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("make_pause: %v", err)
	}
	var p pause
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("make_pause output %q: %v", out, err)
	}
	return p
}

func (e rfEnv) start(t *testing.T, rf *realflow.Info) *flowhelper.Helper {
	t.Helper()
	op, err := flowhelper.Operator()
	if err != nil {
		t.Fatal(err)
	}
	h, err := flowhelper.Start(context.Background(), flowhelper.Config{
		Interpreter: flowhelper.Interpreter{Path: rf.FlowPython},
		StateDir:    filepath.Join(e.Runs, ".openadapt-agent"),
		Instance:    "rf-" + strings.ReplaceAll(t.Name(), "/", "-"),
		Env:         e.Env,
		Operator:    op,
	})
	if err != nil {
		t.Fatalf("Start: %v (%v)", err, errors.Unwrap(err))
	}
	t.Cleanup(func() { _, _ = h.Close() })
	return h
}

type journal struct {
	Decisions []struct {
		DecisionID     string `json:"decision_id"`
		IdempotencyKey string `json:"idempotency_key"`
		Action         string `json:"action"`
		Status         string `json:"status"`
		Operator       string `json:"operator"`
		DecidedBy      string `json:"decided_by"`
	} `json:"decisions"`
}

func readJournal(t *testing.T, runDir string) journal {
	t.Helper()
	var j journal
	data, err := os.ReadFile(filepath.Join(runDir, "attended_decisions.json"))
	if errors.Is(err, os.ErrNotExist) {
		return j
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatalf("attended_decisions.json: %v", err)
	}
	return j
}

func TestRealFlowHello(t *testing.T) {
	rf := needRealFlow(t)
	e := newRFEnv(t)
	h := e.start(t, rf)
	hl := h.Hello()
	// hello answers whatever the version; the pinned features say whether
	// they run on it (docs/helper.md, Version gate).
	if hl.FlowSupported != strings.HasPrefix(hl.FlowVersion, "1.32.") || hl.FlowSupported != h.Pinned() {
		t.Errorf("flow %q supported=%v", hl.FlowVersion, hl.FlowSupported)
	}
	if hl.FlowSupported && (!hl.Capabilities.AttendedService || !hl.Capabilities.Tutorial) {
		t.Errorf("capabilities %+v", hl.Capabilities)
	}
	if hl.HelperSHA256 != flowhelper.ProgramSHA256 {
		t.Errorf("helper_sha256 %s", hl.HelperSHA256)
	}
	// Authoring's own gate: a Flow without openadapt_flow.authoring (1.32)
	// fails closed; a Flow with it must fit the recorded API.
	p, err := h.ProbeAuthoring(context.Background())
	if err != nil || p.Importable != hl.Capabilities.Authoring || p.Available() != hl.Capabilities.Authoring {
		t.Errorf("authoring.probe = %+v, %v (module imports: %v)", p, err, hl.Capabilities.Authoring)
	}
	t.Logf("openadapt-flow %s: authoring module %v, probe %+v", hl.FlowVersion, hl.Capabilities.Authoring, p)
	res, err := h.Close()
	if err != nil || res.ServiceClosed || res.MockmedStopped {
		t.Errorf("Close = %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(e.Runs, ".openadapt-agent", "tmp", "helper-rf-TestRealFlowHello")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("private dir left behind: %v", err)
	}
}

// realflow's bin/openadapt-flow is a #!/bin/sh wrapper: the message asks
// for --flow-python.
func TestRealFlowWrapperNeedsFlowPython(t *testing.T) {
	rf := needRealFlow(t)
	_, err := flowhelper.FindPython("", rf.OpenadaptFlow, os.Getenv("PATH"))
	var se *flowhelper.StartError
	if !errors.As(err, &se) || se.Msg != "the Flow Python interpreter could not be determined from "+rf.OpenadaptFlow+"; pass --flow-python" {
		t.Fatalf("FindPython = %v", err)
	}
}

func TestRealFlowRunVersionMatches(t *testing.T) {
	rf := needRealFlow(t)
	e := newRFEnv(t)
	if err := flowhelper.CheckRunVersion(context.Background(), []string{rf.OpenadaptFlow}, e.Env, "", "1.32.0"); err != nil {
		t.Errorf("CheckRunVersion(1.32.0) = %v", err)
	}
	err := flowhelper.CheckRunVersion(context.Background(), []string{rf.OpenadaptFlow}, e.Env, "", "1.32.9")
	if err == nil || err.Error() != "the Flow helper runs openadapt-flow 1.32.9 but the run command reports 1.32.0; they must match" {
		t.Errorf("CheckRunVersion(1.32.9) = %v", err)
	}
}

func act(p pause, e rfEnv, op, key, action string) flowhelper.ActRequest {
	return flowhelper.ActRequest{RunsRoot: e.Runs, AttentionID: p.AttentionID, CapabilityDigest: p.CapabilityDigest,
		IdempotencyKey: key, Action: action, Disposition: flowhelper.Dispositions[action], DecidedBy: "automation", Operator: op}
}

func wantKind(t *testing.T, what string, err error, kind, reason string) *flowhelper.Error {
	t.Helper()
	var he *flowhelper.Error
	if !errors.As(err, &he) || he.Kind != kind || he.Reason != reason {
		t.Fatalf("%s: err = %v, want %s/%s", what, err, kind, reason)
	}
	return he
}

// The attended decision cases against real Flow, one per outcome.
func TestRealFlowAttended(t *testing.T) {
	rf := needRealFlow(t)
	e := newRFEnv(t)
	p := e.makePause(t, rf, "run-0001")
	if p.AttentionID != "302aa61015d20d93ce981a9d" || strings.Join(p.AllowedActions, " ") != "continue reject teach escalate" {
		t.Fatalf("pause %+v", p)
	}
	h := e.start(t, rf)
	op := h.Hello().Operator
	ctx := context.Background()

	// (2) teach, then its replay: the same decision id, journaled as automation by the euid's name.
	teach, err := h.Act(ctx, act(p, e, op, "teach-key-000000001", "teach"))
	if err != nil || teach.Status != "needs_demonstration" || teach.Check("teach") != nil {
		t.Fatalf("teach = %+v, %v", teach, err)
	}
	again, err := h.Act(ctx, act(p, e, op, "teach-key-000000001", "teach"))
	if err != nil || again.DecisionID != teach.DecisionID {
		t.Fatalf("teach replay = %+v, %v (first %s)", again, err, teach.DecisionID)
	}
	j := readJournal(t, p.RunDir)
	if len(j.Decisions) != 1 || j.Decisions[0].DecidedBy != "automation" || j.Decisions[0].Operator != op || j.Decisions[0].DecisionID != teach.DecisionID {
		t.Fatalf("journal after teach: %+v", j)
	}
	// (3) the same key for another action: refused, dispatched.
	_, err = h.Act(ctx, act(p, e, op, "teach-key-000000001", "escalate"))
	he := wantKind(t, "key reuse", err, "refused", "")
	if !he.Dispatched || he.FlowType != "openadapt_flow.runtime.durable.attended.AttendedActionRefused" {
		t.Errorf("key reuse error %+v", he)
	}
	// (4) a stale digest.
	stale := act(p, e, op, "stale-key-00000001", "escalate")
	stale.CapabilityDigest = "sha256:" + strings.Repeat("0", 64)
	_, err = h.Act(ctx, stale)
	wantKind(t, "stale digest", err, "refused", "")
	// (5) escalate with a new key.
	esc, err := h.Act(ctx, act(p, e, op, "escalate-key-000001", "escalate"))
	if err != nil || esc.Status != "escalated" {
		t.Fatalf("escalate = %+v, %v", esc, err)
	}
	// (6) continue without a service.
	n := len(readJournal(t, p.RunDir).Decisions)
	_, err = h.Act(ctx, act(p, e, op, "continue-key-00001", "continue"))
	wantKind(t, "continue without service", err, "unavailable", "not_open")
	// (9) a forged operator.
	_, err = h.Act(ctx, act(p, e, "someone-else", "forged-key-0000001", "escalate"))
	wantKind(t, "forged operator", err, "refused", "operator_mismatch")
	_, err = h.Act(ctx, act(p, e, "", "blank-key-00000001", "escalate"))
	wantKind(t, "blank operator", err, "refused", "operator_blank")
	if got := len(readJournal(t, p.RunDir).Decisions); got != n {
		t.Fatalf("journal changed by refused-before-Flow requests: %d -> %d", n, got)
	}
	// unknown id.
	unk := act(p, e, op, "unknown-key-000001", "escalate")
	unk.AttentionID = strings.Repeat("a", 24)
	_, err = h.Act(ctx, unk)
	wantKind(t, "unknown id", err, "refused", "attention_not_found")
	// (7) reject, replay; then a new teach key is refused and the old teach key replays.
	rej, err := h.Act(ctx, act(p, e, op, "reject-key-0000001", "reject"))
	if err != nil || rej.Status != "rejected" {
		t.Fatalf("reject = %+v, %v", rej, err)
	}
	rej2, err := h.Act(ctx, act(p, e, op, "reject-key-0000001", "reject"))
	if err != nil || rej2.DecisionID != rej.DecisionID {
		t.Fatalf("reject replay = %+v, %v", rej2, err)
	}
	_, err = h.Act(ctx, act(p, e, op, "teach-key-000000002", "teach"))
	wantKind(t, "teach after reject", err, "refused", "")
	old, err := h.Act(ctx, act(p, e, op, "teach-key-000000001", "teach"))
	if err != nil || old.DecisionID != teach.DecisionID {
		t.Fatalf("old teach replay after reject = %+v, %v", old, err)
	}
	// (8) attended.replay.
	rr := flowhelper.ReplayRequest{Target: flowhelper.Target{RunsRoot: e.Runs, AttentionID: p.AttentionID, CapabilityDigest: p.CapabilityDigest, IdempotencyKey: "reject-key-0000001"}, Action: "reject", Disposition: "rejected_by_operator"}
	rep, err := h.Replay(ctx, rr)
	if err != nil || rep.DecisionID != rej.DecisionID {
		t.Fatalf("replay = %+v, %v", rep, err)
	}
	rr.IdempotencyKey = "never-used-key-0001"
	_, err = h.Replay(ctx, rr)
	wantKind(t, "replay unknown key", err, "refused", "no_prior_decision")

	// (10) a cp -a copy of a run dir under the root is refused by Flow.
	p2 := e.makePause(t, rf, "run-0002")
	cp := exec.Command("cp", "-a", p2.RunDir, filepath.Join(e.Runs, "run-copy"))
	if out, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	copyP := p2
	copyP.AttentionID = attentionID("run-copy")
	_, err = h.Act(ctx, act(copyP, e, op, "copy-key-000000001", "escalate"))
	wantKind(t, "copied run dir", err, "refused", "")
}

// benchEnv is rfEnv for benchmarks.
type benchEnv struct {
	runs, state string
	env         []string
}

func newRFEnvB(b *testing.B) benchEnv {
	b.Helper()
	T, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	home, runs := filepath.Join(T, "home"), filepath.Join(T, "runs")
	for _, d := range []string{home, runs} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "OPENADAPT_DURABLE_AUTHORITY_DB=") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home, "OPENADAPT_DURABLE_AUTHORITY_DB="+filepath.Join(T, "authority", "authority.sqlite3"))
	return benchEnv{runs: runs, state: filepath.Join(runs, ".openadapt-agent"), env: flowrun.ChildEnv(env, nil)}
}

func (e benchEnv) pause(b *testing.B) pause {
	b.Helper()
	cmd := exec.Command(theRealFlow.FlowPython, "testdata/realflow/make_pause.py", e.runs, "run-bench")
	cmd.Env = e.env
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("make_pause: %v", err)
	}
	var p pause
	if err := json.Unmarshal(out, &p); err != nil {
		b.Fatal(err)
	}
	return p
}
