package cmd

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
)

// runIDCmd is the script command `run-id VAR RUNS_DIR`: it sets VAR to the
// one run id recorded in RUNS_DIR/.openadapt-agent/runs (a script cannot
// capture it from serve's output), and fails unless there is exactly one.
func runIDCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: run-id VAR RUNS_DIR")
	}
	ents, err := os.ReadDir(filepath.Join(ts.MkAbs(args[1]), ".openadapt-agent", "runs"))
	if err != nil {
		ts.Fatalf("run-id: %v", err)
	}
	var ids []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && flowrun.ValidRunID(id) {
			ids = append(ids, id)
		}
	}
	if len(ids) != 1 {
		ts.Fatalf("run-id: %d run records, want 1", len(ids))
	}
	ts.Setenv(args[0], ids[0])
}
