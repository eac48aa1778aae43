package authoring

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
)

// OpenOptions start the Flow helper and open its authoring session.
type OpenOptions struct {
	// Helper starts the helper ([flowhelper.Launch]): which Flow, its
	// environment, and its private state folder (0700: the staged program
	// and the protected log).
	Helper flowhelper.LaunchOptions

	// The session (docs/authoring.md, "Configuration"): with
	// DeploymentConfig (absolute) the helper reads the backend kind, URL and
	// headed flag from it with Flow's loader, URL and Headed being
	// --url/--headed overrides and BackendKind empty; without it,
	// BackendKind, URL and Headed are the session's (see [Backend]).
	DeploymentConfig string
	BackendKind      string  // web, macos, linux, windows, rdp, citrix
	URL              *string // web only
	Headed           bool
	OutDir           string // absolute: where the session keeps its recording
}

// Backend is the session's backend kind without a deployment config: a
// fresh Playwright browser ("web") when the server has --url, else the
// local window of this OS (coach-only on Windows).
func Backend(url string) string {
	if url != "" {
		return "web"
	}
	switch runtime.GOOS {
	case "darwin":
		return "macos"
	case "windows":
		return "windows"
	}
	return "linux"
}

// ConfigError is authoring.open's refusal of the session's configuration
// (nothing was opened). Config is the --config value as the person gave it
// ("" for none); the message names the missing piece, never a value.
type ConfigError struct {
	Reason string // deployment_config, deployment_unusable, url_missing, headed_missing
	Config string
}

func (e *ConfigError) Error() string {
	switch e.Reason {
	case "deployment_config":
		return "the deployment config could not be read: " + e.Config
	case "deployment_unusable":
		if e.Config == "" {
			return "authoring the local window needs --config: a deployment config whose backend Flow can build here (kind macos or linux); or pass --url and --headed to author a web application"
		}
		return "the deployment config's backend is not one Flow can build for authoring here (web, macos or linux; windows, rdp and citrix are coach-only): " + e.Config
	case "url_missing":
		return "authoring a web application needs its URL: set deployment.backend.url in --config or pass --url"
	}
	if e.Config == "" {
		return "--url opens a fresh browser with empty cookies; pass --headed so the person can sign in there"
	}
	return "authoring a web application needs a visible browser, so the person can sign in there: set deployment.backend.headed: true in --config or pass --headed"
}

// configReasons are authoring.open's configuration refusals.
var configReasons = map[string]bool{"deployment_config": true, "deployment_unusable": true, "url_missing": true, "headed_missing": true}

// UnavailableError is the fail-closed answer when the installed Flow has no
// usable openadapt_flow.authoring: the module is absent, or its names and
// signatures do not fit [flowhelper.AuthoringAPI] (Probe.Mismatched names
// which). It wraps [ErrUnavailable].
type UnavailableError struct {
	FlowVersion string
	Probe       flowhelper.AuthoringProbe
}

func (e *UnavailableError) Error() string {
	return flowhelper.AuthoringUnavailableMessage(e.FlowVersion, e.Probe)
}

func (e *UnavailableError) Unwrap() error { return ErrUnavailable }

// HelperSession is the authoring [Session] of a running Flow helper.
type HelperSession struct {
	h *flowhelper.Helper
	// Info is what authoring.open reported.
	Info flowhelper.AuthoringInfo
}

// Probe starts the helper and runs authoring.probe only: it tells whether
// the installed Flow has a usable openadapt_flow.authoring, and the Flow
// version. The helper is closed before Probe returns.
func Probe(ctx context.Context, o OpenOptions) (available bool, flowVersion string, err error) {
	h, err := flowhelper.Launch(ctx, o.Helper)
	if err != nil {
		return false, "", err
	}
	defer func() { _, _ = h.Close() }()
	p, err := h.ProbeAuthoring(ctx)
	return p.Available(), h.Hello().FlowVersion, err
}

// Open starts the helper ([flowhelper.Launch]), probes
// openadapt_flow.authoring and opens the session with
// authoring.open. Startup failures keep the helper's exact operator message
// ([*flowhelper.StartError]); a Flow without the module gives an
// [*UnavailableError]. On any error the helper is closed.
func Open(ctx context.Context, o OpenOptions) (*HelperSession, error) {
	h, err := flowhelper.Launch(ctx, o.Helper)
	if err != nil {
		return nil, err
	}
	sess, err := OpenOn(ctx, h, flowhelper.AuthoringOpenRequest{DeploymentConfig: o.DeploymentConfig,
		BackendKind: o.BackendKind, URL: o.URL, Headed: o.Headed, OutDir: o.OutDir})
	if err != nil {
		_, _ = h.Close()
		return nil, err
	}
	return sess, nil
}

// OpenOn probes openadapt_flow.authoring on a running helper and opens the
// session. It never closes h: the caller owns it. A Flow without the
// module gives an [*UnavailableError]; a deployment config that cannot be
// read or lacks what the backend needs gives a [*ConfigError] (its Config is
// the absolute path: callers put back what the person typed).
func OpenOn(ctx context.Context, h *flowhelper.Helper, req flowhelper.AuthoringOpenRequest) (*HelperSession, error) {
	p, err := h.ProbeAuthoring(ctx)
	if err == nil && !p.Available() {
		err = &UnavailableError{FlowVersion: h.Hello().FlowVersion, Probe: p}
	}
	if err != nil {
		return nil, err
	}
	info, err := h.OpenAuthoring(ctx, req)
	if err != nil {
		var fe *flowhelper.Error
		if errors.As(err, &fe) && fe.Kind == flowhelper.KindInvalid && configReasons[fe.Reason] {
			return nil, &ConfigError{Reason: fe.Reason, Config: req.DeploymentConfig}
		}
		return nil, fmt.Errorf("%w: the authoring session could not be opened; see the protected local log", ErrUnavailable)
	}
	return &HelperSession{h: h, Info: info}, nil
}

// Helper is the running helper (for its Done channel and log path).
func (s *HelperSession) Helper() *flowhelper.Helper { return s.h }

// Close closes the session and the helper.
func (s *HelperSession) Close() { _, _ = s.h.Close() }

// Call runs authoring.<tool>. A coach-only backend has no session: every
// session tool is refused with coach_only here, before anything is sent
// (the helper refuses them too); get_command_result and bind_status are
// the helper's own and still answer.
func (s *HelperSession) Call(ctx context.Context, tool string, args map[string]any) (map[string]any, error) {
	if !flowhelper.IsAuthoringTool(tool) {
		return nil, fmt.Errorf("authoring: no session op for %q", tool)
	}
	if s.Info.CoachOnly && tool != "get_command_result" && tool != "bind_status" {
		return nil, &Refusal{Code: CodeCoachOnly}
	}
	res, err := s.h.Authoring(ctx, tool, args)
	if err != nil {
		return nil, mapHelperError(err)
	}
	return res, nil
}

// mapHelperError turns a helper error into the [Session] contract.
func mapHelperError(err error) error {
	var fe *flowhelper.Error
	var te *flowhelper.TransportError
	switch {
	case errors.As(err, &fe):
		switch fe.Kind {
		case flowhelper.KindRefused:
			if c, ok := ParseCode(fe.Reason); ok {
				return &Refusal{Code: c}
			}
		case flowhelper.KindUnavailable:
			return fmt.Errorf("%w (%s)", ErrUnavailable, fe.Reason)
		case flowhelper.KindUncertain:
			return fmt.Errorf("%w (%s)", ErrUncertain, fe.Kind)
		}
		if fe.Dispatched {
			return fmt.Errorf("%w (%s)", ErrUncertain, fe.Kind)
		}
		return fmt.Errorf("%w: the session answered %s", ErrUnavailable, fe.Kind)
	case errors.As(err, &te):
		if te.Written {
			return fmt.Errorf("%w: the Flow helper stopped mid-request", ErrUncertain)
		}
		return fmt.Errorf("%w: the Flow helper stopped", ErrUnavailable)
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}
