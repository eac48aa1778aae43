// Package realflow reads the real openadapt-flow runtime that
// ../shared/realflow/setup built (its realflow.json), for tests that run
// against real Flow. They skip, with the caller's message printed to stderr
// too (so a CI log shows it without -v), unless OPENADAPT_REALFLOW_DIR names
// one. Test support only.
package realflow

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Info is what realflow.json says was built.
type Info struct {
	Dir           string
	FlowVersion   string `json:"flow_version"`
	FlowPython    string `json:"flow_python"`    // DIR/bin/flow-python (a #!/bin/sh wrapper)
	OpenadaptFlow string `json:"openadapt_flow"` // DIR/bin/openadapt-flow
}

// Load reads $OPENADAPT_REALFLOW_DIR/realflow.json, or skips t with skip.
func Load(t testing.TB, skip string) Info {
	t.Helper()
	dir := os.Getenv("OPENADAPT_REALFLOW_DIR")
	if dir == "" {
		fmt.Fprintln(os.Stderr, skip)
		t.Skip(skip)
	}
	data, err := os.ReadFile(filepath.Join(dir, "realflow.json"))
	if err != nil {
		t.Fatal(err)
	}
	info := Info{Dir: dir}
	if err := json.Unmarshal(data, &info); err != nil || info.FlowVersion == "" || info.FlowPython == "" {
		t.Fatalf("realflow.json: %v (%+v)", err, info)
	}
	return info
}
