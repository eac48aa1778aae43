package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
	"github.com/OpenAdaptAI/openadapt-agent/serve/internal/stdio"
)

// runEnv is an env with one Demo Triage bundle (params note and scenario)
// and run tools on.
func runEnv(t *testing.T) (*env, Options) {
	e := newEnv(t)
	e.demo("demo", testBundle{params: map[string]string{"note": "Follow-up in 2 weeks", "scenario": "x"}, salt: "r"})
	o := e.opts()
	o.AllowRun = true
	return e, o
}

// runSession starts a server on runEnv's fixture with the run wait set to
// runWait seconds (0: the fixture's) and returns its run tool.
func runSession(t *testing.T, runWait int) (*env, Options, *session, string) {
	t.Helper()
	e, o := runEnv(t)
	if runWait != 0 {
		o.RunWait = runWait
	}
	s := start(t, o)
	return e, o, s, s.runTool()
}

func TestArgumentRefusalsStartNothing(t *testing.T) {
	t.Parallel()
	e, _, s, tool := runSession(t, 0)
	for name, c := range map[string]struct {
		args map[string]any
		code string
	}{
		"missing":        {map[string]any{"scenario": "exit=0"}, "invalid_arguments"},
		"unknown key":    {map[string]any{"note": "a", "scenario": "b", canary: "c"}, "invalid_arguments"},
		"non-string":     {map[string]any{"note": 5, "scenario": "b"}, "invalid_arguments"},
		"object value":   {map[string]any{"note": map[string]any{"x": canary}, "scenario": "b"}, "invalid_arguments"},
		"url empty":      {map[string]any{"note": "a", "scenario": "b", "url": ""}, "url_override_refused"},
		"url number":     {map[string]any{"note": "a", "scenario": "b", "url": 123}, "url_override_refused"},
		"url+unknown":    {map[string]any{"note": "a", "url": canary, canary: 1}, "url_override_refused"},
		"bad idem key":   {map[string]any{"note": "a", "scenario": "b", "idempotency_key": canary}, "invalid_arguments"},
		"short idem key": {map[string]any{"note": "a", "scenario": "b", "idempotency_key": "short"}, "invalid_arguments"},
	} {
		r := s.call(tool, c.args)
		if errorCode(r) != c.code {
			t.Fatalf("%s: %v", name, r)
		}
	}
	e.wantRuns(0)
	assertNoCanary(t, "wire", s.out())
}

func TestURLOverride(t *testing.T) {
	t.Parallel()
	e, o := runEnv(t)
	o.AllowURLOverride = true
	o.URL = "http://server.example"
	o.Config = filepath.Join(e.root, "deploy.yaml")
	os.WriteFile(o.Config, []byte("backend: {}\n"), 0o600)
	o.Policy = "clinical-write"
	o.ExtraRunArgs = []string{"--backend", "web"}
	s := start(t, o)
	tool := s.runTool()
	for _, bad := range []string{"ftp://x", "http://user:pw@x", "http://x y", "/relative", "http://"} {
		if r := s.call(tool, map[string]any{"note": "a", "scenario": "exit=0", "url": bad}); errorCode(r) != "invalid_arguments" {
			t.Fatalf("%q: %v", bad, r)
		}
	}
	s.call(tool, map[string]any{"note": "a", "scenario": "report=legacy-success", "url": "https://override.example/app"})
	s.call(tool, map[string]any{"note": "a", "scenario": "report=legacy-success", "url": ""})
	inv := e.invocations()
	if len(inv) != 2 {
		t.Fatalf("%d invocations", len(inv))
	}
	tail := func(a []string) string { return strings.Join(a[7:], " ") }
	if got := tail(inv[0].Argv); got != "--url https://override.example/app --config "+o.Config+" --policy clinical-write --backend web" {
		t.Fatalf("argv tail %q", got)
	}
	if got := tail(inv[1].Argv); got != "--url http://server.example --config "+o.Config+" --policy clinical-write --backend web" {
		t.Fatalf("argv tail %q", got)
	}
}

func TestEnvironmentAllowlist(t *testing.T) {
	t.Parallel()
	e, o := runEnv(t)
	o.Environ = append(o.Environ, "LC_ALL=C", "XDG_RUNTIME_DIR=/x", "OPENADAPT_BUNDLE_KEY=k", "AWS_SECRET_ACCESS_KEY=s",
		"PYTHONPATH=/p", "HTTPS_PROXY=http://proxy", "LD_PRELOAD=/l", "NO_PROXY=x")
	o.PassEnv = []string{"NO_PROXY", "UNSET_NAME"}
	s := start(t, o)
	s.call(s.runTool(), map[string]any{"note": "a", "scenario": "exit=0"})
	inv := e.invocations()
	env := strings.Join(inv[0].Env, "\n")
	for _, want := range []string{"PATH=", "HOME=", "LC_ALL=C", "XDG_RUNTIME_DIR=/x", "OPENADAPT_BUNDLE_KEY=k", "NO_PROXY=x"} {
		if !strings.Contains(env, want) {
			t.Fatalf("child env lacks %s", want)
		}
	}
	for _, bad := range []string{"AWS_SECRET_ACCESS_KEY", "PYTHONPATH", "HTTPS_PROXY", "LD_PRELOAD", "UNSET_NAME"} {
		if strings.Contains(env, bad+"=") {
			t.Fatalf("child env has %s", bad)
		}
	}
}

func TestFlowNotFound(t *testing.T) {
	t.Parallel()
	e, o := runEnv(t)
	o.FlowCLI = filepath.Join(e.root, "no-such-flow")
	s := start(t, o)
	if !strings.Contains(s.srv.Banner(), "openadapt-flow was not found; run tools will fail with flow_not_found") {
		t.Fatal("no warning line")
	}
	if r := s.call(s.runTool(), map[string]any{"note": "a", "scenario": "exit=0"}); errorCode(r) != "flow_not_found" {
		t.Fatalf("%v", r)
	}
	ents, _ := os.ReadDir(filepath.Join(e.runsDir, ".openadapt-agent", "runs"))
	if len(ents) != 0 {
		t.Fatal("a run was reserved")
	}
}

func TestIdempotency(t *testing.T) {
	t.Parallel()
	e, o, s, tool := runSession(t, 0)
	key := "retry-key-0001-abcdef"
	args := map[string]any{"note": "a", "scenario": "report=standard-halted;exit=1", "idempotency_key": key}
	first := s.call(tool, args)
	second := s.call(tool, args)
	if first["run_id"] != second["run_id"] || second["replayed"] != true || first["replayed"] != false || second["status"] != first["status"] || second["message"] != first["message"] {
		t.Fatalf("replay: %v / %v", first, second)
	}
	other := map[string]any{"note": "b", "scenario": "report=standard-halted;exit=1", "idempotency_key": key}
	if r := s.call(tool, other); errorCode(r) != "idempotency_conflict" {
		t.Fatalf("conflict: %v", r)
	}
	e.wantRuns(1)
	// The raw key is stored nowhere; binding files are 0600.
	filepath.WalkDir(e.runsDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		data, _ := os.ReadFile(p)
		if strings.Contains(string(data), key) {
			t.Fatalf("%s holds the raw key", p)
		}
		if strings.Contains(p, string(filepath.Separator)+"idem"+string(filepath.Separator)) {
			fi, _ := os.Stat(p)
			if fi.Mode().Perm() != 0o600 {
				t.Fatalf("%s mode %v", p, fi.Mode())
			}
		}
		return nil
	})
	if strings.Contains(s.out(), key) {
		t.Fatal("key on the wire")
	}
	// Restart on the same runs dir: the replay still returns the original run.
	s.srv.Close()
	s2 := start(t, o)
	third := s2.call(tool, args)
	if third["run_id"] != first["run_id"] || third["replayed"] != true || third["status"] != "halt" {
		t.Fatalf("after restart: %v", third)
	}
	e.wantRuns(1) // after the restart
}

func TestIdempotencyConcurrent(t *testing.T) {
	t.Parallel()
	e, _, s, tool := runSession(t, 0)
	args := map[string]any{"note": "a", "scenario": "report=legacy-success;sleep=300ms", "idempotency_key": "concurrent-key-000001"}
	var wg sync.WaitGroup
	ids := make([]any, 4)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = s.call(tool, args)["run_id"]
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("run ids differ: %v", ids)
		}
	}
	e.wantRuns(1)
}

func TestLongRunProgressAndWait(t *testing.T) {
	t.Parallel()
	_, o, s, tool := runSession(t, 1)
	r := s.callCtx(context.Background(), tool, map[string]any{"note": "a", "scenario": "report=legacy-success;sleep=2500ms"}, "tok-1")
	if r["status"] != "running" || r["success"] != false || !strings.Contains(r["message"].(string), "do not start it again") {
		t.Fatalf("%v", r)
	}
	if sum, _ := r["summary"].(map[string]any); len(sum) != 0 {
		t.Fatalf("summary %v", sum)
	}
	if _, ok := r["execution_outcome"]; ok {
		t.Fatal("outcome on running")
	}
	prog := s.prog.all()
	if len(prog) == 0 {
		t.Fatal("no progress with a token")
	}
	last := -1.0
	for _, p := range prog {
		if p.Progress <= last || p.Message != "Governed run in progress." || p.Total != o.Timeout || p.ProgressToken != "tok-1" {
			t.Fatalf("progress %+v", p)
		}
		last = p.Progress
	}
	if r := s.call("get_run_report", map[string]any{"run_id": r["run_id"], "wait_ms": 25001}); errorCode(r) != "invalid_arguments" {
		t.Fatalf("wait_ms bound: %v", r)
	}
	rep := s.call("get_run_report", map[string]any{"run_id": r["run_id"], "wait_ms": 10000.0})
	if rep["status"] != "success" {
		t.Fatalf("%v", rep)
	}
	// No token, no progress: every notification, late ones of the calls
	// above included, carries the token of a call that sent one.
	s.call(tool, map[string]any{"note": "a", "scenario": "report=legacy-success;sleep=1500ms"})
	for _, p := range s.prog.all() {
		if p.ProgressToken != "tok-1" {
			t.Fatalf("progress without a token: %+v", p)
		}
	}
}

func TestClientCancelLeavesRunAlive(t *testing.T) {
	t.Parallel()
	_, _, s, tool := runSession(t, 0)
	// The call is cancelled once the run is going: its first progress
	// notification comes from the wait on the started run.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.prog.first
		cancel()
	}()
	p := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"note": "a", "scenario": "report=legacy-success;sleep=1s", "idempotency_key": "cancel-key-000000001"}}
	p.SetProgressToken("cancel-token")
	_, err := s.cs.CallTool(ctx, p)
	if err == nil {
		t.Fatal("call was not cancelled")
	}
	r := s.call(tool, map[string]any{"note": "a", "scenario": "report=legacy-success;sleep=1s", "idempotency_key": "cancel-key-000000001"})
	if r["replayed"] != true || r["status"] != "success" {
		t.Fatalf("%v", r)
	}
}

func TestRestartReconcilesDeadOwner(t *testing.T) {
	t.Parallel()
	e, o := runEnv(t)
	s := start(t, o)
	// A record owned by an instance whose lock nobody holds.
	r := &runstore.File{SchemaVersion: 1, RunID: "run-" + strings.Repeat("ab", 12), WorkflowID: s.srv.catalog.cat.workflows[0].id,
		BaseWorkflowID: s.srv.catalog.cat.workflows[0].baseID, Owner: "0123456789abcdef", Phase: runstore.PhaseRunning, StartedAt: time.Now().UTC().Format(time.RFC3339Nano)}
	if err := s.srv.state.WriteRecord(r); err != nil {
		t.Fatal(err)
	}
	// While the first server lives, its own runs are never reconciled by a
	// second server; the dead owner's run is.
	s2 := start(t, o)
	rep := s2.call("get_run_report", map[string]any{"run_id": r.RunID})
	if rep["status"] != "interrupted" {
		t.Fatalf("%v", rep)
	}
	_ = e
}

func TestSecondServerWaitsForFirst(t *testing.T) {
	t.Parallel()
	_, o := runEnv(t)
	o.RunWait = 1
	s1 := start(t, o)
	r := s1.call(s1.runTool(), map[string]any{"note": "a", "scenario": "report=legacy-success;sleep=1500ms"})
	if r["status"] != "running" {
		t.Fatalf("%v", r)
	}
	s2 := start(t, o)
	rep := s2.call("get_run_report", map[string]any{"run_id": r["run_id"], "wait_ms": 10000})
	if rep["status"] != "success" {
		t.Fatalf("second server: %v", rep)
	}
}

func TestConcurrentRunsUnmixed(t *testing.T) {
	t.Parallel()
	e, _, s, tool := runSession(t, 120) // 32 processes on a loaded 2-core machine
	scen := []struct{ scenario, status string }{
		{"report=legacy-success", "success"},
		{"report=standard-halted;exit=1", "halt"},
		{"exit=2", "refused"},
		{"report=standard-failed;exit=1", "error"},
	}
	const n = 32
	var wg sync.WaitGroup
	results := make([]map[string]any, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := scen[i%len(scen)]
			res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"note": fmt.Sprintf("n-%02d", i), "scenario": c.scenario + ";sleep=50ms"}})
			if err != nil {
				t.Error(err)
				return
			}
			var m map[string]any
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(b, &m)
			results[i] = m
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, r := range results {
		if r == nil {
			t.Fatalf("no result %d", i)
		}
		if want := scen[i%len(scen)].status; r["status"] != want {
			t.Fatalf("call %d: status %v want %s", i, r["status"], want)
		}
		id := r["run_id"].(string)
		if seen[id] {
			t.Fatalf("duplicate run id %s", id)
		}
		seen[id] = true
	}
	inv := e.invocations()
	if len(inv) != n {
		t.Fatalf("%d invocations", len(inv))
	}
	// Each invocation got its own params file and run dir.
	for _, i := range inv {
		note := i.Params["note"].(string)
		var idx int
		fmt.Sscanf(note, "n-%d", &idx)
		if !strings.HasSuffix(i.RunDir, results[idx]["run_id"].(string)) {
			t.Fatalf("params of call %d ran in %s", idx, i.RunDir)
		}
	}
}

func TestGetRunReportIDs(t *testing.T) {
	t.Parallel()
	e, o := runEnv(t)
	s := start(t, o)
	for _, bad := range []string{"../secrets", "a/b", "..", "", canary} {
		if r := s.call("get_run_report", map[string]any{"run_id": bad}); errorCode(r) != "unsafe_run_id" {
			t.Fatalf("%q: %v", bad, r)
		}
	}
	// Foreign: a directory made by hand, unknown, and a symlinked record.
	foreign := "run-" + strings.Repeat("0", 24)
	os.MkdirAll(filepath.Join(e.runsDir, foreign), 0o700)
	os.WriteFile(filepath.Join(e.runsDir, foreign, "report.json"), []byte(`{"success":true}`), 0o600)
	unknown := "run-" + strings.Repeat("1", 24)
	linked := "run-" + strings.Repeat("2", 24)
	os.Symlink(filepath.Join(e.root, "elsewhere.json"), filepath.Join(e.runsDir, ".openadapt-agent", "runs", linked+".json"))
	var msgs []string
	for _, id := range []string{foreign, unknown, linked} {
		r := s.call("get_run_report", map[string]any{"run_id": id})
		if errorCode(r) != "report_unavailable" {
			t.Fatalf("%s: %v", id, r)
		}
		b, _ := json.Marshal(r)
		msgs = append(msgs, string(b))
	}
	if msgs[0] != msgs[1] || msgs[1] != msgs[2] {
		t.Fatalf("answers differ: %v", msgs)
	}
	if r := s.call("get_run_report", map[string]any{"run_id": 123}); errorCode(r) != "invalid_arguments" {
		t.Fatalf("%v", r)
	}
}

func TestUnknownToolsAndPanics(t *testing.T) {
	t.Parallel()
	e, o := runEnv(t)
	s := start(t, o)
	_, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: canary})
	if err == nil || !strings.Contains(err.Error(), "Unknown tool.") || strings.Contains(err.Error(), "Jane") {
		t.Fatalf("unknown tool: %v", err)
	}
	res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_workflow_" + strings.Repeat("f", 24)})
	if err != nil || !res.IsError {
		t.Fatalf("%v %v", res, err)
	}
	if m := s.check("", res); errorCode(m) != "unknown_workflow" {
		t.Fatalf("%v", m)
	}
	o.AllowRun = false
	s2 := start(t, o)
	res, _ = s2.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_workflow"})
	if m := s2.check("", res); errorCode(m) != "run_tools_disabled" {
		t.Fatalf("%v", m)
	}
	s2.srv.reg.testOnlyPanic = "list_workflows"
	if r := s2.call("list_workflows", nil); errorCode(r) != "internal_error" {
		t.Fatalf("%v", r)
	}
	if strings.Contains(s.out(), `"code":0`) || strings.Contains(s2.out(), `"code":0`) {
		t.Fatal("JSON-RPC code 0 on the wire")
	}
	_ = e
}

func TestCatalogMode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 45 {
		e.demo(fmt.Sprintf("b%02d", i), testBundle{params: map[string]string{"note": "x", fmt.Sprintf("field_%02d", i): "y"}, salt: fmt.Sprint(i)})
	}
	e.demo("zz-broken", testBundle{salt: "broken", tamper: true})
	o := e.opts()
	o.AllowRun = true
	o.ToolMode = "catalog"
	s := start(t, o)
	if got := toolNames(s); !slices.Equal(got, []string{"search_workflows", "get_workflow", "get_run_report", "list_needs_attention", "get_attention_item", "run_workflow"}) {
		t.Fatalf("%v", got)
	}
	page := s.call("search_workflows", map[string]any{})
	if page["total_matches"] != 46.0 || len(page["workflows"].([]any)) != 46 || page["next_cursor"] != nil {
		t.Fatalf("%v", page["total_matches"])
	}
	var all []any
	cursor := ""
	for {
		args := map[string]any{"limit": 10, "available_only": true}
		if cursor != "" {
			args["cursor"] = cursor
		}
		p := s.call("search_workflows", args)
		all = append(all, p["workflows"].([]any)...)
		c, _ := p["next_cursor"].(string)
		if c == "" {
			break
		}
		cursor = c
		if r := s.call("search_workflows", map[string]any{"cursor": c}); errorCode(r) != "invalid_arguments" {
			t.Fatal("cursor of another query accepted")
		}
	}
	if len(all) != 45 {
		t.Fatalf("%d available", len(all))
	}
	one := s.call("search_workflows", map[string]any{"query": "FIELD_07 note"})
	if one["total_matches"] != 1.0 {
		t.Fatalf("%v", one)
	}
	if r := s.call("search_workflows", map[string]any{"query": "demo triage"}); r["total_matches"] != 0.0 {
		t.Fatal("names take part in default-mode matching")
	}
	w := one["workflows"].([]any)[0].(map[string]any)
	id := w["id"].(string)
	r := s.call("run_workflow", map[string]any{"workflow_id": id, "params": map[string]any{"note": "a", "field_07": "b"}})
	if r["status"] != "halt" || r["workflow_id"] != id { // no report at exit 0? default fake exit 0 without report → error
		if r["status"] != "error" {
			t.Fatalf("%v", r)
		}
	}
	if r := s.call("run_workflow", map[string]any{"workflow_id": canary, "params": map[string]any{}}); errorCode(r) != "unknown_workflow" {
		t.Fatalf("%v", r)
	}
	var broken string
	for _, x := range s.call("search_workflows", map[string]any{"query": "", "limit": 500})["workflows"].([]any) {
		if x.(map[string]any)["available"] == false {
			broken = x.(map[string]any)["id"].(string)
		}
	}
	if r := s.call("run_workflow", map[string]any{"workflow_id": broken, "params": map[string]any{}}); errorCode(r) != "workflow_unavailable" {
		t.Fatalf("%v", r)
	}
	if r := s.call("run_workflow", map[string]any{"workflow_id": id, "params": map[string]any{"note": "a"}}); errorCode(r) != "invalid_arguments" {
		t.Fatalf("%v", r)
	}
}

func TestAdmissionGate(t *testing.T) {
	t.Parallel()
	e, o := runEnv(t)
	o.ExtraRunArgs = []string{"--profile", "standard"}
	s := start(t, o)
	if !strings.Contains(s.srv.Banner(), "admission gate standard (embedded ledger snapshot);") || strings.Contains(s.srv.Banner(), "unverified") {
		t.Fatalf("banner: %s", s.srv.Banner())
	}
	list := s.call("list_workflows", nil)
	if list["admission_gate"] != "standard" || list["workflows"].([]any)[0].(map[string]any)["admission"] != "not_actively_admitted" {
		t.Fatalf("%v", list)
	}
	r := s.call(s.runTool(), map[string]any{"note": "a", "scenario": "exit=0"})
	if errorCode(r) != "admission_required" || !strings.Contains(r["error"].(map[string]any)["message"].(string), "(ledger reason: ") {
		t.Fatalf("%v", r)
	}
	e.wantRuns(0)
	// Demo is ungated.
	o.ExtraRunArgs = []string{"--profile=demo"}
	s2 := start(t, o)
	if l := s2.call("list_workflows", nil); l["admission_gate"] != "off" {
		t.Fatalf("%v", l)
	}
	if r := s2.call(s2.runTool(), map[string]any{"note": "a", "scenario": "report=demo-completed-unverified"}); r["status"] != "halt" {
		t.Fatalf("%v", r)
	}
}

func TestAttentionTools(t *testing.T) {
	t.Parallel()
	e, o := runEnv(t)
	s := start(t, o)
	q := s.call("list_needs_attention", nil)
	if q["open_count"] != 0.0 || q["actions_enabled"] != false || q["live_actions_ready"] != false {
		t.Fatalf("%v", q)
	}
	r := s.call(s.runTool(), map[string]any{"note": "a", "scenario": "report=standard-halted;exit=1"})
	na, ok := r["needs_attention"].(map[string]any)
	if !ok {
		t.Fatalf("needs_attention %v", r["needs_attention"])
	}
	q = s.call("list_needs_attention", nil)
	items := q["items"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["id"] != na["id"] {
		t.Fatalf("%v", q)
	}
	item := s.call("get_attention_item", map[string]any{"attention_id": na["id"]})
	a, _ := json.Marshal(item)
	b, _ := json.Marshal(items[0])
	if string(a) != string(b) {
		t.Fatalf("get != list item:\n%s\n%s", a, b)
	}
	for _, bad := range []any{"../run-one", "a/b", "", strings.Repeat("0", 23), canary} {
		if r := s.call("get_attention_item", map[string]any{"attention_id": bad}); errorCode(r) != "attention_not_found" {
			t.Fatalf("%q: %v", bad, r)
		}
	}
	if r := s.call("get_attention_item", map[string]any{"attention_id": 123}); errorCode(r) != "invalid_arguments" {
		t.Fatalf("%v", r)
	}
	_ = e
}

func TestCertification(t *testing.T) {
	t.Parallel()
	e, o := runEnv(t)
	o.Environ = append(o.Environ, "AWS_SECRET_ACCESS_KEY=s")
	s := start(t, o)
	id := s.srv.catalog.cat.workflows[0].id
	c := s.call("get_workflow", map[string]any{"workflow": id})["certification"].(map[string]any)
	if c["certified"] != nil || c["message"] != "Certification was not evaluated by this server." {
		t.Fatalf("no policy: %v", c)
	}
	o.Policy = "clinical-write"
	s2 := start(t, o)
	c = s2.call("get_workflow", map[string]any{"workflow": id})["certification"].(map[string]any)
	if c["certified"] != true || c["message"] != "The configured policy certification passed." {
		t.Fatalf("pass: %v", c)
	}
	o.Environ = append(o.Environ, "OPENADAPT_FAKE_FLOW_CERTIFY_EXIT=2")
	s3 := start(t, o)
	c = s3.call("get_workflow", map[string]any{"workflow": id})["certification"].(map[string]any)
	if c["certified"] != false || c["message"] != "The configured policy certification did not pass." {
		t.Fatalf("fail: %v", c)
	}
	inv, _ := fakeflowInvocations(e.record)
	certs := 0
	for _, i := range inv {
		if len(i.Argv) > 1 && i.Argv[1] == "certify" {
			certs++
			if strings.Join(i.Argv[2:], " ") != s.srv.catalog.cat.workflows[0].dir+" --policy clinical-write" {
				t.Fatalf("certify argv %v", i.Argv)
			}
			if strings.Contains(strings.Join(i.Env, "\n"), "AWS_SECRET_ACCESS_KEY") {
				t.Fatal("certify got a non-allowlisted variable")
			}
		}
	}
	if certs != 2 {
		t.Fatalf("%d certify invocations", certs)
	}
}

func TestResultTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Protected export of a workflow with huge recorded values makes the
	// listing exceed one frame.
	big := strings.Repeat("x", 1<<20)
	for i := range 3 {
		e.demo(fmt.Sprintf("w%d", i), testBundle{params: map[string]string{"note": big}, salt: fmt.Sprint("big", i)})
	}
	o := e.opts()
	o.AllowProtectedExport = true
	s := start(t, o)
	r := s.call("list_workflows", nil)
	if errorCode(r) != "result_too_large" {
		t.Fatalf("%.200v", r)
	}
	// The hint names a remedy that exists: a smaller page goes through.
	if rec := r["error"].(map[string]any)["recovery"].(string); !strings.Contains(rec, "smaller limit") || !strings.Contains(rec, "next_cursor") {
		t.Fatalf("recovery %q", rec)
	}
	var pages int
	for args := map[string]any{"limit": 1}; ; pages++ {
		p := s.call("list_workflows", args)
		if errorCode(p) != "" || len(p["workflows"].([]any)) != 1 {
			t.Fatalf("page %d: %.200v", pages, p)
		}
		c, ok := p["next_cursor"].(string)
		if !ok {
			break
		}
		args["cursor"] = c
	}
	if pages != 2 {
		t.Fatalf("%d pages after the first", pages)
	}
	for _, l := range strings.Split(s.out(), "\n") {
		if len(l) > stdio.MaxFrameBytes {
			t.Fatalf("frame of %d bytes", len(l))
		}
	}
}

// TestInvalidArgumentsNamesMissing: invalid_arguments names the missing
// required arguments (schema names) in its message and counts undeclared
// keys without echoing them (a client-supplied key can carry PHI).
func TestInvalidArgumentsNamesMissing(t *testing.T) {
	t.Parallel()
	_, o := runEnv(t)
	s := start(t, o)
	tool := s.runTool()
	msg := func(r map[string]any) string {
		e, _ := r["error"].(map[string]any)
		m, _ := e["message"].(string)
		return m
	}
	r := s.call(tool, map[string]any{"scenario": "exit=0"})
	if errorCode(r) != "invalid_arguments" || !strings.HasSuffix(msg(r), " Missing required argument(s): note.") {
		t.Fatalf("missing: %v", r)
	}
	r = s.call(tool, map[string]any{canary: 1, "x-" + canary: 2})
	if errorCode(r) != "invalid_arguments" || !strings.HasSuffix(msg(r), " Missing required argument(s): note, scenario. 2 undeclared argument(s).") {
		t.Fatalf("missing and undeclared: %v", r)
	}
	assertNoCanary(t, "wire", s.out())
}
