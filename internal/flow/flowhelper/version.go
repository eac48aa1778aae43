package flowhelper

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
)

var versionLine = lazyre.New(`^openadapt-flow (\S+)$`)

// CheckRunVersion is the run command's version check of the helper's
// startup (docs/helper.md, "Startup"): with --flow-python, run `<words> --version` (env, 30 s) and compare its
// version with hello's. A run command that is not found skips the check
// (nil). A mismatch is a [*StartError] naming both versions.
func CheckRunVersion(ctx context.Context, words []string, env []string, dir string, helperVersion string) error {
	if len(words) == 0 {
		return nil
	}
	p, err := lookPath(words[0], flowrun.EnvValue(env, "PATH"))
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p, append(append([]string{}, words[1:]...), "--version")...)
	cmd.Env = childEnv(env)
	cmd.Dir = dir
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	runV := "unknown"
	if err == nil {
		if m := versionLine().FindSubmatch(bytes.TrimRight(out, "\r\n")); m != nil {
			runV = string(m[1])
		}
	}
	if runV == helperVersion {
		return nil
	}
	return &StartError{Stage: StageRunVersion, Err: errors.New("version mismatch"),
		Msg: "the Flow helper runs openadapt-flow " + CleanVersion(helperVersion) + " but the run command reports " + CleanVersion(runV) + "; they must match"}
}
