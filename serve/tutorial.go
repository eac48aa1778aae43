package serve

import (
	"context"
	"sync"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
	"github.com/OpenAdaptAI/openadapt-agent/internal/tutorial"
)

// Tutorial mode (mcp-surface.md §10.1; flow-helper.md §3.3 and §12 items
// 9–14): `serve --tutorial`, or `serve --allow-run` without --bundles. At
// startup the Flow-side helper prepares (or reuses) Flow's synthetic MockMed
// bundle under <runs-dir>/synthetic-tutorial/ and keeps MockMed up for the
// server's lifetime; the server serves that one workflow as
// local_quickstart, and with --allow-run registers run_local_quickstart,
// which goes through the same run call pipeline as every run tool.

// tutorialState is the prepared tutorial of this server.
type tutorialState struct {
	sess *tutorial.Session
	wf   *workflow
	once sync.Once
}

// isTutorial reports whether w is this server's tutorial workflow.
func (s *Server) isTutorial(w *workflow) bool {
	return s.tut != nil && w == s.tut.wf
}

// impliesTutorial reports tutorial mode from the flags alone (§1.3 rule 6).
func (o Options) impliesTutorial() bool {
	return o.Tutorial || (o.AllowRun && o.Bundles == "" && !o.Authoring)
}

// startTutorial is §1.5 step 11 for D3 (flow-helper.md §2.1 g): prepare the
// tutorial through the helper, with one stderr line per phase, then build
// the tutorial workflow from a full verification of the prepared bundle.
// Every failure is the exit-2 message naming the phase.
func (s *Server) startTutorial() error {
	if !s.helper.alive() {
		return configErrorf("%s", (&tutorial.Error{Phase: "start"}).Error())
	}
	sess, err := tutorial.Prepare(context.Background(), tutorial.FromHelper(s.helper.h), tutorial.Options{
		RunsDir: s.prep.runsDir, StateDir: s.state.Dir(), Instance: s.instance,
		Headed: s.opts.Headed, Policy: s.opts.Policy, Progress: s.stderr, Prefix: "serve: ",
	})
	if err != nil {
		if te, ok := err.(*tutorial.Error); ok {
			return configErrorf("%s", te.Error())
		}
		return configErrorf("%s", (&tutorial.Error{Phase: "start"}).Error())
	}
	b, err := bundle.Load(sess.BundleDir, s.bundleOpts(bundle.Full)...)
	if err != nil || b == nil || !b.Verified() || b.ContentDigest != sess.ContentDigest {
		sess.Close()
		return configErrorf("%s", (&tutorial.Error{Phase: "bundle"}).Error())
	}
	w := s.fromBundle(b)
	// The tutorial's fixed id (§5.6), never a digest-derived one: the
	// exemption is bound to the prepared digest, not to the id.
	w.id, w.baseID = tutorial.WorkflowID, tutorial.WorkflowID
	// The tutorial takes no parameters of its own (§12.12): its note is the
	// server's fixed parameters file (tutorialRun), so none is listed.
	w.params = nil
	if !w.available {
		sess.Close()
		return configErrorf("%s", (&tutorial.Error{Phase: "bundle"}).Error())
	}
	s.tut = &tutorialState{sess: sess, wf: w}
	s.cat = newCatalog([]*workflow{w})
	return nil
}

// closeTutorial removes this instance's deployment config and exemption
// record; MockMed stops with the helper (closeHelper). The bundle stays for
// the next start to reuse.
func (s *Server) closeTutorial() {
	if s.tut != nil {
		s.tut.once.Do(s.tut.sess.Close)
	}
}

// admitTutorial replaces the ledger gate for the tutorial workflow (§12.10):
// MockMed lives in the helper, so a stopped helper is internal_error before
// anything starts (flow-helper.md §2.9); otherwise the prepared bundle is
// re-verified now and passes only if its digest equals the one recorded in
// <state>/tutorial-<instance>.json. Anything else is admission_required.
func (s *Server) admitTutorial(w *workflow) *failure {
	if !s.helper.alive() || !s.tut.sess.Alive() {
		return fail(CodeInternalError)
	}
	if w.contentDigest != s.tut.sess.ContentDigest || !s.tut.sess.Exempt(w.dir) {
		return failAdmission("unverifiable")
	}
	return nil
}

// tutorialGate is the banner's admission clause in tutorial mode.
func (s *Server) tutorialGate() string {
	return "admission: only the prepared tutorial bundle is exempt, bound to its content digest sha256:" + s.tut.sess.ContentDigest
}

// tutorialRun sets the tutorial's run arguments (§7.2 argv step 6): Flow's
// run verb with the prepared deployment config and MockMed URL, profile
// standard, --headed when set, and the fixed parameters file
// {"note": tutorial.Note}; never --approve-unverified-writes. Tutorial
// mode refuses --url, --config and --extra-run-arg at startup, so nothing
// else is added.
func (s *Server) tutorialRun(req *flowrun.Request) {
	req.Params = tutorial.Params()
	req.URL = s.tut.sess.URL
	req.Config = s.tut.sess.DeploymentConfig
	req.ExtraArgs = []string{"--profile", "standard"}
	if s.opts.Headed {
		req.ExtraArgs = append(req.ExtraArgs, "--headed")
	}
}

// keyTutorialUnsigned is run_local_quickstart's own copy for a
// production-eligible VERIFIED run without a Seal (C2 kept; §12.9). It is
// stored in the run record like every message key.
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
// (§12.12; the note is the server's fixed parameters file).
var quickstartInput = runToolInput(nil, false, false)

// quickstartDescription is run_local_quickstart's description.
func quickstartDescription(steps int) string {
	return runDescription(steps, nil, false) + " This is Flow's synthetic MockMed tutorial (synthetic data only): its only argument is an optional idempotency_key. " +
		"Flow marks a perfect tutorial run production-eligible VERIFIED; this local server never mints a Seal, so the result is status 'error' with execution_outcome VERIFIED and effect_verified true, and nothing needs to be retried."
}

// registerQuickstart registers run_local_quickstart (§5.6, §10.1).
func (s *Server) registerQuickstart() {
	if s.tut == nil || !s.opts.AllowRun {
		return
	}
	s.addTool(toolDef{name: tutorial.ToolName, title: "Run the local quickstart", desc: quickstartDescription(s.tut.wf.stepCount),
		input: quickstartInput, success: runOutcomeSchema(s.opts.AllowProtectedExport), run: true}, s.runQuickstart)
}

// runQuickstart is run_local_quickstart's handler: url is refused like on
// every run tool (--allow-url-override is refused in tutorial mode), any
// other key but idempotency_key is invalid_arguments, and the note is the
// fixed tutorial note.
func (s *Server) runQuickstart(ctx context.Context, c *toolCall) (any, *failure) {
	if f := s.refuseURL(c.args); f != nil {
		return nil, f
	}
	for k := range c.args {
		if k != "idempotency_key" {
			return nil, fail(CodeInvalidArguments)
		}
	}
	return s.runCall(ctx, c, s.tut.wf, map[string]any{})
}
