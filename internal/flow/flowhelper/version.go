package flowhelper

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
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

// Feature is a part of this project that reaches Flow through the helper.
// hello never refuses a Flow version; each feature gates the Flow it runs
// on by itself (docs/helper.md, "Version gate").
type Feature string

// The features and how each gates Flow.
const (
	// FeatureAttended (attended actions) and FeatureTutorial are written
	// against Flow 1.32's API: they need the pinned minor, [SupportedFlow].
	FeatureAttended Feature = "attended actions"
	FeatureTutorial Feature = "the tutorial"
	// FeatureAuthoring needs an openadapt_flow.authoring whose names and
	// signatures fit [AuthoringAPI], whatever the version.
	FeatureAuthoring Feature = "authoring"
)

// ErrAuthoringUnavailable is wrapped by the StartError of a Flow whose
// openadapt_flow.authoring is absent or lacks the expected API.
var ErrAuthoringUnavailable = errors.New("openadapt_flow.authoring is not available")

// Pinned reports whether the helper's Flow is the minor attended actions
// and the tutorial are written against.
func (h *Helper) Pinned() bool {
	return h.hello.FlowSupported && supportedFlowRE().MatchString(h.hello.FlowVersion)
}

// CheckFeature applies f's gate to the helper's Flow. A refusal is a
// [*StartError] naming the feature: Stage [StageFlowVersion] wrapping
// [ErrUnsupportedFlow] for the pinned features, Stage [StageAuthoring]
// wrapping [ErrAuthoringUnavailable] for authoring (its message names what
// is missing); a probe that got no answer is returned as is.
func (h *Helper) CheckFeature(ctx context.Context, f Feature) error {
	switch f {
	case FeatureAttended, FeatureTutorial:
		if h.Pinned() {
			return nil
		}
		return &StartError{Stage: StageFlowVersion, Err: ErrUnsupportedFlow, Interpreter: h.cfg.Interpreter,
			Msg: "openadapt-flow " + CleanVersion(h.hello.FlowVersion) + " is not supported by " + string(f) + "; supported: " + SupportedFlow}
	case FeatureAuthoring:
		p, err := h.ProbeAuthoring(ctx)
		if err != nil {
			return err
		}
		if p.Available() {
			return nil
		}
		return &StartError{Stage: StageAuthoring, Err: ErrAuthoringUnavailable, Interpreter: h.cfg.Interpreter,
			Msg: AuthoringUnavailableMessage(h.hello.FlowVersion, p)}
	}
	return errors.New("flow helper: unknown feature " + string(f))
}

// AuthoringUnavailableMessage is the dependency error of a Flow without a
// usable openadapt_flow.authoring: the module is absent, or it lacks (or
// has another shape of) the named entry points.
func AuthoringUnavailableMessage(flowVersion string, p AuthoringProbe) string {
	v := CleanVersion(flowVersion)
	if !p.Importable || len(p.Mismatched) == 0 {
		return "openadapt_flow.authoring is not available with openadapt-flow " + v
	}
	return "openadapt_flow.authoring of openadapt-flow " + v + " lacks the expected API (" + strings.Join(p.Mismatched, ", ") + ")"
}
