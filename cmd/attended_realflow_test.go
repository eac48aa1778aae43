package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Real Flow end to end (a real governed run, about a minute or two):
// the real openadapt-agent binary, the embedded helper and real Flow
// 1.32.0. A governed run through the run tool halts on a real durable pause
// (fault=session); then Reject one pause, Teach and Escalate another,
// replays, key reuse, a stale digest and Flow's decision journal, over an
// MCP client with form elicitation. Needs OPENADAPT_REALFLOW_DIR and
// OPENADAPT_REALFLOW_TUTORIAL (a directory holding Flow's tutorial bundle,
// prepared once by .ci/checks/50-real-flow.sh).

const realFlowE2ESkip = "cmd: real-Flow attended end-to-end SKIPPED: set OPENADAPT_REALFLOW_DIR and OPENADAPT_REALFLOW_TUTORIAL (see .ci/checks/50-real-flow.sh)"

const plantedNote = "PLANTED-NOTE-VALUE-6a1f"

type rfE2E struct {
	t                          *testing.T
	dir, bin, home, runs, db   string
	bundles, deploy, base, url string
}

func newRFE2E(t *testing.T) *rfE2E {
	rf, tut := os.Getenv("OPENADAPT_REALFLOW_DIR"), os.Getenv("OPENADAPT_REALFLOW_TUTORIAL")
	if rf == "" || tut == "" {
		fmt.Fprintln(os.Stderr, realFlowE2ESkip)
		t.Skip(realFlowE2ESkip)
	}
	T, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &rfE2E{t: t, dir: rf, home: filepath.Join(T, "home"), runs: filepath.Join(T, "runs"),
		db: filepath.Join(T, "authority", "authority.sqlite3"), bundles: filepath.Join(T, "bundles")}
	for _, d := range []string{e.home, e.bundles} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(tut, "bundle"), filepath.Join(e.bundles, "tutorial")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	e.bin = filepath.Join(T, "openadapt-agent")
	if out, err := exec.Command("go", "build", "-o", e.bin, "github.com/OpenAdaptAI/openadapt-agent/cmd/openadapt-agent").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v %s", err, out)
	}
	// MockMed's transactional fault server, kept for the whole test.
	fs := exec.Command(filepath.Join(rf, "bin", "flow-python"), "-c",
		`from openadapt_flow.mockmed.fault_server import serve; base,db,stop=serve(0, host="127.0.0.1"); print(base, flush=True); import sys; sys.stdin.read()`)
	fs.Env = e.env()
	stdin, _ := fs.StdinPipe()
	out, _ := fs.StdoutPipe()
	if err := fs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = fs.Process.Kill(); _ = fs.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") {
		t.Fatalf("fault server: %q %v", line, err)
	}
	e.base = strings.TrimRight(strings.TrimSpace(line), "/")
	e.url = e.base + "/?fault=session&idempotency=demo#tasks"
	// Demo profile: this build's admission gate stays off (the tutorial
	// bundle is not in the ledger); Flow still pauses durably.
	e.deploy = filepath.Join(T, "deploy.yaml")
	os.WriteFile(e.deploy, []byte(fmt.Sprintf("name: e2e\nbackend:\n  kind: web\neffects:\n  kind: rest\n  base_url: %q\nruntime:\n  profile: demo\n  durable: true\n  allow_model_grounding: false\npolicy:\n  policy: clinical-write\n", e.base)), 0o600)
	return e
}

func (e *rfE2E) env() []string {
	env := []string{"PATH=" + filepath.Join(e.dir, "bin") + ":" + os.Getenv("PATH"), "HOME=" + e.home,
		"OPENADAPT_DURABLE_AUTHORITY_DB=" + e.db, "AWS_SECRET_ACCESS_KEY=planted-aws-secret"}
	if d := os.Getenv("DISPLAY"); d != "" {
		env = append(env, "DISPLAY="+d) // headed runs (with-xvfb)
	}
	return env
}

// helperLogTail is the end of the protected helper logs, for failures.
func (e *rfE2E) helperLogTail() string {
	logs, _ := filepath.Glob(filepath.Join(e.runs, ".openadapt-agent", "logs", "helper-*.log"))
	var b strings.Builder
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(l), data)
	}
	return b.String()
}

type e2eSession struct {
	cs     *mcp.ClientSession
	stderr *syncWriter
}

type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
func (w *syncWriter) String() string { w.mu.Lock(); defer w.mu.Unlock(); return w.b.String() }

func (e *rfE2E) serve(elicit bool, flags ...string) *e2eSession {
	e.t.Helper()
	cmd := exec.Command(e.bin, append([]string{"serve", "--bundles", e.bundles, "--runs-dir", e.runs}, flags...)...)
	cmd.Env = e.env()
	se := &e2eSession{stderr: &syncWriter{}}
	cmd.Stderr = se.stderr
	opts := &mcp.ClientOptions{}
	if elicit {
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": true}}, nil
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		e.t.Fatalf("connect: %v\n%s\n%s", err, se.stderr, e.helperLogTail())
	}
	se.cs = cs
	e.t.Cleanup(func() { cs.Close() })
	return se
}

// call returns the structuredContent and checks the planted values never
// cross the wire.
func (s *e2eSession) call(t *testing.T, name string, args map[string]any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, s.stderr)
	}
	raw, _ := json.Marshal(res)
	for _, planted := range []string{plantedNote, "planted-aws-secret", "Jane", "Sample"} {
		if strings.Contains(string(raw), planted) {
			t.Fatalf("%s: planted value %q on the wire: %s", name, planted, raw)
		}
	}
	var m map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &m)
	return m
}

func TestRealFlowAttendedE2E(t *testing.T) {
	e := newRFE2E(t)
	// 1. Two governed runs through the run tool halt on real durable pauses.
	runner := e.serve(false, "--allow-run", "--config", e.deploy, "--url", e.url, "--run-wait", "600")
	wl := runner.call(t, "list_workflows", map[string]any{})
	ws := wl["workflows"].([]any)
	if len(ws) != 1 {
		t.Fatalf("workflows %v", wl)
	}
	tool := "run_" + ws[0].(map[string]any)["id"].(string)
	for i, key := range []string{"e2e-run-key-00000001", "e2e-run-key-00000002"} {
		r := runner.call(t, tool, map[string]any{"note": plantedNote, "idempotency_key": key})
		if r["status"] != "halt" || r["execution_outcome"] != "HALTED" {
			t.Fatalf("run %d = %v\n%s", i, r, runner.stderr)
		}
		na, _ := r["needs_attention"].(map[string]any)
		if na == nil || na["durably_paused"] != true {
			t.Fatalf("run %d needs_attention %v", i, r["needs_attention"])
		}
	}
	q := runner.call(t, "list_needs_attention", map[string]any{})
	if q["open_count"] != 2.0 || q["actions_enabled"] != false {
		t.Fatalf("queue %v", q)
	}
	runner.cs.Close()
	if strings.Contains(runner.stderr.String(), plantedNote) {
		t.Fatal("planted value on the server's stderr")
	}

	// 2. The attended server (no --config: Reject, Teach, Escalate).
	flowPython := filepath.Join(e.dir, "bin", "flow-python")
	att := e.serve(true, "--allow-attended-actions", "--flow-python", flowPython)
	q = att.call(t, "list_needs_attention", map[string]any{})
	items := q["items"].([]any)
	if len(items) != 2 || q["actions_enabled"] != true || q["live_actions_ready"] != false {
		t.Fatalf("queue %v\n%s", q, att.stderr)
	}
	type item struct{ id, digest string }
	var its []item
	for _, x := range items {
		m := x.(map[string]any)
		cp := m["capability"].(map[string]any)
		allowed := cp["allowed_actions"].([]any)
		if !slices.Equal(allowed, []any{"reject", "teach", "escalate"}) || m["category"] != "postcondition" {
			t.Fatalf("item %v", m)
		}
		its = append(its, item{m["id"].(string), cp["digest"].(string)})
	}
	args := func(it item, key, confirm string) map[string]any {
		return map[string]any{"attention_id": it.id, "capability_digest": it.digest, "idempotency_key": key, confirm: true}
	}
	// Reject the first pause; the same key again gives the same decision.
	rej := att.call(t, "reject_attention", args(its[0], "e2e-reject-key-000001", "confirmed_reject"))
	if rej["status"] != "rejected" || rej["success"] != false {
		t.Fatalf("reject %v\n%s", rej, att.stderr)
	}
	rej2 := att.call(t, "reject_attention", args(its[0], "e2e-reject-key-000001", "confirmed_reject"))
	if rej2["decision_id"] != rej["decision_id"] {
		t.Fatalf("reject replay %v vs %v", rej2, rej)
	}
	// Teach and escalate the second; replay; key reuse; stale digest.
	teach := att.call(t, "teach_attention", args(its[1], "e2e-teach-key-0000001", "request_demonstration"))
	if teach["status"] != "needs_demonstration" {
		t.Fatalf("teach %v", teach)
	}
	esc := att.call(t, "escalate_attention", args(its[1], "e2e-escalate-key-00001", "request_assistance"))
	if esc["status"] != "escalated" {
		t.Fatalf("escalate %v", esc)
	}
	teach2 := att.call(t, "teach_attention", args(its[1], "e2e-teach-key-0000001", "request_demonstration"))
	if teach2["decision_id"] != teach["decision_id"] {
		t.Fatalf("teach replay %v vs %v", teach2, teach)
	}
	reuse := att.call(t, "escalate_attention", args(its[1], "e2e-teach-key-0000001", "request_assistance"))
	if reuse["status"] != "refused" || reuse["decision_id"] != nil {
		t.Fatalf("key reuse %v", reuse)
	}
	stale := att.call(t, "escalate_attention", args(item{its[1].id, "sha256:" + strings.Repeat("0", 64)}, "e2e-stale-key-0000001", "request_assistance"))
	if code := stale["error"].(map[string]any)["code"]; code != "capability_stale" {
		t.Fatalf("stale %v", stale)
	}
	// Flow's journal: teach and escalate, decided_by automation, the euid's name.
	var j struct {
		Decisions []struct {
			DecisionID string `json:"decision_id"`
			Action     string `json:"action"`
			Status     string `json:"status"`
			Operator   string `json:"operator"`
			DecidedBy  string `json:"decided_by"`
		} `json:"decisions"`
	}
	var runDir string
	filepath.WalkDir(e.runs, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "attended_decisions.json" {
			data, _ := os.ReadFile(p)
			var probe struct {
				Decisions []map[string]any `json:"decisions"`
			}
			json.Unmarshal(data, &probe)
			for _, dd := range probe.Decisions {
				if dd["decision_id"] == teach["decision_id"] {
					runDir = filepath.Dir(p)
					json.Unmarshal(data, &j)
				}
			}
		}
		return nil
	})
	if runDir == "" || len(j.Decisions) != 2 {
		t.Fatalf("journal %+v", j)
	}
	for _, d := range j.Decisions {
		if d.DecidedBy != "automation" || d.Operator == "" {
			t.Errorf("journaled %+v", d)
		}
	}
	// A client without form elicitation is refused and pointed to the terminal.
	noelicit := e.serve(false, "--allow-attended-actions", "--flow-python", flowPython)
	r := noelicit.call(t, "escalate_attention", args(its[1], "e2e-escalate-key-00002", "request_assistance"))
	if r["error"].(map[string]any)["code"] != "elicitation_unsupported" {
		t.Fatalf("no elicitation %v", r)
	}
}
