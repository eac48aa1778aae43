package cmd

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/internal/doctor"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/buildinfo"
)

// testOnlyDoctorEnv, when set by tests, replaces the machine's environment.
var testOnlyDoctorEnv func() doctor.Env

// newDoctorCmd is `doctor`, which checks the local setup.
func newDoctorCmd(io *IO) *cobra.Command {
	var (
		opts   doctor.Options
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check the local setup and say how to fix each problem",
		Long: `doctor checks what serve needs and prints one line per check (ok, warn or
fail) with the exact fix for every problem: the Flow CLI and its version,
OPENADAPT_BUNDLE_KEY when sealed bundles exist, the runs folder, bundle
verification, the admission ledger snapshot, Flow's Python interpreter, the
Flow-side helper's handshake (start, hello, version pin, close), the
deployment config (--config, read-only: no browser opens), authoring
availability, and the agents it detects
(Claude Code, Codex, Cursor, Gemini CLI) with the command or snippet that registers this
server in each. The flags and their defaults are serve's.

It never prints protected data: no workflow names, recorded values or Flow
output, and never the bundle key.

Exit status: 0 when nothing fails (warnings allowed), 1 when a check fails,
2 for a usage error.`,
		Example: `  openadapt-agent doctor --bundles ~/openadapt/bundles
  openadapt-agent doctor --bundles ~/openadapt/bundles --runs-dir ~/.openadapt/runs
  openadapt-agent doctor --flow-python /usr/bin/python3 --config deploy.yaml --headed
  openadapt-agent doctor --json`,
		Args: noArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			opts.RunsDirSet = c.Flags().Changed("runs-dir")
			opts.FlowCLISet = c.Flags().Changed("flow-cli")
			env := doctor.System()
			if testOnlyDoctorEnv != nil {
				env = testOnlyDoctorEnv()
			}
			rep := doctor.Run(c.Context(), env, opts, buildinfo.Version())
			if asJSON {
				enc := json.NewEncoder(io.Out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				printDoctor(io, rep)
			}
			if rep.Failed() {
				return errCheckFailed
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&opts.Bundles, "bundles", "", "bundle folder, or folder of bundle folders (as for serve)")
	f.StringVar(&opts.RunsDir, "runs-dir", "", "runs folder (as for serve; default the per-user state folder)")
	f.StringVar(&opts.Ledger, "ledger", "", "admission ledger file or evidence folder (default: the embedded snapshot)")
	f.StringVar(&opts.FlowCLI, "flow-cli", "openadapt-flow", "command that starts Flow, split like a shell command without expansions")
	f.StringVar(&opts.FlowPython, "flow-python", "", "Python interpreter of the Flow install (default: from the openadapt-flow script's #! line)")
	f.StringVar(&opts.Config, "config", "", "deployment config YAML for attended Continue/Skip (checked read-only, no browser)")
	f.StringVar(&opts.URL, "url", "", "application URL (overrides deployment.backend.url, as for serve)")
	f.BoolVar(&opts.Headed, "headed", false, "visible browser (overrides deployment.backend.headed, as for serve)")
	f.BoolVar(&asJSON, "json", false, "print one JSON document")
	addQuietFlag(c)
	return c
}

// printDoctor prints the report for people: one line per check, then the
// fix indented under it, then a summary line.
func printDoctor(io *IO, rep *doctor.Report) {
	w := io.Out
	for _, c := range rep.Checks {
		fmt.Fprintf(w, "%-4s  %-18s %s\n", c.Status, c.ID, c.Message)
		if c.Fix == "" {
			continue
		}
		label := "fix:"
		if strings.HasPrefix(c.ID, "agent.") {
			label = "register:"
		}
		for i, line := range strings.Split(c.Fix, "\n") {
			if i == 0 {
				fmt.Fprintf(w, "      %s %s\n", label, line)
			} else {
				fmt.Fprintf(w, "        %s\n", line)
			}
		}
	}
	fmt.Fprintf(w, "doctor: %d ok, %d warning(s), %d failed\n", rep.Summary.OK, rep.Summary.Warn, rep.Summary.Fail)
}
