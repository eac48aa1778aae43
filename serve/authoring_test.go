//go:build unix

package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/authoringstub"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/testutil"
)

// authoringEnv runs serve --authoring --url … --headed on the real embedded
// helper with the stub of Flow's authoring module and backends
// (testdata/stubflow). mode is OPENADAPT_STUBFLOW_AUTHORING ("" = absent).
func authoringEnv(t *testing.T, mode string, vars ...string) (Options, *authoringstub.Stub) {
	t.Helper()
	st := authoringstub.New(t, mode, vars...)
	environ := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + st.Root}, st.Vars...)
	return Options{RunsDir: filepath.Join(st.Root, "runs"), Authoring: true, FlowPython: st.Python, PassEnv: authoringstub.PassEnv,
		URL: "https://app.example/login", Headed: true,
		Environ: environ, Version: "test", Timeout: 60, RunWait: 20}, st
}

func TestAuthoringFailsClosedWithoutTheModule(t *testing.T) {
	t.Parallel()
	o, _ := authoringEnv(t, "")
	_, err := New(o, &syncBuffer{})
	if err == nil || err.Error() != "openadapt_flow.authoring is not available with openadapt-flow 1.32.0; --authoring fails closed" {
		t.Fatalf("New = %v", err)
	}
}

// Each feature gates the Flow it runs on: authoring by Flow's API (so it
// runs on Flow 1.33 when the module fits), attended actions by the pinned
// minor. A combination whose features disagree exits naming the one that
// refuses.
func TestAuthoringFeatureGates(t *testing.T) {
	t.Parallel()
	o, _ := authoringEnv(t, "full", "OPENADAPT_STUBFLOW_VERSION=1.33.0")
	s := start(t, o)
	if g, _ := json.Marshal(s.call("bind_status", map[string]any{})); string(g) != `{"bound":true,"status":"stdio","transport":"stdio"}` {
		t.Errorf("authoring on Flow 1.33: bind_status %s", g)
	}
	o, log := authoringEnv(t, "full", "OPENADAPT_STUBFLOW_VERSION=1.33.0")
	o.AllowAttendedActions = true
	if _, err := New(o, &syncBuffer{}); err == nil || err.Error() != "openadapt-flow 1.33.0 is not supported by attended actions; supported: 1.32.x" {
		t.Errorf("--authoring --allow-attended-actions on Flow 1.33 = %v", err)
	}
	if n := log.CallNames(t); n != "" {
		t.Errorf("Flow was driven: %s", n)
	}
	o, _ = authoringEnv(t, "")
	o.AllowAttendedActions = true
	if _, err := New(o, &syncBuffer{}); err == nil || err.Error() != "openadapt_flow.authoring is not available with openadapt-flow 1.32.0; --authoring fails closed" {
		t.Errorf("--authoring --allow-attended-actions on Flow 1.32 = %v", err)
	}
	o, _ = authoringEnv(t, "no_press")
	if _, err := New(o, &syncBuffer{}); err == nil ||
		err.Error() != "openadapt_flow.authoring of openadapt-flow 1.32.0 lacks the expected API (AuthoringSession.press); --authoring fails closed" {
		t.Errorf("--authoring on a module without press = %v", err)
	}
}

func TestAuthoringToolsEndToEnd(t *testing.T) {
	t.Parallel()
	o, log := authoringEnv(t, "full", "OPENADAPT_STUBFLOW_AUTHORING_TREE=hostile500", "OPENADAPT_STUBFLOW_AUTHORING_FIELD=empty_once")
	var asked []*mcp.ElicitRequest
	s := elicitSession(t, o, "2025-11-25", func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, r)
		return accept(r)
	})
	var names []string
	tools := mustList(t, s)
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	testutil.Golden(t, "testdata/authoring/tools-list.json", mustIndent(t, tools))
	want := []string{"observe", "start_record", "click", "halt", "type", "pause_for_input", "continue_input", "stop_record",
		"compile", "admit", "get_command_result", "set_coach", "get_coach", "bind_status", "press"}
	if d := cmp.Diff(want, names); d != "" {
		t.Fatalf("tools (-want +got):\n%s", d)
	}
	if b := s.srv.Banner(); !strings.Contains(b, "authoring tools enabled over local stdio; run tools disabled") {
		t.Errorf("banner %q", b)
	}
	obs := s.call("observe", map[string]any{})
	b, _ := json.Marshal(obs)
	if obs["schema_version"] != "openadapt.authoring.observe/v1" || obs["truncated"] != true || len(b) > 32<<10 {
		t.Fatalf("observe %d bytes: %.300s", len(b), b)
	}
	for _, leak := range []string{"CANARY", "SECRET", "Jane", "jane@", "1234567", "555-123", "iVBOR", "https", "title", "pixels", "value"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("observe holds %q", leak)
		}
	}
	tree := obs["tree"].([]any)
	testutil.Golden(t, "testdata/authoring/observe-first3.json", mustIndent(t, map[string]any{"first": tree[:3], "node_count": obs["node_count"]}))

	check := func(tool string, args map[string]any, want string) {
		t.Helper()
		got := s.call(tool, args)
		g, _ := json.Marshal(got)
		if string(g) != want {
			t.Errorf("%s = %s, want %s", tool, g, want)
		}
	}
	check("start_record", map[string]any{}, `{"status":"recording"}`)
	check("click", map[string]any{"node_id": "n_00000002"}, `{"node_id":"n_00000002","status":"ok"}`)
	check("click", map[string]any{"node_id": "n_0badbad0"}, `{"reason":"stale_node","status":"error"}`)
	if f := s.call("click", map[string]any{"x": 1}); errorCode(f) != "invalid_arguments" {
		t.Errorf("click x only = %v", f)
	}
	if f := s.call("click", map[string]any{"x": true, "y": 2}); errorCode(f) != "invalid_arguments" {
		t.Errorf("click with a boolean = %v", f)
	}
	check("type", map[string]any{"text": "hunter2-TYPED", "param": "username"}, `{"param":"username","recorded":true,"status":"ok"}`)
	for _, bad := range []map[string]any{
		{"text": "x", "param": "Bad Param"},
		{"text": "x", "node_id": "n_00000002"}, // type takes no node: click first
	} {
		if f := s.call("type", bad); errorCode(f) != "invalid_arguments" {
			t.Errorf("type %v = %v", bad, f)
		}
	}
	check("press", map[string]any{"key": "Tab"}, `{"key":"Tab","status":"ok"}`)
	check("press", map[string]any{"key": "Shift+Control+ArrowDown"}, `{"key":"Shift+Control+ArrowDown","status":"ok"}`)
	for _, key := range []string{"a", "Shift+a", "Control+c", " Enter", "Enter ", "enter", "F13", "Control+Control+End", "Space", "Control+"} {
		if f := s.call("press", map[string]any{"key": key}); errorCode(f) != "invalid_arguments" {
			t.Errorf("press %q = %v", key, f)
		}
	}
	if f := s.call("pause_for_input", map[string]any{"node_id": "n_00000001", "secret": true}); errorCode(f) != "invalid_arguments" {
		t.Errorf("pause_for_input without param = %v", f)
	}
	check("pause_for_input", map[string]any{"node_id": "n_00000001", "param": "password", "secret": true}, `{"param":"password","secret":true,"status":"paused"}`)
	// Flow refuses to compile (or act) while paused.
	check("compile", map[string]any{}, `{"reason":"in_flight","status":"error"}`)
	// The person confirms in the form; the field is still empty, so Flow
	// records nothing and the pause stays open; the second time it records.
	check("continue_input", map[string]any{}, `{"param":"password","reason":"empty_secret_field","recorded":false}`)
	check("get_command_result", map[string]any{}, `{"command_id":"continue_input","result":{"param":"password","reason":"empty_secret_field","recorded":false},"retry_after_ms":0,"status":"done"}`)
	check("continue_input", map[string]any{}, `{"param":"password","recorded":true}`)
	if len(asked) != 2 || asked[0].Params.Mode != "form" {
		t.Fatalf("elicitations %d", len(asked))
	}
	check("stop_record", map[string]any{}, `{"compiled":false,"status":"stopped"}`)
	check("compile", map[string]any{}, `{"recording_retained":true,"status":"needs_human_admit","workflow_id":"wf_stubdraft01"}`)
	check("get_command_result", map[string]any{}, `{"command_id":"compile","result":{"recording_retained":true,"status":"needs_human_admit","workflow_id":"wf_stubdraft01"},"retry_after_ms":0,"status":"done"}`)
	for _, token := range []string{"maybe", "enter", "no"} {
		check("admit", map[string]any{"confirm": token}, `{"reason":"admit_refused","status":"error"}`)
	}
	if len(asked) != 2 {
		t.Fatalf("a refused token was elicited")
	}
	check("admit", map[string]any{"confirm": " OK "}, `{"status":"admitted","workflow_id":"wf_stubdraft01"}`)
	check("admit", map[string]any{"confirm": "true"}, `{"status":"admitted","workflow_id":"wf_stubdraft01"}`)
	if len(asked) != 4 || asked[3].Params.Mode != "form" {
		t.Fatalf("elicitations %d", len(asked))
	}
	check("set_coach", map[string]any{"hint": "Click Save"}, `{"hint":"Click Save","status":"ok"}`)
	if f := s.call("set_coach", map[string]any{"hint": "mail jane@example.com"}); errorCode(f) != "invalid_arguments" {
		t.Errorf("set_coach PHI = %v", f)
	}
	check("get_coach", map[string]any{}, `{"hint":"Click Save"}`)
	check("bind_status", map[string]any{}, `{"bound":true,"status":"stdio","transport":"stdio"}`)
	check("halt", map[string]any{}, `{"compiled":false,"status":"halted"}`)

	if strings.Contains(s.wire.String(), "hunter2-TYPED") && strings.Count(s.wire.String(), "hunter2-TYPED") != 1 {
		t.Errorf("the typed text is echoed on the wire")
	}
	for _, line := range strings.Split(s.wire.String(), "\n") {
		if strings.Contains(line, "hunter2-TYPED") && !strings.Contains(line, `"method":"tools/call"`) {
			t.Errorf("the typed text appears outside its own request: %.200s", line)
		}
	}
	if strings.Contains(s.stderr.String(), "hunter2") {
		t.Errorf("stderr holds the typed text")
	}
	for _, c := range log.Calls(t) {
		if c["call"] == "record_observed" && (c["secret"] != true || c["param"] != "password" || c["has_text"] != false) {
			t.Errorf("record_observed %v", c)
		}
		if c["call"] == "continue_input" && c["operator_confirmed"] != true {
			t.Errorf("continue_input %v: the person confirmed in the form", c)
		}
		if c["call"] == "press" && c["key"] != "Tab" && c["key"] != "Shift+Control+ArrowDown" {
			t.Errorf("press %v", c)
		}
	}
	wantCalls := "launch,open,observe,start_record,click,click,type_text,press,press,pause_for_input,compile,continue_input,continue_input,record_observed,stop_record,compile,admit,admit,halt,backend_close"
	if calls := log.CallNames(t); calls != wantCalls {
		t.Errorf("session calls\n got %s\nwant %s", calls, wantCalls)
	}
}

// admit needs the person's form; continue_input without forms goes on
// unconfirmed (Flow then records no masked secret it cannot read back),
// and a declined form sends nothing.
func TestAuthoringAdmitWithoutElicitationOrSessionAdmit(t *testing.T) {
	t.Parallel()
	o, log := authoringEnv(t, "full", "OPENADAPT_STUBFLOW_AUTHORING_FIELD=masked")
	s := elicitSession(t, o, "2025-11-25", nil) // no elicitation capability
	if f := s.call("admit", map[string]any{}); errorCode(f) != "elicitation_unsupported" {
		t.Fatalf("admit without elicitation = %v", f)
	}
	s.call("observe", map[string]any{})
	s.call("start_record", map[string]any{})
	s.call("pause_for_input", map[string]any{"node_id": "n_0000000b", "param": "password", "secret": true})
	if g, _ := json.Marshal(s.call("continue_input", map[string]any{})); string(g) != `{"param":"password","reason":"unconfirmed_masked_secret","recorded":false}` {
		t.Fatalf("continue_input without elicitation = %s", g)
	}
	o, declinedLog := authoringEnv(t, "full")
	declined := elicitSession(t, o, "2025-11-25", func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	})
	if f := declined.call("admit", map[string]any{"confirm": true}); errorCode(f) != "operator_declined" {
		t.Fatalf("declined admit = %v", f)
	}
	declined.call("observe", map[string]any{})
	declined.call("start_record", map[string]any{})
	declined.call("pause_for_input", map[string]any{"node_id": "n_0000000b", "param": "password"})
	if f := declined.call("continue_input", map[string]any{}); errorCode(f) != "operator_declined" {
		t.Fatalf("declined continue = %v", f)
	}
	for _, l := range []string{log.CallNames(t), declinedLog.CallNames(t)} {
		if strings.Contains(l, "admit") {
			t.Errorf("admit reached the session without a confirmed elicitation: %s", l)
		}
	}
	if strings.Contains(declinedLog.CallNames(t), "continue_input") {
		t.Errorf("a declined continue reached the session: %s", declinedLog.CallNames(t))
	}
	for _, c := range log.Calls(t) {
		if c["call"] == "continue_input" && c["operator_confirmed"] != false {
			t.Errorf("continue_input without a form %v", c)
		}
	}
}

// A coach-only backend (Citrix here, from the deployment config) builds
// nothing that drives and opens no session: every session tool answers
// coach_only, get_command_result and bind_status still answer.
func TestAuthoringCoachOnlyBackend(t *testing.T) {
	t.Parallel()
	o, log := authoringEnv(t, "full")
	o.Config, o.URL, o.Headed = filepath.Join(log.Root, "deployment.json"), "", false
	if err := os.WriteFile(o.Config, []byte(`{"kind": "citrix"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := elicitSession(t, o, "2025-11-25", accept)
	for tool, args := range map[string]map[string]any{"observe": {}, "start_record": {}, "click": {"node_id": "n_00000001"},
		"type": {"text": "x"}, "press": {"key": "Enter"}, "pause_for_input": {"param": "p"}, "continue_input": {}, "halt": {},
		"stop_record": {}, "compile": {}, "admit": {}, "set_coach": {"hint": "Click Save"}, "get_coach": {}} {
		if g, _ := json.Marshal(s.call(tool, args)); string(g) != `{"reason":"coach_only","status":"error"}` {
			t.Errorf("%s = %s", tool, g)
		}
	}
	if g, _ := json.Marshal(s.call("bind_status", map[string]any{})); string(g) != `{"bound":true,"status":"stdio","transport":"stdio"}` {
		t.Errorf("bind_status = %s", g)
	}
	if n := log.CallNames(t); n != "" {
		t.Errorf("Flow was driven: %s", n)
	}
}

func mustList(t *testing.T, s *session) []*mcp.Tool {
	t.Helper()
	res, err := s.cs.ListTools(t_ctx(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

func mustIndent(t *testing.T, v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// serve --authoring --config: the session's backend comes from the
// deployment config (read by the helper with Flow's loader), --url and
// --headed override it; a web config without a URL or headed exits 2
// naming the missing piece.
func TestAuthoringSessionFromConfig(t *testing.T) {
	o, log := authoringEnv(t, "full")
	cfg := filepath.Join(log.Root, "deployment.json")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"kind": "web", "url": "https://cfg.example/app"}`)
	o.Config, o.URL, o.Headed = cfg, "", false
	_, err := New(o, &syncBuffer{})
	if err == nil || err.Error() != "authoring a web application needs a visible browser, so the person can sign in there: set deployment.backend.headed: true in --config or pass --headed" {
		t.Fatalf("New without headed = %v", err)
	}
	if n := log.CallNames(t); n != "" {
		t.Fatalf("a session was opened: %s", n)
	}
	entries, err := os.ReadDir(filepath.Join(o.RunsDir, runstore.StateDirName, "authoring"))
	if err != nil || len(entries) != 0 {
		t.Errorf("a refused start left %d recording folders", len(entries))
	}
	o.Headed = true
	s := start(t, o)
	if g, _ := json.Marshal(s.call("bind_status", map[string]any{})); string(g) != `{"bound":true,"status":"stdio","transport":"stdio"}` {
		t.Errorf("bind_status = %s", g)
	}
	calls := log.Calls(t)
	if len(calls) != 2 || calls[0]["call"] != "launch" || calls[0]["url"] != "https://cfg.example/app" || calls[0]["headless"] != false ||
		calls[1]["backend_kind"] != "web" || calls[1]["app_url"] != "https://cfg.example/app" {
		t.Fatalf("session calls %v", calls)
	}
	write(`{"kind": "linux"}`)
	o2, log2 := authoringEnv(t, "full")
	o2.Config, o2.URL, o2.Headed = cfg, "", false
	start(t, o2)
	if c := log2.Calls(t); len(c) != 2 || c[0]["call"] != "build_backend" || c[1]["backend_kind"] != "linux" || c[1]["app_url"] != nil {
		t.Fatalf("linux session calls %v", c)
	}
	// Without --config the local window has nothing to build Flow's desktop
	// backend from.
	o4, _ := authoringEnv(t, "full")
	o4.URL, o4.Headed = "", false
	if _, err := New(o4, &syncBuffer{}); err == nil || !strings.HasPrefix(err.Error(), "authoring the local window needs --config") {
		t.Fatalf("New without a config = %v", err)
	}
	o3, _ := authoringEnv(t, "full")
	o3.Config, o3.URL = filepath.Join(log.Root, "missing.json"), ""
	if _, err := New(o3, &syncBuffer{}); err == nil || !strings.Contains(err.Error(), "the deployment config could not be read: "+o3.Config) {
		t.Fatalf("New with a missing config = %v", err)
	}
}

// get_command_result and bind_status are answered by the helper: a
// helper-side refusal is the last answer, and once the helper is gone they
// fail closed like every other authoring tool.
func TestAuthoringCommandResultFromTheHelper(t *testing.T) {
	o, _ := authoringEnv(t, "full")
	s := start(t, o)
	check := func(tool string, args map[string]any, want string) {
		t.Helper()
		if g, _ := json.Marshal(s.call(tool, args)); string(g) != want {
			t.Errorf("%s = %s, want %s", tool, g, want)
		}
	}
	check("get_command_result", map[string]any{}, `{"command_id":null,"result":null,"retry_after_ms":0,"status":"idle"}`)
	s.call("observe", map[string]any{})
	s.call("start_record", map[string]any{})
	check("click", map[string]any{"node_id": "n_0badbad0"}, `{"reason":"stale_node","status":"error"}`)
	check("get_command_result", map[string]any{"command_id": "anything"}, `{"command_id":"click","result":{"reason":"stale_node","status":"error"},"retry_after_ms":0,"status":"done"}`)
	check("type", map[string]any{"text": "hunter2-TYPED", "param": "username"}, `{"param":"username","recorded":true,"status":"ok"}`)
	check("get_command_result", map[string]any{}, `{"command_id":"type","result":{"param":"username","recorded":true,"status":"ok"},"retry_after_ms":0,"status":"done"}`)
	_, _ = s.srv.authoring.sess.Helper().Close()
	check("get_command_result", map[string]any{}, `{"reason":"authoring_unavailable","status":"error"}`)
	check("bind_status", map[string]any{}, `{"reason":"authoring_unavailable","status":"error"}`)
}
