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
	for mode, want := range map[string]string{
		"":      "openadapt_flow.authoring is not available with openadapt-flow 1.32.0",
		"noapi": "openadapt_flow.authoring of openadapt-flow 1.32.0 lacks the expected API (open_session, AuthoringSession.__init__, ",
		"old":   "openadapt_flow.authoring of openadapt-flow 1.32.0 lacks the expected API (open_session)",
	} {
		s := newStub(t, mode, "web")
		_, err := authoring.Open(context.Background(), s.opts)
		var ue *authoring.UnavailableError
		if !errors.As(err, &ue) || !errors.Is(err, authoring.ErrUnavailable) || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("mode %q: Open = %v", mode, err)
		}
		ok, v, err := authoring.Probe(context.Background(), s.opts)
		if err != nil || ok || v != "1.32.0" {
			t.Errorf("mode %q: Probe = %v %q %v", mode, ok, v, err)
		}
		if calls := s.CallNames(t); calls != "" {
			t.Errorf("mode %q: Flow was called: %s", mode, calls)
		}
	}
}

// The whole session on the stub of Flow's real module: every call reaches
// Flow with its real signature (an old-shape call would raise TypeError in
// the stub and fail here), on one owner thread.
func TestStubSessionRecordsAndCompiles(t *testing.T) {
	s := newStub(t, "full", "web", "OPENADAPT_STUBFLOW_AUTHORING_TREE=hostile500", "OPENADAPT_STUBFLOW_AUTHORING_FIELD=empty_once")
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
	call(t, sess, "type", map[string]any{"text": "hunter2-TYPED", "param": "username"})
	call(t, sess, "press", map[string]any{"key": "Tab"})
	call(t, sess, "pause_for_input", map[string]any{"node_id": "n_00000001", "param": "password", "secret": true})
	// Flow refuses to act or compile while paused.
	_, err = sess.Call(context.Background(), "compile", map[string]any{})
	refusal(t, err, authoring.CodeInFlight)
	_, err = sess.Call(context.Background(), "press", map[string]any{"key": "Enter"})
	refusal(t, err, authoring.CodeInFlight)
	// The field is still empty: nothing recorded, the pause stays open.
	if r := call(t, sess, "continue_input", map[string]any{"operator_confirmed": true}); r["recorded"] != false || r["reason"] != "empty_secret_field" {
		t.Fatalf("continue_input = %v", r)
	}
	if r := call(t, sess, "continue_input", map[string]any{"operator_confirmed": true}); r["recorded"] != true || r["reason"] != nil {
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

	want := []string{"launch", "open", "observe", "start_record", "click", "click", "type_text", "press", "pause_for_input",
		"compile", "press", "continue_input", "continue_input", "record_observed", "continue_input", "stop_record", "compile", "admit",
		"backend_close"}
	if got := s.CallNames(t); got != strings.Join(want, ",") {
		t.Errorf("session calls\n got %v\nwant %v", got, want)
	}
	var threads = map[string]bool{}
	for _, c := range s.Calls(t) {
		threads[c["thread"].(string)] = true
		switch c["call"] {
		case "launch":
			if c["url"] != "https://app.example/login" || c["headless"] != false || c["no_auto_install"] != "1" {
				t.Errorf("launch %v", c)
			}
		case "open":
			if c["backend"] != "PlaywrightBackend" || c["backend_kind"] != "web" || c["app_url"] != "https://app.example/login" || c["out_dir"] != s.opts.OutDir {
				t.Errorf("open %v", c)
			}
		case "pause_for_input":
			if c["param"] != "password" || c["secret"] != true || c["node_id"] != "n_00000001" {
				t.Errorf("pause_for_input %v", c)
			}
		case "continue_input":
			// The third continue is the bare one (not paused): unconfirmed.
			if _, ok := c["operator_confirmed"].(bool); !ok {
				t.Errorf("continue_input %v", c)
			}
		case "record_observed":
			// Continue records the person's input on the pause target, secret, with no text.
			if c["param"] != "password" || c["secret"] != true || c["has_text"] != false {
				t.Errorf("record_observed %v", c)
			}
		case "type_text":
			if c["text"] != "hunter2-TYPED" || c["param"] != "username" {
				t.Errorf("type_text %v", c)
			}
		case "press":
			if c["key"] != "Tab" && c["key"] != "Enter" {
				t.Errorf("press %v", c)
			}
		}
	}
	if len(threads) != 1 || !threads["openadapt-authoring_0"] {
		t.Errorf("Flow calls ran on %v, want one owner thread", threads)
	}
	logData, _ := os.ReadFile(sess.Helper().LogPath)
	if strings.Contains(string(logData), "hunter2") {
		t.Errorf("the protected log holds the typed text")
	}
}

// A secret pause that was never recorded refuses compile; a secret pause
// needs a target with an area (a point click has none); a pause needs a
// target at all.
func TestStubSessionPauseRefusals(t *testing.T) {
	s := newStub(t, "full", "web")
	sess := s.open(t)
	call(t, sess, "start_record", map[string]any{})
	_, err := sess.Call(context.Background(), "pause_for_input", map[string]any{"param": "note"})
	refusal(t, err, authoring.CodeMissingPauseTarget)
	call(t, sess, "click", map[string]any{"x": 5, "y": 6})
	_, err = sess.Call(context.Background(), "pause_for_input", map[string]any{"param": "password", "secret": true})
	refusal(t, err, authoring.CodeMissingRedactRegion)
	call(t, sess, "observe", map[string]any{})
	call(t, sess, "pause_for_input", map[string]any{"node_id": "n_0000000b", "param": "password", "secret": true})
	call(t, sess, "stop_record", map[string]any{})
	_, err = sess.Call(context.Background(), "compile", map[string]any{})
	refusal(t, err, authoring.CodeMissingSecretType)
	_, err = sess.Call(context.Background(), "admit", map[string]any{"confirm": nil})
	refusal(t, err, authoring.CodeNotCompiled)
	call(t, sess, "halt", map[string]any{})
	_, err = sess.Call(context.Background(), "observe", map[string]any{})
	refusal(t, err, authoring.CodeHalted)
	sess.Close()
	// The backend was closed at halt, once.
	if n := strings.Count(s.CallNames(t), "backend_close"); n != 1 || !strings.HasSuffix(s.CallNames(t), "halt,backend_close,observe") {
		t.Errorf("calls %s", s.CallNames(t))
	}
}

// A masked secret Flow cannot read back is recorded only when the person
// confirmed; an undocumented reason from Flow is not_recorded.
func TestStubContinueReasons(t *testing.T) {
	for _, tc := range []struct {
		field     string
		confirmed bool
		recorded  bool
		reason    any
	}{
		{"masked", false, false, "unconfirmed_masked_secret"},
		{"masked", true, true, nil},
		{"odd", true, false, "not_recorded"},
	} {
		s := newStub(t, "full", "web", "OPENADAPT_STUBFLOW_AUTHORING_FIELD="+tc.field)
		sess := s.open(t)
		call(t, sess, "observe", map[string]any{})
		call(t, sess, "start_record", map[string]any{})
		call(t, sess, "pause_for_input", map[string]any{"node_id": "n_0000000b", "param": "password", "secret": true})
		r := call(t, sess, "continue_input", map[string]any{"operator_confirmed": tc.confirmed})
		if r["recorded"] != tc.recorded || r["reason"] != tc.reason {
			t.Errorf("%s confirmed=%v: %v", tc.field, tc.confirmed, r)
		}
		if b, _ := json.Marshal(r); strings.Contains(string(b), "CANARY") {
			t.Errorf("Flow's text crossed: %s", b)
		}
		sess.Close()
	}
}

func TestStubCoachOnlyBackend(t *testing.T) {
	for _, backend := range []string{"windows", "rdp", "citrix"} {
		s := newStub(t, "full", backend)
		sess := s.open(t)
		if !sess.Info.CoachOnly || sess.Info.Admit {
			t.Fatalf("%s: info %+v", backend, sess.Info)
		}
		for _, tool := range []string{"observe", "start_record", "click", "type", "press", "pause_for_input", "continue_input",
			"stop_record", "halt", "compile", "admit", "set_coach", "get_coach"} {
			_, err := sess.Call(context.Background(), tool, map[string]any{})
			refusal(t, err, authoring.CodeCoachOnly)
		}
		if r := call(t, sess, "bind_status", map[string]any{}); r["bound"] != true {
			t.Errorf("%s: bind_status %v", backend, r)
		}
		sess.Close()
		// Nothing that drives was built: no backend, no session.
		if got := s.CallNames(t); got != "" {
			t.Errorf("%s: Flow calls %s", backend, got)
		}
	}
}

func TestStubWithoutAdmitAndFailedClick(t *testing.T) {
	s := newStub(t, "full", "web", "OPENADAPT_STUBFLOW_AUTHORING_CLICK=crash")
	sess := s.open(t)
	call(t, sess, "observe", map[string]any{})
	call(t, sess, "start_record", map[string]any{})
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
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"press", map[string]any{"key": "a"}},
		{"press", map[string]any{"key": "Shift+a"}},
		{"press", map[string]any{"key": "Control+Control+End"}},
		{"type", map[string]any{"text": "x", "node_id": "n_0000000a"}},
		{"pause_for_input", map[string]any{"node_id": "n_0000000a"}},
	} {
		if _, err := sess.Call(context.Background(), tc.tool, tc.args); err == nil {
			t.Errorf("%s %v accepted", tc.tool, tc.args)
		}
	}
	sess.Close()
	if got := s.CallNames(t); got != "launch,open,observe,start_record,click,backend_close" {
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
			// The backend through Flow's own entry point, then the session
			// over it; a coach-only kind builds nothing.
			calls := s.Calls(t)
			switch tc.backend {
			case "web":
				if len(calls) != 2 || calls[0]["call"] != "launch" || calls[0]["url"] != tc.appURL || calls[0]["headless"] != !tc.hdd {
					t.Fatalf("calls %v", calls)
				}
			case "linux":
				if len(calls) != 2 || calls[0]["call"] != "build_backend" || calls[0]["kind"] != "linux" {
					t.Fatalf("calls %v", calls)
				}
			default:
				if len(calls) != 0 {
					t.Fatalf("calls %v", calls)
				}
				return
			}
			if calls[1]["call"] != "open" || calls[1]["backend_kind"] != tc.backend || calls[1]["app_url"] != tc.appURL || calls[1]["out_dir"] != s.opts.OutDir {
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
			"the deployment config's backend is not one Flow can build for authoring here (web, macos or linux; windows, rdp and citrix are coach-only): CONFIG"},
		{"a kind Flow cannot build here", map[string]any{"kind": "macos", "refuse": true}, "deployment_unusable",
			"the deployment config's backend is not one Flow can build for authoring here (web, macos or linux; windows, rdp and citrix are coach-only): CONFIG"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var knobs []string
			if tc.cfg["refuse"] == true {
				knobs = append(knobs, "OPENADAPT_STUBFLOW_BUILD=refuse")
			}
			s := newStub(t, "full", "", knobs...)
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
			wantCalls := ""
			if tc.cfg["refuse"] == true {
				wantCalls = "build_backend"
			}
			if calls := s.CallNames(t); calls != wantCalls {
				t.Errorf("Flow calls %s, want %s", calls, wantCalls)
			}
		})
	}
	// Without a config the local window has no deployment to build
	// Flow's desktop backend from.
	s0 := newStub(t, "full", "linux")
	_, err0 := authoring.Open(context.Background(), s0.opts)
	var ce0 *authoring.ConfigError
	if !errors.As(err0, &ce0) || ce0.Reason != "deployment_unusable" || !strings.HasPrefix(ce0.Error(), "authoring the local window needs --config") {
		t.Fatalf("Open without a config = %v", err0)
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
	call(t, sess, "start_record", map[string]any{})
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
	call(t, sess, "continue_input", map[string]any{"operator_confirmed": true})
	if got := marshalJSON(t, last()); got != `{"command_id":"continue_input","result":{"param":"password","recorded":true},"retry_after_ms":0,"status":"done"}` {
		t.Errorf("after continue = %s", got)
	}
	call(t, sess, "press", map[string]any{"key": "Control+End"})
	if got := marshalJSON(t, last()); got != `{"command_id":"press","result":{"key":"Control+End","status":"ok"},"retry_after_ms":0,"status":"done"}` {
		t.Errorf("after press = %s", got)
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
	if got := s.CallNames(t); got != "launch,open,observe,start_record,click,click,type_text,pause_for_input,continue_input,record_observed,press,compile" {
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
