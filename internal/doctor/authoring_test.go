package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuthoringHookInReport(t *testing.T) {
	env := Env{Authoring: func(_ context.Context, flowCLI string) Check {
		if flowCLI != "openadapt-flow" {
			t.Errorf("flow cli %q", flowCLI)
		}
		return Check{ID: IDAuthoring, Status: Warn, Message: "openadapt_flow.authoring is not available with openadapt-flow 1.32.0: serve --authoring and authoring connect fail closed"}
	}}
	r := Run(context.Background(), env, Options{}, "test")
	if c := find(t, r, IDAuthoring); c.Status != Warn || r.Failed() && c.Status == Fail {
		t.Fatalf("%+v", c)
	}
}

func TestAuthoringCheckWithoutPython(t *testing.T) {
	// A Flow command that is not a Python console script: not checked, a
	// warning with the --flow-python hint, never a failure.
	dir := t.TempDir()
	flow := filepath.Join(dir, "openadapt-flow")
	if err := os.WriteFile(flow, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	c := AuthoringCheck(context.Background(), "openadapt-flow")
	if c.ID != IDAuthoring || c.Status != Warn || !strings.HasPrefix(c.Message, "not checked:") || !strings.Contains(c.Fix, "--flow-python") {
		t.Fatalf("%+v", c)
	}
}
