//go:build unix

package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/authoringstub"
	fm "github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakemailbox"
)

// stubFlowEnv points the real opener at the real embedded helper running on
// the stub Flow (testdata/stubflow) with a system Python 3.10–3.12.
func stubFlowEnv(t *testing.T, mode string, knobs ...string) *authoringstub.Stub {
	t.Helper()
	st := authoringstub.New(t, mode, knobs...)
	st.Setenv(t)
	t.Setenv("XDG_STATE_HOME", filepath.Join(st.Root, "state"))
	t.Setenv("TMPDIR", st.Root)
	return st
}

func TestAuthoringConnectStubSessionEndToEnd(t *testing.T) {
	st := stubFlowEnv(t, "full")
	term := &scriptedTerminal{}
	srv := connectEnv(t, term, nil) // the real opener
	srv.Poll(
		fm.Command(fm.Envelope("c1", "bind_pack", nil, fm.SubA, nil)),
		fm.Command(fm.Envelope("c2", "observe", nil, fm.SubA, nil)),
		fm.Command(fm.Envelope("c3", "start_record", nil, fm.SubA, nil)),
		fm.Command(fm.Envelope("c4", "click", map[string]any{"node_id": "n_0000000c"}, fm.SubA, nil)),
		fm.Command(fm.Envelope("c5", "click", map[string]any{"node_id": "n_0badbad0"}, fm.SubA, nil)),
		fm.Command(fm.Envelope("c6", "pause_for_input", map[string]any{"param": "password", "secret": true}, fm.SubA, nil)),
		fm.Command(fm.Envelope("c7", "type", map[string]any{"text": "hunter2"}, fm.SubA, nil)),
		fm.Command(fm.Envelope("c8", "compile", nil, fm.SubA, nil)),
	)
	code, stdout, stderr := runConnect(t, "", "--flow-python", st.Python, "--pass-env", "PYTHONPATH", "--url", "https://app.example/login", "--headed", srv.Link())
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	var results []string
	for _, r := range srv.Of("callback") {
		b := string(r.Body)
		for _, leak := range []string{"CANARY", "jdoe", "SECRET", "Chart", "https", "wf_stubdraft01\",\"path", "VERIFIED", "hunter2"} {
			if strings.Contains(b, leak) {
				t.Errorf("callback holds %q: %s", leak, b)
			}
		}
		var m map[string]any
		_ = json.Unmarshal(r.Body, &m)
		res, _ := json.Marshal(m["result"])
		results = append(results, m["status"].(string)+" "+string(res))
	}
	want := []string{
		`done {"allowed":true,"client_display":"ChatGPT"}`,
		"", // observe: checked below
		`done {"status":"recording"}`,
		`done {"node_id":"n_0000000c","status":"ok"}`,
		`error {"error":"stale_node"}`,
		`done {"param":"password","recorded":true}`,
		`error {"error":"type_refused"}`,
		`done {"recording_retained":true,"status":"needs_human_admit","workflow_id":"wf_stubdraft01"}`,
		`halted null`,
	}
	if len(results) != len(want) {
		t.Fatalf("callbacks:\n%s", strings.Join(results, "\n"))
	}
	for i, w := range want {
		if w != "" && results[i] != w {
			t.Errorf("callback %d = %s, want %s", i, results[i], w)
		}
	}
	if !strings.Contains(results[1], `"node_count":3`) || !strings.Contains(results[1], `"name":"Sign in"`) {
		t.Errorf("observe callback %s", results[1])
	}
	for _, m := range st.Calls(t) {
		if m["call"] == "record_observed" && (m["secret"] != true || m["param"] != "password") {
			t.Errorf("record_observed %v", m)
		}
		// Enter on the terminal is the person's confirmation.
		if m["call"] == "continue_input" && m["operator_confirmed"] != true {
			t.Errorf("continue_input %v", m)
		}
	}
	wantCalls := "launch,open,observe,start_record,click,click,pause_for_input,continue_input,record_observed,compile,backend_close"
	if calls := st.CallNames(t); calls != wantCalls {
		t.Errorf("session calls %s, want %s", calls, wantCalls)
	}
	if strings.Join(term.prompts, "|") != "Allow ChatGPT to drive this job?|Sign in in the app, then press Enter" {
		t.Errorf("prompts %q", term.prompts)
	}
	// The helper's private state folder was made under the state directory
	// (not the system temporary directory) and removed at the end.
	tmps, err := os.ReadDir(filepath.Join(st.Root, "state", "openadapt-agent", "tmp"))
	if err != nil || len(tmps) != 0 {
		t.Errorf("the state directory's tmp after the session: %v %v", tmps, err)
	}
	if left, _ := filepath.Glob(filepath.Join(st.Root, "openadapt-agent-connect-*")); len(left) != 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
}

func TestAuthoringConnectStubWithoutAuthoring(t *testing.T) {
	st := stubFlowEnv(t, "")
	srv := connectEnv(t, &scriptedTerminal{}, nil)
	code, _, stderr := runConnect(t, "", "--flow-python", st.Python, "--pass-env", "PYTHONPATH", "--url", "https://app.example/login", "--headed", srv.Link())
	if code != 2 || !strings.Contains(stderr, "openadapt_flow.authoring is not available with openadapt-flow 1.32.0; nothing was sent") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
}

// connect --config: the session's backend comes from the deployment config
// (read by the helper with Flow's loader); a config that lacks what a web
// backend needs exits 2 naming it, before anything is sent.
func TestAuthoringConnectStubConfig(t *testing.T) {
	st := stubFlowEnv(t, "full")
	cfg := filepath.Join(st.Root, "deployment.json")
	if err := os.WriteFile(cfg, []byte(`{"kind":"web","url":"https://cfg.example/app"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := connectEnv(t, &scriptedTerminal{}, nil)
	code, _, stderr := runConnect(t, "", "--flow-python", st.Python, "--pass-env", "PYTHONPATH", "--config", cfg, srv.Link())
	if code != 2 || !strings.Contains(stderr, "set deployment.backend.headed: true in --config or pass --headed") ||
		!strings.Contains(stderr, "nothing was sent") || strings.Contains(stderr, "cfg.example") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if n := len(srv.Requests()); n != 0 || st.CallNames(t) != "" {
		t.Fatalf("%d requests, session calls %q", n, st.CallNames(t))
	}
	code, _, stderr = runConnect(t, "", "--flow-python", st.Python, "--pass-env", "PYTHONPATH", "--config", cfg, "--headed", srv.Link())
	if code != 0 || !strings.Contains(stderr, "authoring session open (web backend)") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	calls := st.Calls(t)
	if len(calls) != 3 || calls[0]["call"] != "launch" || calls[0]["url"] != "https://cfg.example/app" || calls[0]["headless"] != false ||
		calls[1]["call"] != "open" || calls[1]["app_url"] != "https://cfg.example/app" || calls[2]["call"] != "backend_close" {
		t.Fatalf("session calls %v", calls)
	}
}

// The same gates as serve: authoring runs on any Flow whose module fits
// the recorded API (here 1.33), and refuses one that does not, naming what
// is missing, before anything is sent; the local window needs --config.
func TestAuthoringConnectStubGates(t *testing.T) {
	st := stubFlowEnv(t, "no_press", "OPENADAPT_STUBFLOW_VERSION=1.33.0")
	srv := connectEnv(t, &scriptedTerminal{}, nil)
	code, _, stderr := runConnect(t, "", "--flow-python", st.Python, "--pass-env", "PYTHONPATH", "--url", "https://app.example/login", "--headed", srv.Link())
	if code != 2 || !strings.Contains(stderr, "openadapt_flow.authoring of openadapt-flow 1.33.0 lacks the expected API (AuthoringSession.press); nothing was sent") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if n := len(srv.Requests()); n != 0 || st.CallNames(t) != "" {
		t.Fatalf("%d requests, Flow calls %q", n, st.CallNames(t))
	}
	st = stubFlowEnv(t, "full", "OPENADAPT_STUBFLOW_VERSION=1.33.0")
	code, _, stderr = runConnect(t, "", "--flow-python", st.Python, "--pass-env", "PYTHONPATH", srv.Link())
	if code != 2 || !strings.Contains(stderr, "authoring the local window needs --config") || !strings.Contains(stderr, "nothing was sent") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	srv.Poll(fm.Command(fm.Envelope("c1", "observe", nil, fm.SubA, nil)))
	code, _, stderr = runConnect(t, "", "--flow-python", st.Python, "--pass-env", "PYTHONPATH", "--url", "https://app.example/login", "--headed", srv.Link())
	if code != 0 || !strings.Contains(stderr, "authoring session open (web backend)") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

// When the session goes away mid-job (the helper died), every later command
// gets the fail-closed authoring_unavailable callback, carrying only that
// code, and the client says so once on stderr.
func TestAuthoringConnectStubSessionGone(t *testing.T) {
	st := stubFlowEnv(t, "full", "OPENADAPT_STUBFLOW_AUTHORING_OBSERVE=exit")
	srv := connectEnv(t, &scriptedTerminal{}, nil)
	srv.Poll(
		fm.Command(fm.Envelope("c1", "bind_pack", nil, fm.SubA, nil)),
		fm.Command(fm.Envelope("c2", "observe", nil, fm.SubA, nil)),
		fm.Command(fm.Envelope("c3", "start_record", nil, fm.SubA, nil)),
		fm.Command(fm.Envelope("c4", "get_coach", nil, fm.SubA, nil)),
	)
	code, _, stderr := runConnect(t, "", "--flow-python", st.Python, "--pass-env", "PYTHONPATH", "--url", "https://app.example/login", "--headed", srv.Link())
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var got []string
	for _, r := range srv.Of("callback") {
		got = append(got, string(r.Body))
	}
	want := []string{
		`{"command_id":"c2","result":{"error":"authoring_unavailable"},"status":"error"}`,
		`{"command_id":"c3","result":{"error":"authoring_unavailable"},"status":"error"}`,
		`{"command_id":"c4","result":{"error":"authoring_unavailable"},"status":"error"}`,
		`{"halted":true,"status":"halted"}`,
	}
	if len(got) != 5 || strings.Join(got[1:], "\n") != strings.Join(want, "\n") {
		t.Fatalf("callbacks:\n%s", strings.Join(got, "\n"))
	}
	if n := strings.Count(stderr, "the local authoring session is not available"); n != 1 {
		t.Errorf("the client said so %d times:\n%s", n, stderr)
	}
}
