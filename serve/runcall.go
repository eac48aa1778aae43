package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/labels"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// runTools are the run tools (a run tool per available workflow, or
// run_workflow in catalog mode) and get_run_report. A run call reads top
// to bottom in [runTools.call] (docs/runs.md "The run call"); its run
// belongs to the run manager (runmanager.go), and its answer is projected
// from the frozen outcome (projection.go).
type runTools struct {
	opts     *Options
	runsDir  string
	cat      *catalog
	loader   *bundleLoader // the fresh verification of each run
	gate     *gate
	flow     *flowCommand
	bindings *runstore.Bindings // idempotency; nil on a read-only server
	tutorial *tutorialTools     // nil outside tutorial mode
	manager  *runManager
	labels   *labels.Labels // --labels, nil without: run tool descriptions
}

// runArgs are validated run arguments.
type runArgs struct {
	wf     *workflow
	params map[string]string
	url    *string // override, nil when absent
	idem   string
}

// register adds the run tools, with --allow-run: run_workflow in catalog
// mode, else one tool per available workflow, sorted by id (none in
// tutorial mode, whose run tool is the tutorial's).
func (t *runTools) register(reg *registry) {
	if !t.opts.AllowRun {
		return
	}
	export := t.opts.AllowProtectedExport
	if t.opts.ToolMode == "catalog" {
		reg.add(toolDef{name: toolRunWorkflow, title: "Run workflow", desc: runDescription(-1, nil, export),
			input: runWorkflowInput(t.opts.AllowURLOverride), success: runOutcomeSchema(export), run: true}, t.runCatalog)
		return
	}
	if t.tutorial != nil {
		return
	}
	avail := make([]*workflow, 0, len(t.cat.workflows))
	for _, w := range t.cat.workflows {
		if w.available {
			avail = append(avail, w)
		}
	}
	slices.SortFunc(avail, func(a, b *workflow) int { return strings.Compare(a.id, b.id) })
	// Run tools share their output schema, and their input schema and
	// description per distinct parameter list and step count: build each
	// once (the bytes are only read, by the tools/list middleware).
	outcome := runOutcomeSchema(export)
	inputs := map[string]json.RawMessage{}
	descs := map[int]string{}
	for _, w := range avail {
		var kb strings.Builder
		for _, p := range w.params {
			kb.WriteString(strconv.Itoa(len(p.wire)) + ":" + p.wire)
		}
		key := kb.String()
		input, ok := inputs[key]
		switch {
		case w.card != nil: // the card's constraints and descriptions are its own
			input = runToolInput(w.params, t.opts.AllowURLOverride, t.opts.AllowSyntheticRecordedDefaults)
		case !ok:
			input = runToolInput(w.params, t.opts.AllowURLOverride, t.opts.AllowSyntheticRecordedDefaults)
			inputs[key] = input
		}
		var desc string
		if export && w.name != nil {
			desc = runDescription(w.stepCount, w.name, export)
		} else if d, ok := descs[w.stepCount]; ok {
			desc = d
		} else {
			desc = runDescription(w.stepCount, nil, export)
			descs[w.stepCount] = desc
		}
		desc = t.cardDescription(w) + desc
		reg.add(toolDef{name: "run_" + w.id, title: "Run workflow", desc: desc, input: input, success: outcome, run: true}, t.runPerWorkflow(w))
	}
}

func runDescription(steps int, name *string, export bool) string {
	what := "the selected compiled workflow"
	if export && name != nil {
		what = "'" + *name + "'"
	}
	if steps >= 0 {
		what += fmt.Sprintf(" (%d steps)", steps)
	}
	return "Executes " + what + " through the governed openadapt-flow run CLI with fail-closed admission gates. " +
		"Status values: 'success' (the only success); 'halt' (NOT success: stopped safely, evidence kept locally); 'refused' (nothing executed); " +
		"'timeout' (stopped at the deadline, effect uncertain); 'error' (no trustworthy result); 'running' (still in progress: call get_run_report with the run_id and wait_ms, never start it again); " +
		"'interrupted' (the server stopped mid-run, effect uncertain). This tool has requires_seal: true, so if it returns unsigned success, treat it as failure. " +
		"Pass an idempotency_key to make retries safe. Never treat a non-success status as success."
}

// cardDescription opens a run tool's description with what the workflow
// card (or the operator's --labels entry, which wins for the label and the
// description) says: "<label>: <description> Done means: <done_means> ",
// each part only when set; "" for a workflow without a card.
func (t *runTools) cardDescription(w *workflow) string {
	if w.card == nil {
		return ""
	}
	label, description := display(w, t.labels.Get(w.id))
	var b strings.Builder
	switch {
	case label != "" && description != "":
		b.WriteString(label + ": " + description + " ")
	case label != "":
		b.WriteString(label + ". ")
	case description != "":
		b.WriteString(description + " ")
	}
	if w.card.DoneMeans != "" {
		b.WriteString("Done means: " + w.card.DoneMeans + " ")
	}
	return b.String()
}

// runPerWorkflow is the handler of the run tool of one workflow.
func (t *runTools) runPerWorkflow(w *workflow) toolHandler {
	return func(ctx context.Context, c *toolCall) (any, *failure) {
		if f := t.refuseURL(c.args); f != nil {
			return nil, f
		}
		flat := map[string]any{}
		for k, v := range c.args {
			if k != "url" && k != "idempotency_key" {
				flat[k] = v
			}
		}
		return t.call(ctx, c, w, flat)
	}
}

// runCatalog is run_workflow's handler: the workflow is an argument.
func (t *runTools) runCatalog(ctx context.Context, c *toolCall) (any, *failure) {
	if f := t.refuseURL(c.args); f != nil {
		return nil, f
	}
	for k := range c.args {
		switch k {
		case "workflow_id", "params", "url", "idempotency_key":
		default:
			return nil, fail(CodeInvalidArguments)
		}
	}
	id, ok := c.args["workflow_id"].(string)
	if !ok {
		return nil, fail(CodeInvalidArguments)
	}
	flat, ok := c.args["params"].(map[string]any)
	if !ok {
		return nil, fail(CodeInvalidArguments)
	}
	w := t.cat.lookup(id)
	if w == nil {
		return nil, fail(CodeUnknownWorkflow)
	}
	if !w.available {
		return nil, fail(CodeWorkflowUnavailable)
	}
	return t.call(ctx, c, w, flat)
}

// refuseURL is checked before anything else: a url argument, whatever its
// value, when per-call URLs are off.
func (t *runTools) refuseURL(args map[string]any) *failure {
	if _, has := args["url"]; has && !t.opts.AllowURLOverride {
		return fail(CodeURLOverrideRefused)
	}
	return nil
}

// call is the run call for workflow w with parameters flat, top to bottom
// (docs/runs.md "The run call"); that the name is registered and run tools
// are enabled the receiving middleware checked (dispatch.go).
func (t *runTools) call(ctx context.Context, c *toolCall, w *workflow, flat map[string]any) (any, *failure) {
	// Arguments.
	ra, f := t.arguments(w, flat, c.args)
	if f != nil {
		return nil, f
	}
	c.audit.WorkflowID = &w.id
	// An idempotency key already bound answers with its run.
	var digest string
	if ra.idem != "" {
		digest = t.bindings.Digest(w.baseID, ra.params, ra.url)
		if out, f, hit := t.replayBound(ctx, c, ra.idem, digest); hit {
			return out, f
		}
	}
	// A fresh full verification of this bundle, then the admission gate.
	if f := t.admit(w); f != nil {
		return nil, f
	}
	// Flow.
	flow, err := t.flow.resolve()
	if err != nil {
		return nil, fail(CodeFlowNotFound)
	}
	// The reservation: the run is known to this server before its key is
	// bound (an identical call that finds the binding waits on it in
	// memory), then the binding is published.
	runID := flowrun.NewRunID()
	lr := t.manager.reserve(runID, w)
	if ra.idem != "" {
		err := t.bindings.Publish(ra.idem, runstore.Binding{Digest: digest, RunID: runID, CreatedAt: time.Now().UTC().Format(time.RFC3339Nano)})
		if err != nil {
			t.manager.abandon(lr)
		}
		if errors.Is(err, fs.ErrExist) {
			// A concurrent identical call won the race: this one replays.
			if out, f, hit := t.replayBound(ctx, c, ra.idem, digest); hit {
				return out, f
			}
			return nil, fail(CodeInternalError)
		} else if err != nil {
			return nil, fail(CodeInternalError)
		}
	}
	c.audit.RunID = &runID
	// The running record, the parameter file and the child belong to the
	// run manager.
	if err := t.manager.start(lr, t.request(ra, runID, flow), t.classifier(w)); err != nil {
		// The record could not be written, so nothing was spawned; a key
		// bound above stays bound forever.
		return nil, fail(CodeInternalError)
	}
	// The run's own answer, after at most --run-wait.
	return t.project(c, t.manager.waitRun(ctx, c.req, lr, t.runWait()), false)
}

// arguments applies the run tools' argument rules (docs/runs.md
// "Arguments"): flat holds the workflow parameters, args the whole call
// (url, idempotency_key).
func (t *runTools) arguments(w *workflow, flat, args map[string]any) (*runArgs, *failure) {
	ra := &runArgs{wf: w}
	// Callers send wire names; the parameters file holds Flow's names
	// (docs/bundle.md, Parameter aliases).
	params, problems := checkInputs(w.params, flat, !t.opts.AllowSyntheticRecordedDefaults)
	if problems != nil {
		return nil, invalidInputsFailure(problems, undeclared(w.params, flat))
	}
	ra.params = params
	if v, has := args["url"]; has {
		u, ok := v.(string)
		if !ok {
			return nil, fail(CodeInvalidArguments)
		}
		if u != "" {
			if !validOverrideURL(u) {
				return nil, fail(CodeInvalidArguments)
			}
			ra.url = &u
		}
	}
	if v, has := args["idempotency_key"]; has {
		k, ok := v.(string)
		if !ok || !idemKeyRE().MatchString(k) {
			return nil, fail(CodeInvalidArguments)
		}
		ra.idem = k
	}
	return ra, nil
}

// invalidInputsFailure is invalid_arguments with its invalid_inputs; the
// message also names the missing inputs and counts the undeclared ones.
func invalidInputsFailure(problems []inputProblem, unknown int) *failure {
	var missing []string
	for _, p := range problems {
		if p.Problem == problemMissing {
			missing = append(missing, p.Input)
		}
	}
	f := invalidArgumentsFailure(missing, unknown)
	f.InvalidInputs = problems
	return f
}

// undeclared counts the keys of flat that name no declared parameter.
func undeclared(ps []param, flat map[string]any) int {
	n := len(flat)
	for _, p := range ps {
		if _, ok := flat[p.wire]; ok {
			n--
		}
	}
	return n
}

func validOverrideURL(s string) bool {
	if len(s) > 2048 {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" {
		return false
	}
	return true
}

// replayBound looks key up (docs/runs.md "Idempotency"): hit is false when
// it is not bound yet; otherwise the answer is the replay of the bound run,
// or idempotency_conflict for a different call, or internal_error for a
// binding that cannot be read.
func (t *runTools) replayBound(ctx context.Context, c *toolCall, key, digest string) (out any, f *failure, hit bool) {
	b, err := t.bindings.Lookup(key)
	switch {
	case err != nil:
		return nil, fail(CodeInternalError), true
	case b == nil:
		return nil, nil, false
	case b.Digest != digest:
		return nil, fail(CodeIdempotencyConflict), true
	}
	// The answer is rebuilt from the run's record with replayed true; a
	// running run is waited for like a fresh call.
	replayed := true
	c.audit.Replayed = &replayed
	c.audit.RunID = &b.RunID
	out, f = t.project(c, t.manager.wait(ctx, c.req, b.RunID, t.runWait()), true)
	return out, f, true
}

// admit verifies the bundle afresh at this call, then asks the admission
// gate when it is on; the tutorial's workflow has its own admission.
func (t *runTools) admit(w *workflow) *failure {
	if t.tutorial.owns(w) {
		return t.tutorial.admit(w)
	}
	bundleSHA, verified := t.loader.verifyForRun(w)
	switch {
	case !t.gate.on() && verified:
		return nil
	case !t.gate.on():
		return fail(CodeWorkflowUnavailable)
	case !verified:
		return failAdmission("unverifiable")
	}
	if reason, ok := t.gate.admit(bundleSHA); !ok {
		return failAdmission(reason)
	}
	return nil
}

// request is the Flow run of ra (docs/runs.md "The command line"); the
// tutorial's workflow gets the tutorial's fixed arguments.
func (t *runTools) request(ra *runArgs, runID string, flow []string) flowrun.Request {
	o := t.opts
	req := flowrun.Request{
		Flow:      flow,
		BundleDir: ra.wf.dir,
		RunsDir:   t.runsDir,
		RunID:     runID,
		ParamsDir: t.manager.state.ParamsDir(),
		Params:    ra.params,
		URL:       o.URL,
		Config:    o.Config,
		Policy:    o.Policy,
		ExtraArgs: o.ExtraRunArgs,
		Env:       t.flow.env,
		Timeout:   time.Duration(o.Timeout * float64(time.Second)),
	}
	if ra.url != nil {
		req.URL = *ra.url
	}
	if t.tutorial.owns(ra.wf) {
		t.tutorial.adjust(&req)
	}
	return req
}

// classifier turns Flow's result for w into its frozen outcome.
func (t *runTools) classifier(w *workflow) func(flowrun.Result) runstore.Outcome {
	if t.tutorial.owns(w) {
		return func(res flowrun.Result) runstore.Outcome { return tutorialOutcome(outcomeOf(res)) }
	}
	return outcomeOf
}

// runWait is --run-wait.
func (t *runTools) runWait() time.Duration { return time.Duration(t.opts.RunWait) * time.Second }

// project builds a run call's answer from a run's record after its wait
// (nil: the run has no record, internal_error).
func (t *runTools) project(c *toolCall, r *runstore.File, replayed bool) (any, *failure) {
	if r == nil {
		return nil, fail(CodeInternalError)
	}
	out := t.projectRun(r, replayed)
	c.audit.Status = &out.Status
	return out, nil
}
