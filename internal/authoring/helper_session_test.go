//go:build unix

package authoring_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/authoring"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/authoringstub"
)

type stub struct {
	*authoringstub.Stub
	opts authoring.OpenOptions
}

// newStub prepares the real helper on the stub Flow. mode is
// OPENADAPT_STUBFLOW_AUTHORING ("" = the module is absent).
func newStub(t *testing.T, mode, backend string, vars ...string) *stub {
	t.Helper()
	s := &stub{Stub: authoringstub.New(t, mode, vars...)}
	state := filepath.Join(s.Root, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	s.opts = authoring.OpenOptions{
		Helper: flowhelper.LaunchOptions{FlowPython: s.Python, StateDir: state, Instance: "authoring-test",
			Environ: append(os.Environ(), s.Vars...), PassEnv: authoringstub.PassEnv},
		BackendKind: backend, OutDir: filepath.Join(s.Root, "out"),
	}
	if backend == "web" {
		u := "https://app.example/login"
		s.opts.URL, s.opts.Headed = &u, true
	}
	return s
}

func (s *stub) open(t *testing.T) *authoring.HelperSession {
	t.Helper()
	sess, err := authoring.Open(context.Background(), s.opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(sess.Close)
	return sess
}

func call(t *testing.T, sess authoring.Session, tool string, args map[string]any) map[string]any {
	t.Helper()
	r, err := sess.Call(context.Background(), tool, args)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return r
}

func refusal(t *testing.T, err error, want authoring.Code) {
	t.Helper()
	if c, ok := authoring.RefusalCode(err); !ok || c != want {
		t.Fatalf("error %v, want refusal %s", err, want)
	}
}

func TestStubWithoutAuthoringFailsClosed(t *testing.T) {
	for _, mode := range []string{"", "noapi"} {
		s := newStub(t, mode, "web")
		_, err := authoring.Open(context.Background(), s.opts)
		var ue *authoring.UnavailableError
		if !errors.As(err, &ue) || !errors.Is(err, authoring.ErrUnavailable) ||
			err.Error() != "openadapt_flow.authoring is not available with openadapt-flow 1.32.0" {
			t.Fatalf("mode %q: Open = %v", mode, err)
		}
		ok, v, err := authoring.Probe(context.Background(), s.opts)
		if err != nil || ok || v != "1.32.0" {
			t.Errorf("mode %q: Probe = %v %q %v", mode, ok, v, err)
		}
	}
}

func TestStubSessionRecordsAndCompiles(t *testing.T) {
	s := newStub(t, "full", "web", "OPENADAPT_STUBFLOW_AUTHORING_TREE=hostile500")
	sess := s.open(t)
	if sess.Info.CoachOnly || !sess.Info.Admit || sess.Info.BackendKind != "web" {
		t.Fatalf("info %+v", sess.Info)
	}
	raw := call(t, sess, "observe", map[string]any{})
	o := authoring.ProjectObserve(raw)
	b, _ := json.Marshal(o)
	if len(o.Tree) == 0 || len(o.Tree) > authoring.MaxObserveNodes || !o.Truncated || len(b) > authoring.MaxObserveBytes {
		t.Fatalf("observe kept %d nodes, truncated %v, %d bytes", len(o.Tree), o.Truncated, len(b))
	}
	for _, leak := range []string{"CANARY", "SECRET", "Jane", "jane@", "1234567", "555-123", "iVBOR", "https", "title", "pixels"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("observe projection holds %q", leak)
		}
		rawJSON, _ := json.Marshal(raw)
		if leak != "Jane" && leak != "jane@" && leak != "1234567" && leak != "555-123" && strings.Contains(string(rawJSON), leak) {
			t.Errorf("the helper's observe result holds %q", leak) // names pass to Go's PHI filter; values never
		}
	}
	call(t, sess, "start_record", map[string]any{})
	call(t, sess, "click", map[string]any{"node_id": "n_00000002", "x": nil, "y": nil})
	_, err := sess.Call(context.Background(), "click", map[string]any{"node_id": "n_ffffffff", "x": nil, "y": nil})
	refusal(t, err, authoring.CodeStaleNode)
	call(t, sess, "type", map[string]any{"text": "hunter2-TYPED", "param": "username", "node_id": nil})
	call(t, sess, "pause_for_input", map[string]any{"node_id": "n_00000001", "param": "password", "secret": true})
	_, err = sess.Call(context.Background(), "compile", map[string]any{})
	refusal(t, err, authoring.CodeMissingSecretType)
	if r := call(t, sess, "continue_input", map[string]any{}); r["recorded"] != true {
		t.Fatalf("continue_input = %v", r)
	}
	_, err = sess.Call(context.Background(), "continue_input", map[string]any{})
	refusal(t, err, authoring.CodeNotPaused)
	call(t, sess, "stop_record", map[string]any{})
	comp := authoring.ProjectCompile(call(t, sess, "compile", map[string]any{}))
	if comp != (authoring.CompileResult{Status: "needs_human_admit", WorkflowID: "wf_stubdraft01", RecordingRetained: true}) {
		t.Fatalf("compile = %+v", comp)
	}
	if r := call(t, sess, "admit", map[string]any{"confirm": "ok"}); r["workflow_id"] != "wf_stubdraft01" || len(r) != 1 {
		t.Fatalf("admit = %v", r)
	}
	call(t, sess, "set_coach", map[string]any{"hint": "Click Save"})
	if r := call(t, sess, "get_coach", map[string]any{}); r["hint"] != "Click Save" {
		t.Fatalf("get_coach = %v", r)
	}
	sess.Close()

	want := []string{"open", "observe", "start_record", "click", "click", "type_text", "pause_for_input", "record_observed",
		"stop_record", "compile", "admit", "set_coach", "get_coach", "close"}
	if got := s.CallNames(t); got != strings.Join(want, ",") {
		t.Errorf("session calls\n got %v\nwant %v", got, want)
	}
	var threads = map[string]bool{}
	for _, c := range s.Calls(t) {
		threads[c["thread"].(string)] = true
		switch c["call"] {
		case "open":
			if c["backend_kind"] != "web" || c["app_url"] != "https://app.example/login" || c["headed"] != true || c["out_dir"] != s.opts.OutDir {
				t.Errorf("open %v", c)
			}
		case "record_observed":
			// Continue records the person's input on the pause target, secret, with no text.
			if c["param"] != "password" || c["secret"] != true || c["node_id"] != "n_00000001" || c["text"] != nil {
				t.Errorf("record_observed %v", c)
			}
		case "type_text":
			if c["text"] != "hunter2-TYPED" || c["param"] != "username" {
				t.Errorf("type_text %v", c)
			}
		}
	}
	if len(threads) != 1 {
		t.Errorf("session calls ran on %d threads, want one owner thread: %v", len(threads), threads)
	}
	logData, _ := os.ReadFile(sess.Helper().LogPath)
	if strings.Contains(string(logData), "hunter2") {
		t.Errorf("the protected log holds the typed text")
	}
}

func TestStubCoachOnlyBackend(t *testing.T) {
	for _, backend := range []string{"windows", "rdp", "citrix"} {
		s := newStub(t, "full", backend)
		sess := s.open(t)
		if !sess.Info.CoachOnly {
			t.Fatalf("%s: not coach-only", backend)
		}
		o := authoring.ProjectObserve(call(t, sess, "observe", map[string]any{}))
		if !o.CoachOnly || o.AgentDrive || len(o.Tree) != 0 || o.Backend != backend {
			t.Errorf("%s: observe %+v", backend, o)
		}
		for _, tool := range []string{"start_record", "click", "type"} {
			args := map[string]any{}
			switch tool {
			case "click":
				args = map[string]any{"node_id": "n_00000001", "x": nil, "y": nil}
			case "type":
				args = map[string]any{"text": "x", "param": nil, "node_id": nil}
			}
			_, err := sess.Call(context.Background(), tool, args)
			refusal(t, err, authoring.CodeCoachOnly)
		}
		sess.Close()
		if got := s.CallNames(t); got != "open,observe,close" {
			t.Errorf("%s: session calls %s", backend, got)
		}
	}
}

func TestStubWithoutAdmitAndFailedClick(t *testing.T) {
	s := newStub(t, "no_admit", "web", "OPENADAPT_STUBFLOW_AUTHORING_CLICK=crash")
	sess := s.open(t)
	if sess.Info.Admit {
		t.Fatal("a session without admit reports admit")
	}
	if _, err := sess.Call(context.Background(), "admit", map[string]any{"confirm": "ok"}); !errors.Is(err, authoring.ErrUnavailable) {
		t.Fatalf("admit = %v", err)
	}
	call(t, sess, "observe", map[string]any{})
	if _, err := sess.Call(context.Background(), "click", map[string]any{"node_id": "n_0000000a", "x": nil, "y": nil}); !errors.Is(err, authoring.ErrUncertain) {
		t.Fatalf("a click that died mid-way = %v, want uncertain", err)
	}
	// Bad requests never reach the session.
	for _, args := range []map[string]any{
		{"node_id": "n_0000000a", "x": 1, "y": 2},
		{"node_id": nil, "x": 1, "y": nil},
		{"node_id": "not-a-node", "x": nil, "y": nil},
	} {
		if _, err := sess.Call(context.Background(), "click", args); err == nil {
			t.Errorf("click %v accepted", args)
		}
	}
	sess.Close()
	if got := s.CallNames(t); got != "open,observe,click,close" {
		t.Errorf("session calls %s", got)
	}
}

// writeConfig writes the stub Flow's deployment config (a JSON stand-in
// for Flow's YAML: {"kind","url","headed"}) and returns its path.
func (s *stub) writeConfig(t *testing.T, cfg map[string]any) string {
	t.Helper()
	p := filepath.Join(s.Root, "deployment.json")
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// authoring.open takes the backend kind, URL and headed flag from the
// deployment config, read by the helper with Flow's loader; --url and
// --headed override it (docs/authoring.md, "Configuration").
func TestStubSessionFromDeploymentConfig(t *testing.T) {
	override := "https://override.example/login"
	for _, tc := range []struct {
		name    string
		cfg     map[string]any
		url     *string
		headed  bool
		backend string
		appURL  any
		hdd     bool
	}{
		{"web from the config", map[string]any{"kind": "web", "url": "https://cfg.example/app", "headed": true}, nil, false, "web", "https://cfg.example/app", true},
		{"--url overrides the config's URL", map[string]any{"kind": "web", "url": "https://cfg.example/app", "headed": true}, &override, false, "web", override, true},
		{"--headed turns headed on", map[string]any{"kind": "web", "url": "https://cfg.example/app"}, nil, true, "web", "https://cfg.example/app", true},
		{"--url supplies a missing URL", map[string]any{"kind": "web", "headed": true}, &override, false, "web", override, true},
		{"a native backend ignores browser fields", map[string]any{"kind": "linux", "url": "https://cfg.example/app"}, nil, false, "linux", nil, false},
		{"coach-only from the config", map[string]any{"kind": "citrix"}, nil, false, "citrix", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStub(t, "full", "")
			s.opts.DeploymentConfig = s.writeConfig(t, tc.cfg)
			s.opts.URL, s.opts.Headed = tc.url, tc.headed
			sess := s.open(t)
			if sess.Info.BackendKind != tc.backend || sess.Info.Headed != tc.hdd || sess.Info.CoachOnly != (tc.backend == "citrix") {
				t.Fatalf("info %+v", sess.Info)
			}
			calls := s.Calls(t)
			if len(calls) != 1 || calls[0]["call"] != "open" || calls[0]["backend_kind"] != tc.backend ||
				calls[0]["app_url"] != tc.appURL || calls[0]["headed"] != tc.hdd || calls[0]["out_dir"] != s.opts.OutDir {
				t.Fatalf("session calls %v", calls)
			}
		})
	}
}

func TestStubDeploymentConfigRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    map[string]any // nil: no file
		reason string
		msg    string
	}{
		{"no file", nil, "deployment_config", "the deployment config could not be read: CONFIG"},
		{"web without a URL", map[string]any{"kind": "web", "headed": true}, "url_missing",
			"authoring a web application needs its URL: set deployment.backend.url in --config or pass --url"},
		{"web without headed", map[string]any{"kind": "web", "url": "https://cfg.example/app"}, "headed_missing",
			"authoring a web application needs a visible browser, so the person can sign in there: set deployment.backend.headed: true in --config or pass --headed"},
		{"an unknown backend kind", map[string]any{"kind": "mainframe"}, "deployment_unusable",
			"the deployment config's backend.kind is not one authoring can use (web, macos, linux, windows, rdp or citrix): CONFIG"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStub(t, "full", "")
			s.opts.DeploymentConfig = filepath.Join(s.Root, "deployment.json")
			if tc.cfg != nil {
				s.writeConfig(t, tc.cfg)
			}
			_, err := authoring.Open(context.Background(), s.opts)
			var ce *authoring.ConfigError
			if !errors.As(err, &ce) || ce.Reason != tc.reason || ce.Config != s.opts.DeploymentConfig {
				t.Fatalf("Open = %v", err)
			}
			ce.Config = "CONFIG"
			if ce.Error() != tc.msg {
				t.Errorf("message %q\n want %q", ce.Error(), tc.msg)
			}
			if strings.Contains(ce.Error(), "cfg.example") || strings.Contains(err.Error(), "CANARY") {
				t.Errorf("the message holds a config value: %v", err)
			}
			if calls := s.CallNames(t); calls != "" {
				t.Errorf("the session was opened: %s", calls)
			}
		})
	}
	// Without a config, --url without --headed names --headed.
	s := newStub(t, "full", "web")
	s.opts.Headed = false
	_, err := authoring.Open(context.Background(), s.opts)
	var ce *authoring.ConfigError
	if !errors.As(err, &ce) || ce.Error() != "--url opens a fresh browser with empty cookies; pass --headed so the person can sign in there" {
		t.Fatalf("Open = %v", err)
	}
	// A Flow without the module fails closed before the config is read.
	s = newStub(t, "", "")
	s.opts.DeploymentConfig = filepath.Join(s.Root, "missing.json")
	var ue *authoring.UnavailableError
	if _, err := authoring.Open(context.Background(), s.opts); !errors.As(err, &ue) {
		t.Fatalf("Open without the module = %v", err)
	}
}

// get_command_result and bind_status are helper ops: the helper keeps the
// last answer of its session (result plus echoed request fields, or the
// refusal; never text) and reports the bind status.
func TestStubCommandResultAndBindStatus(t *testing.T) {
	s := newStub(t, "full", "web")
	sess := s.open(t)
	last := func() map[string]any { return call(t, sess, "get_command_result", map[string]any{}) }
	if got := marshalJSON(t, last()); got != `{"command_id":null,"result":null,"retry_after_ms":0,"status":"idle"}` {
		t.Fatalf("idle = %s", got)
	}
	if got := marshalJSON(t, call(t, sess, "bind_status", map[string]any{})); got != `{"bound":true,"status":"stdio","transport":"stdio"}` {
		t.Fatalf("bind_status = %s", got)
	}
	call(t, sess, "observe", map[string]any{})
	call(t, sess, "click", map[string]any{"node_id": "n_0000000c"})
	if got := marshalJSON(t, last()); got != `{"command_id":"click","result":{"node_id":"n_0000000c","status":"ok"},"retry_after_ms":0,"status":"done"}` {
		t.Errorf("after click = %s", got)
	}
	_, err := sess.Call(context.Background(), "click", map[string]any{"node_id": "n_0badbad0"})
	refusal(t, err, authoring.CodeStaleNode)
	if got := marshalJSON(t, last()); got != `{"command_id":"click","result":{"reason":"stale_node","status":"error"},"retry_after_ms":0,"status":"done"}` {
		t.Errorf("after a stale click = %s", got)
	}
	call(t, sess, "type", map[string]any{"text": "hunter2-TYPED", "param": "username"})
	if got := marshalJSON(t, last()); got != `{"command_id":"type","result":{"param":"username","status":"ok"},"retry_after_ms":0,"status":"done"}` {
		t.Errorf("after type = %s", got)
	}
	call(t, sess, "pause_for_input", map[string]any{"node_id": "n_0000000b", "param": "password", "secret": true})
	if got := marshalJSON(t, last()); got != `{"command_id":"pause_for_input","result":{"param":"password","secret":true,"status":"paused"},"retry_after_ms":0,"status":"done"}` {
		t.Errorf("after pause = %s", got)
	}
	call(t, sess, "continue_input", map[string]any{})
	if got := marshalJSON(t, last()); got != `{"command_id":"continue_input","result":{"param":"password","recorded":true},"retry_after_ms":0,"status":"done"}` {
		t.Errorf("after continue = %s", got)
	}
	call(t, sess, "compile", map[string]any{})
	if got := marshalJSON(t, last()); got != `{"command_id":"compile","result":{"workflow_id":"wf_stubdraft01"},"retry_after_ms":0,"status":"done"}` {
		t.Errorf("after compile = %s", got)
	}
	// get_command_result and bind_status never replace the last answer.
	call(t, sess, "bind_status", map[string]any{})
	if r := last(); r["command_id"] != "compile" {
		t.Errorf("after bind_status = %v", r)
	}
	// The projection Go applies to the helper's last answer.
	r := last()["result"].(map[string]any)
	if body, ok := authoring.Project("compile", r); !ok || marshalJSON(t, body) != `{"recording_retained":true,"status":"needs_human_admit","workflow_id":"wf_stubdraft01"}` {
		t.Errorf("projected = %v %v", body, ok)
	}
	// The session never sees them: they are the helper's own state.
	if got := s.CallNames(t); got != "open,observe,click,click,type_text,pause_for_input,record_observed,compile" {
		t.Errorf("session calls %s", got)
	}
	// Closed requests: no field is accepted.
	if _, err := sess.Call(context.Background(), "get_command_result", map[string]any{"command_id": "x"}); err == nil {
		t.Error("get_command_result accepted a field")
	}
}

func marshalJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	// Through a map for a stable key order.
	var m any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(m)
	return string(b)
}
