package serve

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// D2 attended tools (mcp-surface.md §5.9, §9; flow-helper.md §4.3, §6,
// §11.1, §12). Every decision goes through the Flow-side helper; Flow's own
// message text never reaches a result, the audit log or stderr by default.

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

// attendedTools in §4.2 order (rows 6–10), one tool per line.
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

// decisionSchema is D (§5.9).
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

// decisionP is D.
type decisionP struct {
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

// Fixed copy per status (§5.9: each status has its own message, with a
// reject-specific one). Never Flow's text.
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

// registerAttended adds the D2 tools (§4.2 rows 6–10).
func (s *Server) registerAttended() {
	if !s.opts.AllowAttendedActions || s.helper == nil {
		return
	}
	for _, t := range attendedTools {
		if flowhelper.IsLive(t.action) && !s.helper.live {
			continue
		}
		t := t
		s.addTool(toolDef{name: t.name, title: t.title, desc: t.desc, input: attendedInput(t.confirm),
			success: decisionSchema, ann: t.ann, rawResult: true}, func(ctx context.Context, c *toolCall) (any, *failure) {
			return s.attendedCall(ctx, c, t)
		})
	}
}

// requestDigest is Flow's request_digest (flowhelper.RequestDigest).
func requestDigest(action, digest, key string) string {
	return flowhelper.RequestDigest(action, digest, key)
}

// attendedCall is §9.1 steps 3–9 (steps 1–2 are registration and the
// schema check in checkArguments).
func (s *Server) attendedCall(ctx context.Context, c *toolCall, t attendedTool) (any, *failure) {
	id, _ := c.args["attention_id"].(string)
	digest, _ := c.args["capability_digest"].(string)
	key, _ := c.args["idempotency_key"].(string)
	c.audit.AttentionID = &id
	// The helper stopped: nothing is dispatched (flow-helper.md §2.9).
	if !s.helper.alive() {
		return nil, fail(CodeAttendedUnavailable)
	}
	// 3–5.
	it, err := attention.Get(s.prep.runsDir, id)
	if err != nil {
		return s.replayAfterClose(ctx, t, id, digest, key, CodeAttentionNotFound)
	}
	if it.Capability == nil || it.Capability.Digest != digest {
		return s.replayAfterClose(ctx, t, id, digest, key, CodeCapabilityStale)
	}
	if !slices.Contains(it.Capability.AllowedActions, t.action) {
		return nil, fail(CodeActionNotAllowed)
	}
	// 6. elicitation: a raw result is the 2026-07-28 input-required answer.
	if res, f := s.confirm(ctx, c, t, id, digest); f != nil || res != nil {
		if f != nil {
			return nil, f
		}
		return res, nil
	}
	// 7.
	it, err = attention.Get(s.prep.runsDir, id)
	if err != nil || it.Capability == nil || it.Capability.Digest != digest {
		return nil, fail(CodeCapabilityStale)
	}
	// 8.
	if !s.helper.alive() {
		return nil, fail(CodeAttendedUnavailable)
	}
	stop := s.attendedProgress(ctx, c.req, progressDispatched)
	dec, err := s.helper.h.Act(ctx, flowhelper.ActRequest{
		RunsRoot: s.prep.runsDir, AttentionID: id, CapabilityDigest: digest, IdempotencyKey: key,
		Action: t.action, Disposition: flowhelper.Dispositions[t.action],
		DecidedBy: "automation", Operator: s.helper.operator,
	})
	stop()
	// 9.
	return s.mapDecision(id, t.action, dec, err, false)
}

// replayAfterClose (flow-helper.md §6, decisions §11.1 Q2 and §12.8): a
// closed item, or another digest, still answers a byte-identical retry
// with the journaled decision, without elicitation and dispatching
// nothing. Otherwise the original failure stands.
func (s *Server) replayAfterClose(ctx context.Context, t attendedTool, id, digest, key string, orig Code) (any, *failure) {
	dir, ok := attention.RunDir(s.prep.runsDir, id)
	if !ok || !journalHas(dir, key, requestDigest(t.action, digest, key)) {
		return nil, fail(orig)
	}
	dec, err := s.helper.h.Replay(ctx, flowhelper.ReplayRequest{Target: flowhelper.Target{RunsRoot: s.prep.runsDir, AttentionID: id, CapabilityDigest: digest, IdempotencyKey: key}, Action: t.action, Disposition: flowhelper.Dispositions[t.action]})
	var he *flowhelper.Error
	if errors.As(err, &he) && (he.Reason == "no_prior_decision" || he.Reason == "attention_not_found") {
		return nil, fail(orig)
	}
	return s.mapDecision(id, t.action, dec, err, true)
}

// journalLimit bounds the read of a run's checkpoint manifest.
var journalLimit = fsutil.Limit{Kind: "attended decision journal", Max: 8 << 20}

// journalHas reports whether dir's decision journal holds a terminal
// decision for key with this request digest (read only).
func journalHas(dir, key, reqDigest string) bool {
	j, ok := flowhelper.LastJournaled(context.Background(), dir, key)
	return ok && j.RequestDigest == reqDigest && flowhelper.TerminalStatuses[j.Status]
}

// mapDecision is flow-helper.md §4.3.
func (s *Server) mapDecision(id, action string, dec flowhelper.Decision, err error, replay bool) (any, *failure) {
	if err != nil {
		var te *flowhelper.TransportError
		if errors.As(err, &te) {
			if te.Written {
				return nil, fail(CodeDeliveryUncertain)
			}
			return nil, fail(CodeAttendedUnavailable)
		}
		var he *flowhelper.Error
		if !errors.As(err, &he) {
			return nil, fail(CodeInternalError)
		}
		if replay {
			if he.Kind == flowhelper.KindUncertain {
				return nil, fail(CodeDeliveryUncertain)
			}
			return nil, fail(CodeInternalError)
		}
		switch {
		case he.Kind == flowhelper.KindRefused && he.Reason == "attention_not_found":
			return nil, fail(CodeAttentionNotFound)
		case he.Kind == flowhelper.KindRefused && (he.Reason == "operator_mismatch" || he.Reason == "operator_blank"):
			s.warnOnce(&s.operatorWarned, "serve: the Flow helper disagreed on the local operator identity")
			return refusedD(id, action, "refused"), nil
		case he.Kind == flowhelper.KindRefused:
			return refusedD(id, action, "refused"), nil
		case he.Kind == flowhelper.KindBusy:
			return refusedD(id, action, "busy"), nil
		case he.Kind == flowhelper.KindUncertain, he.Kind == flowhelper.KindInternal && he.Dispatched:
			return nil, fail(CodeDeliveryUncertain)
		}
		return nil, fail(CodeInternalError)
	}
	if dec.Check(action) != nil {
		return nil, fail(CodeDeliveryUncertain)
	}
	msg := decisionCopy[dec.Status]
	if dec.Status == "completed" && action == "skip" {
		msg = decisionCopy["completed/skip"]
	}
	did := dec.DecisionID
	out := decisionP{AttentionID: id, DecisionID: &did, Action: action, Status: dec.Status, Message: msg,
		ReportSuccess: dec.ReportSuccess, TransitionReceiptDigest: dec.TransitionReceiptDigest}
	out.Success = dec.Status == "completed" && dec.ReportSuccess != nil && *dec.ReportSuccess
	if dec.NextTransition != nil && s.knownTransition(id, *dec.NextTransition) {
		nt := *dec.NextTransition
		out.NextTransition = &nt
	}
	return out, nil
}

func refusedD(id, action, copyKey string) decisionP {
	return decisionP{AttentionID: id, Action: action, Status: "refused", Message: decisionCopy[copyKey]}
}

func (s *Server) warnOnce(flag *sync.Once, line string) {
	flag.Do(func() { _, _ = s.stderr.Write([]byte(line + "\n")) })
}

// knownTransition implements §11.1 Q6: next_transition passes when it is
// <complete>, <program-transition-receipt>, or one of the ids of the run's
// own bundle, the catalog workflow that verified (available) and whose
// directory equals the plaintext checkpoints/_manifest.json bundle_dir.
func (s *Server) knownTransition(id, next string) bool {
	if next == "<complete>" || next == "<program-transition-receipt>" {
		return true
	}
	dir, ok := attention.RunDir(s.prep.runsDir, id)
	if !ok {
		return false
	}
	var man struct {
		BundleDir string `json:"bundle_dir"`
	}
	if !readSmallJSON(filepath.Join(dir, "checkpoints", "_manifest.json"), journalLimit, &man) || man.BundleDir == "" {
		return false
	}
	for _, w := range s.cat.workflows {
		if !w.available || w.encrypted || filepath.Clean(w.dir) != filepath.Clean(man.BundleDir) {
			continue
		}
		return slices.Contains(bundleIDs(w.dir), next)
	}
	return false
}

func readSmallJSON(p string, lim fsutil.Limit, v any) bool {
	data, err := fsutil.ReadFile(context.Background(), p, lim, fsutil.NoFollow)
	return err == nil && pyjson.Unmarshal(data, pyjson.Options{}, v) == nil
}

// bundleIDs are steps[*].id and the state keys and step ids of
// program.states and subflows.*.states of a plaintext workflow.json.
func bundleIDs(dir string) []string {
	type states map[string]struct {
		Step *struct {
			ID string `json:"id"`
		} `json:"step"`
	}
	var wf struct {
		Steps []struct {
			ID string `json:"id"`
		} `json:"steps"`
		Program *struct {
			States states `json:"states"`
		} `json:"program"`
		Subflows map[string]struct {
			States states `json:"states"`
		} `json:"subflows"`
	}
	if !readSmallJSON(filepath.Join(dir, "workflow.json"), fsutil.WorkflowJSON, &wf) {
		return nil
	}
	var ids []string
	for _, st := range wf.Steps {
		ids = append(ids, st.ID)
	}
	add := func(ss states) {
		for k, v := range ss {
			ids = append(ids, k)
			if v.Step != nil {
				ids = append(ids, v.Step.ID)
			}
		}
	}
	if wf.Program != nil {
		add(wf.Program.States)
	}
	for _, sf := range wf.Subflows {
		add(sf.States)
	}
	return ids
}

// Progress messages: while the decision is dispatched (flow-helper.md
// §3.2), and while the form waits for the person (§9.2).
const (
	progressDispatched = "Attended action in progress."
	progressConfirm    = "Waiting for the local operator's confirmation."
)

// attendedProgress sends msg every 10 s until stopped, when the request
// carries a progress token.
func (s *Server) attendedProgress(ctx context.Context, req *mcp.CallToolRequest, msg string) func() {
	var token any
	if req != nil && req.Params != nil {
		token = req.Params.GetProgressToken()
	}
	if token == nil || req.Session == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(orDefault(testOnlyProgressEvery, attendedProgressEvery))
		defer tick.Stop()
		n := 0.0
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				n++
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: n, Message: msg})
			}
		}
	}()
	return func() { close(done) }
}

// attendedProgressEvery is the progress interval of a running attended
// action; testOnlyProgressEvery, when positive, replaces it.
const attendedProgressEvery = 10 * time.Second

var testOnlyProgressEvery time.Duration

// orDefault is d when a test set it (positive), else def.
func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// ---------------------------------------------------------------- elicitation (§9.2)

// elicitSchema is the requested schema of the confirmation form.
var elicitSchema = json.RawMessage(`{"type":"object","properties":{"confirmed":{"type":"boolean","title":"I confirm this attended action"}},"required":["confirmed"]}`)

// elicitTimeout bounds the confirmation form; testOnlyElicitTimeout, when
// positive, replaces it.
const elicitTimeout = 120 * time.Second

var testOnlyElicitTimeout time.Duration

const inputKey = "operator_confirmation"

// formCapable is §9.2's capability rule.
func formCapable(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	return caps.Elicitation.Form != nil || caps.Elicitation.URL == nil
}

func era2026(req *mcp.CallToolRequest) bool {
	if req == nil || req.Session == nil {
		return false
	}
	p := req.Session.InitializeParams()
	return p != nil && p.ProtocolVersion >= "2026-07-28"
}

func elicitParams(t attendedTool) *mcp.ElicitParams {
	var schema any
	_ = json.Unmarshal(elicitSchema, &schema)
	return &mcp.ElicitParams{Mode: "form", Message: t.elicit, RequestedSchema: schema}
}

// accepted is the accept rule: action accept and confirmed exactly true.
func accepted(r *mcp.ElicitResult) bool {
	if r == nil || r.Action != "accept" || r.Content == nil {
		return false
	}
	v, ok := r.Content["confirmed"].(bool)
	return ok && v
}

// confirm runs step 6. It returns (nil, nil) when the operator confirmed,
// a failure, or (for a 2026-07-28 session's first call) the raw
// input-required result.
func (s *Server) confirm(ctx context.Context, c *toolCall, t attendedTool, id, digest string) (any, *failure) {
	if !formCapable(c.req.ClientCapabilities()) {
		return nil, fail(CodeElicitationUnsupported)
	}
	if era2026(c.req) {
		return s.confirmInputRequired(c, t, id, digest)
	}
	// 2025 eras: a real elicitation/create; inputResponses are ignored.
	// Progress keeps a TS-SDK client's 60 s tools/call timeout from firing
	// while the person thinks (§9.2).
	ectx, cancel := context.WithTimeout(ctx, orDefault(testOnlyElicitTimeout, elicitTimeout))
	defer cancel()
	stop := s.attendedProgress(ectx, c.req, progressConfirm)
	res, err := c.req.Session.Elicit(ectx, elicitParams(t))
	stop()
	if err != nil || !accepted(res) {
		return nil, fail(CodeOperatorDeclined)
	}
	return nil, nil
}

// rawResult is a handler body the tool middleware passes through
// unchanged: the 2026-07-28 input-required result, exempt from the
// structuredContent envelope (§12.22).
type rawResult struct{ res *mcp.CallToolResult }

// requestState is the signed RequestState payload.
type requestState struct {
	Tool       string `json:"tool"`
	ArgsDigest string `json:"args_digest"`
	Attention  string `json:"attention_id"`
	Capability string `json:"capability_digest"`
	Nonce      string `json:"nonce"`
	Exp        int64  `json:"exp"`
}

// argsDigest binds the state to the retried arguments.
func argsDigest(args map[string]any) string {
	b, _ := json.Marshal(args) // map keys are sorted
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

type stateKeeper struct {
	once sync.Once
	key  []byte
	mu   sync.Mutex
	used map[string]int64 // nonce -> exp
}

func (k *stateKeeper) secret() []byte {
	k.once.Do(func() {
		k.key = make([]byte, 32)
		_, _ = rand.Read(k.key)
		k.used = map[string]int64{}
	})
	return k.key
}

func (k *stateKeeper) sign(st requestState) string {
	payload, _ := json.Marshal(st)
	m := hmac.New(sha256.New, k.secret())
	m.Write(payload)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verify checks the MAC, expiry and single use; it consumes the nonce.
func (k *stateKeeper) verify(s string, now time.Time) (requestState, bool) {
	var st requestState
	p, sig, ok := bytes.Cut([]byte(s), []byte("."))
	if !ok {
		return st, false
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(string(p))
	mac, err2 := base64.RawURLEncoding.DecodeString(string(sig))
	if err1 != nil || err2 != nil {
		return st, false
	}
	m := hmac.New(sha256.New, k.secret())
	m.Write(payload)
	if !hmac.Equal(m.Sum(nil), mac) || json.Unmarshal(payload, &st) != nil || now.Unix() > st.Exp {
		return st, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for n, exp := range k.used {
		if now.Unix() > exp {
			delete(k.used, n)
		}
	}
	if _, seen := k.used[st.Nonce]; seen {
		return st, false
	}
	k.used[st.Nonce] = st.Exp
	return st, true
}

func (s *Server) confirmInputRequired(c *toolCall, t attendedTool, id, digest string) (any, *failure) {
	now := time.Now()
	p := c.req.Params
	if p.RequestState == "" {
		nonce := make([]byte, 16)
		_, _ = rand.Read(nonce)
		st := requestState{Tool: t.name, ArgsDigest: argsDigest(c.args), Attention: id, Capability: digest,
			Nonce: hex.EncodeToString(nonce), Exp: now.Add(10 * time.Minute).Unix()}
		return rawResult{&mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{inputKey: elicitParams(t)},
			RequestState:  s.states.sign(st),
		}}, nil
	}
	st, ok := s.states.verify(p.RequestState, now)
	if !ok || st.Tool != t.name || st.ArgsDigest != argsDigest(c.args) || st.Attention != id || st.Capability != digest {
		return nil, fail(CodeOperatorDeclined)
	}
	r, ok := p.InputResponses[inputKey].(*mcp.ElicitResult)
	if !ok || !accepted(r) {
		return nil, fail(CodeOperatorDeclined)
	}
	return nil, nil
}
