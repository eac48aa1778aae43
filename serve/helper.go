package serve

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
)

// The Flow-side helper (flow-helper.md §2): exactly one per server, started
// at startup step 11 iff a flag needs it, living until shutdown. D1 paths
// (read tools, run tools, the attention projection) never use it.

// helperState is the server's helper and what it has opened.
type helperState struct {
	h        *flowhelper.Helper
	operator string
	live     bool // service.open succeeded: Continue/Skip are registered
	mu       sync.Mutex
	stopped  bool // printed the stopped message once
}

// needsHelper reports whether a flag starts the helper. The tutorial
// (t14) and authoring (u15) deliveries add their flags here.
func (o Options) needsHelper() bool {
	return o.AllowAttendedActions || o.Authoring || o.impliesTutorial()
}

// alive reports whether the helper can take requests.
func (hs *helperState) alive() bool { return hs != nil && hs.h != nil && hs.h.Alive() }

// startHelper runs steps a–f of flow-helper.md §2.1. On failure the helper
// is closed and the *ConfigError carries the exact message.
func (s *Server) startHelper() error {
	o := s.opts
	hs := &helperState{}
	// a. the operator, from the effective uid (never USER/LOGNAME).
	if o.AllowAttendedActions {
		operator := flowhelper.Operator
		if testOnlyOperator != nil {
			operator = testOnlyOperator
		}
		op, err := operator()
		if err != nil || op == "" {
			return configErrorf("%s", flowhelper.MsgOperator)
		}
		hs.operator = op
	}
	// b. the interpreter.
	flowCmd := "openadapt-flow"
	runWords, rerr := s.resolveFlow()
	if rerr == nil {
		flowCmd = runWords[0]
	}
	interp, err := flowhelper.FindPython(o.FlowPython, flowCmd, envValue(s.childEnv, "PATH"))
	if err != nil {
		return configErrorf("%s", startMsg(err))
	}
	// Startup sweep (flow-helper.md §2.3, §2.7): dead owners' private
	// helper directories, and their logs older than 7 days.
	flowhelper.Sweep(s.state.Dir(), func(id string) bool { return id == s.instance || s.state.OwnerAlive(id) }, time.Now())
	// c, d. spawn and hello.
	cfg := flowhelper.Config{
		Interpreter: interp,
		StateDir:    s.state.Dir(),
		Instance:    s.instance,
		Env:         s.childEnv,
		Operator:    hs.operator,
		Timeouts:    testOnlyTimeouts,
		OnDead: func() {
			hs.mu.Lock()
			defer hs.mu.Unlock()
			if !hs.stopped {
				hs.stopped = true
				fmt.Fprintln(s.stderr, "serve: the Flow helper stopped; attended actions and the tutorial are unavailable until the server restarts")
			}
		},
	}
	if o.AllowProtectedExport {
		cfg.Mirror = s.stderr
	}
	ctx := context.Background()
	h, err := flowhelper.Start(ctx, cfg)
	if err != nil {
		return configErrorf("%s", startMsg(err))
	}
	hs.h = h
	fail := func(msg string) error { _, _ = h.Close(); return configErrorf("%s", msg) }
	// d′. with --flow-python, runs and helper must run the same Flow.
	if o.FlowPython != "" && rerr == nil {
		if err := flowhelper.CheckRunVersion(ctx, runWords, s.childEnv, "", h.Hello().FlowVersion); err != nil {
			return fail(startMsg(err))
		}
	}
	// e. --authoring: the probe, then the session (authoring.go).
	if o.Authoring {
		if err := s.startAuthoring(ctx, h); err != nil {
			_, _ = h.Close()
			return err
		}
	}
	// f. attended with --config: the live service.
	if o.AllowAttendedActions && o.Config != "" {
		abs, err := filepath.Abs(o.Config)
		if err != nil {
			return fail("the deployment config could not be read: " + o.Config)
		}
		req := flowhelper.DeploymentRequest{DeploymentConfig: abs, Headed: o.Headed, AllowModelGrounding: o.AllowModelGrounding}
		if o.URL != "" {
			u := o.URL
			req.URL = &u
		}
		info, err := h.CheckDeployment(ctx, req)
		if err != nil {
			if isHelperReason(err, "deployment_config") {
				return fail("the deployment config could not be read: " + o.Config)
			}
			return fail("the attended live session could not be started; see the protected local log")
		}
		// §12.3: name the missing piece instead of a silent downgrade.
		if info.BackendKind == "web" && !info.URLPresent {
			return fail("attended Continue/Skip need the application URL: set deployment.backend.url in --config or pass --url")
		}
		if info.BackendKind == "web" && !info.Headed {
			return fail("attended Continue/Skip need a visible browser: set deployment.backend.headed: true in --config or pass --headed")
		}
		if _, err := h.OpenService(ctx, req); err != nil {
			if isHelperReason(err, "deployment_config") {
				return fail("the deployment config could not be read: " + o.Config)
			}
			return fail("the attended live session could not be started; see the protected local log")
		}
		hs.live = true
	}
	s.helper = hs
	return nil
}

// testOnlyTimeouts shortens the helper's deadlines in tests.
var testOnlyTimeouts flowhelper.Timeouts

// testOnlyOperator, when set, replaces flowhelper.Operator (tests of a host
// without a local account name).
var testOnlyOperator func() (string, error)

func startMsg(err error) string {
	var se *flowhelper.StartError
	if errors.As(err, &se) {
		return se.Msg
	}
	return "the Flow helper could not be started"
}

func isHelperReason(err error, reason string) bool {
	var he *flowhelper.Error
	return errors.As(err, &he) && he.Reason == reason
}

func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if len(kv) > len(name) && kv[:len(name)+1] == name+"=" {
			v = kv[len(name)+1:]
		}
	}
	return v
}

// closeHelper runs inside shutdown (§2.8).
func (s *Server) closeHelper() {
	if s.helper != nil && s.helper.h != nil {
		_, _ = s.helper.h.Close()
	}
}
