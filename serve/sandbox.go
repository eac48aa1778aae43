package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
	"github.com/OpenAdaptAI/openadapt-agent/internal/cards"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// The sandbox (docs/mcp.md "Sandbox"): `serve` without --bundles,
// --tutorial, --authoring or --allow-run serves a synthetic workflow set
// through the normal surface (list/get/search, the run tools or
// run_workflow, get_run_report, the Needs Attention tools and the attended
// actions), one workflow per result an agent can meet. The simulated
// engine starts no process and writes no state: its runs and its attention
// items live in this process only and are gone at the next start. Every
// result says sandbox: true, its case and its engine, and its message opens
// with the sandbox sentence, so it is never taken for a real run.

// Sandbox engines (--sandbox-engine).
const (
	EngineSimulated = "simulated"
	EngineFlow      = "flow"
	EngineAuto      = "auto"
)

// sandboxEngines are the engines a result names (auto resolves to one of
// them at start), in wire order.
var sandboxEngines = []string{EngineSimulated, EngineFlow}

// sandboxDelay is how long the simulated timeout and long run take.
const sandboxDelay = 2 * time.Second

// The sandbox's cases, in listing order; each is the workflow with card
// name sandbox_<case>.
const (
	sandboxSuccess      = "success"
	sandboxHalt         = "halt"
	sandboxRefused      = "refused"
	sandboxInvalid      = "invalid_inputs"
	sandboxTimeout      = "timeout"
	sandboxInterrupted  = "interrupted"
	sandboxLongRun      = "long_run"
	sandboxUnsignedProd = "unsigned_production_success"
)

// sandboxCase is one synthetic workflow: what its card says, its inputs
// and the outcome a simulated run of it freezes (nil for a case whose
// outcome depends on time: see sandbox.begin).
type sandboxCase struct {
	name      string
	purpose   string
	doneMeans string
	steps     int
	params    []cards.Param
	inputs    string // the card's "inputs" object, "" for none
	choices   map[string][]string
	outcome   runstore.Outcome
}

func sandboxSummary(total, ok int) flowrun.Summary {
	return flowrun.Summary{StepsTotal: &total, StepsOK: &ok}
}

var sandboxCases = []sandboxCase{
	{name: sandboxSuccess, steps: 3,
		purpose:   "Sandbox: a run that completes and whose change is verified (simulated, nothing runs).",
		doneMeans: "status success with record_changed yes and proof simulated.",
		outcome: runstore.Outcome{Status: flowrun.StatusSuccess, ExecutionOutcome: flowrun.OutcomeVerified,
			MessageKey: keySuccess, Summary: sandboxSummary(3, 3), TransactionOutcome: flowrun.TxVerified}},
	{name: sandboxHalt, steps: 3,
		purpose:   "Sandbox: a run that halts with a durable pause and opens a Needs Attention item for Reject, Teach or Escalate (simulated).",
		doneMeans: "status halt, next_step wait_for_person, and an item in list_needs_attention.",
		outcome: runstore.Outcome{Status: flowrun.StatusHalt, ExecutionOutcome: flowrun.OutcomeHalted,
			MessageKey: keyHaltBeforeEffect, Summary: sandboxSummary(3, 1), TransactionOutcome: flowrun.TxHaltedBeforeEffect}},
	{name: sandboxRefused, steps: 3,
		purpose:   "Sandbox: a governed refusal before anything runs, naming the failed checks (simulated).",
		doneMeans: "status refused with failed_checks and safe_to_retry true.",
		outcome: runstore.Outcome{Status: flowrun.StatusRefused, MessageKey: keyRefused,
			FailedChecks: []flowrun.FailedCheck{flowrun.CheckNotCertified, flowrun.CheckApprovalMissing}}},
	{name: sandboxInvalid, steps: 2,
		purpose:   "Sandbox: typed inputs checked before anything runs. Send a value that breaks a rule to see invalid_inputs.",
		doneMeans: "a bad value answers invalid_arguments with invalid_inputs; valid values answer a simulated success.",
		params:    []cards.Param{{Name: "visit_date", Type: "date"}, {Name: "priority", Type: "enum"}, {Name: "note", Type: "string"}},
		choices:   map[string][]string{"priority": {"routine", "urgent"}},
		inputs: `{"visit_date":{"description":"A calendar date, YYYY-MM-DD."},
 "priority":{"description":"How soon: routine or urgent.","enum":["routine","urgent"]},
 "note":{"description":"A short synthetic note.","minLength":1,"maxLength":40}}`,
		outcome: runstore.Outcome{Status: flowrun.StatusSuccess, ExecutionOutcome: flowrun.OutcomeVerified,
			MessageKey: keySuccess, Summary: sandboxSummary(2, 2), TransactionOutcome: flowrun.TxVerified}},
	{name: sandboxTimeout, steps: 3,
		purpose:   "Sandbox: a run stopped at its deadline after about two seconds; its effect is uncertain (simulated).",
		doneMeans: "status timeout with record_changed unknown and next_step check_record.",
		outcome:   runstore.Outcome{Status: flowrun.StatusTimeout, MessageKey: keyTimeout}},
	{name: sandboxInterrupted, steps: 3,
		purpose:   "Sandbox: a run the server stopped mid-way; its effect is uncertain (simulated).",
		doneMeans: "status interrupted with record_changed unknown and next_step check_record.",
		outcome:   interrupted},
	{name: sandboxLongRun, steps: 5,
		purpose:   "Sandbox: a long run that answers running at once and ends about two seconds later (simulated).",
		doneMeans: "status running, then get_run_report with wait_ms answers success.",
		outcome: runstore.Outcome{Status: flowrun.StatusSuccess, ExecutionOutcome: flowrun.OutcomeVerified,
			MessageKey: keySuccess, Summary: sandboxSummary(5, 5), TransactionOutcome: flowrun.TxVerified}},
	{name: sandboxUnsignedProd, steps: 3,
		purpose:   "Sandbox: a verified change under a production profile without a Seal, which counts as failure (simulated).",
		doneMeans: "status error with effect_verified true, record_changed yes and safe_to_retry false.",
		outcome: runstore.Outcome{Status: flowrun.StatusError, ExecutionOutcome: flowrun.OutcomeVerified, EffectVerified: true,
			MessageKey: keyUnsignedProductionSuccess, Summary: sandboxSummary(3, 3), TransactionOutcome: flowrun.TxVerified}},
}

// sandboxWorkflowID is the fixed opaque id of a case: workflow_ and 24 hex
// digits of SHA-256 over a fixed string, so it has the shape of every id
// and is the same at every start.
func sandboxWorkflowID(name string) string {
	sum := sha256.Sum256([]byte("openadapt-agent sandbox workflow " + name))
	return "workflow_" + hex.EncodeToString(sum[:12])
}

// sandboxWorkflows builds the synthetic catalog: each case as an available
// workflow with its card, read by the same card parser as an operator's.
func sandboxWorkflows() ([]*workflow, map[*workflow]*sandboxCase) {
	ws := make([]*workflow, 0, len(sandboxCases))
	byWF := make(map[*workflow]*sandboxCase, len(sandboxCases))
	for i := range sandboxCases {
		c := &sandboxCases[i]
		id := sandboxWorkflowID(c.name)
		doc := map[string]any{"name": "sandbox_" + c.name, "purpose": c.purpose, "done_means": c.doneMeans}
		if c.inputs != "" {
			doc["inputs"] = json.RawMessage(c.inputs)
		}
		data, _ := json.Marshal(doc)
		card, err := cards.Parse(data, cards.Options{Params: c.params, Choices: func(n string) ([]string, error) { return c.choices[n], nil }})
		if err != nil {
			panic("serve: the sandbox card of " + c.name + " is invalid: " + err.Error())
		}
		names, types := make([]string, len(c.params)), make([]string, len(c.params))
		for j, p := range c.params {
			names[j], types[j] = p.Name, p.Type
		}
		w := &workflow{id: id, baseID: id, available: true, stepCount: c.steps, params: paramsOf(names, types),
			card: card, cardName: card.Name, slug: "sandbox_" + c.name}
		if w.params == nil {
			w.params = []param{}
		}
		for j := range w.params {
			w.params[j].in = card.Inputs[w.params[j].flow]
		}
		ws = append(ws, w)
		byWF[w] = c
	}
	return ws, byWF
}

// sandboxClock gives the simulated runs their timers; tests replace it
// with a fake one.
type sandboxClock interface {
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// sandboxMark ends every sandbox result and run tool failure.
type sandboxMark struct {
	Sandbox bool   `json:"sandbox"`
	Case    string `json:"sandbox_case,omitempty"`
	Engine  string `json:"sandbox_engine"`
}

// sandboxNote opens the message of every sandbox run result.
const sandboxNote = "SANDBOX: simulated by this server; nothing ran, no application or record was touched, and this is not a real run. It shows what a real run would answer: "

// sandboxRunOutcome is a sandbox run tool's result, and sandboxRunReport
// get_run_report's.
type sandboxRunOutcome struct {
	runOutcome
	sandboxMark
}

type sandboxRunReport struct {
	runReport
	sandboxMark
}

// simRun is one simulated run.
type simRun struct {
	id   string
	wf   *workflow
	c    *sandboxCase
	done chan struct{}

	mu  sync.Mutex
	rec runstore.File
}

func (r *simRun) record() *runstore.File {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.rec
	return &c
}

// freeze freezes the run's outcome once.
func (r *simRun) freeze(o runstore.Outcome, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.rec.Freeze(o, now) {
		return false
	}
	close(r.done)
	return true
}

// sandboxItem is one simulated Needs Attention item and the decisions
// taken on it (by idempotency key).
type sandboxItem struct {
	item      attention.Item
	runID     string
	decisions map[string]attendedDecision
	keys      []string // decisions' keys, oldest first
}

// Bounds of what the sandbox keeps in memory: the oldest runs and items
// go first.
const (
	maxSandboxRuns      = 1024 // also the idempotency keys kept
	maxSandboxItems     = 256
	maxSandboxDecisions = 64 // per item
)

// sandbox is the sandbox feature: the synthetic workflows, their simulated
// runs and attention items, the run tools and get_run_report.
type sandbox struct {
	opts   *Options
	engine string
	cat    *catalog
	cases  map[*workflow]*sandboxCase
	runs   *runTools // arguments, descriptions; the Flow engine's run call
	clock  sandboxClock

	mu       sync.Mutex
	live     map[string]*simRun
	order    []string
	items    []*sandboxItem
	bindings map[string]sandboxBinding
	keys     []string // bindings' keys, oldest first
	stop     chan struct{}
	stopOnce sync.Once
}

type sandboxBinding struct {
	digest string
	runID  string
}

func newSandbox(opts *Options, engine string) (*sandbox, []*workflow) {
	ws, cases := sandboxWorkflows()
	return &sandbox{opts: opts, engine: engine, cases: cases, clock: realClock{},
		live: map[string]*simRun{}, bindings: map[string]sandboxBinding{}, stop: make(chan struct{})}, ws
}

// mark is the sandbox mark of a result of case c ("" when none is known):
// the engine that produced it, simulated unless Flow ran it.
func (s *sandbox) mark(c string) sandboxMark {
	return sandboxMark{Sandbox: true, Case: c, Engine: EngineSimulated}
}

// byFlow reports whether the flow engine runs case c: Flow's synthetic
// tutorial produces exactly an unsigned production success.
func (s *sandbox) byFlow(c string) bool {
	return s.engine == EngineFlow && c == sandboxUnsignedProd && s.runs.tutorial != nil
}

// close ends every pending wait and interrupts every simulated run still
// going; nil-safe.
func (s *sandbox) close() {
	if s == nil {
		return
	}
	s.stopOnce.Do(func() { close(s.stop) })
	s.mu.Lock()
	runs := make([]*simRun, 0, len(s.live))
	for _, r := range s.live {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	for _, r := range runs {
		r.freeze(interrupted, time.Now())
	}
}

// register adds the run tools: run_workflow in catalog mode, else one per
// sandbox workflow, sorted by id, like the real ones.
func (s *sandbox) register(reg *registry) {
	if s == nil {
		return
	}
	outcome := sandboxSchema(runOutcomeSchema(false), true)
	if s.opts.ToolMode == "catalog" {
		reg.add(toolDef{name: toolRunWorkflow, title: "Run workflow", desc: sandboxRunDescription + runDescription(-1, nil, false),
			input: runWorkflowInput(false), success: outcome, failure: sandboxFailureSchema, run: true}, s.runCatalog)
		return
	}
	ws := slices.Clone(s.cat.workflows)
	slices.SortFunc(ws, func(a, b *workflow) int { return strings.Compare(a.id, b.id) })
	for _, w := range ws {
		prefix := sandboxRunDescription
		if s.byFlow(s.cases[w].name) {
			prefix = sandboxFlowDescription
		}
		desc := prefix + s.runs.cardDescription(w) + runDescription(w.stepCount, nil, false)
		reg.add(toolDef{name: "run_" + w.id, title: "Run workflow", desc: desc,
			input: runToolInput(w.params, false, false), success: outcome, failure: sandboxFailureSchema, run: true}, s.runPerWorkflow(w))
	}
}

// sandboxRunDescription opens every sandbox run tool's description.
const sandboxRunDescription = "SANDBOX (simulated by this server; nothing runs and no record changes). "

// sandboxFlowDescription opens the description of the run tool the flow
// engine runs through Flow.
const sandboxFlowDescription = "SANDBOX (runs Flow's synthetic MockMed tutorial on this computer; no real application or record). "

// registerReport adds get_run_report for the sandbox's runs.
func (s *sandbox) registerReport(reg *registry) {
	reg.add(toolDef{name: toolGetRunReport, title: "Get run report",
		desc:  "Returns the status and decision fields of a sandbox run started by this server's run tools (simulated: nothing ran). Pass wait_ms to long-poll until the run is terminal.",
		input: inputGetRunReport, success: sandboxSchema(runReportSchema(false), true), precheck: runIDFirst}, s.getRunReport)
}

func (s *sandbox) failure(f *failure, c string) *failure {
	m := s.mark(c)
	f.sandboxMark = &m
	return f
}

func (s *sandbox) runPerWorkflow(w *workflow) toolHandler {
	return func(ctx context.Context, c *toolCall) (any, *failure) {
		if _, has := c.args["url"]; has {
			return nil, s.failure(fail(CodeURLOverrideRefused), s.cases[w].name)
		}
		flat := map[string]any{}
		for k, v := range c.args {
			if k != "idempotency_key" {
				flat[k] = v
			}
		}
		return s.call(ctx, c, w, flat)
	}
}

func (s *sandbox) runCatalog(ctx context.Context, c *toolCall) (any, *failure) {
	if _, has := c.args["url"]; has {
		return nil, s.failure(fail(CodeURLOverrideRefused), "")
	}
	for k := range c.args {
		switch k {
		case "workflow_id", "params", "idempotency_key":
		default:
			return nil, s.failure(fail(CodeInvalidArguments), "")
		}
	}
	id, ok := c.args["workflow_id"].(string)
	flat, ok2 := c.args["params"].(map[string]any)
	if !ok || !ok2 {
		return nil, s.failure(fail(CodeInvalidArguments), "")
	}
	w := s.cat.lookup(id)
	if w == nil {
		return nil, s.failure(fail(CodeUnknownWorkflow), "")
	}
	return s.call(ctx, c, w, flat)
}

// call is a sandbox run call: the same argument checks as a real run
// (typed inputs, card constraints, idempotency_key), then a simulated run
// of the workflow's case.
func (s *sandbox) call(ctx context.Context, c *toolCall, w *workflow, flat map[string]any) (any, *failure) {
	sc := s.cases[w]
	ra, f := s.runs.arguments(w, flat, c.args)
	if f != nil {
		return nil, s.failure(f, sc.name)
	}
	if s.byFlow(sc.name) {
		return s.flowCall(ctx, c, w)
	}
	c.audit.WorkflowID = &w.id
	var digest string
	if ra.idem != "" {
		digest = sandboxDigest(w.id, ra.params)
		s.mu.Lock()
		b, bound := s.bindings[ra.idem]
		s.mu.Unlock()
		if bound {
			if b.digest != digest {
				return nil, s.failure(fail(CodeIdempotencyConflict), sc.name)
			}
			r := s.get(b.runID)
			if r == nil {
				return nil, s.failure(fail(CodeInternalError), sc.name)
			}
			replayed := true
			c.audit.Replayed = &replayed
			c.audit.RunID = &r.id
			return s.answer(c, s.wait(ctx, r, s.runWait(sc)), true), nil
		}
	}
	r := s.begin(w, sc)
	if ra.idem != "" {
		s.mu.Lock()
		s.bindings[ra.idem] = sandboxBinding{digest: digest, runID: r.id}
		s.keys = append(s.keys, ra.idem)
		for len(s.keys) > maxSandboxRuns {
			delete(s.bindings, s.keys[0])
			s.keys = s.keys[1:]
		}
		s.mu.Unlock()
	}
	c.audit.RunID = &r.id
	return s.answer(c, s.wait(ctx, r, s.runWait(sc)), false), nil
}

// sandboxFlowNote opens the message of a sandbox result Flow's synthetic
// tutorial produced.
const sandboxFlowNote = "SANDBOX: Flow's synthetic MockMed tutorial ran on this computer; no real application or record was touched. "

// flowCall runs Flow's synthetic tutorial for sandbox workflow w through
// the tutorial's own run call (its fixed arguments, admission and run
// state, idempotency included) and marks the answer as the sandbox's.
func (s *sandbox) flowCall(ctx context.Context, c *toolCall, w *workflow) (any, *failure) {
	body, f := s.runs.call(ctx, c, s.runs.tutorial.wf, map[string]any{})
	if f != nil {
		m := sandboxMark{Sandbox: true, Case: sandboxUnsignedProd, Engine: EngineFlow}
		f.sandboxMark = &m
		return nil, f
	}
	out, ok := body.(runOutcome)
	if !ok {
		return nil, s.failure(fail(CodeInternalError), sandboxUnsignedProd)
	}
	out.WorkflowID = w.id
	out.Message = sandboxFlowNote + out.Message
	return sandboxRunOutcome{runOutcome: out, sandboxMark: sandboxMark{Sandbox: true, Case: sandboxUnsignedProd, Engine: EngineFlow}}, nil
}

// sandboxDigest binds an idempotency key to a workflow and its inputs.
func sandboxDigest(id string, params map[string]string) string {
	b, _ := json.Marshal(struct {
		W string            `json:"w"`
		P map[string]string `json:"p"`
	}{id, params})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// runWait is how long a run call waits: --run-wait, none for the long run
// (its point is the running answer).
func (s *sandbox) runWait(sc *sandboxCase) time.Duration {
	if sc.name == sandboxLongRun {
		return 0
	}
	return time.Duration(s.opts.RunWait) * time.Second
}

// begin starts a simulated run of case sc: its outcome is frozen at once,
// or after sandboxDelay for the timeout and the long run (interrupted if
// the server stops first). A halt opens its attention item.
func (s *sandbox) begin(w *workflow, sc *sandboxCase) *simRun {
	now := time.Now()
	r := &simRun{id: flowrun.NewRunID(), wf: w, c: sc, done: make(chan struct{})}
	r.rec = runstore.File{SchemaVersion: runstore.SchemaVersion, RunID: r.id, WorkflowID: w.id, BaseWorkflowID: w.baseID,
		StartedAt: now.UTC().Format(time.RFC3339Nano), Phase: runstore.PhaseRunning}
	s.mu.Lock()
	s.live[r.id] = r
	s.order = append(s.order, r.id)
	for len(s.order) > maxSandboxRuns {
		delete(s.live, s.order[0])
		s.order = s.order[1:]
	}
	s.mu.Unlock()
	switch sc.name {
	case sandboxTimeout, sandboxLongRun:
		timer := s.clock.After(sandboxDelay)
		go func() {
			select {
			case <-timer:
				r.freeze(sc.outcome, time.Now())
			case <-s.stop:
				r.freeze(interrupted, time.Now())
			}
		}()
	case sandboxHalt:
		s.openItem(r, now)
		r.freeze(sc.outcome, now)
	default:
		r.freeze(sc.outcome, now)
	}
	return r
}

// wait waits up to d for r to end (the stop of the server ends it at once)
// and returns its record.
func (s *sandbox) wait(ctx context.Context, r *simRun, d time.Duration) *runstore.File {
	if d <= 0 {
		return r.record()
	}
	select {
	case <-r.done:
	case <-s.clock.After(d):
	case <-ctx.Done():
	case <-s.stop:
	}
	return r.record()
}

func (s *sandbox) get(runID string) *simRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[runID]
}

// answer projects a simulated run's record as a run tool's result.
func (s *sandbox) answer(c *toolCall, rec *runstore.File, replayed bool) sandboxRunOutcome {
	out := runOutcome{runCore: coreOf(rec), Replayed: replayed, runDecision: runDecisionOf(frozenOutcome(rec), true)}
	out.Message = sandboxNote + out.Message
	if o := frozenOutcome(rec); o != nil && o.Status == flowrun.StatusHalt {
		out.NeedsAttention = &attentionSlot{item: s.itemForRun(rec.RunID)}
	}
	c.audit.Status = &out.Status
	return sandboxRunOutcome{runOutcome: out, sandboxMark: s.mark(s.caseOf(rec.WorkflowID))}
}

// caseOf is the case of a sandbox workflow id.
func (s *sandbox) caseOf(id string) string {
	if w := s.cat.byID[id]; w != nil {
		return s.cases[w].name
	}
	return ""
}

// getRunReport answers get_run_report from the simulated runs: a run id
// this process did not start is report_unavailable.
func (s *sandbox) getRunReport(ctx context.Context, c *toolCall) (any, *failure) {
	runID, _ := c.args["run_id"].(string)
	r := s.get(runID)
	if r == nil && s.engine == EngineFlow {
		return s.flowReport(ctx, c)
	}
	if r == nil {
		return nil, fail(CodeReportUnavailable)
	}
	c.audit.RunID = &r.id
	rec := r.record()
	if w, ok := c.args["wait_ms"].(float64); ok && w > 0 && rec.Phase != runstore.PhaseTerminal {
		rec = s.wait(ctx, r, min(time.Duration(w)*time.Millisecond, maxWait))
	}
	out := runReport{runCore: coreOf(rec), runDecision: runDecisionOf(frozenOutcome(rec), true)}
	out.Message = sandboxNote + out.Message
	c.audit.Status = &out.Status
	return sandboxRunReport{runReport: out, sandboxMark: s.mark(r.c.name)}, nil
}

// flowReport answers get_run_report for a run of Flow's tutorial from the
// runs folder, marked as the sandbox's flow result.
func (s *sandbox) flowReport(ctx context.Context, c *toolCall) (any, *failure) {
	body, f := s.runs.getRunReport(ctx, c)
	if f != nil {
		return nil, f
	}
	out, ok := body.(runReport)
	if !ok || out.WorkflowID != s.runs.tutorial.wf.id {
		return nil, fail(CodeReportUnavailable)
	}
	out.WorkflowID = sandboxWorkflowID(sandboxUnsignedProd)
	out.Message = sandboxFlowNote + out.Message
	return sandboxRunReport{runReport: out, sandboxMark: sandboxMark{Sandbox: true, Case: sandboxUnsignedProd, Engine: EngineFlow}}, nil
}

// The sandbox's Needs Attention items (docs/mcp.md "Sandbox"): a halted
// sandbox run opens one, which takes Reject, Teach and Escalate through
// the same confirmation form as a real item; the decision is simulated.

// sandboxActions are the actions a sandbox item allows.
var sandboxActions = []string{"reject", "teach", "escalate"}

const sandboxHeadline = "Sandbox (simulated): "

func (s *sandbox) openItem(r *simRun, now time.Time) {
	created := now.UTC().Format(time.RFC3339)
	const category = "human_required"
	it := attention.Item{
		ID: attention.ID(r.id), CreatedAt: &created, Category: category,
		Headline: sandboxHeadline + attention.Headline(category), NextAction: attention.NextAction(category),
		Status: "pending", HumanRequired: true, DurablyPaused: true,
		Capability: &attention.Capability{
			Digest:         "sha256:" + randomHex(32),
			ExpiresAt:      now.Add(24 * time.Hour).UTC().Format(time.RFC3339),
			AllowedActions: slices.Clone(sandboxActions), DeliveryState: "not_delivered",
		},
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = append(s.items, &sandboxItem{item: it, runID: r.id, decisions: map[string]attendedDecision{}})
	if len(s.items) > maxSandboxItems {
		s.items = s.items[1:]
	}
}

// attentionItems is the open sandbox items, newest first (the order of
// the real queue).
func (s *sandbox) attentionItems() []attention.Item {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []attention.Item{}
	for i := len(s.items) - 1; i >= 0; i-- {
		if it := s.items[i]; it.item.DurablyPaused {
			out = append(out, copyItem(it.item))
		}
	}
	return out
}

func copyItem(it attention.Item) attention.Item {
	if it.Capability != nil {
		c := *it.Capability
		c.AllowedActions = slices.Clone(c.AllowedActions)
		it.Capability = &c
	}
	return it
}

// attentionItem is the open sandbox item id.
func (s *sandbox) attentionItem(id string) (attention.Item, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.find(id); it != nil && it.item.DurablyPaused {
		return copyItem(it.item), true
	}
	return attention.Item{}, false
}

func (s *sandbox) find(id string) *sandboxItem {
	for _, it := range s.items {
		if it.item.ID == id {
			return it
		}
	}
	return nil
}

// itemForRun is the open item of a run (nil when none).
func (s *sandbox) itemForRun(runID string) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range s.items {
		if it.runID == runID && it.item.DurablyPaused {
			return copyItem(it.item)
		}
	}
	return nil
}

// sandboxDecisionCopy is the message of each simulated decision.
var sandboxDecisionCopy = map[string]string{
	"rejected":            "Sandbox (simulated): the run is ended permanently, as Reject would end a real paused run. Nothing left this process.",
	"needs_demonstration": "Sandbox (simulated): a request for a corrective demonstration is recorded here only; the pause stays open. Nothing left this process.",
	"escalated":           "Sandbox (simulated): an escalation is recorded here only; the pause stays open for qualified help. Nothing left this process.",
}

var sandboxActionStatus = map[string]string{"reject": "rejected", "teach": "needs_demonstration", "escalate": "escalated"}

// decide is a sandbox attended action: the item, its digest and the
// action are checked, the operator confirms in the same form as for a real
// item, the checks run again, and the decision is simulated. A retry with
// the same idempotency_key answers the same decision.
func (s *sandbox) decide(ctx context.Context, c *toolCall, at attendedTool, form *confirmer) (any, *failure) {
	id, _ := c.args["attention_id"].(string)
	digest, _ := c.args["capability_digest"].(string)
	key, _ := c.args["idempotency_key"].(string)
	c.audit.AttentionID = &id
	check := func() (*attendedDecision, *failure) {
		s.mu.Lock()
		defer s.mu.Unlock()
		it := s.find(id)
		if it == nil {
			return nil, fail(CodeAttentionNotFound)
		}
		if d, ok := it.decisions[key]; ok && d.Action == at.action {
			return &d, nil
		}
		switch {
		case !it.item.DurablyPaused:
			return nil, fail(CodeAttentionNotFound)
		case it.item.Capability == nil || it.item.Capability.Digest != digest:
			return nil, fail(CodeCapabilityStale)
		case !slices.Contains(it.item.Capability.AllowedActions, at.action):
			return nil, fail(CodeActionNotAllowed)
		}
		return nil, nil
	}
	if d, f := check(); d != nil || f != nil {
		if d != nil {
			return *d, nil
		}
		return nil, f
	}
	if body, f := form.ask(ctx, c, at.name, sandboxHeadline+at.elicit, id, digest); body != nil || f != nil {
		if f != nil {
			return nil, f
		}
		return body, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.find(id)
	if it == nil || !it.item.DurablyPaused {
		return nil, fail(CodeAttentionNotFound)
	}
	if it.item.Capability == nil || it.item.Capability.Digest != digest {
		return nil, fail(CodeCapabilityStale)
	}
	status := sandboxActionStatus[at.action]
	did := randomHex(16)
	d := attendedDecision{AttentionID: id, DecisionID: &did, Action: at.action, Status: status, Message: sandboxDecisionCopy[status]}
	it.decisions[key] = d
	it.keys = append(it.keys, key)
	if len(it.keys) > maxSandboxDecisions {
		delete(it.decisions, it.keys[0])
		it.keys = it.keys[1:]
	}
	if at.action == "reject" {
		it.item.Status, it.item.DurablyPaused = "rejected", false
	}
	return d, nil
}

// sandboxEngineError is the message of a bad --sandbox-engine.
var sandboxEngineError = fmt.Sprintf("--sandbox-engine must be %s, %s or %s", EngineSimulated, EngineFlow, EngineAuto)

// newAutoSandbox is --sandbox-engine auto: the flow engine when Flow is
// found and its helper starts and passes the tutorial's version gate
// (docs/helper.md, Version gate), else the simulated engine, with one
// stderr line saying why. Without Flow nothing is started or written.
func newAutoSandbox(opts Options, stderr io.Writer) (*Server, error) {
	if stderr == nil {
		stderr = io.Discard
	}
	opts.SandboxEngine = EngineSimulated
	if _, err := newFlowCommand(opts).resolve(); err != nil {
		fmt.Fprintln(stderr, "serve: sandbox engine auto: openadapt-flow was not found; using the simulated engine")
		return New(opts, stderr)
	}
	flow := opts
	flow.SandboxEngine = EngineFlow
	s, err := New(flow, stderr)
	var ce *ConfigError
	if err == nil || !errors.As(err, &ce) || ce.Flag {
		return s, err
	}
	fmt.Fprintf(stderr, "serve: sandbox engine auto: Flow's tutorial is not usable here (%s); using the simulated engine\n", oneLineMsg(ce.Msg))
	return New(opts, stderr)
}

// oneLineMsg keeps a message to its first line.
func oneLineMsg(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
