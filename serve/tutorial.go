package serve

import (
	"context"
	"io"
	"sync"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
	"github.com/OpenAdaptAI/openadapt-agent/internal/tutorial"
)

// Tutorial mode (docs/mcp.md "Modes"; docs/helper.md): `serve --tutorial`,
// or `serve --allow-run` without --bundles. At startup the Flow helper
// prepares (or reuses) Flow's synthetic MockMed bundle under
// <runs-dir>/synthetic-tutorial/ and keeps MockMed up for the server's
// lifetime; the server serves that one workflow as local_quickstart, and
// with --allow-run registers run_local_quickstart, which goes through the
// same run call as every run tool.

// tutorialTools are the prepared tutorial of this server and its run tool.
type tutorialTools struct {
	sess     *tutorial.Session
	wf       *workflow
	helper   *helperProc // MockMed lives in it
	headed   bool
	allowRun bool
	export   bool
	once     sync.Once
}

// owns reports whether w is this server's tutorial workflow (false
// outside tutorial mode).
func (t *tutorialTools) owns(w *workflow) bool {
	return t != nil && w == t.wf
}

// impliesTutorial reports tutorial mode from the flags alone.
func (o Options) impliesTutorial() bool {
	return o.Tutorial || (o.AllowRun && o.Bundles == "" && !o.Authoring) || o.flowSandbox()
}

// flowSandbox reports the sandbox on the flow engine: it prepares and runs
// the tutorial like tutorial mode (docs/mcp.md "Sandbox").
func (o Options) flowSandbox() bool { return o.Sandbox && o.SandboxEngine == EngineFlow }

// startTutorial prepares the tutorial through the helper, with one stderr
// line per phase, then builds the tutorial workflow from a full
// verification of the prepared bundle. Every failure is the exit-2
// message naming the phase.
func startTutorial(ctx context.Context, o Options, p *helperProc, st *runstore.State, instance, runsDir string, loader *bundleLoader, stderr io.Writer) (*tutorialTools, error) {
	if !p.alive() {
		return nil, configErrorf("%s", (&tutorial.Error{Phase: "start"}).Error())
	}
	sess, err := tutorial.Prepare(ctx, tutorial.FromHelper(p.h), tutorial.Options{
		RunsDir: runsDir, StateDir: st.Dir(), Instance: instance,
		Headed: o.Headed, Policy: o.Policy, Progress: stderr, Prefix: "serve: ",
	})
	if err != nil {
		if te, ok := err.(*tutorial.Error); ok {
			return nil, configErrorf("%s", te.Error())
		}
		return nil, configErrorf("%s", (&tutorial.Error{Phase: "start"}).Error())
	}
	b, err := bundle.Load(sess.BundleDir, loader.bundleOpts(bundle.Full)...)
	if err != nil || b == nil || !b.Verified() || b.ContentDigest != sess.ContentDigest {
		sess.Close()
		return nil, configErrorf("%s", (&tutorial.Error{Phase: "bundle"}).Error())
	}
	w := fromBundle(b)
	// The tutorial's fixed id, never a digest-derived one: the exemption is
	// bound to the prepared digest, not to the id.
	w.id, w.baseID = tutorial.WorkflowID, tutorial.WorkflowID
	// The tutorial takes no parameters of its own: its note is the
	// server's fixed parameters file (adjust), so none is listed.
	w.params = nil
	if !w.available {
		sess.Close()
		return nil, configErrorf("%s", (&tutorial.Error{Phase: "bundle"}).Error())
	}
	return &tutorialTools{sess: sess, wf: w, helper: p, headed: o.Headed, allowRun: o.AllowRun, export: o.AllowProtectedExport}, nil
}

// close removes this instance's deployment config and exemption record;
// MockMed stops with the helper. The bundle stays for the next start to
// reuse. nil-safe.
func (t *tutorialTools) close() {
	if t != nil {
		t.once.Do(t.sess.Close)
	}
}

// admit replaces the ledger gate for the tutorial workflow: MockMed lives
// in the helper, so a stopped helper is internal_error before anything
// starts; otherwise the prepared bundle is re-verified now and passes only
// if its digest equals the one recorded in <state>/tutorial-<instance>.json.
// Anything else is admission_required.
func (t *tutorialTools) admit(w *workflow) *failure {
	if !t.helper.alive() || !t.sess.Alive() {
		return fail(CodeInternalError)
	}
	if w.contentDigest != t.sess.ContentDigest || !t.sess.Exempt(w.dir) {
		return failAdmission("unverifiable")
	}
	return nil
}

// gateClause is the banner's admission clause in tutorial mode.
func (t *tutorialTools) gateClause() string {
	return "admission: only the prepared tutorial bundle is exempt, bound to its content digest sha256:" + t.sess.ContentDigest
}

// adjust sets the tutorial's run arguments: Flow's run verb with the
// prepared deployment config and MockMed URL, profile standard, --headed
// when set, and the fixed parameters file {"note": tutorial.Note}; never
// --approve-unverified-writes. Tutorial mode refuses --url, --config and
// --extra-run-arg at startup, so nothing else is added.
func (t *tutorialTools) adjust(req *flowrun.Request) {
	req.Params = tutorial.Params()
	req.URL = t.sess.URL
	req.Config = t.sess.DeploymentConfig
	req.ExtraArgs = []string{"--profile", "standard"}
	if t.headed {
		req.ExtraArgs = append(req.ExtraArgs, "--headed")
	}
}

// keyTutorialUnsigned is run_local_quickstart's own copy for a
// production-eligible VERIFIED run without a Seal. It is stored in the run
// record like every message key.
const keyTutorialUnsigned runstore.MessageKey = "tutorial_unsigned_production_success"

func init() {
	runMessages[keyTutorialUnsigned] = "The synthetic tutorial completed: Flow verified the effect on the synthetic MockMed record (VERIFIED). " +
		"This local server never mints a Seal, so production success without one is reported as failure: Unsigned production success is failure. " +
		"Nothing needs to be retried; do not repeat this run."
}

// tutorialOutcome gives the tutorial's unsigned production success its own
// message; every other outcome is the shared one.
func tutorialOutcome(o runstore.Outcome) runstore.Outcome {
	if o.MessageKey == keyUnsignedProductionSuccess {
		o.MessageKey = keyTutorialUnsigned
	}
	return o
}

// quickstartInput is run_local_quickstart's input: only idempotency_key
// (the note is the server's fixed parameters file).
var quickstartInput = runToolInput(nil, false, false)

// quickstartDescription is run_local_quickstart's description.
func quickstartDescription(steps int) string {
	return runDescription(steps, nil, false) + " This is Flow's synthetic MockMed tutorial (synthetic data only): its only argument is an optional idempotency_key. " +
		"Flow marks a perfect tutorial run production-eligible VERIFIED; this local server never mints a Seal, so the result is status 'error' with execution_outcome VERIFIED and effect_verified true, and nothing needs to be retried."
}

// register adds run_local_quickstart (with --allow-run), whose calls go
// through runs' run call.
func (t *tutorialTools) register(reg *registry, runs *runTools) {
	if t == nil || !t.allowRun {
		return
	}
	reg.add(toolDef{name: tutorial.ToolName, title: "Run the local quickstart", desc: quickstartDescription(t.wf.stepCount),
		input: quickstartInput, success: runOutcomeSchema(t.export), run: true}, func(ctx context.Context, c *toolCall) (any, *failure) {
		return t.runQuickstart(ctx, c, runs)
	})
}

// runQuickstart is run_local_quickstart's handler: url is refused like on
// every run tool (--allow-url-override is refused in tutorial mode), any
// other key but idempotency_key is invalid_arguments, and the note is the
// fixed tutorial note.
func (t *tutorialTools) runQuickstart(ctx context.Context, c *toolCall, runs *runTools) (any, *failure) {
	if f := runs.refuseURL(c.args); f != nil {
		return nil, f
	}
	for k := range c.args {
		if k != "idempotency_key" {
			return nil, fail(CodeInvalidArguments)
		}
	}
	return runs.call(ctx, c, t.wf, map[string]any{})
}
