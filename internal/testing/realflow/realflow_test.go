package realflow

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeExec(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestLocateUnsetIsNil(t *testing.T) {
	t.Setenv(EnvDir, "")
	info, err := Locate(context.Background())
	if info != nil || err != nil {
		t.Fatalf("Locate = %+v, %v; want nil, nil", info, err)
	}
}

func TestLocatePreparedRuntime(t *testing.T) {
	dir := t.TempDir()
	writeExec(t, filepath.Join(dir, "bin", "openadapt-flow"), "exit 0")
	writeExec(t, filepath.Join(dir, "bin", "flow-python"), `echo '"1.32.0"'`)
	t.Setenv(EnvDir, dir)
	info, err := Locate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.FlowVersion != "1.32.0" || info.FlowPython != filepath.Join(dir, "bin", "flow-python") ||
		info.OpenadaptFlow != filepath.Join(dir, "bin", "openadapt-flow") || info.WithXvfb != "" {
		t.Fatalf("Locate = %+v", info)
	}
}

func TestLocateRefusesAnIncompleteRuntime(t *testing.T) {
	dir := t.TempDir()
	writeExec(t, filepath.Join(dir, "bin", "openadapt-flow"), "exit 0")
	t.Setenv(EnvDir, dir)
	_, err := Locate(context.Background())
	if err == nil || !strings.Contains(err.Error(), "flow-python") {
		t.Fatalf("Locate without bin/flow-python: %v", err)
	}
	// A version the interpreter cannot report is an error too.
	writeExec(t, filepath.Join(dir, "bin", "flow-python"), "echo nonsense")
	if _, err := Locate(context.Background()); err == nil {
		t.Fatal("Locate accepted an interpreter that printed no version")
	}
}
