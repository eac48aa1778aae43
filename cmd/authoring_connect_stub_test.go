//go:build unix

package cmd

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	fm "github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakemailbox"
)

// stubFlowEnv points the real opener at the real embedded helper running on
// the stub Flow (testdata/stubflow) with a system Python 3.10–3.12.
func stubFlowEnv(t *testing.T, mode string) (python, log string) {
	t.Helper()
	for _, name := range []string{"python3", "python3.12", "python3.11", "python3.10"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		out, err := exec.Command(p, "-c", "import sys;print('%d.%d'%sys.version_info[:2])").Output()
		if v := strings.TrimSpace(string(out)); err == nil && (v == "3.10" || v == "3.11" || v == "3.12") {
			python = p
			break
		}
	}
	if python == "" {
		t.Skip("authoring connect: stub-Flow test SKIPPED: no Python 3.10-3.12 on PATH")
	}
	stub, err := filepath.Abs("../testdata/stubflow")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log = filepath.Join(dir, "session.log")
	t.Setenv("PYTHONPATH", stub)
	t.Setenv("OPENADAPT_STUBFLOW_AUTHORING", mode)
	t.Setenv("OPENADAPT_STUBFLOW_AUTHORING_LOG", log)
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("TMPDIR", dir)
	return python, log
}

func TestAuthoringConnectStubSessionEndToEnd(t *testing.T) {
	python, log := stubFlowEnv(t, "full")
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
	code, stdout, stderr := runConnect(t, "", "--flow-python", python, "--pass-env", "PYTHONPATH", srv.Link())
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
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var calls []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		_ = json.Unmarshal(sc.Bytes(), &m)
		calls = append(calls, m["call"].(string))
		if m["call"] == "record_observed" && (m["secret"] != true || m["param"] != "password") {
			t.Errorf("record_observed %v", m)
		}
	}
	wantCalls := "open,observe,start_record,click,click,pause_for_input,record_observed,compile,close"
	if strings.Join(calls, ",") != wantCalls {
		t.Errorf("session calls %s, want %s", strings.Join(calls, ","), wantCalls)
	}
	if strings.Join(term.prompts, "|") != "Allow ChatGPT to drive this job?|Sign in in the app, then press Enter" {
		t.Errorf("prompts %q", term.prompts)
	}
}

func TestAuthoringConnectStubWithoutAuthoring(t *testing.T) {
	python, _ := stubFlowEnv(t, "")
	srv := connectEnv(t, &scriptedTerminal{}, nil)
	code, _, stderr := runConnect(t, "", "--flow-python", python, "--pass-env", "PYTHONPATH", srv.Link())
	if code != 2 || !strings.Contains(stderr, "openadapt_flow.authoring is not available with openadapt-flow 1.32.0; nothing was sent") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
}
