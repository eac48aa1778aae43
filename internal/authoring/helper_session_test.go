//go:build unix

package authoring_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/authoring"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flowrun"
)

var (
	pyOnce sync.Once
	py     string
)

// stubPython finds a Python 3.10–3.12 for the real embedded helper with the
// stub Flow of testdata/stubflow (flow-helper.md §9.2, §12.19).
func stubPython(t *testing.T) string {
	t.Helper()
	pyOnce.Do(func() {
		for _, name := range []string{"python3", "python3.12", "python3.11", "python3.10"} {
			p, err := exec.LookPath(name)
			if err != nil {
				continue
			}
			out, err := exec.Command(p, "-c", "import sys;print('%d.%d'%sys.version_info[:2])").Output()
			if v := strings.TrimSpace(string(out)); err == nil && (v == "3.10" || v == "3.11" || v == "3.12") {
				py = p
				return
			}
		}
	})
	if py == "" {
		t.Skip("authoring: stub-Flow session tests SKIPPED: no Python 3.10-3.12 on PATH")
	}
	return py
}

type stub struct {
	opts authoring.OpenOptions
	log  string
}

// newStub prepares the real helper on the stub Flow. mode is
// OPENADAPT_STUBFLOW_AUTHORING ("" = the module is absent).
func newStub(t *testing.T, mode, backend string, vars ...string) *stub {
	t.Helper()
	p := stubPython(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	stubflow, err := filepath.Abs("../../testdata/stubflow")
	if err != nil {
		t.Fatal(err)
	}
	s := &stub{log: filepath.Join(dir, "authoring.log")}
	env := append(os.Environ(), "PYTHONPATH="+stubflow, "OPENADAPT_STUBFLOW_AUTHORING_LOG="+s.log, "OPENADAPT_STUBFLOW_AUTHORING="+mode)
	env = append(env, vars...)
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	s.opts = authoring.OpenOptions{
		Interpreter: flowhelper.Interpreter{Path: p}, StateDir: state, Instance: "authoring-test",
		Env: flowrun.ChildEnv(env, []string{"PYTHONPATH", "OPENADAPT_STUBFLOW_AUTHORING", "OPENADAPT_STUBFLOW_AUTHORING_LOG",
			"OPENADAPT_STUBFLOW_AUTHORING_TREE", "OPENADAPT_STUBFLOW_AUTHORING_CLICK"}),
		BackendKind: backend, OutDir: filepath.Join(dir, "out"),
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

// calls are the session calls the stub recorded.
func (s *stub) calls(t *testing.T) []map[string]any {
	t.Helper()
	f, err := os.Open(s.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func (s *stub) callNames(t *testing.T) []string {
	var names []string
	for _, c := range s.calls(t) {
		names = append(names, c["call"].(string))
	}
	return names
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
	if got := s.callNames(t); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("session calls\n got %v\nwant %v", got, want)
	}
	var threads = map[string]bool{}
	for _, c := range s.calls(t) {
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
		if got := strings.Join(s.callNames(t), ","); got != "open,observe,close" {
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
	if got := strings.Join(s.callNames(t), ","); got != "open,observe,click,close" {
		t.Errorf("session calls %s", got)
	}
}
