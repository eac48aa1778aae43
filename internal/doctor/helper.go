package doctor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// The Flow-side helper checks (docs/helper.md, "Startup" and "Version
// gate"): Flow's interpreter found as serve finds it (flowhelper.Launch),
// the helper handshake (start, hello, close), then each feature's own
// verdict on that Flow (attended actions and the tutorial by the pinned
// minor, authoring by authoring.probe of Flow's API), and the deployment
// config through the read-only deployment.check op (no browser), all on one
// short-lived helper.

// Check ids of the helper checks, in report order.
const (
	IDFlowPython = "flow_python"
	IDHelper     = "flow_helper"
	// IDAttended and IDTutorial are the pinned-minor verdicts of attended
	// actions and the tutorial.
	IDAttended   = "attended_actions"
	IDTutorial   = "tutorial"
	IDDeployment = "deployment_config"
	// IDAuthoring is the authoring check: whether the installed Flow
	// provides an openadapt_flow.authoring of the expected API (serve
	// --authoring, authoring connect).
	IDAuthoring = "authoring"
)

// HelperOptions are the flags the helper checks use, as serve reads them.
type HelperOptions struct {
	FlowCLI    string // the Flow command (serve's --flow-cli)
	FlowPython string // --flow-python ("" = from the Flow command)
	Config     string // --config, absolute ("" = not given)
	URL        string // --url ("" = none)
	Headed     bool   // --headed
	// Environ is the environment the helper's is built from (os.Environ()
	// form); nil means this process's.
	Environ []string
}

// HelperFunc runs the helper checks and returns exactly six checks:
// flow_python, flow_helper, attended_actions, tutorial, deployment_config
// and authoring. A hook, like [LedgerFunc], so report tests need no Python.
type HelperFunc func(ctx context.Context, o HelperOptions) []Check

// HelperChecks is the [HelperFunc] of a real machine.
func HelperChecks(ctx context.Context, o HelperOptions) []Check {
	py := Check{ID: IDFlowPython, Status: Warn}
	hc := Check{ID: IDHelper, Status: Warn}
	at := Check{ID: IDAttended, Status: Warn}
	tu := Check{ID: IDTutorial, Status: Warn}
	dc := Check{ID: IDDeployment, Status: Warn}
	ac := Check{ID: IDAuthoring, Status: Warn}
	all := func() []Check { return []Check{py, hc, at, tu, dc, ac} }
	// An explicit --flow-python or --config says the operator means to use
	// the helper: then a problem fails instead of warning.
	intent := Warn
	if o.FlowPython != "" || o.Config != "" {
		intent = Fail
	}
	notChecked := func(why string) []Check {
		hc.Message = "not checked: " + why
		if o.Config == "" {
			dc = noConfig()
		} else {
			dc.Status = intent
			dc.Message = "not checked: " + why
		}
		at.Message = "not checked: " + why
		tu.Message = "not checked: " + why
		ac.Message = "not checked: " + why
		return all()
	}
	words, err := flowrun.SplitCommand(o.FlowCLI)
	if err != nil || len(words) == 0 {
		py.Message = "not checked: --flow-cli is not a command"
		return notChecked("no Flow Python interpreter")
	}
	noInterpreter := func(explicit, missing bool) []Check {
		py.Status = intent
		if missing {
			// The program itself is absent: say so, never "could not be
			// determined".
			py.Message = "Flow's Python interpreter is unknown because the Flow command (" + words[0] + ") was not found: attended actions and the tutorial will fail with flow_not_found"
			py.Fix = "install openadapt-flow so that it is on PATH, or pass --flow-cli (the Flow command) or --flow-python (the Python interpreter of a Flow install)"
			return notChecked("openadapt-flow was not found")
		}
		if explicit {
			py.Message = "the --flow-python interpreter was not found"
			py.Fix = "pass --flow-python the Python that runs Flow: a program on PATH or an absolute path"
		} else {
			py.Message = "Flow's Python interpreter could not be determined from the Flow command (" + words[0] + "): it is not a Python console script"
			py.Fix = "pass --flow-python PATH (the Python that runs Flow) to doctor and to serve, tutorial prepare, attention and authoring connect"
		}
		return notChecked("no Flow Python interpreter")
	}
	interpreterFound := func(interp flowhelper.Interpreter) {
		py.Status = OK
		if o.FlowPython != "" {
			py.Message = "Flow's Python interpreter (--flow-python): " + interp.Path
		} else {
			py.Message = "Flow's Python interpreter, from the Flow command's #! line: " + interp.Path
		}
	}

	// A private folder in the system's temporary directory, made through a
	// root (never through a link) and pending for the signal backstop.
	troot, err := fsutil.OpenRoot(os.TempDir(), "")
	if err != nil {
		return notChecked("no private temporary directory")
	}
	defer troot.Close()
	tmpRel, err := troot.MkdirTemp(".", "openadapt-agent-doctor-")
	if err != nil {
		return notChecked("no private temporary directory")
	}
	defer troot.RemoveAll(tmpRel)
	tmp := troot.Join(tmpRel)
	var id [6]byte
	_, _ = rand.Read(id[:])
	op, _ := flowhelper.Operator()
	environ := o.Environ
	if environ == nil {
		environ = os.Environ()
	}
	t0 := time.Now()
	h, err := flowhelper.Launch(ctx, flowhelper.LaunchOptions{FlowCommand: words, FlowPython: o.FlowPython,
		Environ: environ, StateDir: filepath.Join(tmp, "state"), Instance: "doctor-" + hex.EncodeToString(id[:]), Operator: op})
	if err != nil {
		var se *flowhelper.StartError
		if errors.As(err, &se) && se.Stage == flowhelper.StageInterpreter {
			return noInterpreter(o.FlowPython != "", o.FlowPython == "" && errors.Is(err, flowrun.ErrFlowNotFound))
		}
		msg := "the Flow helper could not be started"
		if se != nil {
			msg = se.Msg
			interpreterFound(se.Interpreter)
		}
		r := notChecked("the Flow helper did not start")
		r[1] = Check{ID: IDHelper, Status: intent, Message: "the Flow helper did not complete its handshake: " + msg,
			Fix: "the helper runs with Flow's own Python: pass the interpreter that imports openadapt_flow as --flow-python"}
		return r
	}
	defer func() { _, _ = h.Close() }()
	interpreterFound(h.Interpreter())
	hl := h.Hello()
	hc.Status = OK
	hc.Message = fmt.Sprintf("the Flow helper started and answered hello in %.1f s: openadapt-flow %s, Python %s, protocol %d",
		time.Since(t0).Seconds(), flowhelper.CleanVersion(hl.FlowVersion), flowhelper.CleanVersion(hl.PythonVersion), hl.Protocol)
	if op == "" {
		hc.Status = Warn
		hc.Message += "; but the local operator identity could not be derived, so serve --allow-attended-actions will not start"
	}
	// With --flow-python, runs and helper must run the same Flow; a
	// mismatch fails this check, and the others still run on the helper.
	if o.FlowPython != "" {
		if err := flowhelper.CheckRunVersion(ctx, words, h.Env(), "", hl.FlowVersion); err != nil {
			var se *flowhelper.StartError
			hc.Status = Fail
			hc.Message = "the Flow helper and the Flow command disagree"
			if errors.As(err, &se) {
				hc.Message += ": " + se.Msg
			}
			hc.Fix = "pass --flow-python the interpreter of the same Flow install as --flow-cli"
		}
	}
	at, tu = pinnedChecks(h, intent)
	if h.Pinned() {
		dc = checkDeployment(ctx, h, o)
	} else if o.Config == "" {
		dc = noConfig()
	} else {
		dc.Status = intent
		dc.Message = "not checked: attended actions do not run on openadapt-flow " + flowhelper.CleanVersion(hl.FlowVersion)
	}
	ac = probeAuthoring(ctx, h)
	return all()
}

// pinnedChecks are the verdicts of attended actions and the tutorial,
// which need the pinned Flow minor. An unsupported version fails attended
// actions when the operator means to use them (--flow-python or --config)
// and warns otherwise; the tutorial only warns.
func pinnedChecks(h *flowhelper.Helper, intent Status) (Check, Check) {
	v := flowhelper.CleanVersion(h.Hello().FlowVersion)
	if h.Pinned() {
		return Check{ID: IDAttended, Status: OK, Message: "openadapt-flow " + v + " is supported by attended actions (serve --allow-attended-actions, attention)"},
			Check{ID: IDTutorial, Status: OK, Message: "openadapt-flow " + v + " is supported by the tutorial (serve --allow-run without bundles, tutorial prepare)"}
	}
	fix := "attended actions and the tutorial are written against openadapt-flow " + flowhelper.SupportedFlow + ": install that release for them; authoring does not need it"
	return Check{ID: IDAttended, Status: intent, Fix: fix,
			Message: "openadapt-flow " + v + " is not supported by attended actions; supported: " + flowhelper.SupportedFlow + " (serve --allow-attended-actions and attention refuse to start)"},
		Check{ID: IDTutorial, Status: Warn, Fix: fix,
			Message: "openadapt-flow " + v + " is not supported by the tutorial; supported: " + flowhelper.SupportedFlow + " (the tutorial refuses to start)"}
}

func noConfig() Check {
	return Check{ID: IDDeployment, Status: OK,
		Message: "no --config given: serve --allow-attended-actions would register Reject, Teach and Escalate only (live Continue/Skip need a deployment config)"}
}

// checkDeployment is the read-only deployment.check with serve's overrides
// and its messages (a web backend needs a URL and a visible browser).
func checkDeployment(ctx context.Context, h *flowhelper.Helper, o HelperOptions) Check {
	if o.Config == "" {
		return noConfig()
	}
	c := Check{ID: IDDeployment, Status: Fail}
	req := flowhelper.DeploymentRequest{DeploymentConfig: o.Config, Headed: o.Headed}
	if o.URL != "" {
		u := o.URL
		req.URL = &u
	}
	info, err := h.CheckDeployment(ctx, req)
	var he *flowhelper.Error
	switch {
	case errors.As(err, &he) && he.Reason == "deployment_config":
		c.Message = "the deployment config could not be read: " + o.Config
		c.Fix = "pass --config a deployment YAML that openadapt-flow run --config accepts"
	case err != nil:
		c.Message = "not checked: the Flow helper did not answer deployment.check"
	case info.BackendKind == "web" && !info.URLPresent:
		c.Message = "attended Continue/Skip need the application URL: set deployment.backend.url in --config or pass --url"
		c.Fix = "add backend.url to " + o.Config + ", or pass --url to serve"
	case info.BackendKind == "web" && !info.Headed:
		c.Message = "attended Continue/Skip need a visible browser: set deployment.backend.headed: true in --config or pass --headed"
		c.Fix = "add backend.headed: true to " + o.Config + ", or pass --headed to serve"
	default:
		c.Status = OK
		c.Message = "the deployment config loads (backend " + flowhelper.CleanVersion(info.BackendKind) + "): serve --allow-attended-actions --config can open the live Continue/Skip session"
		if info.BackendKind == "web" {
			c.Message += " (the browser starts only in serve)"
		}
	}
	return c
}

// probeAuthoring runs authoring.probe (Flow's API, not its version).
// Authoring is optional, so an absent or different module is a warning,
// never a failure.
func probeAuthoring(ctx context.Context, h *flowhelper.Helper) Check {
	c := Check{ID: IDAuthoring, Status: Warn}
	v := flowhelper.CleanVersion(h.Hello().FlowVersion)
	p, err := h.ProbeAuthoring(ctx)
	switch {
	case err != nil:
		c.Message = "not checked: the Flow helper did not answer the authoring probe"
	case p.Available():
		c.Status = OK
		c.Message = "openadapt_flow.authoring is available with openadapt-flow " + v + ": serve --authoring and authoring connect can run"
	default:
		c.Message = flowhelper.AuthoringUnavailableMessage(h.Hello().FlowVersion, p) + ": serve --authoring and authoring connect fail closed"
		c.Fix = "authoring needs a Flow release whose openadapt_flow.authoring has the API this build expects; everything else works without it"
	}
	return c
}
