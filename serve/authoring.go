package serve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/authoring"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flowhelper"
)

// D4 authoring tools (mcp-surface.md §10.2; flow-helper.md §12.1, §12.2,
// §12.16). Every tool reaches Flow's authoring session through the helper's
// authoring.<tool> op (docs/authoring.md); every result is a closed
// projection built in internal/authoring from validated values. A
// tool-level refusal is {"status":"error","reason":"<code>"}.

// authoringState is the open session and the last projected result.
type authoringState struct {
	sess *authoring.HelperSession
	mu   sync.Mutex
	// the pause of a pause_for_input until continue_input
	pauseParam string
	paused     bool
	lastTool   string
	lastResult any
}

var (
	annAuthMut   = &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: boolPtr(true), IdempotentHint: false, OpenWorldHint: boolPtr(true)}
	annAuthHalt  = &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: boolPtr(true), IdempotentHint: true, OpenWorldHint: boolPtr(false)}
	annAuthAdmit = &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: boolPtr(false), IdempotentHint: true, OpenWorldHint: boolPtr(false)}
)

// The refusal codes of the authoring tools (lowercase, §12.16).
var authoringReasons = []authoring.Code{
	authoring.CodeStaleNode, authoring.CodeInFlight, authoring.CodeCoachOnly, authoring.CodeNotRecording,
	authoring.CodeNotPaused, authoring.CodeMissingSecretType, authoring.CodeAdmitRefused,
	authoring.CodeAuthoringUnavailable, authoring.CodeNotCompiled,
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
		desc: "Agent-driven typing through Flow's Recorder, local stdio only (hosted chat apps cannot type). The text is never echoed. Do not use it for secrets or for text a person types: use pause_for_input, which records the person's input with record_observed.",
		input: `{"type":"object","properties":{"text":{"type":"string","minLength":1,"maxLength":4096,"description":"Literal text to type through the backend."},
  "param":{"type":"string","pattern":"` + paramPattern + `","description":"Optional workflow parameter name for this text."},
  "node_id":{"type":"string","pattern":"` + nodeIDPattern + `","description":"Optional observed node to focus first."}},"required":["text"],"additionalProperties":false}`,
		result: statusSchema("ok", `,"recorded":{"const":true},"param":{"type":"string","pattern":"`+paramPattern+`"}`, `,"recorded"`), ann: annAuthMut},
	{name: "pause_for_input", title: "Pause for the person's input",
		desc: "Pauses so the person types in the application themselves (a sign-in, a secret). Call continue_input when they are done: it records their input with record_observed on the pause target, never type_text. Secret pauses store no text; no result carries a value.",
		input: `{"type":"object","properties":{"node_id":{"type":"string","pattern":"` + nodeIDPattern + `","description":"The pause target from the last observe."},
  "param":{"type":"string","pattern":"` + paramPattern + `","description":"Parameter name to bind the observed input to."},
  "secret":{"type":"boolean","description":"True for a secret: no text is stored."}},"additionalProperties":false}`,
		result: statusSchema("paused", `,"param":{"type":"string","pattern":"`+paramPattern+`"},"secret":{"const":true}`, ""), ann: annAuthMut},
	{name: "continue_input", title: "Continue after the person's input",
		desc:   "Records what the person typed during pause_for_input with record_observed on the pause target, never type_text. Returns no value.",
		input:  `{"type":"object","properties":{},"additionalProperties":false}`,
		result: `{"type":"object","properties":{"recorded":{"const":true},"param":{"type":"string","pattern":"` + paramPattern + `"}},"required":["recorded"],"additionalProperties":false}`, ann: annAuthMut},
	{name: "stop_record", title: "Stop recording",
		desc:  "Finishes the Flow Recorder session without compiling. Evidence stays local.",
		input: `{"type":"object","properties":{},"additionalProperties":false}`, result: statusSchema("stopped", `,"compiled":{"const":false}`, `,"compiled"`), ann: annAuthHalt},
	{name: "compile", title: "Compile the draft",
		desc:   "Compiles the recording with Flow and returns needs_human_admit: a person must then admit the draft. Never VERIFIED or success. Refuses (missing_secret_type) when a secret pause was never typed.",
		input:  `{"type":"object","properties":{},"additionalProperties":false}`,
		result: statusSchema("needs_human_admit", `,`+workflowIDProp+`,"recording_retained":{"const":true}`, `,"recording_retained"`), ann: annAuthAdmit},
	{name: "admit", title: "Admit the draft (person only)",
		desc:   "The person's one-token ok of the pre-filled draft, confirmed in a form on this computer. confirm may be absent, true, \"\", ok, yes, y or enter; anything else is refused. A session without admit refuses: nothing is minted, no Seal, no ledger row.",
		input:  `{"type":"object","properties":{"confirm":{"type":["string","boolean"],"description":"Optional one-token ok: omit, \"\", ok, yes, y, enter or true."}},"additionalProperties":false}`,
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
}

// authoringOnly is a server with --authoring and no bundles: it registers
// only the authoring tools (§4.2).
func (o Options) authoringOnly() bool { return o.Authoring && o.Bundles == "" }

// registerAuthoring adds the 14 tools of §10.2 in order.
func (s *Server) registerAuthoring() {
	if !s.opts.Authoring || s.authoring == nil {
		return
	}
	for _, t := range authTools {
		t := t
		s.addTool(toolDef{name: t.name, title: t.title, desc: t.desc, input: compact(t.input),
			success: authOut(t.result), ann: t.ann, rawResult: t.rawResult}, func(ctx context.Context, c *toolCall) (any, *failure) {
			body, f := s.authoringCall(ctx, c, t.name)
			if f == nil {
				if _, raw := body.(rawResult); !raw {
					s.authoring.remember(t.name, body)
				}
			}
			return body, f
		})
	}
}

func (a *authoringState) remember(tool string, body any) {
	if tool == "get_command_result" || tool == "bind_status" {
		return
	}
	a.mu.Lock()
	a.lastTool, a.lastResult = tool, body
	a.mu.Unlock()
}

// refusal is a tool-level refusal body.
func refusal(code authoring.Code) any { return authoring.NewErrorResult(code) }

// sessionOutcome maps a session error: a refusal is a tool-level refusal;
// no receipt on an action is delivery_uncertain; no session is
// authoring_unavailable.
func sessionOutcome(err error) (any, *failure) {
	if code, ok := authoring.RefusalCode(err); ok {
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

// confirmAccepted is admit's one-token rule: absent, true, "", or (trimmed,
// case-insensitive) ok, yes, y, enter.
func confirmAccepted(v any, present bool) bool {
	if !present || v == true {
		return true
	}
	s, ok := v.(string)
	if !ok {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "ok", "yes", "y", "enter":
		return true
	}
	return false
}

const admitElicit = "Admit this compiled draft as the person who taught it? OpenAdapt pre-filled the schema, authority, effect contract, environment and digest from the recording; admitting does not mint a Seal or write a ledger row."

func (s *Server) authoringCall(ctx context.Context, c *toolCall, tool string) (any, *failure) {
	a := s.authoring
	call := func(args map[string]any) (map[string]any, error) { return a.sess.Call(ctx, tool, args) }
	switch tool {
	case "bind_status":
		return map[string]any{"status": "stdio", "bound": true, "transport": "stdio"}, nil
	case "get_command_result":
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.lastTool == "" {
			return map[string]any{"command_id": nil, "status": "idle", "retry_after_ms": 0, "result": nil}, nil
		}
		return map[string]any{"command_id": a.lastTool, "status": "done", "retry_after_ms": 0, "result": a.lastResult}, nil
	case "observe":
		raw, err := call(map[string]any{})
		if err != nil {
			return sessionOutcome(err)
		}
		return authoring.ProjectObserve(raw), nil
	case "click":
		node, hasNode := str(c.args, "node_id")
		_, hasX := c.args["x"]
		_, hasY := c.args["y"]
		if hasNode == (hasX || hasY) || hasX != hasY {
			return nil, fail(CodeInvalidArguments) // a node, or both x and y
		}
		if _, err := call(c.args); err != nil {
			return sessionOutcome(err)
		}
		return authoring.ProjectClick(nil, node), nil
	case "type":
		if _, err := call(c.args); err != nil {
			return sessionOutcome(err)
		}
		p, _ := str(c.args, "param")
		return authoring.TypeResult{Status: "ok", Recorded: true, Param: p}, nil
	case "pause_for_input":
		if _, err := call(c.args); err != nil {
			return sessionOutcome(err)
		}
		p, _ := str(c.args, "param")
		secret, _ := c.args["secret"].(bool)
		a.mu.Lock()
		a.paused, a.pauseParam = true, p
		a.mu.Unlock()
		return authoring.PauseResult{Status: "paused", Param: p, Secret: secret}, nil
	case "continue_input":
		if _, err := call(map[string]any{}); err != nil {
			return sessionOutcome(err)
		}
		a.mu.Lock()
		p := a.pauseParam
		a.paused, a.pauseParam = false, ""
		a.mu.Unlock()
		return authoring.RecordedResult{Recorded: true, Param: p}, nil
	case "start_record", "halt", "stop_record":
		if _, err := call(map[string]any{}); err != nil {
			return sessionOutcome(err)
		}
		switch tool {
		case "start_record":
			return authoring.StatusResult{Status: "recording"}, nil
		case "halt":
			return authoring.StopResult{Status: "halted"}, nil
		}
		return authoring.StopResult{Status: "stopped"}, nil
	case "compile":
		raw, err := call(map[string]any{})
		if err != nil {
			return sessionOutcome(err)
		}
		return authoring.ProjectCompile(raw), nil
	case "set_coach":
		h, _ := str(c.args, "hint")
		if authoring.SafeLabel(h) != h {
			return nil, fail(CodeInvalidArguments) // the PHI filter refused it
		}
		if _, err := call(map[string]any{"hint": h}); err != nil {
			return sessionOutcome(err)
		}
		return authoring.CoachSetResult{Status: "ok", Hint: h}, nil
	case "get_coach":
		raw, err := call(map[string]any{})
		if err != nil {
			return sessionOutcome(err)
		}
		return authoring.ProjectGetCoach(raw), nil
	case "admit":
		// §12.16: schema (done) → token → session has admit → elicitation.
		v, present := c.args["confirm"]
		if !confirmAccepted(v, present) {
			return refusal(authoring.CodeAdmitRefused), nil
		}
		if !a.sess.Info.Admit {
			return refusal(authoring.CodeAuthoringUnavailable), nil
		}
		if body, f := s.confirm(ctx, c, attendedTool{name: "admit", elicit: admitElicit}, "", ""); body != nil || f != nil {
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
		return authoring.ProjectAdmit(raw), nil
	}
	return nil, fail(CodeInternalError)
}

// startAuthoring is flow-helper.md §2.1 step e plus authoring.open: it fails
// closed with the §12.1 message when the installed Flow has no usable
// openadapt_flow.authoring.
func (s *Server) startAuthoring(ctx context.Context, h *flowhelper.Helper) error {
	o := s.opts
	backend, url := nativeAuthoringBackend(), (*string)(nil)
	if o.URL != "" {
		if !o.Headed {
			return configErrorf("--authoring with --url opens a fresh browser with empty cookies; pass --headed so the person can sign in there")
		}
		u := o.URL
		backend, url = "web", &u
	}
	out := filepath.Join(s.state.dir, "authoring", s.instance)
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return configErrorf("the runs directory could not be prepared: %s; pass an absolute --runs-dir", s.prep.runsDir)
	}
	if err := os.Mkdir(out, 0o700); err != nil {
		return configErrorf("the runs directory could not be prepared: %s; pass an absolute --runs-dir", s.prep.runsDir)
	}
	sess, err := authoring.OpenOn(ctx, h, flowhelper.AuthoringOpenRequest{BackendKind: backend, URL: url, Headed: o.Headed, OutDir: out})
	if err != nil {
		var ue *authoring.UnavailableError
		if errors.As(err, &ue) {
			return configErrorf("openadapt_flow.authoring is not available with openadapt-flow %s; --authoring fails closed", flowhelper.CleanVersion(ue.FlowVersion))
		}
		return configErrorf("the authoring session could not be started; see the protected local log")
	}
	s.authoring = &authoringState{sess: sess}
	return nil
}

func nativeAuthoringBackend() string {
	switch runtime.GOOS {
	case "darwin":
		return "macos"
	case "windows":
		return "windows"
	}
	return "linux"
}
