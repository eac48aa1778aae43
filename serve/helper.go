package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// The Flow helper process (docs/helper.md): exactly one per server,
// started at startup when a flag needs it and living until shutdown. The
// read tools, the run tools and the Needs Attention projection never use
// it; the attended actions, the tutorial and the authoring tools share it.

// helperProc is the server's running helper.
type helperProc struct {
	h       *flowhelper.Helper
	mu      sync.Mutex
	stopped bool // the stopped message was printed
}

// needsHelper reports whether a flag starts the helper.
func (o Options) needsHelper() bool {
	if o.Sandbox {
		return o.flowSandbox()
	}
	return o.AllowAttendedActions || o.Authoring || o.impliesTutorial()
}

// alive reports whether the helper can take requests (false for none).
func (p *helperProc) alive() bool { return p != nil && p.h != nil && p.h.Alive() }

// testOnlyTimeouts shortens the helper's deadlines in tests.
var testOnlyTimeouts flowhelper.Timeouts

// testOnlyOperator, when set, replaces flowhelper.Operator (tests of a host
// without a local account name).
var testOnlyOperator func() (string, error)

// launchHelper starts the helper through flowhelper.Launch (docs/helper.md
// "Startup"): the operator identity first, for attended actions (from the
// effective uid, never USER or LOGNAME), then the helper of the run
// command's Flow. A failure is a *ConfigError with the exact message.
func launchHelper(ctx context.Context, o Options, flow *flowCommand, st *runstore.State, instance string, stderr io.Writer) (*helperProc, error) {
	p := &helperProc{}
	lo := flowhelper.LaunchOptions{
		FlowPython: o.FlowPython,
		Environ:    o.Environ,
		PassEnv:    o.PassEnv,
		StateDir:   st.Dir(),
		Instance:   instance,
		Timeouts:   testOnlyTimeouts,
		OwnerLive:  st.OwnerAlive,
		OnDead: func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if !p.stopped {
				p.stopped = true
				fmt.Fprintln(stderr, "serve: the Flow helper stopped; attended actions and the tutorial are unavailable until the server restarts")
			}
		},
	}
	if o.AllowAttendedActions {
		operator := flowhelper.Operator
		if testOnlyOperator != nil {
			operator = testOnlyOperator
		}
		op, err := operator()
		if err != nil || op == "" {
			return nil, configErrorf("%s", flowhelper.MsgOperator)
		}
		lo.Operator = op
	}
	// With --flow-python, runs and helper must run the same Flow: the run
	// command's version is checked when the command resolves.
	if words, err := flow.resolve(); err == nil {
		lo.FlowCommand, lo.CheckRunVersion = words, true
	} else if words, err := flowrun.SplitCommand(flow.cli); err == nil {
		lo.FlowCommand = words // unresolved: a missing program is named as given
	}
	if o.AllowProtectedExport {
		lo.Mirror = stderr
	}
	// Each feature gates the Flow it runs on (docs/helper.md, "Version
	// gate"): attended actions and the tutorial need the pinned minor, here;
	// authoring needs Flow's authoring API, checked when its session opens.
	// A combination whose features disagree stops startup naming the one
	// that refuses.
	if o.AllowAttendedActions {
		lo.Features = append(lo.Features, flowhelper.FeatureAttended)
	}
	if o.impliesTutorial() {
		lo.Features = append(lo.Features, flowhelper.FeatureTutorial)
	}
	h, err := flowhelper.Launch(ctx, lo)
	if err != nil {
		return nil, &ConfigError{Msg: startMsg(err), flowMissing: errors.Is(err, flowrun.ErrFlowNotFound)}
	}
	p.h = h
	return p, nil
}

func startMsg(err error) string {
	var se *flowhelper.StartError
	if errors.As(err, &se) && se.Msg != "" {
		return se.Msg
	}
	return "the Flow helper could not be started"
}

func isHelperReason(err error, reason string) bool {
	var he *flowhelper.Error
	return errors.As(err, &he) && he.Reason == reason
}

// openLiveService opens the attended live session the attended Continue
// and Skip act in (--allow-attended-actions with --config): the deployment
// is checked first, so a missing URL or an invisible browser is named
// instead of a silent downgrade.
func openLiveService(ctx context.Context, o Options, p *helperProc) error {
	abs, err := filepath.Abs(o.Config)
	if err != nil {
		return configErrorf("the deployment config could not be read: %s", o.Config)
	}
	req := flowhelper.DeploymentRequest{DeploymentConfig: abs, Headed: o.Headed, AllowModelGrounding: o.AllowModelGrounding}
	if o.URL != "" {
		u := o.URL
		req.URL = &u
	}
	info, err := p.h.CheckDeployment(ctx, req)
	if err != nil {
		if isHelperReason(err, "deployment_config") {
			return configErrorf("the deployment config could not be read: %s", o.Config)
		}
		return configErrorf("the attended live session could not be started; see the protected local log")
	}
	if info.BackendKind == "web" && !info.URLPresent {
		return configErrorf("attended Continue/Skip need the application URL: set deployment.backend.url in --config or pass --url")
	}
	if info.BackendKind == "web" && !info.Headed {
		return configErrorf("attended Continue/Skip need a visible browser: set deployment.backend.headed: true in --config or pass --headed")
	}
	if _, err := p.h.OpenService(ctx, req); err != nil {
		if isHelperReason(err, "deployment_config") {
			return configErrorf("the deployment config could not be read: %s", o.Config)
		}
		return configErrorf("the attended live session could not be started; see the protected local log")
	}
	return nil
}

// close stops the helper (docs/helper.md "Shutdown"); nil-safe.
func (p *helperProc) close() {
	if p != nil && p.h != nil {
		_, _ = p.h.Close()
	}
}
