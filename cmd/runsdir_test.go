//go:build unix

package cmd

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
)

// TestOneDefaultRunsDir: every command with --runs-dir (serve, runs,
// attention, tutorial prepare, doctor) defaults to the same folder, the
// per-user state folder's runs, spelled "" in the flag; none defaults to a
// folder relative to where it was started.
func TestOneDefaultRunsDir(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	seen := 0
	walk = func(c *cobra.Command) {
		if f := c.LocalFlags().Lookup("runs-dir"); f != nil {
			seen++
			if f.DefValue != "" {
				t.Errorf("%s: --runs-dir defaults to %q, not the per-user state folder", c.CommandPath(), f.DefValue)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(&IO{}))
	if seen < 5 {
		t.Fatalf("found --runs-dir on %d commands, want serve, runs, attention, tutorial prepare and doctor", seen)
	}
}

// TestAttentionListDefaultRunsDir: `attention list` without --runs-dir
// reads the runs folder serve uses by default, not ./runs.
func TestAttentionListDefaultRunsDir(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	runs := filepath.Join(state, "openadapt-agent", "runs")
	os.MkdirAll(runs, 0o700)
	src, _ := filepath.Abs("../testdata/flow/attended/runs/run-0001")
	if out, err := exec.Command("cp", "-a", src, filepath.Join(runs, "run-0001")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	t.Chdir(t.TempDir())
	code, out, errs := runCLI("attention", "list", "--json")
	var doc struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Items) != 1 || doc.Items[0].ID != attention.ID("run-0001") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
