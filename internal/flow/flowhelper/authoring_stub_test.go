//go:build unix

package flowhelper_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
)

// dumpAPI is run by the stub's Python: the signature of every entry of the
// recorded list as inspect reports it, the module's __all__, the public
// attributes of AuthoringSession and the error class hierarchy.
const dumpAPI = `
import importlib, inspect, json, sys
api = json.load(sys.stdin)
out = []
for e in api:
    obj = importlib.import_module(e["module"])
    for part in e["name"].split("."):
        obj = getattr(obj, part)
    out.append({"module": e["module"], "name": e["name"], "params": [
        {"name": p.name, "kind": p.kind.name, "default": p.default is not inspect.Parameter.empty}
        for p in inspect.signature(obj).parameters.values()]})
import openadapt_flow.authoring as a
print(json.dumps({"api": out, "all": sorted(a.__all__),
    "public": sorted(n for n in vars(a.AuthoringSession) if not n.startswith("_")),
    "hierarchy": [issubclass(a.CoachOnlyError, a.AuthoringError), issubclass(a.MissingSecretTypeError, a.AuthoringError),
                  issubclass(a.AuthoringError, RuntimeError)]}))
`

// The stub of Flow's authoring module and its two backend entry points is
// pinned to the recorded list (flowhelper.AuthoringAPI, taken from Flow's
// module): the same names, parameters, kinds and default presence, exactly,
// so the stub cannot drift from Flow.
func TestStubAuthoringAPIPinned(t *testing.T) {
	t.Parallel()
	s := newStub(t, "OPENADAPT_STUBFLOW_AUTHORING=full")
	in, err := json.Marshal(flowhelper.AuthoringAPI)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(s.python, "-B", "-c", dumpAPI)
	cmd.Env = s.env
	cmd.Stdin = strings.NewReader(string(in))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("dumping the stub's API: %v", err)
	}
	var got struct {
		API       []flowhelper.APIEntry
		All       []string
		Public    []string
		Hierarchy []bool
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(flowhelper.AuthoringAPI, got.API); d != "" {
		t.Errorf("the stub's signatures differ from the recorded list (-recorded +stub):\n%s", d)
	}
	// Flow's __all__ and AuthoringSession's public attributes (its two
	// properties and the recorded methods), at the recorded commit.
	wantAll := []string{"AdmitResult", "AuthoringError", "AuthoringSession", "COACH_ONLY", "CoachOnlyError", "CompileResult",
		"MissingSecretTypeError", "NEEDS_HUMAN_ADMIT", "OBSERVE_SCHEMA_VERSION", "open_session"}
	if d := cmp.Diff(wantAll, got.All); d != "" {
		t.Errorf("__all__ (-want +got):\n%s", d)
	}
	wantPublic := []string{"backend_kind", "recording_dir"}
	for _, e := range flowhelper.AuthoringAPI {
		if m, ok := strings.CutPrefix(e.Name, "AuthoringSession."); ok && m != "__init__" {
			wantPublic = append(wantPublic, m)
		}
	}
	slices.Sort(wantPublic)
	if d := cmp.Diff(wantPublic, got.Public); d != "" {
		t.Errorf("AuthoringSession's public attributes (-want +got):\n%s", d)
	}
	if !slices.Equal(got.Hierarchy, []bool{true, true, true}) {
		t.Errorf("error hierarchy %v", got.Hierarchy)
	}
}

// authoring.probe checks names and signatures, never the version: the
// shape of the real module passes on any version, an extra optional
// keyword parameter is accepted, and every other drift is named.
func TestStubAuthoringProbe(t *testing.T) {
	t.Parallel()
	session := []string{}
	for _, e := range flowhelper.AuthoringAPI {
		if strings.HasPrefix(e.Name, "AuthoringSession.") || e.Name == "open_session" {
			session = append(session, e.Name)
		}
	}
	for _, tc := range []struct {
		name       string
		vars       []string
		importable bool
		mismatched []string
	}{
		{"the real shape", []string{"OPENADAPT_STUBFLOW_AUTHORING=full"}, true, nil},
		{"the real shape on Flow 1.33", []string{"OPENADAPT_STUBFLOW_AUTHORING=full", "OPENADAPT_STUBFLOW_VERSION=1.33.0"}, true, nil},
		{"an extra optional keyword", []string{"OPENADAPT_STUBFLOW_AUTHORING=extra_optional"}, true, nil},
		{"no module (Flow 1.32)", []string{"OPENADAPT_STUBFLOW_AUTHORING="}, false,
			append(append([]string{}, session...), "AuthoringError.__init__", "CoachOnlyError.__init__", "MissingSecretTypeError.__init__")},
		{"no session class", []string{"OPENADAPT_STUBFLOW_AUTHORING=noapi"}, true, session},
		{"the old invented shape", []string{"OPENADAPT_STUBFLOW_AUTHORING=old"}, true, []string{"open_session"}},
		{"no press", []string{"OPENADAPT_STUBFLOW_AUTHORING=no_press"}, true, []string{"AuthoringSession.press"}},
		{"an extra required parameter", []string{"OPENADAPT_STUBFLOW_AUTHORING=extra_required"}, true, []string{"AuthoringSession.click"}},
		{"no backend entry points", []string{"OPENADAPT_STUBFLOW_AUTHORING=full", "OPENADAPT_STUBFLOW_BACKENDS=absent"}, true,
			[]string{"PlaywrightBackend.launch", "build_backend"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newStub(t, tc.vars...).start(t)
			p, err := h.ProbeAuthoring(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if p.Importable != tc.importable || !slices.Equal(p.Mismatched, tc.mismatched) || p.Available() != (tc.importable && tc.mismatched == nil) {
				t.Errorf("probe %+v, want importable %v mismatched %v", p, tc.importable, tc.mismatched)
			}
			err = h.CheckFeature(context.Background(), flowhelper.FeatureAuthoring)
			if p.Available() != (err == nil) {
				t.Errorf("CheckFeature = %v", err)
			}
			if tc.name == "no press" && (err == nil || err.Error() != "openadapt_flow.authoring of openadapt-flow 1.32.0 lacks the expected API (AuthoringSession.press)") {
				t.Errorf("CheckFeature = %v", err)
			}
		})
	}
}

// authoringStub is the stub Flow with its authoring module and a call log.
type authoringStub struct {
	*stubEnv
	calls string
}

func newAuthoringStub(t *testing.T, vars ...string) *authoringStub {
	t.Helper()
	a := &authoringStub{}
	dir := t.TempDir()
	a.calls = filepath.Join(dir, "calls.log")
	a.stubEnv = newStub(t, append([]string{"OPENADAPT_STUBFLOW_AUTHORING=full", "OPENADAPT_STUBFLOW_AUTHORING_LOG=" + a.calls}, vars...)...)
	return a
}

// log is the stub's call log: each call's name and fields.
func (a *authoringStub) log(t *testing.T) []map[string]any {
	t.Helper()
	f, err := os.Open(a.calls)
	if os.IsNotExist(err) {
		return nil
	}
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

func callNames(log []map[string]any) string {
	var n []string
	for _, c := range log {
		n = append(n, c["call"].(string))
	}
	return strings.Join(n, ",")
}

// deployment writes the stub's deployment config (JSON standing in for
// Flow's YAML).
func (a *authoringStub) deployment(t *testing.T, cfg string) string {
	t.Helper()
	p := filepath.Join(filepath.Dir(a.calls), "deployment.json")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The live backend is built through Flow's own entry point on the owner
// thread (PlaywrightBackend.launch for web, build_backend for a desktop
// deployment), Flow never downloads a browser, and the backend is closed on
// that thread exactly once on every way out: halt, close, end of input,
// SIGTERM and SIGINT.
func TestStubAuthoringBackendClosedOnEveryWayOut(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"web", "linux"} {
		for _, way := range []string{"halt", "close", "eof", "sigterm", "sigint"} {
			t.Run(backend+"/"+way, func(t *testing.T) {
				t.Parallel()
				a := newAuthoringStub(t)
				out := filepath.Join(filepath.Dir(a.calls), "out")
				open := `{"v":1,"id":3,"op":"authoring.open","deployment_config":null,"backend_kind":"web","url":"https://app.example/login","headed":true,"out_dir":"` + out + `"}`
				if backend == "linux" {
					cfg := a.deployment(t, `{"kind":"linux"}`)
					open = `{"v":1,"id":3,"op":"authoring.open","deployment_config":"` + cfg + `","backend_kind":null,"url":null,"headed":false,"out_dir":"` + out + `"}`
				}
				r := startRaw(t, a.stubEnv)
				r.send(t, `{"v":1,"id":1,"op":"hello"}`)
				r.recv(t)
				r.send(t, `{"v":1,"id":2,"op":"authoring.probe","api":`+mustJSON(t, flowhelper.AuthoringAPI)+`}`)
				if m := r.recv(t); errOf(m) != "ok" || m["result"].(map[string]any)["mismatched"] == nil {
					t.Fatalf("probe %v", m)
				}
				r.send(t, open)
				if m := r.recv(t); errOf(m) != "ok" {
					t.Fatalf("open %v", m)
				}
				switch way {
				case "halt":
					r.send(t, `{"v":1,"id":4,"op":"authoring.halt"}`)
					if m := r.recv(t); errOf(m) != "ok" {
						t.Fatalf("halt %v", m)
					}
					// A halted session never drives again (Flow says halted),
					// and closing the helper does not close the backend twice.
					r.send(t, `{"v":1,"id":5,"op":"authoring.observe"}`)
					if m := r.recv(t); errOf(m) != "refused/halted" {
						t.Errorf("observe after halt %v", m)
					}
					r.send(t, `{"v":1,"id":6,"op":"close","drain_s":0}`)
					r.recv(t)
				case "close":
					r.send(t, `{"v":1,"id":4,"op":"close","drain_s":0}`)
					r.recv(t)
				case "eof":
					r.w.Close()
				case "sigterm":
					_ = r.cmd.Process.Signal(syscall.SIGTERM)
				case "sigint":
					_ = r.cmd.Process.Signal(syscall.SIGINT)
				}
				if c := r.exitCode(t); c != 0 {
					t.Errorf("exit %d", c)
				}
				log := a.log(t)
				want := "launch,open,backend_close"
				if backend == "linux" {
					want = "build_backend,open,backend_close"
				}
				if way == "halt" {
					want = strings.Replace(want, "open,", "open,halt,", 1) + ",observe"
				}
				if got := callNames(log); got != want {
					t.Fatalf("calls %s, want %s", got, want)
				}
				for _, c := range log {
					if c["thread"] != "openadapt-authoring_0" {
						t.Errorf("%s ran on %v, not the owner thread", c["call"], c["thread"])
					}
					switch c["call"] {
					case "launch":
						if c["url"] != "https://app.example/login" || c["headless"] != false || c["no_auto_install"] != "1" {
							t.Errorf("launch %v", c)
						}
					case "build_backend":
						if c["kind"] != "linux" || c["page"] != false {
							t.Errorf("build_backend %v", c)
						}
					case "open":
						wantBackend := map[string]string{"web": "PlaywrightBackend", "linux": "_DesktopBackend"}[backend]
						if c["backend"] != wantBackend || c["backend_kind"] != backend || c["out_dir"] != out {
							t.Errorf("open %v", c)
						}
					}
				}
			})
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// authoring.open builds nothing for a coach-only kind; a desktop kind
// needs a deployment config; Flow's refusal to build a backend, or a
// browser that does not start, opens nothing.
func TestStubAuthoringOpenRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, open string
		vars       []string
		want       string
		calls      string
	}{
		{"coach-only windows", `"deployment_config":null,"backend_kind":"windows","url":null,"headed":false`, nil, "ok", ""},
		{"the local window without a config", `"deployment_config":null,"backend_kind":"linux","url":null,"headed":false`, nil, "invalid/deployment_unusable", ""},
		{"Flow cannot build the backend", `"deployment_config":"CFG","backend_kind":null,"url":null,"headed":false`,
			[]string{"OPENADAPT_STUBFLOW_BUILD=refuse"}, "invalid/deployment_unusable", "build_backend"},
		{"the browser does not start", `"deployment_config":null,"backend_kind":"web","url":"https://app.example/","headed":true`,
			[]string{"OPENADAPT_STUBFLOW_LAUNCH=fail"}, "unavailable/authoring_unavailable", "launch"},
		{"web without headed", `"deployment_config":null,"backend_kind":"web","url":"https://app.example/","headed":false`, nil, "invalid/headed_missing", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newAuthoringStub(t, tc.vars...)
			cfg := a.deployment(t, `{"kind":"macos"}`)
			r := startRaw(t, a.stubEnv)
			r.send(t, `{"v":1,"id":1,"op":"hello"}`)
			r.recv(t)
			r.send(t, `{"v":1,"id":2,"op":"authoring.open",`+strings.Replace(tc.open, "CFG", cfg, 1)+`,"out_dir":"`+filepath.Dir(a.calls)+`"}`)
			m := r.recv(t)
			if errOf(m) != tc.want {
				t.Fatalf("open %v, want %s", m, tc.want)
			}
			if strings.Contains(mustJSON(t, m), "CANARY") {
				t.Errorf("Flow's text in the frame: %v", m)
			}
			if tc.want == "ok" {
				if res := m["result"].(map[string]any); res["coach_only"] != true || res["admit"] != false {
					t.Errorf("open %v", res)
				}
				for i, op := range []string{"observe", "start_record", "set_coach\",\"hint\":\"x", "get_coach", "halt"} {
					r.send(t, `{"v":1,"id":`+strconv.Itoa(3+i)+`,"op":"authoring.`+op+`"}`)
					if m := r.recv(t); errOf(m) != "refused/coach_only" {
						t.Errorf("%s on a coach-only backend: %v", op, m)
					}
				}
				r.send(t, `{"v":1,"id":9,"op":"authoring.bind_status"}`)
				if m := r.recv(t); errOf(m) != "ok" {
					t.Errorf("bind_status %v", m)
				}
			}
			r.w.Close()
			r.exitCode(t)
			if got := callNames(a.log(t)); got != tc.calls {
				t.Errorf("calls %q, want %q", got, tc.calls)
			}
		})
	}
}

// Every code of Flow's AuthoringError reaches the frame as one closed
// lowercase reason, a code Flow adds later as session_refused, and never
// with Flow's text.
func TestStubAuthoringErrorMapping(t *testing.T) {
	t.Parallel()
	codeFile := filepath.Join(t.TempDir(), "code")
	a := newAuthoringStub(t, "OPENADAPT_STUBFLOW_AUTHORING_RAISE=observe:@"+codeFile)
	h := a.start(t)
	if p, err := h.ProbeAuthoring(context.Background()); err != nil || !p.Available() {
		t.Fatalf("probe %+v %v", p, err)
	}
	u := "https://app.example/"
	if _, err := h.OpenAuthoring(context.Background(), flowhelper.AuthoringOpenRequest{BackendKind: "web", URL: &u, Headed: true,
		OutDir: filepath.Dir(a.calls)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range [][2]string{
		{"COACH_ONLY", "coach_only"}, {"stale_node", "stale_node"}, {"paused", "in_flight"}, {"not_recording", "not_recording"},
		{"already_recording", "already_recording"}, {"not_paused", "not_paused"}, {"missing_secret_type", "missing_secret_type"},
		{"missing_pause_target", "missing_pause_target"}, {"missing_redact_region", "missing_redact_region"},
		{"invalid_click", "invalid_arguments"}, {"invalid_pause", "invalid_arguments"}, {"invalid_backend_pixels", "invalid_arguments"},
		{"halted", "halted"}, {"admit_refused", "admit_refused"}, {"not_compiled", "not_compiled"}, {"unknown_backend", "session_refused"},
		{"brand_new_code", "session_refused"}, {" Stale_Node ", "stale_node"},
	} {
		if err := os.WriteFile(codeFile, []byte(tc[0]), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := h.Authoring(context.Background(), "observe", nil)
		if !isKind(err, "refused", tc[1]) {
			t.Errorf("code %q: observe = %v, want refused/%s", tc[0], err, tc[1])
		}
	}
	// press's key grammar in the helper: a key outside it never reaches
	// Flow (bad_request); a key inside it does (Flow answers not_recording).
	for key, want := range map[string]string{
		"Enter": "not_recording", "Control+Alt+Meta+Shift+F12": "not_recording", "Shift+Tab": "not_recording",
		"a": "bad_request", "Shift+a": "bad_request", "Control+Control+End": "bad_request", "F13": "bad_request",
		"enter": "bad_request", "Enter\n": "bad_request", "Space": "bad_request", "": "bad_request",
	} {
		_, err := h.Authoring(context.Background(), "press", map[string]any{"key": key})
		var he *flowhelper.Error
		if !errors.As(err, &he) || he.Reason != want {
			t.Errorf("press %q = %v, want %s", key, err, want)
		}
	}
	// The closed set Go accepts is exactly the helper's table's.
	prog := string(flowhelper.Program())
	for _, r := range flowhelper.AuthoringReasons {
		if !strings.Contains(prog, `"`+r+`"`) {
			t.Errorf("reason %s is not in the helper's table", r)
		}
	}
}
