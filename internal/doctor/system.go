package doctor

import (
	"context"
	"os"
	"os/exec"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/userdirs"
)

// FlowVersionTimeout bounds the `--version` probe of the Flow command.
const FlowVersionTimeout = 15 * time.Second

// System returns the [Env] of this process: its environment, PATH, home
// folder, working folder, executable and clock. The Flow probe runs the
// command with serve's child environment allowlist, a closed stdin and a
// timeout, and keeps only a bounded tail of its output.
func System() Env {
	env := Env{
		Getenv:   os.Getenv,
		LookPath: exec.LookPath,
		Stat:     os.Stat,
		TempDir:  os.TempDir(),
		Now:      time.Now,
		Ledger:   LedgerCheck,
		// The Flow-side helper: interpreter, handshake, deployment
		// config, authoring availability.
		Helper: HelperChecks,
		FlowVersion: func(ctx context.Context, argv []string) (string, error) {
			x := flowrun.Exec(ctx, flowrun.Command{
				Args:    append(append([]string(nil), argv...), "--version"),
				Env:     flowrun.ChildEnv(os.Environ(), nil),
				Timeout: FlowVersionTimeout,
			})
			if x.Err != nil {
				return "", x.Err
			}
			if x.TimedOut || x.Canceled || x.Code != 0 {
				return "", errFlowVersion
			}
			return x.Stdout, nil
		},
	}
	if h, err := os.UserHomeDir(); err == nil {
		env.HomeDir = h
	}
	if d, err := userdirs.RunsDir(); err == nil {
		env.DefaultRunsDir = d
	}
	if wd, err := os.Getwd(); err == nil {
		env.WorkDir = wd
	}
	// Not resolved through symlinks: a package manager's link survives
	// upgrades, the versioned target does not.
	if exe, err := os.Executable(); err == nil {
		env.Executable = exe
	}
	return env
}
