package doctor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
)

func TestHelperHookInReport(t *testing.T) {
	var got HelperOptions
	env := Env{WorkDir: "/work", Environ: []string{"PATH=/bin", "HOME=/h"}, Helper: func(_ context.Context, o HelperOptions) []Check {
		got = o
		return []Check{{ID: IDFlowPython, Status: OK}, {ID: IDHelper, Status: OK}, {ID: IDDeployment, Status: Fail}, {ID: IDAuthoring, Status: Warn}}
	}}
	r := Run(context.Background(), env, Options{FlowPython: "python3", Config: "deploy.yaml", URL: "http://127.0.0.1:1/", Headed: true}, "test")
	want := HelperOptions{FlowCLI: "openadapt-flow", FlowPython: "python3", Config: "/work/deploy.yaml", URL: "http://127.0.0.1:1/", Headed: true,
		Environ: []string{"PATH=/bin", "HOME=/h"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("options (-want +got):\n%s", diff)
	}
	var ids []string
	for _, c := range r.Checks {
		ids = append(ids, c.ID)
	}
	i := slices.Index(ids, IDFlowPython)
	if i < 0 || !slices.Equal(ids[i:i+4], []string{IDFlowPython, IDHelper, IDDeployment, IDAuthoring}) || !r.Failed() {
		t.Fatalf("checks %v failed=%v", ids, r.Failed())
	}
}

// shWrapper is realflow's kind of Flow command: a #!/bin/sh wrapper,
// from which no interpreter can be derived (docs/helper.md, "Finding the
// interpreter").
func shWrapper(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	flow := filepath.Join(dir, "openadapt-flow")
	if err := os.WriteFile(flow, []byte("#!/bin/sh\necho 'openadapt-flow "+version+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return flow
}

func byID(t *testing.T, cs []Check) map[string]Check {
	t.Helper()
	if len(cs) != 6 {
		t.Fatalf("want 6 checks, got %+v", cs)
	}
	want := []string{IDFlowPython, IDHelper, IDAttended, IDTutorial, IDDeployment, IDAuthoring}
	for i, c := range cs {
		if c.ID != want[i] {
			t.Fatalf("checks %+v, want the order %v", cs, want)
		}
	}
	m := map[string]Check{}
	for _, c := range cs {
		m[c.ID] = c
	}
	return m
}

func TestHelperChecksWithoutInterpreter(t *testing.T) {
	flow := shWrapper(t, "1.32.0")
	m := byID(t, HelperChecks(context.Background(), HelperOptions{FlowCLI: flow}))
	if c := m[IDFlowPython]; c.Status != Warn || !strings.Contains(c.Message, "not a Python console script") || !strings.Contains(c.Fix, "--flow-python") {
		t.Errorf("flow_python %+v", c)
	}
	for _, id := range []string{IDHelper, IDAttended, IDTutorial, IDAuthoring} {
		if c := m[id]; c.Status != Warn || c.Message != "not checked: no Flow Python interpreter" {
			t.Errorf("%s %+v", id, c)
		}
	}
	if c := m[IDDeployment]; c.Status != OK || !strings.HasPrefix(c.Message, "no --config given") {
		t.Errorf("deployment %+v", c)
	}
	// With --config the operator means to use the helper: a failure.
	m = byID(t, HelperChecks(context.Background(), HelperOptions{FlowCLI: flow, Config: "/x/deploy.yaml"}))
	if m[IDFlowPython].Status != Fail || m[IDDeployment].Status != Fail || !strings.HasPrefix(m[IDDeployment].Message, "not checked:") {
		t.Errorf("with --config %+v", m)
	}
}

// TestHelperChecksFlowMissing: an openadapt-flow that is not installed is
// named as missing, with the fix, never as an interpreter that "could not be
// determined".
func TestHelperChecksFlowMissing(t *testing.T) {
	for _, flow := range []string{filepath.Join(t.TempDir(), "openadapt-flow"), "no-such-openadapt-flow"} {
		m := byID(t, HelperChecks(context.Background(), HelperOptions{FlowCLI: flow, Environ: []string{"PATH=" + t.TempDir()}}))
		c := m[IDFlowPython]
		if c.Status != Warn || !strings.Contains(c.Message, "was not found") || strings.Contains(c.Message, "could not be determined") ||
			!strings.Contains(c.Fix, "install openadapt-flow") || !strings.Contains(c.Fix, "--flow-python") {
			t.Errorf("%s: flow_python %+v", flow, c)
		}
		if c := m[IDHelper]; c.Message != "not checked: openadapt-flow was not found" {
			t.Errorf("%s: helper %+v", flow, c)
		}
	}
}

func TestHelperChecksFakeHelper(t *testing.T) {
	py := fakehelper.Install(t)
	deploy := filepath.Join(t.TempDir(), "deploy.yaml")
	for _, tc := range []struct {
		name, mode, runVersion, script string
		o                              HelperOptions
		want                           map[string]Status
		msg                            map[string]string
	}{
		{name: "ok", runVersion: "1.32.0", o: HelperOptions{Config: deploy, Headed: true},
			want: map[string]Status{IDFlowPython: OK, IDHelper: OK, IDAttended: OK, IDTutorial: OK, IDDeployment: OK, IDAuthoring: Warn},
			msg: map[string]string{IDFlowPython: "Flow's Python interpreter (--flow-python): " + py,
				IDHelper:     "answered hello in ",
				IDDeployment: "the deployment config loads (backend web)",
				IDAuthoring:  "openadapt_flow.authoring is not available with openadapt-flow 1.32.0: serve --authoring and authoring connect fail closed"}},
		{name: "no-config", runVersion: "1.32.0",
			want: map[string]Status{IDFlowPython: OK, IDHelper: OK, IDDeployment: OK, IDAuthoring: Warn},
			msg:  map[string]string{IDDeployment: "no --config given"}},
		{name: "not-headed", runVersion: "1.32.0", o: HelperOptions{Config: deploy},
			want: map[string]Status{IDHelper: OK, IDDeployment: Fail},
			msg:  map[string]string{IDDeployment: "attended Continue/Skip need a visible browser"}},
		{name: "unreadable", runVersion: "1.32.0", o: HelperOptions{Config: deploy, Headed: true},
			script: `{"op":"deployment.check","error":{"kind":"invalid","reason":"deployment_config","flow_type":null,"mro":[],"dispatched":false}}`,
			want:   map[string]Status{IDDeployment: Fail},
			msg:    map[string]string{IDDeployment: "the deployment config could not be read: " + deploy}},
		{name: "run-version-differs", runVersion: "1.32.1",
			want: map[string]Status{IDHelper: Fail},
			msg:  map[string]string{IDHelper: "the Flow helper runs openadapt-flow 1.32.0 but the run command reports 1.32.1; they must match"}},
		// hello answers on any version; each feature gives its own verdict
		// (with --flow-python the operator means to use attended actions).
		{name: "unsupported", mode: "hello-version=1.33.0", runVersion: "1.33.0",
			want: map[string]Status{IDFlowPython: OK, IDHelper: OK, IDAttended: Fail, IDTutorial: Warn, IDDeployment: OK, IDAuthoring: Warn},
			msg: map[string]string{IDHelper: "openadapt-flow 1.33.0, Python",
				IDAttended:   "openadapt-flow 1.33.0 is not supported by attended actions; supported: 1.32.x",
				IDTutorial:   "openadapt-flow 1.33.0 is not supported by the tutorial; supported: 1.32.x",
				IDDeployment: "no --config given",
				IDAuthoring:  "openadapt_flow.authoring is not available with openadapt-flow 1.33.0: serve --authoring and authoring connect fail closed"}},
		{name: "unsupported-with-config", mode: "hello-version=1.33.0", runVersion: "1.33.0", o: HelperOptions{Config: deploy, Headed: true},
			want: map[string]Status{IDHelper: OK, IDAttended: Fail, IDDeployment: Fail},
			msg:  map[string]string{IDDeployment: "not checked: attended actions do not run on openadapt-flow 1.33.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OPENADAPT_FAKE_HELPER_MODE", tc.mode)
			script := ""
			if tc.script != "" {
				script = filepath.Join(t.TempDir(), "script.jsonl")
				if err := os.WriteFile(script, []byte(tc.script+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("OPENADAPT_FAKE_HELPER_SCRIPT", script)
			o := tc.o
			o.FlowCLI, o.FlowPython = shWrapper(t, tc.runVersion), py
			m := byID(t, HelperChecks(context.Background(), o))
			for id, st := range tc.want {
				if m[id].Status != st {
					t.Errorf("%s status %s, want %s: %+v", id, m[id].Status, st, m[id])
				}
			}
			for id, frag := range tc.msg {
				if !strings.Contains(m[id].Message, frag) {
					t.Errorf("%s message %q lacks %q", id, m[id].Message, frag)
				}
			}
		})
	}
}
