package serve

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
)

// The attended actions (docs/attended.md): continue, skip, reject, teach
// and escalate on a Needs Attention item. Every decision is
// attention.Decider's, through the Flow helper; serve keeps the tool
// table, the confirmation form and the map from the decider's result kind
// to a result or an error code. Flow's own message text never reaches a
// result, the audit log or stderr.

type attendedTool struct {
	name, title, action, confirm string
	ann                          *mcp.ToolAnnotations
	desc                         string
	elicit                       string
}

var (
	annAttLive   = &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: boolPtr(true), IdempotentHint: true, OpenWorldHint: boolPtr(true)}
	annAttReject = &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: boolPtr(true), IdempotentHint: true, OpenWorldHint: boolPtr(false)}
	annAttAudit  = &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: boolPtr(false), IdempotentHint: true, OpenWorldHint: boolPtr(false)}
)

// attendedTools in the wire order, one tool per line.
var attendedTools = []attendedTool{
	{name: "continue_attention", title: "Confirm human-completed step", action: "continue", confirm: "human_completed", ann: annAttLive, desc: "Continue a paused run only after the person completed the paused task in the live application. Flow verifies the postconditions and independent effects, checkpoints the step and resumes without actuating the step again. The local operator confirms in a form; a stale capability digest is refused.", elicit: "A person must already have completed the paused task in the visible application. Confirm that OpenAdapt may verify that result and resume after it; the completed task will not be performed again."},
	{name: "skip_attention", title: "Skip non-applicable step", action: "skip", confirm: "confirmed_not_applicable", ann: annAttLive, desc: "Skip the paused step only where the workflow declares a non-consequential skip; Flow rechecks the guard and refuses otherwise. The local operator confirms in a form; a stale capability digest is refused.", elicit: "Confirm that this paused task does not apply. OpenAdapt skips only if the workflow and its signed capability declare the skip safe; otherwise it refuses."},
	{name: "reject_attention", title: "Reject paused run", action: "reject", confirm: "confirmed_reject", ann: annAttReject, desc: "Reject ends the paused run permanently and dispatches no new action. Earlier effects need review of the protected local outcome. Use escalate when someone qualified could still continue the run. The local operator confirms in a form; a stale capability digest is refused.", elicit: "Confirm that OpenAdapt must end this run and never resume it. Rejecting dispatches no new action, but earlier steps may already have had effects: review the protected local report and transaction outcome. Choose escalation instead if a qualified colleague could still continue the run."},
	{name: "teach_attention", title: "Request corrective demonstration", action: "teach", confirm: "request_demonstration", ann: annAttAudit, desc: "Teach records an audited request for a corrective demonstration. The revision gate decides; the MCP client cannot rewrite a bundle. The local operator confirms in a form; a stale capability digest is refused.", elicit: "Confirm that OpenAdapt should record an audited request for a corrective demonstration. This does not rewrite or promote the workflow."},
	{name: "escalate_attention", title: "Escalate for qualified help", action: "escalate", confirm: "request_assistance", ann: annAttAudit, desc: "Escalate records an audited request for qualified help; the pause stays open. The local operator confirms in a form; a stale capability digest is refused.", elicit: "Confirm that OpenAdapt should record an audited escalation and keep the pause open for qualified help."},
}

func attendedInput(confirm string) json.RawMessage {
	return compact(`{"type":"object","properties":{
  "attention_id":{"type":"string","pattern":"^[0-9a-f]{24}$","description":"Opaque id returned by list_needs_attention."},
  "capability_digest":{"type":"string","pattern":"^sha256:[0-9a-f]{64}$","description":"Exact current capability digest for this item. A stale digest is refused."},
  "idempotency_key":{"type":"string","minLength":16,"maxLength":200,"pattern":"^[A-Za-z0-9._:-]{16,200}$","description":"Stable request id. Reuse it only to retry this exact action."},
  "` + confirm + `":{"type":"boolean","const":true,"description":"Explicit confirmation by the local operator."}},
 "required":["attention_id","capability_digest","idempotency_key","` + confirm + `"],"additionalProperties":false}`)
}

// decisionSchema is an attended decision's result.
const decisionSchema = `{"type":"object","properties":{
  "attention_id":{"type":"string","pattern":"^[0-9a-f]{24}$"},
  "decision_id":{"type":["string","null"],"pattern":"^[0-9a-f]{32}$"},
  "action":{"enum":["continue","skip","reject","teach","escalate"]},
  "status":{"enum":["completed","halted","needs_demonstration","escalated","rejected","refused"]},
  "success":{"type":"boolean"},
  "message":{"type":"string"},
  "report_success":{"type":["boolean","null"]},
  "next_transition":{"type":["string","null"]},
  "transition_receipt_digest":{"type":["string","null"]}},
 "required":["attention_id","action","status","success","message"],"additionalProperties":false}`

// attendedDecision is an attended decision's result.
type attendedDecision struct {
	AttentionID             string  `json:"attention_id"`
	DecisionID              *string `json:"decision_id"`
	Action                  string  `json:"action"`
	Status                  string  `json:"status"`
	Success                 bool    `json:"success"`
	Message                 string  `json:"message"`
	ReportSuccess           *bool   `json:"report_success"`
	NextTransition          *string `json:"next_transition"`
	TransitionReceiptDigest *string `json:"transition_receipt_digest"`
}

// Fixed copy per status (each status has its own message, with one for a
// completed skip). Never Flow's text.
var decisionCopy = map[string]string{
	"completed":           "Flow verified the result and resumed the run after the attended step without performing it again.",
	"completed/skip":      "Flow confirmed the declared skip and resumed the run after the step.",
	"halted":              "Flow accepted the decision, but the resumed run halted again. Review the local Needs Attention queue.",
	"needs_demonstration": "Flow recorded an audited request for a corrective demonstration. The pause stays open; the workflow is not changed.",
	"escalated":           "Flow recorded an audited escalation. The pause stays open for qualified help.",
	"rejected":            "Flow ended this run permanently and dispatched no new action. Earlier steps may already have had effects: review the protected local report and transaction outcome.",
	"refused":             "Flow refused this decision and nothing was done. Reload the item with get_attention_item and decide again with its current capability digest.",
	"busy":                "Another attended action for this pause or live session is in progress. Nothing was done; wait, then retry with the same idempotency_key.",
}

// registerActions adds the attended actions (with --allow-attended-actions
// and a helper); continue and skip only when the live session opened. Each
// action also has an app-only variant, app_<tool>, that the attention
// card's buttons call (docs/mcp.md "MCP Apps"): the same input, result and
// decision procedure under another name. With --attended-actions app-only
// only the variants are registered, so no tool a model sees can decide.
func (t *attentionTools) registerActions(reg *registry) {
	if !t.actions() {
		return
	}
	var offered []attendedTool
	for _, at := range attendedTools {
		if t.sandbox != nil && !slices.Contains(sandboxActions, at.action) {
			continue
		}
		if !flowhelper.IsLive(at.action) || t.live {
			offered = append(offered, at)
		}
	}
	if t.opts.AttendedActions != AttendedAppOnly {
		for _, at := range offered {
			t.addAction(reg, at, false)
		}
	}
	for _, at := range offered {
		t.addAction(reg, at, true)
	}
}

func (t *attentionTools) addAction(reg *registry, at attendedTool, appOnly bool) {
	if appOnly {
		at.name = appToolPrefix + at.name
	}
	if t.sandbox != nil {
		// The sandbox's items decide in memory, through the same form.
		reg.add(toolDef{name: at.name, title: at.title, desc: sandboxHeadline + at.desc, input: attendedInput(at.confirm),
			success: decisionSchema, ann: at.ann, rawResult: true, appOnly: appOnly}, func(ctx context.Context, c *toolCall) (any, *failure) {
			return t.sandbox.decide(ctx, c, at, t.confirm)
		})
		return
	}
	reg.add(toolDef{name: at.name, title: at.title, desc: at.desc, input: attendedInput(at.confirm),
		success: decisionSchema, ann: at.ann, rawResult: true, appOnly: appOnly}, func(ctx context.Context, c *toolCall) (any, *failure) {
		return t.decide(ctx, c, at)
	})
}

// confirmStop carries what the confirmation answered instead of a
// confirmed action (a failure, or the 2026-07-28 input-required result)
// out of the decider, which dispatches nothing then.
type confirmStop struct {
	body any
	f    *failure
}

func (c *confirmStop) Error() string { return "the operator did not confirm" }

// decide is one attended action (docs/attended.md "The checks, in order"):
// the schema check is the tool middleware's; the decider checks the item,
// asks for the operator's confirmation through the form, checks again and
// dispatches.
func (t *attentionTools) decide(ctx context.Context, c *toolCall, at attendedTool) (any, *failure) {
	if t.flowMissing {
		return nil, fail(CodeFlowNotFound) // nothing to ask the operator: Flow is not installed
	}
	id, _ := c.args["attention_id"].(string)
	digest, _ := c.args["capability_digest"].(string)
	key, _ := c.args["idempotency_key"].(string)
	c.audit.AttentionID = &id
	d := &attention.Decider{
		RunsRoot:    t.runsDir,
		Helper:      t.helper.h,
		BundleSteps: t.bundleSteps,
		Dispatching: func() func() { return attendedProgress(ctx, c.req, progressDispatched) },
	}
	confirm := func(ctx context.Context, _ attention.Item) (string, error) {
		if body, f := t.confirm.ask(ctx, c, at.name, at.elicit, id, digest); body != nil || f != nil {
			return "", &confirmStop{body: body, f: f}
		}
		return attention.DecidedByAutomation, nil
	}
	r, err := d.Decide(ctx, attention.Request{AttentionID: id, Action: at.action, CapabilityDigest: digest, IdempotencyKey: key}, confirm)
	var stop *confirmStop
	switch {
	case errors.As(err, &stop) && stop.f != nil:
		return nil, stop.f
	case errors.As(err, &stop):
		return stop.body, nil
	case err != nil:
		return nil, fail(CodeInternalError)
	}
	return t.answer(id, at.action, r)
}

// answer maps the decider's result to the tool's result or error code. A
// replayed answer (Flow's journaled decision) that is not a decision is
// internal_error unless it says the outcome is uncertain.
func (t *attentionTools) answer(id, action string, r attention.Result) (any, *failure) {
	switch r.Kind {
	case attention.Decided:
		return decisionOf(id, action, r.Decision), nil
	case attention.NotFound:
		return nil, fail(CodeAttentionNotFound)
	case attention.Stale:
		return nil, fail(CodeCapabilityStale)
	case attention.NotAllowed:
		return nil, fail(CodeActionNotAllowed)
	case attention.Unavailable:
		return nil, fail(CodeAttendedUnavailable)
	case attention.Uncertain, attention.Malformed:
		return nil, fail(CodeDeliveryUncertain)
	}
	if r.Replayed {
		return nil, fail(CodeInternalError)
	}
	switch r.Kind {
	case attention.PauseNotFound:
		return nil, fail(CodeAttentionNotFound)
	case attention.OperatorRefused:
		t.operatorWarned.Do(func() {
			_, _ = io.WriteString(t.stderr, "serve: the Flow helper disagreed on the local operator identity\n")
		})
		return refusedDecision(id, action, "refused"), nil
	case attention.Refused:
		return refusedDecision(id, action, "refused"), nil
	case attention.Busy:
		return refusedDecision(id, action, "busy"), nil
	}
	return nil, fail(CodeInternalError) // Failed
}

// decisionOf is the result of a decision Flow made (its checks passed; its
// next transition, when kept, is one the decider vouched for).
func decisionOf(id, action string, dec flowhelper.Decision) attendedDecision {
	msg := decisionCopy[dec.Status]
	if dec.Status == "completed" && action == "skip" {
		msg = decisionCopy["completed/skip"]
	}
	did := dec.DecisionID
	out := attendedDecision{AttentionID: id, DecisionID: &did, Action: action, Status: dec.Status, Message: msg,
		ReportSuccess: dec.ReportSuccess, TransitionReceiptDigest: dec.TransitionReceiptDigest, NextTransition: dec.NextTransition}
	out.Success = dec.Status == "completed" && dec.ReportSuccess != nil && *dec.ReportSuccess
	return out
}

func refusedDecision(id, action, copyKey string) attendedDecision {
	return attendedDecision{AttentionID: id, Action: action, Status: "refused", Message: decisionCopy[copyKey]}
}

// bundleSteps are the step ids a run of the bundle in dir may name as its
// next step, when dir is the folder of a workflow this server serves,
// verified and in plaintext (bundle.StepIDs).
func (t *attentionTools) bundleSteps(ctx context.Context, dir string) ([]string, bool) {
	for _, w := range t.cat.workflows {
		if !w.available || w.encrypted || filepath.Clean(w.dir) != dir {
			continue
		}
		ids, err := bundle.StepIDs(ctx, w.dir)
		return ids, err == nil
	}
	return nil, false
}
