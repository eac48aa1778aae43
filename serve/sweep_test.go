package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// canaryReport is a report.json with the canary in every protected field.
func canaryReport(outcome string, success bool) string {
	r := map[string]any{
		"success":           success,
		"execution_profile": "demo",
		"execution_outcome": outcome,
		"halt": map[string]any{"state_id": canary, "intent": canary, "reason": canary + " captcha", "outcome": "halt",
			"observed_texts": []string{canary}, "completed_intents": []string{canary}},
		"results": []any{
			map[string]any{"step_id": "step_000", "intent": canary, "ok": true},
			map[string]any{"step_id": "step_001", "intent": canary, "ok": false, "error": canary, "before_png": "steps/" + canary + ".png"},
		},
		"diagnostic":  canary,
		canary:        canary,
		"started_at":  "2026-01-01T00:00:00Z",
		"total_ms":    12.5,
		"heal_count":  1,
		"model_calls": 0,
	}
	if outcome == "" {
		delete(r, "execution_outcome")
		delete(r, "execution_profile")
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// TestCanarySweep: the canary planted everywhere never reaches the
// wire, the audit log or stderr in default mode.
func TestCanarySweep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.runsDir = filepath.Join(e.root, canary)
	reports := filepath.Join(e.root, "reports")
	for name, body := range map[string]string{
		"c-halt":    canaryReport("HALTED", false),
		"c-success": canaryReport("", true),
		"c-cu":      canaryReport("COMPLETED_UNVERIFIED", true),
	} {
		os.MkdirAll(filepath.Join(reports, name), 0o755)
		os.WriteFile(filepath.Join(reports, name, "report.json"), []byte(body), 0o600)
	}
	dirName := "Jane Roe MRN-9911 sk_live_secret"
	e.demo(dirName, testBundle{name: canary, params: map[string]string{"note": canary, "scenario": canary}, intents: []string{canary, "type " + canary}, salt: "s1"})
	e.demo(dirName+" broken", testBundle{name: canary, params: map[string]string{"note": canary}, intents: []string{canary}, salt: "s2", tamper: true})
	os.MkdirAll(filepath.Join(e.bundles, dirName+" sealed"), 0o755)
	os.WriteFile(filepath.Join(e.bundles, dirName+" sealed", "workflow.json.enc"), []byte(canary), 0o644)
	e.environ = append(e.environ,
		"OPENADAPT_FAKE_FLOW_REPORTS_DIR="+reports,
		"OPENADAPT_FAKE_FLOW_STDOUT="+canary,
		"OPENADAPT_FAKE_FLOW_STDERR="+canary,
		"OPENADAPT_FAKE_FLOW_CERTIFY_STDOUT="+canary,
	)
	// The last REPORTS_DIR wins for the fake: drop the default one.
	var env []string
	for _, kv := range e.environ {
		if strings.HasPrefix(kv, "OPENADAPT_FAKE_FLOW_REPORTS_DIR=") && !strings.HasSuffix(kv, reports) {
			continue
		}
		env = append(env, kv)
	}
	e.environ = env
	o := e.opts()
	o.RunsDir = e.runsDir
	o.AllowRun = true
	o.Policy = "clinical-write"
	o.AllowURLOverride = true
	o.RunWait = 1
	o.Timeout = 3
	s := start(t, o)
	tool := s.runTool()
	call := func(args map[string]any) map[string]any {
		args["note"] = canary
		return s.call(tool, args)
	}
	statuses := map[string]bool{}
	for _, sc := range []string{"report=c-success", "report=c-halt;exit=1", "report=c-cu", "exit=2", "exit=0", "exit=1", "mode=report-symlink;exit=1"} {
		r := call(map[string]any{"scenario": sc, "url": "https://example.com/" + strings.ReplaceAll(canary, " ", "")})
		rep := s.call("get_run_report", map[string]any{"run_id": r["run_id"], "wait_ms": 20000})
		statuses[rep["status"].(string)] = true
	}
	// running, then timeout
	r := call(map[string]any{"scenario": "mode=hang;report=c-success", "idempotency_key": "canary-key-sk_live_secret"})
	statuses[r["status"].(string)] = true
	rep := s.call("get_run_report", map[string]any{"run_id": r["run_id"], "wait_ms": 10000})
	statuses[rep["status"].(string)] = true
	call(map[string]any{"scenario": "x", "idempotency_key": "canary-key-sk_live_secret"}) // conflict
	// Failure paths with canary input.
	s.call(tool, map[string]any{"note": canary, canary: canary})
	s.call(tool, map[string]any{"note": 5, "scenario": canary})
	s.call(tool, map[string]any{"note": canary, "scenario": "x", "url": "ftp://" + canary})
	s.call("get_workflow", map[string]any{"workflow": canary})
	s.call("get_workflow", map[string]any{"workflow": "workflow_" + strings.Repeat("0", 24)})
	for _, w := range s.call("list_workflows", nil)["workflows"].([]any) {
		s.call("get_workflow", map[string]any{"workflow": w.(map[string]any)["id"]})
	}
	s.call("get_run_report", map[string]any{"run_id": canary})
	s.call("get_run_report", map[string]any{"run_id": "run-" + strings.Repeat("a", 24)})
	s.call("get_attention_item", map[string]any{"attention_id": canary})
	q := s.call("list_needs_attention", nil)
	for _, it := range q["items"].([]any) {
		s.call("get_attention_item", map[string]any{"attention_id": it.(map[string]any)["id"]})
	}
	s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: canary})
	s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_workflow_" + strings.Repeat("e", 24)})
	// An interrupted run at shutdown.
	last := call(map[string]any{"scenario": "mode=hang;report=c-success"})
	statuses[last["status"].(string)] = true
	s.srv.Close()
	s2 := start(t, o)
	statuses[s2.call("get_run_report", map[string]any{"run_id": last["run_id"]})["status"].(string)] = true

	for _, st := range []string{"success", "halt", "refused", "error", "running", "timeout", "interrupted"} {
		if !statuses[st] {
			t.Errorf("status %s not driven (got %v)", st, statuses)
		}
	}
	assertNoCanary(t, "wire", s.out())
	assertNoCanary(t, "wire", s2.out())
	assertNoCanary(t, "stderr", s.stderr.String()+s.srv.Banner())
	audit, err := os.ReadFile(filepath.Join(e.runsDir, ".openadapt-agent", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	assertNoCanary(t, "audit log", string(audit))
	if !strings.Contains(s.out(), `\"note\"`) && !strings.Contains(s.out(), `"note"`) {
		t.Fatal("parameter names are public and should appear")
	}
}

func TestAuditLog(t *testing.T) {
	t.Parallel()
	e, o := runEnv(t)
	s := start(t, o)
	s.call("list_workflows", nil)
	r := s.call(s.runTool(), map[string]any{"note": "a", "scenario": "report=legacy-success"})
	s.call("get_workflow", map[string]any{"workflow": canary})
	s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: canary})
	s.srv.Close()
	path := filepath.Join(e.runsDir, ".openadapt-agent", "audit.jsonl")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit log %v %v", fi, err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if len(sc.Bytes()) >= 1024 {
			t.Fatal("audit line over 1 KiB")
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	want := []string{"v", "ts", "event", "session", "tool", "status", "code", "is_error", "duration_ms", "replayed", "workflow_id", "run_id", "attention_id", "decision_id", "protocol"}
	events := map[string]int{}
	for _, l := range lines {
		for _, k := range want {
			if _, ok := l[k]; !ok {
				t.Fatalf("line lacks %s: %v", k, l)
			}
		}
		if len(l) != len(want) {
			t.Fatalf("extra fields: %v", l)
		}
		events[l["event"].(string)+"/"+toolOf(l)]++
	}
	if events["tool_call/list_workflows"] != 1 || events["tool_call/"+s.runTool()] != 1 || events["tool_call/get_workflow"] != 1 || events["tool_call/unknown"] != 1 || events["run_end/"] != 1 {
		t.Fatalf("events %v", events)
	}
	for _, l := range lines {
		if toolOf(l) == s.runTool() && (l["run_id"] != r["run_id"] || l["status"] != "success" || l["workflow_id"] != r["workflow_id"]) {
			t.Fatalf("run line %v", l)
		}
		if toolOf(l) == "get_workflow" && (l["workflow_id"] != nil || l["code"] != "unknown_workflow" || l["is_error"] != true) {
			t.Fatalf("unknown workflow id logged: %v", l)
		}
	}
	// --audit-log off writes nothing.
	o.AuditLog = "off"
	os.Remove(path)
	s2 := start(t, o)
	s2.call("list_workflows", nil)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("audit log written with off")
	}
}

func toolOf(l map[string]any) string {
	s, _ := l["tool"].(string)
	return s
}

func TestProtectedExport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.demo("demo", testBundle{name: canary, params: map[string]string{"note": canary, "scenario": "x"}, intents: []string{canary}, salt: "p"})
	e.environ = append(e.environ, "OPENADAPT_FAKE_FLOW_STDOUT="+canary)
	o := e.opts()
	o.AllowRun = true
	o.AllowProtectedExport = true
	s := start(t, o)
	if !strings.Contains(s.srv.Banner(), "protected MCP export ENABLED") {
		t.Fatal(s.srv.Banner())
	}
	l := s.call("list_workflows", nil)
	w := l["workflows"].([]any)[0].(map[string]any)
	p := w["protected"].(map[string]any)
	if p["name"] != canary || p["recorded_params"].(map[string]any)["note"] != canary || l["protected"].(map[string]any)["bundles_dir"] != e.bundles {
		t.Fatalf("%v", l)
	}
	r := s.call(s.runTool(), map[string]any{"note": "a", "scenario": "report=standard-halted;exit=1"})
	rp := r["protected"].(map[string]any)
	if !strings.Contains(rp["stdout_tail"].(string), canary) || rp["halt"] == nil || rp["workflow"] != canary {
		t.Fatalf("%v", rp)
	}
	rep := s.call("get_run_report", map[string]any{"run_id": r["run_id"]})
	if rep["protected"].(map[string]any)["report"] == nil {
		t.Fatalf("%v", rep)
	}
	if f := s.call("get_workflow", map[string]any{"workflow": canary}); errorCode(f) != "unknown_workflow" {
		t.Fatal(f)
	} else {
		b, _ := json.Marshal(f)
		assertNoCanary(t, "failure envelope", string(b))
	}
	if !strings.Contains(s.out(), `"protected"`) {
		t.Fatal("export schemas lack protected")
	}
}
