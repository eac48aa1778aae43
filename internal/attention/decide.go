package attention

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// The attended decision procedure (docs/attended.md). serve's attended
// tools and the terminal `attention` command both decide through a
// [Decider]: the checks, the replay of a journaled decision, the dispatch
// to Flow through the helper and the classification of Flow's answer are
// here, once. Each caller keeps its own confirmation (a form over MCP, a
// typed word on the terminal) and its own mapping of [Kind] to an error
// code or a message. Flow's own message text is only in
// Result.Decision.Message, which no caller shows.

// Who decided, as Flow's journal records it: "human" only after a typed
// confirmation on the controlling terminal, "automation" otherwise (every
// decision routed through MCP, and the terminal's --yes).
const (
	DecidedByHuman      = "human"
	DecidedByAutomation = "automation"
)

// Kind is the closed set of answers of [Decider.Decide] and
// [Decider.Replay]. Callers map every kind; a new one is a breaking change.
type Kind int

// The kinds. The first four come from the Decider's own checks, before
// anything is sent to Flow; the rest classify the helper's answer.
const (
	// NotFound: no current Needs Attention item has the id (and no
	// journaled decision answers the retry).
	NotFound Kind = iota + 1
	// Stale: the item's capability digest is not the one the caller
	// decided on (or the item changed while the operator confirmed).
	Stale
	// NotAllowed: the item's current capability does not allow the action.
	NotAllowed
	// Unavailable: the helper is not running, so nothing was sent (or it
	// stopped before any byte of the request was written).
	Unavailable

	// Decided: Flow answered with a decision that passed its checks
	// ([Result].Decision; its Status says completed, halted, rejected,
	// escalated, needs_demonstration or refused).
	Decided
	// Refused: Flow refused the request before acting; nothing was done.
	Refused
	// OperatorRefused: the helper refused because the local operator
	// identity it derived differs from this process's; nothing was done.
	OperatorRefused
	// PauseNotFound: Flow found no open pause for the item (it closed after
	// the checks); nothing was done.
	PauseNotFound
	// Busy: another attended action on this pause or live session is in
	// progress; nothing was done, and the same key may be retried.
	Busy
	// Uncertain: the request may have reached Flow and its outcome is
	// unknown (the helper died after the request was written, or said so).
	// Never retry blindly: reconcile.
	Uncertain
	// Malformed: Flow answered with a decision that failed its checks
	// (decision id, action, status, receipt digest); treat it as
	// Uncertain.
	Malformed
	// Failed: the helper failed the request. [Result].Dispatched says
	// whether Flow's execute may have been entered (true when unknown).
	Failed
)

var kindNames = [...]string{NotFound: "not_found", Stale: "stale", NotAllowed: "not_allowed", Unavailable: "unavailable",
	Decided: "decided", Refused: "refused", OperatorRefused: "operator_refused", PauseNotFound: "pause_not_found",
	Busy: "busy", Uncertain: "uncertain", Malformed: "malformed", Failed: "failed"}

// String returns the kind's name (for logs and tests).
func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Request is one attended decision.
type Request struct {
	// AttentionID is the item's id ([ID]).
	AttentionID string
	// Action is continue, skip, reject, teach, escalate or reconcile.
	Action string
	// CapabilityDigest is the digest the caller decided on. "" means the
	// item's current digest (the terminal shows the item and asks then);
	// Decide then never replays: call [Decider.Replay] first.
	CapabilityDigest string
	// IdempotencyKey is the request's stable key (required).
	IdempotencyKey string
}

// Result is the answer to one request.
type Result struct {
	Kind Kind
	// Decision is Flow's decision when Kind is Decided. Its Message is
	// Flow's text (protected: never show it). Its NextTransition is kept
	// only when it is "<complete>", "<program-transition-receipt>" or a
	// step id of the run's own bundle ([Decider].BundleSteps); otherwise it
	// is nil.
	Decision flowhelper.Decision
	// Replayed reports that the answer is Flow's journaled decision for an
	// earlier, byte-identical request (attended.replay): nothing was
	// dispatched, and nothing was confirmed.
	Replayed bool
	// Dispatched, with Kind Failed, reports that Flow's execute may have
	// been entered (true when the failure is not one the helper classified).
	Dispatched bool
}

// Helper is what a [Decider] needs of the Flow helper;
// *flowhelper.Helper implements it.
type Helper interface {
	// Alive reports whether the helper can take requests.
	Alive() bool
	// Operator is the local operator identity the helper was started with.
	Operator() string
	Act(ctx context.Context, req flowhelper.ActRequest) (flowhelper.Decision, error)
	Replay(ctx context.Context, req flowhelper.ReplayRequest) (flowhelper.Decision, error)
	Reconcile(ctx context.Context, req flowhelper.ReconcileRequest) (flowhelper.Decision, error)
}

// Confirm asks the local operator to confirm the request on the current
// item it, after every check passed. It returns who decided
// ([DecidedByHuman] or [DecidedByAutomation]). An error means the operator
// did not confirm (or could not be asked): [Decider.Decide] returns it
// unchanged and dispatches nothing. Confirm may start the helper through
// the Decider's Start (the terminal opens its live session before asking).
type Confirm func(ctx context.Context, it Item) (decidedBy string, err error)

// Decider runs attended decisions on one runs root. Give it either Helper
// (a helper that is already running, as serve's) or Start (one started on
// first use, as the terminal's). A Decider holds no state of its own: use
// one per call, or share one whose fields do not change.
type Decider struct {
	// RunsRoot is the runs directory (absolute) the items are read from.
	RunsRoot string
	// Helper is a running helper. When it has stopped, Decide answers
	// Unavailable before any check, and before dispatching.
	Helper Helper
	// Start, used when Helper is nil, returns the helper to dispatch on,
	// starting it the first time; later calls must return the same helper
	// (Confirm may have started it). Decide and Replay call it only once
	// their checks passed. Its error is returned unchanged.
	Start func(ctx context.Context) (Helper, error)
	// BundleSteps returns the step ids of the caller's verified, plaintext
	// bundle whose folder is bundleDir (see bundle.StepIDs), and false when
	// the caller has no such bundle. Without it, a next_transition other
	// than "<complete>" and "<program-transition-receipt>" is withheld.
	BundleSteps func(ctx context.Context, bundleDir string) ([]string, bool)
	// Dispatching, when set, is called right before Flow is asked to act,
	// and the function it returns right after the answer (serve sends
	// progress notifications meanwhile).
	Dispatching func() (done func())
}

// helper returns the helper to dispatch on.
func (d *Decider) helper(ctx context.Context) (Helper, error) {
	if d.Helper != nil {
		return d.Helper, nil
	}
	if d.Start == nil {
		return nil, errors.New("attention: a Decider needs a Helper or a Start")
	}
	return d.Start(ctx)
}

// Decide runs one attended decision:
//
//  1. with a running Helper that stopped: Unavailable;
//  2. the item: NotFound when no current item has the id, Stale when its
//     capability digest is not req's (both first try [Decider.Replay],
//     whose answer stands when Flow journaled this exact request), and
//     NotAllowed when its capability does not allow the action;
//  3. confirm (its error is returned as is; nothing is dispatched);
//  4. the item again: Stale when it changed meanwhile;
//  5. the helper (Start), Unavailable when it stopped;
//  6. attended.act (attended.reconcile for reconcile), and Flow's answer
//     classified ([Kind]).
//
// The error is confirm's or Start's; every other outcome is a [Result].
func (d *Decider) Decide(ctx context.Context, req Request, confirm Confirm) (Result, error) {
	if d.Helper != nil && !d.Helper.Alive() {
		return Result{Kind: Unavailable}, nil
	}
	it, err := Get(d.RunsRoot, req.AttentionID)
	if err != nil {
		return d.replayOr(ctx, req, NotFound)
	}
	if req.CapabilityDigest != "" && (it.Capability == nil || it.Capability.Digest != req.CapabilityDigest) {
		return d.replayOr(ctx, req, Stale)
	}
	if _, known := flowhelper.Dispositions[req.Action]; !known || it.Capability == nil || !slices.Contains(it.Capability.AllowedActions, req.Action) {
		return Result{Kind: NotAllowed}, nil
	}
	digest := it.Capability.Digest
	decidedBy, err := confirm(ctx, it)
	if err != nil {
		return Result{}, err
	}
	if decidedBy != DecidedByHuman && decidedBy != DecidedByAutomation {
		return Result{}, fmt.Errorf("attention: confirm answered decided_by %q", decidedBy)
	}
	again, err := Get(d.RunsRoot, req.AttentionID)
	if err != nil || again.Capability == nil || again.Capability.Digest != digest {
		return Result{Kind: Stale}, nil
	}
	h, err := d.helper(ctx)
	if err != nil {
		return Result{}, err
	}
	if !h.Alive() {
		return Result{Kind: Unavailable}, nil
	}
	target := flowhelper.Target{RunsRoot: d.RunsRoot, AttentionID: req.AttentionID, CapabilityDigest: digest, IdempotencyKey: req.IdempotencyKey}
	done := func() {}
	if d.Dispatching != nil {
		done = d.Dispatching()
	}
	var dec flowhelper.Decision
	if req.Action == "reconcile" {
		dec, err = h.Reconcile(ctx, flowhelper.ReconcileRequest{Target: target, DecidedBy: decidedBy, Operator: h.Operator()})
	} else {
		dec, err = h.Act(ctx, flowhelper.ActRequest{RunsRoot: target.RunsRoot, AttentionID: target.AttentionID,
			CapabilityDigest: target.CapabilityDigest, IdempotencyKey: target.IdempotencyKey, Action: req.Action,
			Disposition: flowhelper.Dispositions[req.Action], DecidedBy: decidedBy, Operator: h.Operator()})
	}
	done()
	return d.classify(ctx, req.AttentionID, req.Action, dec, err, false), nil
}

// replayOr answers a request whose item closed or moved on: Flow's
// journaled decision when it journaled exactly this request, else orig.
func (d *Decider) replayOr(ctx context.Context, req Request, orig Kind) (Result, error) {
	if req.CapabilityDigest == "" {
		return Result{Kind: orig}, nil
	}
	r, ok, err := d.Replay(ctx, req)
	if err != nil || !ok {
		return Result{Kind: orig}, err
	}
	return r, nil
}

// Replay answers a retry of a decision Flow journaled, without a
// confirmation and dispatching nothing, even after the item closed or the
// process that decided it stopped. It reports false, having sent nothing,
// unless the run's decision journal holds a terminal decision for
// req.IdempotencyKey whose request digest is that of req (same action,
// disposition, capability digest and key); with no CapabilityDigest in req
// the journaled one is used, and the journaled action must be req's. It
// also reports false when Flow answers that it has no such decision. The
// answer itself always comes from Flow (attended.replay). The error is
// Start's.
func (d *Decider) Replay(ctx context.Context, req Request) (Result, bool, error) {
	if req.IdempotencyKey == "" {
		return Result{}, false, nil
	}
	dir, ok := RunDir(d.RunsRoot, req.AttentionID)
	if !ok {
		return Result{}, false, nil
	}
	j, ok := flowhelper.LastJournaled(ctx, dir, req.IdempotencyKey)
	if !ok {
		return Result{}, false, nil
	}
	digest := req.CapabilityDigest
	if digest == "" {
		if j.Action != req.Action {
			return Result{}, false, nil
		}
		digest = j.CapabilityDigest
	}
	if !j.Replayable(req.Action, digest, req.IdempotencyKey) {
		return Result{}, false, nil
	}
	h, err := d.helper(ctx)
	if err != nil {
		return Result{}, true, err
	}
	dec, err := h.Replay(ctx, flowhelper.ReplayRequest{
		Target: flowhelper.Target{RunsRoot: d.RunsRoot, AttentionID: req.AttentionID, CapabilityDigest: digest, IdempotencyKey: req.IdempotencyKey},
		Action: req.Action, Disposition: flowhelper.Dispositions[req.Action]})
	var he *flowhelper.Error
	if errors.As(err, &he) && (he.Reason == "no_prior_decision" || he.Reason == "attention_not_found") {
		return Result{}, false, nil
	}
	return d.classify(ctx, req.AttentionID, req.Action, dec, err, true), true, nil
}

// classify turns the helper's answer into a Result. A replay executes
// nothing, so only an answer that says uncertain (or a request that died
// once written) is Uncertain there; an act or reconcile whose internal
// failure came after Flow's execute was entered is Uncertain too.
func (d *Decider) classify(ctx context.Context, id, action string, dec flowhelper.Decision, err error, replay bool) Result {
	r := Result{Replayed: replay}
	if err == nil {
		if dec.Check(action) != nil {
			r.Kind = Malformed
			return r
		}
		if dec.NextTransition != nil && !d.knownTransition(ctx, id, *dec.NextTransition) {
			dec.NextTransition = nil
		}
		r.Kind, r.Decision = Decided, dec
		return r
	}
	var te *flowhelper.TransportError
	if errors.As(err, &te) {
		r.Kind = Unavailable
		if te.Written {
			r.Kind = Uncertain
		}
		return r
	}
	var he *flowhelper.Error
	if !errors.As(err, &he) {
		r.Kind, r.Dispatched = Failed, true
		return r
	}
	switch {
	case he.Kind == flowhelper.KindRefused && he.Reason == "attention_not_found":
		r.Kind = PauseNotFound
	case he.Kind == flowhelper.KindRefused && (he.Reason == "operator_mismatch" || he.Reason == "operator_blank"):
		r.Kind = OperatorRefused
	case he.Kind == flowhelper.KindRefused:
		r.Kind = Refused
	case he.Kind == flowhelper.KindBusy:
		r.Kind = Busy
	case he.Kind == flowhelper.KindUncertain, he.Kind == flowhelper.KindInternal && he.Dispatched && !replay:
		r.Kind = Uncertain
	default:
		r.Kind, r.Dispatched = Failed, he.Dispatched
	}
	return r
}

// manifestLimit bounds the read of a run's checkpoint manifest.
var manifestLimit = fsutil.Limit{Kind: "run checkpoint manifest", Max: 8 << 20}

// knownTransition reports whether next may be shown: "<complete>",
// "<program-transition-receipt>", or a step id of the run's own bundle,
// which is the one named by the run's plaintext checkpoints/_manifest.json
// bundle_dir when the caller vouches for it (BundleSteps).
func (d *Decider) knownTransition(ctx context.Context, id, next string) bool {
	if next == "<complete>" || next == "<program-transition-receipt>" {
		return true
	}
	if d.BundleSteps == nil {
		return false
	}
	dir, ok := RunDir(d.RunsRoot, id)
	if !ok {
		return false
	}
	data, err := fsutil.ReadFile(ctx, filepath.Join(dir, "checkpoints", "_manifest.json"), manifestLimit, fsutil.NoFollow)
	if err != nil {
		return false
	}
	var man struct {
		BundleDir string `json:"bundle_dir"`
	}
	if pyjson.Unmarshal(data, pyjson.Options{}, &man) != nil || man.BundleDir == "" {
		return false
	}
	ids, ok := d.BundleSteps(ctx, filepath.Clean(man.BundleDir))
	return ok && slices.Contains(ids, next)
}
