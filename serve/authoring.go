package serve

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/authoring"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// The authoring tools (docs/authoring.md). Every tool reaches Flow's
// authoring session through the helper's authoring.<tool> op; every result
// is a closed projection built in internal/authoring from validated
// values. A tool-level refusal is {"status":"error","reason":"<code>"}.

// authoringTools are the 15 authoring tools over the open session. The
// last answer (get_command_result) and the bind status are the helper's
// (authoring.get_command_result, authoring.bind_status).
type authoringTools struct {
	sess    *authoring.HelperSession
	confirm *confirmer // admit's form
	mu      sync.Mutex
	// the pause of a pause_for_input until continue_input
	pauseParam string
	paused     bool
}

var (
	annAuthMut   = &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: boolPtr(true), IdempotentHint: false, OpenWorldHint: boolPtr(true)}
	annAuthHalt  = &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: boolPtr(true), IdempotentHint: true, OpenWorldHint: boolPtr(false)}
	annAuthAdmit = &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: boolPtr(false), IdempotentHint: true, OpenWorldHint: boolPtr(false)}
)

// The refusal codes of the authoring tools (lowercase; the order is wire,
// new codes are appended). Every code of Flow's AuthoringError reaches the
// wire as one of them (docs/authoring.md, Errors); Flow's refusal of an
// argument this server already checked is the invalid_arguments failure.
var authoringReasons = []authoring.Code{
	authoring.CodeStaleNode, authoring.CodeInFlight, authoring.CodeCoachOnly, authoring.CodeNotRecording,
	authoring.CodeNotPaused, authoring.CodeMissingSecretType, authoring.CodeAdmitRefused,
	authoring.CodeAuthoringUnavailable, authoring.CodeNotCompiled,
	authoring.CodeHalted, authoring.CodeAlreadyRecording, authoring.CodeMissingPauseTarget,
	authoring.CodeMissingRedactRegion, authoring.CodeSessionRefused,
}

func authoringRefusalSchema() string {
	parts := make([]string, len(authoringReasons))
	for i, c := range authoringReasons {
		parts[i] = jstr(string(c))
	}
	return `{"type":"object","properties":{"status":{"const":"error"},"reason":{"enum":[` + strings.Join(parts, ",") + `]}},"required":["status","reason"],"additionalProperties":false}`
}

// authOut is a tool's success schema: its result or a tool-level refusal.
func authOut(result string) string {
	return `{"type":"object","oneOf":[` + result + `,` + authoringRefusalSchema() + `]}`
}

const (
	nodeIDPattern  = `^n_[0-9a-f]{8}$`
	paramPattern   = `^[a-z][a-z0-9_]{0,31}$`
	labelSchema    = `{"type":"string","pattern":"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}$"}`
	boundsSchema   = `{"type":"object","properties":{"x":{"type":"number","minimum":0,"maximum":1},"y":{"type":"number","minimum":0,"maximum":1},"w":{"type":"number","minimum":0,"maximum":1},"h":{"type":"number","minimum":0,"maximum":1}},"required":["x","y","w","h"],"additionalProperties":false}`
	workflowIDProp = `"workflow_id":{"type":"string","pattern":"^wf_[A-Za-z0-9_-]{8,64}$"}`
)

// observeSchema is the closed openadapt.authoring.observe/v1 (openadapt-types
// authoring-observe-v1, with the keys this server emits).
var observeSchema = `{"type":"object","properties":{
  "schema_version":{"const":"openadapt.authoring.observe/v1"},
  "backend":{"enum":["macos","linux","windows","web","rdp","citrix"]},
  "provider":{"enum":["playwright_ax","macos_ax","windows_uia","linux_atspi","none"]},
  "mode":{"const":"authoring"},
  "agent_drive":{"type":"boolean"},
  "coach_only":{"type":"boolean"},
  "recording":{"type":"boolean"},
  "window":{"type":"object","properties":{"process_name":{"type":"string","pattern":"^[A-Za-z0-9 ._-]{1,64}$"},"role":{"const":"window"},"bounds":` + boundsSchema + `},"required":["process_name","role","bounds"],"additionalProperties":false},
  "tree":{"type":"array","maxItems":200,"items":{"type":"object","properties":{
     "node_id":{"type":"string","pattern":"` + nodeIDPattern + `"},
     "role":{"enum":["button","text_input","text_static","label","link","checkbox","radio","combobox","list_item","menu","menu_item","tab","tree_item","image","icon","toolbar","scrollbar","slider","window","dialog","group","table","table_cell","table_row","heading","paragraph","unknown"]},
     "control_type":` + labelSchema + `,"class_name":` + labelSchema + `,"automation_id":` + labelSchema + `,"name":` + labelSchema + `,
     "enabled":{"type":"boolean"},"focused":{"type":"boolean"},"bounds":` + boundsSchema + `},
     "required":["node_id","role","enabled","focused","bounds"],"additionalProperties":false}},
  "truncated":{"type":"boolean"},
  "node_count":{"type":"integer","minimum":0,"maximum":200},
  "reason":{"const":"empty_projection"}},
 "required":["schema_version","backend","provider","mode","agent_drive","coach_only","recording","tree","truncated","node_count"],"additionalProperties":false}`

func statusSchema(status string, extra string, required string) string {
	return `{"type":"object","properties":{"status":{"const":"` + status + `"}` + extra + `},"required":["status"` + required + `],"additionalProperties":false}`
}

type authTool struct {
	name, title, desc string
	input             string
	result            string
	ann               *mcp.ToolAnnotations
	rawResult         bool
}

var authTools = []authTool{
	{name: "observe", title: "Observe the pinned window",
		desc:  "Returns a PHI-safe authoring observation of the pinned local window (openadapt.authoring.observe/v1): roles, filtered labels, normalized bounds and opaque node ids. No screenshots, OCR, field values, window titles, URLs or backend pixels. Use node_id values from this tree for click.",
		input: `{"type":"object","properties":{},"additionalProperties":false}`, result: observeSchema, ann: annRead},
	{name: "start_record", title: "Start recording",
		desc:  "Starts a Flow Recorder session over the pinned backend. Refused on coach-only backends (Windows native, Citrix, RDP). Does not compile and does not enable run tools.",
		input: `{"type":"object","properties":{},"additionalProperties":false}`, result: statusSchema("recording", "", ""), ann: annAuthMut},
	{name: "click", title: "Click an observed node",
		desc: "Clicks one observed node through Flow's Recorder. Prefer node_id from the last observe; local stdio also accepts integer x and y pixels (both). A stale node_id returns reason stale_node.",
		input: `{"type":"object","properties":{"node_id":{"type":"string","pattern":"` + nodeIDPattern + `","description":"Opaque node id from the last observe tree."},
  "x":{"type":"integer","minimum":0,"maximum":100000,"description":"Local pixel x (with y)."},
  "y":{"type":"integer","minimum":0,"maximum":100000,"description":"Local pixel y (with x)."}},"additionalProperties":false}`,
		result: statusSchema("ok", `,"node_id":{"type":"string","pattern":"`+nodeIDPattern+`"}`, ""), ann: annAuthMut},
	{name: "halt", title: "Halt authoring",
		desc:  "Stops the authoring session without compiling. Recording evidence stays local. This is not a governed run halt.",
		input: `{"type":"object","properties":{},"additionalProperties":false}`, result: statusSchema("halted", `,"compiled":{"const":false}`, `,"compiled"`), ann: annAuthHalt},
	{name: "type", title: "Type text (local only)",
		desc: "Agent-driven typing through Flow's Recorder into the field that has the focus (click it first), local stdio only (hosted chat apps cannot type). The text is never echoed. Do not use it for secrets or for text a person types: use pause_for_input, which records the person's input with record_observed.",
		input: `{"type":"object","properties":{"text":{"type":"string","minLength":1,"maxLength":4096,"description":"Literal text to type through the backend."},
  "param":{"type":"string","pattern":"` + paramPattern + `","description":"Optional workflow parameter name for this text."}},"required":["text"],"additionalProperties":false}`,
		result: statusSchema("ok", `,"recorded":{"const":true},"param":{"type":"string","pattern":"`+paramPattern+`"}`, `,"recorded"`), ann: annAuthMut},
	{name: "pause_for_input", title: "Pause for the person's input",
		desc: "Pauses so the person types in the application themselves (a sign-in, a secret). Call continue_input when they are done: it records their input with record_observed on the pause target, never type_text. Secret pauses store no text; no result carries a value.",
		input: `{"type":"object","properties":{"node_id":{"type":"string","pattern":"` + nodeIDPattern + `","description":"The pause target from the last observe (default: the last click's target)."},
  "param":{"type":"string","pattern":"` + paramPattern + `","description":"Parameter name to bind the observed input to."},
  "secret":{"type":"boolean","description":"True for a secret: no text is stored."}},"required":["param"],"additionalProperties":false}`,
		result: statusSchema("paused", `,"param":{"type":"string","pattern":"`+paramPattern+`"},"secret":{"const":true}`, ""), ann: annAuthMut},
	{name: "continue_input", title: "Continue after the person's input",
		desc:   "Records what the person typed during pause_for_input with record_observed on the pause target, never type_text. When the client can show a form, the person first confirms there that they are done. Returns no value; recorded false with a reason (an empty or unreadable field, an unconfirmed masked secret) records nothing and keeps the pause open.",
		input:  `{"type":"object","properties":{},"additionalProperties":false}`,
		result: `{"type":"object","oneOf":[{"type":"object","properties":{"recorded":{"const":true},"param":{"type":"string","pattern":"` + paramPattern + `"}},"required":["recorded"],"additionalProperties":false},{"type":"object","properties":{"recorded":{"const":false},"param":{"type":"string","pattern":"` + paramPattern + `"},"reason":{"enum":` + continueReasonsEnum() + `}},"required":["recorded","reason"],"additionalProperties":false}]}`, ann: annAuthMut, rawResult: true},
	{name: "stop_record", title: "Stop recording",
		desc:  "Finishes the Flow Recorder session without compiling. Evidence stays local.",
		input: `{"type":"object","properties":{},"additionalProperties":false}`, result: statusSchema("stopped", `,"compiled":{"const":false}`, `,"compiled"`), ann: annAuthHalt},
	{name: "compile", title: "Compile the draft",
		desc:   "Compiles the recording with Flow and returns needs_human_admit: a person must then admit the draft. Never VERIFIED or success. Refuses (missing_secret_type) when a secret pause was never typed.",
		input:  `{"type":"object","properties":{},"additionalProperties":false}`,
		result: statusSchema("needs_human_admit", `,`+workflowIDProp+`,"recording_retained":{"const":true}`, `,"recording_retained"`), ann: annAuthAdmit},
	{name: "admit", title: "Admit the draft (person only)",
		desc:   "The person's one-token ok of the pre-filled draft, confirmed in a form on this computer. confirm may be absent, true, \"\", ok, yes, y or true (Flow's set); anything else is refused. Flow records the local acceptance: nothing is minted, no Seal, no ledger row.",
		input:  `{"type":"object","properties":{"confirm":{"type":["string","boolean"],"description":"Optional one-token ok: omit, \"\", ok, yes, y, true, or the boolean true."}},"additionalProperties":false}`,
		result: statusSchema("admitted", `,`+workflowIDProp, ""), ann: annAuthAdmit, rawResult: true},
	{name: "get_command_result", title: "Get the last authoring result",
		desc:   "Returns the last authoring tool result of this server (stdio runs tools synchronously).",
		input:  `{"type":"object","properties":{"command_id":{"type":"string","maxLength":64,"description":"Optional; stdio keeps one result."}},"additionalProperties":false}`,
		result: `{"type":"object","properties":{"command_id":{"type":["string","null"]},"status":{"enum":["idle","done"]},"retry_after_ms":{"const":0},"result":{"type":["object","null"]}},"required":["command_id","status","retry_after_ms","result"],"additionalProperties":false}`, ann: annRead},
	{name: "set_coach", title: "Set a coach hint",
		desc:   "Sets a short PHI-safe coach hint for the person (80 characters of letters, digits, space . _ -; no URL, @ or six-digit runs).",
		input:  `{"type":"object","properties":{"hint":{"type":"string","minLength":1,"maxLength":80,"description":"The hint."}},"required":["hint"],"additionalProperties":false}`,
		result: statusSchema("ok", `,"hint":`+labelSchema, `,"hint"`), ann: annAuthMut},
	{name: "get_coach", title: "Get the coach hint",
		desc:   "Returns the current coach hint, or null. No tree.",
		input:  `{"type":"object","properties":{},"additionalProperties":false}`,
		result: `{"type":"object","properties":{"hint":{"anyOf":[` + labelSchema + `,{"type":"null"}]}},"required":["hint"],"additionalProperties":false}`, ann: annRead},
	{name: "bind_status", title: "Bind status",
		desc:   "Local stdio bind status: this process is already on the computer, so there is no mailbox. No tree.",
		input:  `{"type":"object","properties":{},"additionalProperties":false}`,
		result: `{"type":"object","properties":{"status":{"const":"stdio"},"bound":{"const":true},"transport":{"const":"stdio"}},"required":["status","bound","transport"],"additionalProperties":false}`, ann: annRead},
	{name: "press", title: "Press a key (local only)",
		desc:   "Presses one named key through Flow's Recorder, local stdio only: Enter, Tab, Escape, Backspace, Delete, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, Home, End, PageUp, PageDown or F1-F12, optionally after Control+, Alt+, Meta+ or Shift+ (each once). Never a printable character: use type for text.",
		input:  `{"type":"object","properties":{"key":{"type":"string","pattern":"` + pressKeyPattern + `","description":"The key, e.g. Enter, Tab or Control+End."}},"required":["key"],"additionalProperties":false}`,
		result: statusSchema("ok", `,"key":{"type":"string","pattern":"`+pressKeyPattern+`"}`, ""), ann: annAuthMut},
}

// pressKeyPattern is press's closed key grammar (authoring.PressKeyRE).
var pressKeyPattern = strings.ReplaceAll(authoring.PressKeyRE().String(), `\`, `\\`)

// continueReasonsEnum is the JSON array of continue_input's reasons.
func continueReasonsEnum() string {
	parts := make([]string, len(authoring.ContinueReasons))
	for i, r := range authoring.ContinueReasons {
		parts[i] = jstr(r)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// authoringOnly is a server with --authoring and no bundles: it registers
// only the authoring tools.
func (o Options) authoringOnly() bool { return o.Authoring && o.Bundles == "" }

// register adds the 15 authoring tools in order (none without a session).
func (a *authoringTools) register(reg *registry) {
	if a == nil {
		return
	}
	for _, t := range authTools {
		reg.add(toolDef{name: t.name, title: t.title, desc: t.desc, input: compact(t.input),
			success: authOut(t.result), ann: t.ann, rawResult: t.rawResult}, func(ctx context.Context, c *toolCall) (any, *failure) {
			return a.call(ctx, c, t.name)
		})
	}
}

// projectAnswer is tool's MCP result from the helper's answer raw plus the
// request fields the helper echoes into its last answer (the same
// projection get_command_result uses).
func projectAnswer(tool string, raw map[string]any, echo map[string]any) (any, *failure) {
	m := maps.Clone(raw)
	for k, v := range echo {
		if v != nil && v != false && v != "" {
			m[k] = v
		}
	}
	body, ok := authoring.Project(tool, m)
	if !ok {
		return nil, fail(CodeInternalError)
	}
	return body, nil
}

// commandResult is get_command_result's answer from the helper's
// {command_id, status, retry_after_ms, result}: idle, or the last tool's
// answer projected again.
func commandResult(raw map[string]any) (any, *failure) {
	if n, _ := raw["retry_after_ms"].(float64); n != 0 {
		return nil, fail(CodeInternalError)
	}
	switch raw["status"] {
	case "idle":
		if raw["command_id"] != nil || raw["result"] != nil {
			return nil, fail(CodeInternalError)
		}
		return map[string]any{"command_id": nil, "status": "idle", "retry_after_ms": 0, "result": nil}, nil
	case "done":
		tool, _ := raw["command_id"].(string)
		res, isObj := raw["result"].(map[string]any)
		if !isObj || tool == "get_command_result" || tool == "bind_status" || !flowhelper.IsAuthoringTool(tool) {
			return nil, fail(CodeInternalError)
		}
		body, f := projectAnswer(tool, res, nil)
		if f != nil {
			return nil, f
		}
		return map[string]any{"command_id": tool, "status": "done", "retry_after_ms": 0, "result": body}, nil
	}
	return nil, fail(CodeInternalError)
}

// refusal is a tool-level refusal body.
func refusal(code authoring.Code) any { return authoring.NewErrorResult(code) }

// sessionOutcome maps a session error: a refusal is a tool-level refusal
// (Flow refusing an argument is the invalid_arguments failure); no receipt
// on an action is delivery_uncertain; no session is authoring_unavailable.
func sessionOutcome(err error) (any, *failure) {
	if code, ok := authoring.RefusalCode(err); ok {
		if code == authoring.CodeInvalidArguments {
			return nil, fail(CodeInvalidArguments)
		}
		return refusal(code), nil
	}
	if errors.Is(err, authoring.ErrUncertain) {
		return nil, fail(CodeDeliveryUncertain)
	}
	return refusal(authoring.CodeAuthoringUnavailable), nil
}

func str(args map[string]any, k string) (string, bool) {
	v, ok := args[k].(string)
	return v, ok
}

// confirmAccepted is admit's one-token rule, Flow's own set: absent, true,
// or a string that is, trimmed and case-folded, "", ok, yes, true or y.
func confirmAccepted(v any, present bool) bool {
	if !present || v == true {
		return true
	}
	s, ok := v.(string)
	if !ok {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "ok", "yes", "true", "y":
		return true
	}
	return false
}

const continueElicit = "Has the person finished typing in the application? Confirming records what is in the paused field now (a secret stays secret); nothing is typed for them."

const admitElicit = "Admit this compiled draft as the person who taught it? OpenAdapt pre-filled the schema, authority, effect contract, environment and digest from the recording; admitting does not mint a Seal or write a ledger row."

// call is one authoring tool call through the helper's session.
func (a *authoringTools) call(ctx context.Context, c *toolCall, tool string) (any, *failure) {
	call := func(args map[string]any) (map[string]any, error) { return a.sess.Call(ctx, tool, args) }
	switch tool {
	case "bind_status":
		raw, err := call(map[string]any{})
		if err != nil {
			return sessionOutcome(err)
		}
		if raw["bound"] != true || raw["transport"] != "stdio" {
			return nil, fail(CodeInternalError)
		}
		return map[string]any{"status": "stdio", "bound": true, "transport": "stdio"}, nil
	case "get_command_result":
		// command_id is accepted and not needed: stdio keeps one answer.
		raw, err := call(map[string]any{})
		if err != nil {
			return sessionOutcome(err)
		}
		return commandResult(raw)
	case "click":
		_, hasNode := str(c.args, "node_id")
		_, hasX := c.args["x"]
		_, hasY := c.args["y"]
		if hasNode == (hasX || hasY) || hasX != hasY {
			return nil, fail(CodeInvalidArguments) // a node, or both x and y
		}
		raw, err := call(c.args)
		if err != nil {
			return sessionOutcome(err)
		}
		return projectAnswer(tool, raw, map[string]any{"node_id": c.args["node_id"]})
	case "type":
		raw, err := call(c.args)
		if err != nil {
			return sessionOutcome(err)
		}
		return projectAnswer(tool, raw, map[string]any{"param": c.args["param"]})
	case "press":
		k, _ := str(c.args, "key")
		if !authoring.ValidPressKey(k) {
			return nil, fail(CodeInvalidArguments) // a repeated modifier
		}
		raw, err := call(map[string]any{"key": k})
		if err != nil {
			return sessionOutcome(err)
		}
		return projectAnswer(tool, raw, map[string]any{"key": k})
	case "pause_for_input":
		raw, err := call(c.args)
		if err != nil {
			return sessionOutcome(err)
		}
		p, _ := str(c.args, "param")
		a.mu.Lock()
		a.paused, a.pauseParam = true, p
		a.mu.Unlock()
		return projectAnswer(tool, raw, map[string]any{"param": c.args["param"], "secret": c.args["secret"]})
	case "continue_input":
		// operator_confirmed is this server's: true only after the person
		// confirmed in the form; a client without forms continues
		// unconfirmed (Flow then records a readable field, never a masked
		// secret it cannot read back).
		confirmed := false
		if formCapable(c.req.ClientCapabilities()) {
			if body, f := a.confirm.ask(ctx, c, "continue_input", continueElicit, "", ""); body != nil || f != nil {
				return body, f
			}
			confirmed = true
		}
		raw, err := call(map[string]any{"operator_confirmed": confirmed})
		if err != nil {
			return sessionOutcome(err)
		}
		a.mu.Lock()
		p := a.pauseParam
		if raw["recorded"] == true {
			a.paused, a.pauseParam = false, ""
		}
		a.mu.Unlock()
		return projectAnswer(tool, raw, map[string]any{"param": p})
	case "observe", "start_record", "halt", "stop_record", "compile", "get_coach":
		raw, err := call(map[string]any{})
		if err != nil {
			return sessionOutcome(err)
		}
		return projectAnswer(tool, raw, nil)
	case "set_coach":
		h, _ := str(c.args, "hint")
		if authoring.SafeLabel(h) != h {
			return nil, fail(CodeInvalidArguments) // the PHI filter refused it
		}
		raw, err := call(map[string]any{"hint": h})
		if err != nil {
			return sessionOutcome(err)
		}
		return projectAnswer(tool, raw, map[string]any{"hint": h})
	case "admit":
		// The schema (checked), the token, the session's admit, then the
		// operator's form.
		v, present := c.args["confirm"]
		if !confirmAccepted(v, present) {
			return refusal(authoring.CodeAdmitRefused), nil
		}
		if a.sess.Info.CoachOnly {
			return refusal(authoring.CodeCoachOnly), nil
		}
		if !a.sess.Info.Admit {
			return refusal(authoring.CodeAuthoringUnavailable), nil
		}
		if body, f := a.confirm.ask(ctx, c, "admit", admitElicit, "", ""); body != nil || f != nil {
			return body, f
		}
		args := map[string]any{}
		if present {
			args["confirm"] = v
		}
		raw, err := a.sess.Call(ctx, "admit", args)
		if err != nil {
			return sessionOutcome(err)
		}
		return projectAnswer(tool, raw, nil)
	}
	return nil, fail(CodeInternalError)
}

// startAuthoring opens the authoring session on the helper (docs/helper.md
// "Startup"): it fails closed with the exact message when the installed
// Flow has no openadapt_flow.authoring of the expected API (authoring's
// own gate: names and signatures, whatever the version). The session's backend kind,
// URL and headed flag come from --config (read by the helper with Flow's
// own loader), --url and --headed overriding it as for the attended
// service; without --config, --url selects a fresh browser (which needs
// --headed) and no --url the local window. Its recording goes to
// <state>/authoring/<instance>.
func startAuthoring(ctx context.Context, o Options, p *helperProc, st *runstore.State, instance, runsDir string, confirm *confirmer) (*authoringTools, error) {
	req := flowhelper.AuthoringOpenRequest{Headed: o.Headed}
	if o.URL != "" {
		u := o.URL
		req.URL = &u
	}
	if o.Config != "" {
		abs, err := filepath.Abs(o.Config)
		if err != nil {
			return nil, configErrorf("the deployment config could not be read: %s", o.Config)
		}
		req.DeploymentConfig = abs
	} else {
		req.BackendKind = authoring.Backend(o.URL)
	}
	out := filepath.Join(st.Dir(), "authoring", instance)
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return nil, configErrorf("the runs directory could not be prepared: %s; pass an absolute --runs-dir", runsDir)
	}
	if err := os.Mkdir(out, 0o700); err != nil {
		return nil, configErrorf("the runs directory could not be prepared: %s; pass an absolute --runs-dir", runsDir)
	}
	req.OutDir = out
	sess, err := authoring.OpenOn(ctx, p.h, req)
	if err != nil {
		_ = os.Remove(out) // still empty: nothing was recorded
		var ue *authoring.UnavailableError
		var ce *authoring.ConfigError
		switch {
		case errors.As(err, &ue):
			return nil, configErrorf("%s; --authoring fails closed", ue.Error())
		case errors.As(err, &ce):
			ce.Config = o.Config
			return nil, configErrorf("%s", ce.Error())
		}
		return nil, configErrorf("the authoring session could not be started; see the protected local log")
	}
	return &authoringTools{sess: sess, confirm: confirm}, nil
}
