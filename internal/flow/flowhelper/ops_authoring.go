package flowhelper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The helper's authoring ops (docs/authoring.md, "Ops"): authoring.open
// and one closed op per authoring tool, get_command_result and bind_status
// included.

func init() {
	// The refusal reasons of the authoring ops (docs/authoring.md), and
	// authoring.open's deployment-config refusals.
	for _, r := range AuthoringReasons {
		knownReasons[r] = true
	}
	for _, r := range []string{"url_missing", "headed_missing"} {
		knownReasons[r] = true
	}
}

// AuthoringReasons are the closed reasons of a refused authoring op: the
// helper maps every code of Flow's AuthoringError to one of them (a code it
// does not know to session_refused; docs/authoring.md, Errors).
var AuthoringReasons = []string{"stale_node", "in_flight", "coach_only", "not_recording", "not_paused",
	"missing_secret_type", "admit_refused", "not_compiled", "halted", "already_recording",
	"missing_pause_target", "missing_redact_region", "invalid_arguments", "session_refused"}

// ContinueReasons are the closed reasons continue_input records nothing
// for (the pause stays open); a reason Flow does not document is
// not_recorded.
var ContinueReasons = []string{"empty_secret_field", "unconfirmed_masked_secret", "empty_field", "unreadable_field", "not_recorded"}

// Deadlines of the authoring ops. A click or type through Playwright
// answers in seconds; compile and admit run Flow's compiler.
const (
	authoringOpDeadline      = 120 * time.Second
	authoringCompileDeadline = 600 * time.Second
)

// AuthoringBackends are the backend kinds of an authoring session (Flow's
// deployment backend.kind values).
var AuthoringBackends = []string{"web", "macos", "linux", "windows", "rdp", "citrix"}

// AuthoringOpenRequest opens the helper's one authoring session
// (docs/authoring.md, "Configuration"). With DeploymentConfig the helper reads the
// session's backend kind, URL and headed flag from that config with Flow's
// own loader, URL and Headed being the server's --url/--headed overrides
// (as for service.open: neither turns a value off) and BackendKind empty;
// without it, BackendKind, URL and Headed are the session's.
type AuthoringOpenRequest struct {
	DeploymentConfig string  // absolute, or "" for none
	BackendKind      string  // web, macos, linux, windows, rdp, citrix; "" with DeploymentConfig
	URL              *string // web only
	Headed           bool
	OutDir           string // absolute: <state>/authoring/<instance>
}

// MarshalJSON is the closed request: absent values are null.
func (r AuthoringOpenRequest) MarshalJSON() ([]byte, error) {
	orNull := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return json.Marshal(struct {
		DeploymentConfig *string `json:"deployment_config"`
		BackendKind      *string `json:"backend_kind"`
		URL              *string `json:"url"`
		Headed           bool    `json:"headed"`
		OutDir           string  `json:"out_dir"`
	}{orNull(r.DeploymentConfig), orNull(r.BackendKind), r.URL, r.Headed, r.OutDir})
}

// AuthoringInfo is authoring.open's answer.
type AuthoringInfo struct {
	BackendKind string
	Headed      bool
	CoachOnly   bool // start_record, click and type refuse with coach_only
	Admit       bool // the session has admit
}

// OpenAuthoring runs authoring.open. Errors: [*Error]
// unavailable/authoring_unavailable (no usable openadapt_flow.authoring, or
// the session could not be built), refused/coach_only, invalid/already_open,
// invalid/deployment_config (the config could not be read),
// invalid/deployment_unusable (its backend kind is not an authoring one),
// invalid/url_missing and invalid/headed_missing (a web backend without a
// URL or a visible browser), or a [*TransportError].
func (h *Helper) OpenAuthoring(ctx context.Context, req AuthoringOpenRequest) (AuthoringInfo, error) {
	res, err := h.call(ctx, "authoring.open", req, h.to.ServiceOpen, nil)
	if err != nil {
		return AuthoringInfo{}, err
	}
	if err := closedResult(res, "backend_kind", "headed", "coach_only", "admit"); err != nil {
		return AuthoringInfo{}, h.badResult("authoring.open", err)
	}
	k, ok1 := res.str("backend_kind")
	hd, ok2 := res.boolean("headed")
	c, ok3 := res.boolean("coach_only")
	a, ok4 := res.boolean("admit")
	if !ok1 || !ok2 || !ok3 || !ok4 || !slices.Contains(AuthoringBackends, k) || (req.BackendKind != "" && k != req.BackendKind) {
		return AuthoringInfo{}, h.badResult("authoring.open", errors.New("bad backend_kind, headed, coach_only or admit"))
	}
	return AuthoringInfo{BackendKind: k, Headed: hd, CoachOnly: c, Admit: a}, nil
}

// authoringResults are the closed result keys of each authoring.<tool> op,
// and the fixed status value where the result has one.
var authoringResults = map[string]struct {
	keys   []string
	status string
}{
	"observe":         {keys: []string{"backend", "provider", "recording", "agent_drive", "coach_only", "truncated", "window", "tree"}},
	"start_record":    {keys: []string{"status"}, status: "recording"},
	"click":           {keys: []string{"status"}, status: "ok"},
	"halt":            {keys: []string{"status"}, status: "halted"},
	"type":            {keys: []string{"status"}, status: "ok"},
	"press":           {keys: []string{"status"}, status: "ok"},
	"pause_for_input": {keys: []string{"status"}, status: "paused"},
	"continue_input":  {keys: []string{"recorded", "reason"}},
	"stop_record":     {keys: []string{"status"}, status: "stopped"},
	"compile":         {keys: []string{"workflow_id"}},
	"admit":           {keys: []string{"workflow_id"}},
	"set_coach":       {keys: []string{"status"}, status: "ok"},
	"get_coach":       {keys: []string{"hint"}},
	// The last answer the helper gave (its result plus the echoed request
	// fields, or the refusal), and the stdio bind status.
	"get_command_result": {keys: []string{"command_id", "status", "retry_after_ms", "result"}},
	"bind_status":        {keys: []string{"status", "bound", "transport"}, status: "stdio"},
}

// authoringRequests are the closed request fields of each op; an absent
// field is sent as null (secret and operator_confirmed as false).
var authoringRequests = map[string][]string{
	"click":           {"node_id", "x", "y"},
	"type":            {"text", "param"},
	"press":           {"key"},
	"pause_for_input": {"node_id", "param", "secret"},
	"continue_input":  {"operator_confirmed"},
	"admit":           {"confirm"},
	"set_coach":       {"hint"},
}

// IsAuthoringTool reports whether tool has a helper op authoring.<tool>.
func IsAuthoringTool(tool string) bool { _, ok := authoringResults[tool]; return ok }

// Authoring runs authoring.<tool> with fields (the op's closed request,
// already validated by the caller; absent fields are sent as null) and returns its result object, whose keys
// are checked against the op's closed result (a mismatch is a dead
// helper). Errors: [*Error] refused/<code> (the session refused; nothing was
// done), unavailable/authoring_unavailable, invalid/not_open,
// uncertain (the action may have happened), or a [*TransportError].
func (h *Helper) Authoring(ctx context.Context, tool string, fields map[string]any) (map[string]any, error) {
	spec, ok := authoringResults[tool]
	if !ok {
		return nil, fmt.Errorf("flow helper: no authoring op for %q", tool)
	}
	op := "authoring." + tool
	deadline := authoringOpDeadline
	if tool == "compile" || tool == "admit" {
		deadline = authoringCompileDeadline
	}
	req := map[string]any{}
	allowed := map[string]bool{}
	for _, k := range authoringRequests[tool] {
		allowed[k] = true
		req[k] = nil
		if k == "secret" || k == "operator_confirmed" {
			req[k] = false
		}
	}
	for k, v := range fields {
		if !allowed[k] {
			return nil, fmt.Errorf("flow helper %s: unknown request field %q", op, k)
		}
		if v != nil {
			req[k] = v
		}
	}
	res, err := h.call(ctx, op, req, deadline, nil)
	if err != nil {
		return nil, err
	}
	if !res.closed(spec.keys...) {
		return nil, h.badResult(op, fmt.Errorf("result keys differ from %v", spec.keys))
	}
	if spec.status != "" {
		if s, _ := res.str("status"); s != spec.status {
			return nil, h.badResult(op, fmt.Errorf("status is not %q", spec.status))
		}
	}
	if tool == "continue_input" {
		// {recorded: true, reason: null} or {recorded: false, reason: R}.
		rec, ok := res.boolean("recorded")
		r, isStr, ok2 := res.strOrNull("reason")
		if !ok || !ok2 || rec == isStr || (isStr && !slices.Contains(ContinueReasons, r)) {
			return nil, h.badResult(op, errors.New("bad recorded or reason"))
		}
	}
	// The tree is built by encoding/json because its readers (the
	// authoring projections) take its types (float64 numbers); the bytes
	// were already accepted by pyjson's strict parse of the frame, so no
	// duplicate key or bad UTF-8 is left for the two parsers to read
	// differently.
	var out map[string]any
	if err := json.Unmarshal(res.raw(), &out); err != nil {
		return nil, h.badResult(op, err)
	}
	return out, nil
}
