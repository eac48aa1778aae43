package flowhelper

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// Protocol is the wire protocol version (docs/helper.md, "Wire protocol").
const Protocol = 1

// SupportedFlow describes the Flow versions attended actions and the
// tutorial support (docs/helper.md, "Version gate"); authoring is gated by
// Flow's API instead ([AuthoringAPI]).
const SupportedFlow = "1.32.x"

var supportedFlowRE = lazyre.New(`^1\.32\.[0-9]+$`)

// Capabilities are hello's import probes.
type Capabilities struct {
	AttendedService bool `json:"attended_service"`
	Playwright      bool `json:"playwright"`
	Tutorial        bool `json:"tutorial"`
	Authoring       bool `json:"authoring"`
}

// Hello is hello's answer.
type Hello struct {
	Protocol      int          `json:"protocol"`
	HelperSHA256  string       `json:"helper_sha256"`
	FlowVersion   string       `json:"flow_version"`
	FlowSupported bool         `json:"flow_supported"`
	PythonVersion string       `json:"python_version"`
	PID           int          `json:"pid"`
	Operator      string       `json:"operator"`
	Capabilities  Capabilities `json:"capabilities"`
}

var helloKeys = []string{"protocol", "helper_sha256", "flow_version", "flow_supported", "python_version", "pid", "operator", "capabilities"}

func (h *Helper) doHello(ctx context.Context) error {
	interp := h.cfg.Interpreter.Path
	res, err := h.call(ctx, "hello", nil, h.to.Hello, nil)
	if err != nil {
		return startedWith(interp, fmt.Errorf("hello: %w", err))
	}
	hl, err := decodeHello(res)
	if err != nil {
		return startedWith(interp, fmt.Errorf("hello: %w", err))
	}
	switch {
	case hl.HelperSHA256 != ProgramSHA256:
		return startedWith(interp, errors.New("hello: helper_sha256 differs from the embedded program"))
	case hl.Protocol != Protocol:
		return startedWith(interp, errors.New("hello: protocol mismatch"))
	case !pythonSupported(hl.PythonVersion):
		return startedWith(interp, fmt.Errorf("hello: Python %s is not 3.10–3.12", CleanVersion(hl.PythonVersion)))
	case h.cfg.Operator != "" && hl.Operator != h.cfg.Operator:
		return &StartError{Stage: StageOperator, Msg: MsgOperator, Err: errors.New("the helper computed a different operator")}
	}
	h.hello = hl
	return nil
}

// decodeHello checks hello's closed result (docs/helper.md, "Ops").
func decodeHello(res object) (Hello, error) {
	var hl Hello
	if !res.closed(helloKeys...) {
		return hl, errors.New("bad hello result")
	}
	for _, f := range []struct {
		k   string
		dst *string
	}{{"helper_sha256", &hl.HelperSHA256}, {"flow_version", &hl.FlowVersion}, {"python_version", &hl.PythonVersion}, {"operator", &hl.Operator}} {
		var ok bool
		if *f.dst, ok = res.str(f.k); !ok {
			return Hello{}, fmt.Errorf("bad hello %s", f.k)
		}
	}
	var ok bool
	if hl.Protocol, ok = res.integer("protocol"); !ok {
		return Hello{}, errors.New("bad hello protocol")
	}
	if hl.PID, ok = res.integer("pid"); !ok {
		return Hello{}, errors.New("bad hello pid")
	}
	if hl.FlowSupported, ok = res.boolean("flow_supported"); !ok {
		return Hello{}, errors.New("bad hello flow_supported")
	}
	caps, ok := res.sub("capabilities")
	if !ok || !caps.closed("attended_service", "playwright", "tutorial", "authoring") {
		return Hello{}, errors.New("bad hello capabilities")
	}
	for _, f := range []struct {
		k   string
		dst *bool
	}{{"attended_service", &hl.Capabilities.AttendedService}, {"playwright", &hl.Capabilities.Playwright},
		{"tutorial", &hl.Capabilities.Tutorial}, {"authoring", &hl.Capabilities.Authoring}} {
		if *f.dst, ok = caps.boolean(f.k); !ok {
			return Hello{}, errors.New("bad hello capabilities")
		}
	}
	return hl, nil
}

func pythonSupported(v string) bool {
	parts := strings.Split(v, ".")
	if len(parts) < 2 || parts[0] != "3" {
		return false
	}
	minor, err := strconv.Atoi(parts[1])
	return err == nil && minor >= 10 && minor <= 12
}

// DeploymentRequest selects a deployment config and the server's overrides
// (--url, --headed, --allow-model-grounding); none ever turns a value off.
type DeploymentRequest struct {
	DeploymentConfig    string  `json:"deployment_config"` // absolute
	URL                 *string `json:"url"`
	Headed              bool    `json:"headed"`
	AllowModelGrounding bool    `json:"allow_model_grounding"`
}

// ServiceInfo is service.open's answer.
type ServiceInfo struct {
	BackendKind string
	Headed      bool
}

// DeploymentInfo is deployment.check's answer: the effective config as
// service.open would see it, without opening anything.
type DeploymentInfo struct {
	BackendKind string
	Headed      bool
	URLPresent  bool
}

// OpenService opens Flow's AttendedActionService once (docs/helper.md,
// "Ops"). Errors: [*Error] invalid/deployment_config,
// invalid/deployment_unusable, unavailable/executor_timeout,
// unavailable/live_session, or a [*TransportError].
func (h *Helper) OpenService(ctx context.Context, req DeploymentRequest) (ServiceInfo, error) {
	res, err := h.call(ctx, "service.open", req, h.to.ServiceOpen, nil)
	if err != nil {
		return ServiceInfo{}, err
	}
	if err := closedResult(res, "backend_kind", "headed"); err != nil {
		return ServiceInfo{}, h.badResult("service.open", err)
	}
	k, ok1 := res.str("backend_kind")
	hd, ok2 := res.boolean("headed")
	if !ok1 || !ok2 {
		return ServiceInfo{}, h.badResult("service.open", errors.New("bad backend_kind or headed"))
	}
	return ServiceInfo{BackendKind: k, Headed: hd}, nil
}

// CheckDeployment is the read-only deployment.check op: the config loaded
// with the overrides applied; no browser.
func (h *Helper) CheckDeployment(ctx context.Context, req DeploymentRequest) (DeploymentInfo, error) {
	res, err := h.call(ctx, "deployment.check", req, h.to.Check, nil)
	if err != nil {
		return DeploymentInfo{}, err
	}
	if err := closedResult(res, "backend_kind", "headed", "url_present"); err != nil {
		return DeploymentInfo{}, h.badResult("deployment.check", err)
	}
	k, ok1 := res.str("backend_kind")
	hd, ok2 := res.boolean("headed")
	u, ok3 := res.boolean("url_present")
	if !ok1 || !ok2 || !ok3 {
		return DeploymentInfo{}, h.badResult("deployment.check", errors.New("bad backend_kind, headed or url_present"))
	}
	return DeploymentInfo{BackendKind: k, Headed: hd, URLPresent: u}, nil
}

// Dispositions maps each action to its single Flow disposition
// (docs/attended.md, "Actions").
var Dispositions = map[string]string{
	"continue":  "completed_by_operator",
	"skip":      "not_applicable",
	"reject":    "rejected_by_operator",
	"teach":     "teach_requested",
	"escalate":  "needs_assistance",
	"reconcile": "reconciliation_requested",
}

// IsLive reports whether action runs on the service's owner thread.
func IsLive(action string) bool {
	return action == "continue" || action == "skip" || action == "reconcile"
}

// ActRequest is one attended decision. DecidedBy is "automation" for every
// MCP-routed decision and "human" only after a typed terminal
// confirmation.
type ActRequest struct {
	RunsRoot         string `json:"runs_root"`
	AttentionID      string `json:"attention_id"`
	CapabilityDigest string `json:"capability_digest"`
	IdempotencyKey   string `json:"idempotency_key"`
	Action           string `json:"action"`
	Disposition      string `json:"disposition"`
	DecidedBy        string `json:"decided_by"`
	Operator         string `json:"operator"`
}

// Decision is Flow's AttendedDecision as the helper returns it. Message is
// Flow's text: it may hold PHI and never goes on the wire, into a result or
// to stderr; it is written to the protected log only.
type Decision struct {
	DecisionID              string  `json:"decision_id"`
	Action                  string  `json:"action"`
	Status                  string  `json:"status"`
	Message                 string  `json:"message"`
	ReportSuccess           *bool   `json:"report_success"`
	NextTransition          *string `json:"next_transition"`
	TransitionReceiptDigest *string `json:"transition_receipt_digest"`
}

var (
	decisionIDRE = lazyre.New(`^[0-9a-f]{32}$`)
	receiptRE    = lazyre.New(`^sha256:[0-9a-f]{64}$`)
)

// ErrBadDecision is returned by [Decision.Check].
var ErrBadDecision = errors.New("the helper's decision failed its checks")

// TerminalStatuses are the statuses a decision result may carry
// (docs/attended.md, "Results").
var TerminalStatuses = map[string]bool{"completed": true, "halted": true, "needs_demonstration": true, "escalated": true, "rejected": true, "refused": true}

// Check applies a decision's checks: decision_id 32 hex, action =
// the request's, a terminal status, a sha256 receipt or null. A failure
// maps to delivery_uncertain.
func (d Decision) Check(action string) error {
	switch {
	case !decisionIDRE().MatchString(d.DecisionID):
		return fmt.Errorf("%w: decision_id", ErrBadDecision)
	case d.Action != action:
		return fmt.Errorf("%w: action", ErrBadDecision)
	case !TerminalStatuses[d.Status]:
		return fmt.Errorf("%w: status", ErrBadDecision)
	case d.TransitionReceiptDigest != nil && !receiptRE().MatchString(*d.TransitionReceiptDigest):
		return fmt.Errorf("%w: transition_receipt_digest", ErrBadDecision)
	}
	return nil
}

var decisionKeys = []string{"decision_id", "action", "status", "message", "report_success", "next_transition", "transition_receipt_digest"}

func (h *Helper) decision(op string, res object) (Decision, error) {
	if err := closedResult(res, "decision"); err != nil {
		return Decision{}, h.badResult(op, err)
	}
	obj, ok := res.sub("decision")
	if !ok || !obj.closed(decisionKeys...) {
		return Decision{}, h.badResult(op, errors.New("bad decision object"))
	}
	var d Decision
	for _, f := range []struct {
		k   string
		dst *string
	}{{"decision_id", &d.DecisionID}, {"action", &d.Action}, {"status", &d.Status}, {"message", &d.Message}} {
		if *f.dst, ok = obj.str(f.k); !ok {
			return Decision{}, h.badResult(op, fmt.Errorf("bad decision %s", f.k))
		}
	}
	if !obj.isNull("report_success") {
		b, ok := obj.boolean("report_success")
		if !ok {
			return Decision{}, h.badResult(op, errors.New("bad decision report_success"))
		}
		d.ReportSuccess = &b
	}
	for _, f := range []struct {
		k   string
		dst **string
	}{{"next_transition", &d.NextTransition}, {"transition_receipt_digest", &d.TransitionReceiptDigest}} {
		s, isStr, ok := obj.strOrNull(f.k)
		if !ok {
			return Decision{}, h.badResult(op, fmt.Errorf("bad decision %s", f.k))
		}
		if isStr {
			*f.dst = &s
		}
	}
	if d.Message != "" {
		// Flow's message goes to the protected log only.
		h.log.line("decision " + d.DecisionID + ": " + d.Message)
	}
	return d, nil
}

// Act dispatches one attended action (attended.act). Continue/Skip need
// an open service. Answers: a [Decision] (check it with
// [Decision.Check]), an [*Error] classified by the helper or a
// [*TransportError] (Written tells whether it may have been delivered).
// Never retried.
func (h *Helper) Act(ctx context.Context, req ActRequest) (Decision, error) {
	d := h.to.ActAudit
	if IsLive(req.Action) {
		d = h.to.ActLive
	}
	return h.decide(ctx, "attended.act", req, d)
}

// decide sends one decision op and checks its decision answer.
func (h *Helper) decide(ctx context.Context, op string, req any, deadline time.Duration) (Decision, error) {
	res, err := h.call(ctx, op, req, deadline, nil)
	if err != nil {
		return Decision{}, err
	}
	return h.decision(op, res)
}

// Target names the pause and the request key of attended.replay and
// attended.reconcile (its fields are flattened into the frame).
type Target struct {
	RunsRoot         string `json:"runs_root"`
	AttentionID      string `json:"attention_id"`
	CapabilityDigest string `json:"capability_digest"`
	IdempotencyKey   string `json:"idempotency_key"`
}

// ReplayRequest is attended.replay's request: the act fields minus
// decided_by and operator.
type ReplayRequest struct {
	Target
	Action      string `json:"action"`
	Disposition string `json:"disposition"`
}

// Replay reads Flow's journaled decision for an identical request without
// executing anything (attended.replay). Errors: refused/no_prior_decision,
// refused/attention_not_found, uncertain/journal_in_flight, ….
func (h *Helper) Replay(ctx context.Context, req ReplayRequest) (Decision, error) {
	return h.decide(ctx, "attended.replay", req, h.to.Replay)
}

// ReconcileRequest is attended.reconcile's request:
// Flow's read-only effect reconciliation through the open service, the
// way out of delivery_uncertain. Terminal only; never over MCP.
type ReconcileRequest struct {
	Target
	DecidedBy string `json:"decided_by"`
	Operator  string `json:"operator"`
}

// Reconcile runs attended.reconcile.
func (h *Helper) Reconcile(ctx context.Context, req ReconcileRequest) (Decision, error) {
	return h.decide(ctx, "attended.reconcile", req, h.to.ActLive)
}

// AuthoringProbe is authoring.probe's answer: whether
// openadapt_flow.authoring imports, and which entries of [AuthoringAPI]
// the installed Flow lacks or has in another shape.
type AuthoringProbe struct {
	Importable bool
	Mismatched []string // names of AuthoringAPI entries
}

// Available reports whether authoring can run on this Flow.
func (p AuthoringProbe) Available() bool { return p.Importable && len(p.Mismatched) == 0 }

// ProbeAuthoring runs authoring.probe with the recorded [AuthoringAPI]
// (names and signatures; never the version string: docs/helper.md,
// Version gate).
func (h *Helper) ProbeAuthoring(ctx context.Context) (AuthoringProbe, error) {
	res, err := h.call(ctx, "authoring.probe", map[string]any{"api": AuthoringAPI}, h.to.Probe, nil)
	if err != nil {
		return AuthoringProbe{}, err
	}
	if err := closedResult(res, "importable", "mismatched"); err != nil {
		return AuthoringProbe{}, h.badResult("authoring.probe", err)
	}
	i, ok := res.boolean("importable")
	if !ok {
		return AuthoringProbe{}, h.badResult("authoring.probe", &fieldError{"importable"})
	}
	p := AuthoringProbe{Importable: i}
	names := authoringAPINames()
	d, v := res.d, res.get("mismatched")
	if d.Kind(v) != pyjson.Array || d.Len(v) > len(AuthoringAPI) {
		return AuthoringProbe{}, h.badResult("authoring.probe", &fieldError{"mismatched"})
	}
	for e := range d.Elems(v) {
		if d.Kind(e) != pyjson.String || !names[d.Str(e)] {
			return AuthoringProbe{}, h.badResult("authoring.probe", &fieldError{"mismatched"})
		}
		p.Mismatched = append(p.Mismatched, d.Str(e))
	}
	return p, nil
}
