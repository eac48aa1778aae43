package attention

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
)

// fakeHelper is an in-memory [Helper]: each op answers from its func and
// every request is recorded.
type fakeHelper struct {
	dead      bool
	op        string
	act       func(flowhelper.ActRequest) (flowhelper.Decision, error)
	replay    func(flowhelper.ReplayRequest) (flowhelper.Decision, error)
	reconcile func(flowhelper.ReconcileRequest) (flowhelper.Decision, error)
	calls     []any
}

func (f *fakeHelper) Alive() bool      { return !f.dead }
func (f *fakeHelper) Operator() string { return f.op }
func (f *fakeHelper) Act(_ context.Context, r flowhelper.ActRequest) (flowhelper.Decision, error) {
	f.calls = append(f.calls, r)
	return f.act(r)
}
func (f *fakeHelper) Replay(_ context.Context, r flowhelper.ReplayRequest) (flowhelper.Decision, error) {
	f.calls = append(f.calls, r)
	if f.replay == nil {
		return flowhelper.Decision{}, &flowhelper.Error{Kind: flowhelper.KindRefused, Reason: "no_prior_decision"}
	}
	return f.replay(r)
}
func (f *fakeHelper) Reconcile(_ context.Context, r flowhelper.ReconcileRequest) (flowhelper.Decision, error) {
	f.calls = append(f.calls, r)
	return f.reconcile(r)
}

const (
	openRun     = "run-0001" // a pending item allowing continue, reject, teach, escalate
	noCapRun    = "run-0002" // a halted item without a capability
	testKey     = "decide-key-000000000001"
	decisionHex = "0123456789abcdef0123456789abcdef"
	bundleDir   = "/srv/openadapt-sample/attended/bundles/attended-sample" // the run's checkpoint manifest
)

func decision(action, status string, next *string) flowhelper.Decision {
	return flowhelper.Decision{DecisionID: decisionHex, Action: action, Status: status, Message: "Flow's own text", NextTransition: next}
}

func answer(d flowhelper.Decision, err error) func(flowhelper.ActRequest) (flowhelper.Decision, error) {
	return func(flowhelper.ActRequest) (flowhelper.Decision, error) { return d, err }
}

func helperErr(kind, reason string, dispatched bool) error {
	return &flowhelper.Error{Kind: kind, Reason: reason, Dispatched: dispatched}
}

func strp(s string) *string { return &s }

// decideEnv is a copy of the attended runs vector and the open item.
type decideEnv struct {
	root string
	item Item
}

func newDecideEnv(t *testing.T) *decideEnv {
	t.Helper()
	root := copyRoot(t)
	it, err := Get(root, ID(openRun))
	if err != nil || it.Capability == nil {
		t.Fatalf("fixture item: %v", err)
	}
	return &decideEnv{root: root, item: it}
}

// closeItem ends the pause of run-0001 the way a completed decision does.
func (e *decideEnv) closeItem(t *testing.T) {
	t.Helper()
	run := filepath.Join(e.root, openRun)
	if err := os.Remove(filepath.Join(run, "pending_escalation.json")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(run, "report.json"), []byte(`{"success":true,"execution_outcome":"VERIFIED","results":[]}`), 0o600)
	if _, err := Get(e.root, ID(openRun)); err == nil {
		t.Fatal("the item is still open")
	}
}

// journal writes run-0001's decision projection with one decision.
func (e *decideEnv) journal(t *testing.T, action, digest, key, status string) {
	t.Helper()
	j := map[string]any{"decisions": []map[string]any{{"decision_id": decisionHex, "idempotency_key": key,
		"request_digest": flowhelper.RequestDigest(action, digest, key), "capability_digest": digest,
		"action": action, "status": status}}}
	b, _ := json.Marshal(j)
	if err := os.WriteFile(filepath.Join(e.root, openRun, "attended_decisions.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (e *decideEnv) request(action string) Request {
	return Request{AttentionID: e.item.ID, Action: action, CapabilityDigest: e.item.Capability.Digest, IdempotencyKey: testKey}
}

func automation(context.Context, Item) (string, error) { return DecidedByAutomation, nil }

// TestDecideKinds: one row per outcome of Decide, from the Decider's own
// checks to every class of the helper's answer.
func TestDecideKinds(t *testing.T) {
	t.Parallel()
	staleDigest := "sha256:" + strings.Repeat("0", 64)
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, e *decideEnv, h *fakeHelper, r *Request)
		act     func(flowhelper.ActRequest) (flowhelper.Decision, error)
		want    Result
		asked   bool // confirm was called
		sent    int  // requests the helper got
		errWant string
	}{
		{name: "helper stopped first", setup: func(_ *testing.T, _ *decideEnv, h *fakeHelper, _ *Request) { h.dead = true },
			want: Result{Kind: Unavailable}},
		{name: "unknown id", setup: func(_ *testing.T, _ *decideEnv, _ *fakeHelper, r *Request) { r.AttentionID = strings.Repeat("a", 24) },
			want: Result{Kind: NotFound}},
		{name: "malformed id", setup: func(_ *testing.T, _ *decideEnv, _ *fakeHelper, r *Request) { r.AttentionID = "../run-0001" },
			want: Result{Kind: NotFound}},
		{name: "closed item, nothing journaled", setup: func(t *testing.T, e *decideEnv, _ *fakeHelper, _ *Request) { e.closeItem(t) },
			want: Result{Kind: NotFound}},
		{name: "stale digest", setup: func(_ *testing.T, _ *decideEnv, _ *fakeHelper, r *Request) { r.CapabilityDigest = staleDigest },
			want: Result{Kind: Stale}},
		{name: "no capability with a digest", setup: func(_ *testing.T, _ *decideEnv, _ *fakeHelper, r *Request) { r.AttentionID = ID(noCapRun) },
			want: Result{Kind: Stale}},
		{name: "no capability without a digest", setup: func(_ *testing.T, _ *decideEnv, _ *fakeHelper, r *Request) {
			r.AttentionID, r.CapabilityDigest = ID(noCapRun), ""
		}, want: Result{Kind: NotAllowed}},
		{name: "action not allowed", setup: func(_ *testing.T, _ *decideEnv, _ *fakeHelper, r *Request) { r.Action = "skip" },
			want: Result{Kind: NotAllowed}},
		{name: "unknown action", setup: func(_ *testing.T, _ *decideEnv, _ *fakeHelper, r *Request) { r.Action = "approve" },
			want: Result{Kind: NotAllowed}},
		{name: "changed while confirming", setup: func(t *testing.T, e *decideEnv, h *fakeHelper, _ *Request) {
			h.calls = append(h.calls, "close on confirm")
		}, want: Result{Kind: Stale}, asked: true},
		{name: "helper stopped while confirming", setup: func(t *testing.T, e *decideEnv, h *fakeHelper, _ *Request) {
			h.calls = append(h.calls, "die on confirm")
		}, want: Result{Kind: Unavailable}, asked: true},

		{name: "decided", act: answer(decision("escalate", "escalated", nil), nil),
			want: Result{Kind: Decided, Decision: decision("escalate", "escalated", nil)}, asked: true, sent: 1},
		{name: "decided refused status", act: answer(decision("escalate", "refused", nil), nil),
			want: Result{Kind: Decided, Decision: decision("escalate", "refused", nil)}, asked: true, sent: 1},
		{name: "refused", act: answer(flowhelper.Decision{}, helperErr("refused", "", true)), want: Result{Kind: Refused}, asked: true, sent: 1},
		{name: "operator mismatch", act: answer(flowhelper.Decision{}, helperErr("refused", "operator_mismatch", false)), want: Result{Kind: OperatorRefused}, asked: true, sent: 1},
		{name: "operator blank", act: answer(flowhelper.Decision{}, helperErr("refused", "operator_blank", false)), want: Result{Kind: OperatorRefused}, asked: true, sent: 1},
		{name: "pause not found", act: answer(flowhelper.Decision{}, helperErr("refused", "attention_not_found", false)), want: Result{Kind: PauseNotFound}, asked: true, sent: 1},
		{name: "busy", act: answer(flowhelper.Decision{}, helperErr("busy", "", true)), want: Result{Kind: Busy}, asked: true, sent: 1},
		{name: "uncertain", act: answer(flowhelper.Decision{}, helperErr("uncertain", "journal_in_flight", true)), want: Result{Kind: Uncertain}, asked: true, sent: 1},
		{name: "internal after dispatch", act: answer(flowhelper.Decision{}, helperErr("internal", "", true)), want: Result{Kind: Uncertain}, asked: true, sent: 1},
		{name: "internal before dispatch", act: answer(flowhelper.Decision{}, helperErr("internal", "", false)), want: Result{Kind: Failed}, asked: true, sent: 1},
		{name: "invalid", act: answer(flowhelper.Decision{}, helperErr("invalid", "bad_request", false)), want: Result{Kind: Failed}, asked: true, sent: 1},
		{name: "unavailable after dispatch", act: answer(flowhelper.Decision{}, helperErr("unavailable", "not_open", true)), want: Result{Kind: Failed, Dispatched: true}, asked: true, sent: 1},
		{name: "died after writing", act: answer(flowhelper.Decision{}, &flowhelper.TransportError{Op: "attended.act", Written: true, Err: flowhelper.ErrDead}), want: Result{Kind: Uncertain}, asked: true, sent: 1},
		{name: "died before writing", act: answer(flowhelper.Decision{}, &flowhelper.TransportError{Op: "attended.act", Err: flowhelper.ErrDead}), want: Result{Kind: Unavailable}, asked: true, sent: 1},
		{name: "unclassified error", act: answer(flowhelper.Decision{}, context.Canceled), want: Result{Kind: Failed, Dispatched: true}, asked: true, sent: 1},
		{name: "bad decision id", act: answer(flowhelper.Decision{DecisionID: "xyz", Action: "escalate", Status: "escalated"}, nil), want: Result{Kind: Malformed}, asked: true, sent: 1},
		{name: "another action", act: answer(decision("reject", "rejected", nil), nil), want: Result{Kind: Malformed}, asked: true, sent: 1},
		{name: "not terminal", act: answer(decision("escalate", "prepared", nil), nil), want: Result{Kind: Malformed}, asked: true, sent: 1},
		{name: "bad receipt", act: answer(flowhelper.Decision{DecisionID: decisionHex, Action: "escalate", Status: "escalated", TransitionReceiptDigest: strp("md5:x")}, nil),
			want: Result{Kind: Malformed}, asked: true, sent: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDecideEnv(t)
			h := &fakeHelper{op: "operator-1", act: tc.act}
			req := e.request("escalate")
			if tc.setup != nil {
				tc.setup(t, e, h, &req)
			}
			var onConfirm any
			if len(h.calls) > 0 {
				onConfirm, h.calls = h.calls[0], nil
			}
			asked := false
			confirm := func(_ context.Context, it Item) (string, error) {
				asked = true
				if it.ID != req.AttentionID {
					t.Errorf("confirm got item %s", it.ID)
				}
				switch onConfirm {
				case "close on confirm":
					e.closeItem(t)
				case "die on confirm":
					h.dead = true
				}
				return DecidedByAutomation, nil
			}
			d := &Decider{RunsRoot: e.root, Helper: h}
			got, err := d.Decide(context.Background(), req, confirm)
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if asked != tc.asked {
				t.Errorf("confirm called %v, want %v", asked, tc.asked)
			}
			if len(h.calls) != tc.sent {
				t.Errorf("%d requests sent, want %d: %v", len(h.calls), tc.sent, h.calls)
			}
		})
	}
}

// TestDecideRequest: what reaches the helper, and the hooks around it.
func TestDecideRequest(t *testing.T) {
	t.Parallel()
	e := newDecideEnv(t)
	h := &fakeHelper{op: "operator-1", act: answer(decision("teach", "needs_demonstration", nil), nil)}
	var events []string
	d := &Decider{RunsRoot: e.root, Helper: h, Dispatching: func() func() {
		events = append(events, "dispatching")
		return func() { events = append(events, "done") }
	}}
	confirm := func(context.Context, Item) (string, error) {
		events = append(events, "confirm")
		return DecidedByHuman, nil
	}
	req := e.request("teach")
	req.CapabilityDigest = "" // the terminal decides on the current digest
	got, err := d.Decide(context.Background(), req, confirm)
	if err != nil || got.Kind != Decided {
		t.Fatalf("Decide = %+v, %v", got, err)
	}
	want := []any{flowhelper.ActRequest{RunsRoot: e.root, AttentionID: e.item.ID, CapabilityDigest: e.item.Capability.Digest,
		IdempotencyKey: testKey, Action: "teach", Disposition: "teach_requested", DecidedBy: "human", Operator: "operator-1"}}
	if diff := cmp.Diff(want, h.calls); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"confirm", "dispatching", "done"}, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// allowReconcile adds reconcile to run-0001's capability and signs it
// again with the run's key, as Flow does after an uncertain delivery.
func (e *decideEnv) allowReconcile(t *testing.T) {
	t.Helper()
	dir := filepath.Join(e.root, openRun)
	p := filepath.Join(dir, "attended_capability.json")
	s := strings.Replace(string(mustRead(t, p)), `"escalate"
  ]`, `"escalate", "reconcile"
  ]`, 1)
	canon, err := canonicalUnsigned(parseCanon(t, []byte(s)))
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, mustRead(t, filepath.Join(dir, ".attended_capability.key")))
	mac.Write(canon)
	old := s[strings.Index(s, `"hmac-sha256:`):]
	old = old[:strings.Index(old[1:], `"`)+2]
	s = strings.Replace(s, old, `"hmac-sha256:`+hex.EncodeToString(mac.Sum(nil))+`"`, 1)
	write(t, p, s, 0o644)
	it, err := Get(e.root, ID(openRun))
	if err != nil || it.Capability == nil || !slices.Contains(it.Capability.AllowedActions, "reconcile") {
		t.Fatalf("re-signed capability: %+v %v", it.Capability, err)
	}
	e.item = it
}

// TestDecideReconcile: reconcile goes to attended.reconcile with who
// decided and the helper's operator, never to attended.act.
func TestDecideReconcile(t *testing.T) {
	t.Parallel()
	e := newDecideEnv(t)
	h := &fakeHelper{op: "op", reconcile: func(flowhelper.ReconcileRequest) (flowhelper.Decision, error) {
		return decision("reconcile", "completed", nil), nil
	}}
	d := &Decider{RunsRoot: e.root, Helper: h}
	if got, _ := d.Decide(context.Background(), e.request("reconcile"), automation); got.Kind != NotAllowed || len(h.calls) != 0 {
		t.Fatalf("reconcile on a capability without it = %v", got.Kind)
	}
	e.allowReconcile(t)
	req := e.request("reconcile")
	req.CapabilityDigest = ""
	human := func(context.Context, Item) (string, error) { return DecidedByHuman, nil }
	got, err := d.Decide(context.Background(), req, human)
	if err != nil || got.Kind != Decided || got.Decision.Status != "completed" {
		t.Fatalf("%+v %v", got, err)
	}
	want := []any{flowhelper.ReconcileRequest{Target: flowhelper.Target{RunsRoot: e.root, AttentionID: e.item.ID,
		CapabilityDigest: e.item.Capability.Digest, IdempotencyKey: testKey}, DecidedBy: "human", Operator: "op"}}
	if diff := cmp.Diff(want, h.calls); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestDecideErrors(t *testing.T) {
	t.Parallel()
	errNo := errors.New("operator declined")
	t.Run("confirm's error is returned", func(t *testing.T) {
		e := newDecideEnv(t)
		h := &fakeHelper{op: "op"}
		d := &Decider{RunsRoot: e.root, Helper: h}
		_, err := d.Decide(context.Background(), e.request("reject"), func(context.Context, Item) (string, error) { return "", errNo })
		if err != errNo || len(h.calls) != 0 {
			t.Fatalf("err %v, %d requests", err, len(h.calls))
		}
	})
	t.Run("decided_by outside the two words", func(t *testing.T) {
		e := newDecideEnv(t)
		h := &fakeHelper{op: "op"}
		d := &Decider{RunsRoot: e.root, Helper: h}
		_, err := d.Decide(context.Background(), e.request("reject"), func(context.Context, Item) (string, error) { return "robot", nil })
		if err == nil || len(h.calls) != 0 {
			t.Fatalf("err %v, %d requests", err, len(h.calls))
		}
	})
	t.Run("Start's error is returned, after the checks", func(t *testing.T) {
		e := newDecideEnv(t)
		errStart := errors.New("no interpreter")
		starts := 0
		d := &Decider{RunsRoot: e.root, Start: func(context.Context) (Helper, error) { starts++; return nil, errStart }}
		if got, err := d.Decide(context.Background(), Request{AttentionID: strings.Repeat("a", 24), Action: "reject", IdempotencyKey: testKey}, automation); err != nil || got.Kind != NotFound || starts != 0 {
			t.Fatalf("unknown id: %v %v, %d starts", got, err, starts)
		}
		if _, err := d.Decide(context.Background(), e.request("reject"), automation); err != errStart || starts != 1 {
			t.Fatalf("err %v, %d starts", err, starts)
		}
	})
	t.Run("neither Helper nor Start", func(t *testing.T) {
		e := newDecideEnv(t)
		if _, err := (&Decider{RunsRoot: e.root}).Decide(context.Background(), e.request("reject"), automation); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("Start is shared with confirm", func(t *testing.T) {
		e := newDecideEnv(t)
		h := &fakeHelper{op: "op", act: answer(decision("reject", "rejected", nil), nil)}
		var started Helper
		d := &Decider{RunsRoot: e.root}
		d.Start = func(context.Context) (Helper, error) {
			if started == nil {
				started = h
			}
			return started, nil
		}
		confirm := func(ctx context.Context, _ Item) (string, error) {
			if _, err := d.Start(ctx); err != nil { // the terminal opens its live session here
				return "", err
			}
			return DecidedByHuman, nil
		}
		if got, err := d.Decide(context.Background(), e.request("reject"), confirm); err != nil || got.Kind != Decided || len(h.calls) != 1 {
			t.Fatalf("%+v %v %d", got, err, len(h.calls))
		}
	})
}

// TestDecideNextTransition: next_transition passes only as <complete>,
// <program-transition-receipt> or a step of the run's own bundle.
func TestDecideNextTransition(t *testing.T) {
	t.Parallel()
	steps := func(_ context.Context, dir string) ([]string, bool) {
		if dir != bundleDir {
			return nil, false
		}
		return []string{"human", "next"}, true
	}
	other := func(context.Context, string) ([]string, bool) { return nil, false }
	for _, tc := range []struct {
		name  string
		next  string
		steps func(context.Context, string) ([]string, bool)
		keep  bool
	}{
		{"complete", "<complete>", nil, true},
		{"receipt", "<program-transition-receipt>", nil, true},
		{"own step", "next", steps, true},
		{"unknown step", "elsewhere", steps, false},
		{"not the caller's bundle", "next", other, false},
		{"no bundle lookup", "next", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDecideEnv(t)
			h := &fakeHelper{op: "op", act: answer(decision("continue", "completed", strp(tc.next)), nil)}
			d := &Decider{RunsRoot: e.root, Helper: h, BundleSteps: tc.steps}
			got, err := d.Decide(context.Background(), e.request("continue"), automation)
			if err != nil || got.Kind != Decided {
				t.Fatalf("%+v %v", got, err)
			}
			if kept := got.Decision.NextTransition != nil; kept != tc.keep {
				t.Errorf("next_transition kept %v, want %v", kept, tc.keep)
			}
		})
	}
}

// TestReplay: a retry of a journaled decision is answered by Flow's
// replay, never dispatched; anything else is not a replay.
func TestReplay(t *testing.T) {
	t.Parallel()
	replayed := func(d flowhelper.Decision, err error) func(flowhelper.ReplayRequest) (flowhelper.Decision, error) {
		return func(flowhelper.ReplayRequest) (flowhelper.Decision, error) { return d, err }
	}
	ok := replayed(decision("reject", "rejected", nil), nil)
	for _, tc := range []struct {
		name    string
		journal bool   // journal reject with the item's digest and testKey
		jAction string // journaled action ("" = reject)
		edit    func(e *decideEnv, r *Request)
		replay  func(flowhelper.ReplayRequest) (flowhelper.Decision, error)
		want    Result
		replays bool
		sent    int
	}{
		{name: "journaled", journal: true, replay: ok, want: Result{Kind: Decided, Decision: decision("reject", "rejected", nil), Replayed: true}, replays: true, sent: 1},
		{name: "journaled, digest from the journal", journal: true, edit: func(_ *decideEnv, r *Request) { r.CapabilityDigest = "" },
			replay: ok, want: Result{Kind: Decided, Decision: decision("reject", "rejected", nil), Replayed: true}, replays: true, sent: 1},
		{name: "no key", journal: true, edit: func(_ *decideEnv, r *Request) { r.IdempotencyKey = "" }, replay: ok},
		{name: "another key", journal: true, edit: func(_ *decideEnv, r *Request) { r.IdempotencyKey = "decide-key-000000000009" }, replay: ok},
		{name: "another action", journal: true, edit: func(_ *decideEnv, r *Request) { r.Action = "escalate" }, replay: ok},
		{name: "another digest", journal: true, edit: func(_ *decideEnv, r *Request) { r.CapabilityDigest = "sha256:" + strings.Repeat("1", 64) }, replay: ok},
		{name: "journal's action field differs, digest from the journal", journal: true, jAction: "teach",
			edit: func(_ *decideEnv, r *Request) { r.CapabilityDigest = "" }, replay: ok},
		{name: "unknown id", journal: true, edit: func(_ *decideEnv, r *Request) { r.AttentionID = strings.Repeat("a", 24) }, replay: ok},
		{name: "nothing journaled", replay: ok},
		{name: "Flow has no prior decision", journal: true, replay: replayed(flowhelper.Decision{}, helperErr("refused", "no_prior_decision", false)), sent: 1},
		{name: "Flow has no such item", journal: true, replay: replayed(flowhelper.Decision{}, helperErr("refused", "attention_not_found", false)), sent: 1},
		{name: "refused", journal: true, replay: replayed(flowhelper.Decision{}, helperErr("refused", "", false)), want: Result{Kind: Refused, Replayed: true}, replays: true, sent: 1},
		{name: "internal is not uncertain in a replay", journal: true, replay: replayed(flowhelper.Decision{}, helperErr("internal", "", true)),
			want: Result{Kind: Failed, Dispatched: true, Replayed: true}, replays: true, sent: 1},
		{name: "uncertain", journal: true, replay: replayed(flowhelper.Decision{}, helperErr("uncertain", "journal_in_flight", false)),
			want: Result{Kind: Uncertain, Replayed: true}, replays: true, sent: 1},
		{name: "died after writing", journal: true, replay: replayed(flowhelper.Decision{}, &flowhelper.TransportError{Written: true, Err: flowhelper.ErrDead}),
			want: Result{Kind: Uncertain, Replayed: true}, replays: true, sent: 1},
		{name: "malformed", journal: true, replay: replayed(decision("reject", "pending", nil), nil), want: Result{Kind: Malformed, Replayed: true}, replays: true, sent: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDecideEnv(t)
			if tc.journal {
				e.journal(t, "reject", e.item.Capability.Digest, testKey, "rejected")
				if tc.jAction != "" {
					// The projection's action field disagrees with its
					// request digest.
					data, _ := os.ReadFile(filepath.Join(e.root, openRun, "attended_decisions.json"))
					data = []byte(strings.Replace(string(data), `"action":"reject"`, `"action":"`+tc.jAction+`"`, 1))
					os.WriteFile(filepath.Join(e.root, openRun, "attended_decisions.json"), data, 0o600)
				}
			}
			h := &fakeHelper{op: "op", replay: tc.replay}
			req := e.request("reject")
			if tc.edit != nil {
				tc.edit(e, &req)
			}
			d := &Decider{RunsRoot: e.root, Helper: h}
			got, replays, err := d.Replay(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if replays != tc.replays {
				t.Errorf("replays %v, want %v", replays, tc.replays)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if len(h.calls) != tc.sent {
				t.Fatalf("%d requests, want %d", len(h.calls), tc.sent)
			}
			if tc.sent == 1 {
				r, isReplay := h.calls[0].(flowhelper.ReplayRequest)
				want := flowhelper.ReplayRequest{Target: flowhelper.Target{RunsRoot: e.root, AttentionID: e.item.ID,
					CapabilityDigest: e.item.Capability.Digest, IdempotencyKey: testKey}, Action: "reject", Disposition: "rejected_by_operator"}
				if !isReplay || r != want {
					t.Errorf("request %+v, want %+v", h.calls[0], want)
				}
			}
		})
	}
}

// TestDecideReplaysAfterClose: Decide answers a retry whose item closed, or
// whose digest moved on, with the journaled decision, without confirming.
func TestDecideReplaysAfterClose(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		close bool
		want  Kind
	}{
		{"closed item", true, NotFound},
		{"stale digest", false, Stale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDecideEnv(t)
			oldDigest := e.item.Capability.Digest
			req := e.request("reject")
			if tc.close {
				e.closeItem(t)
			} else {
				oldDigest = "sha256:" + strings.Repeat("1", 64)
				req.CapabilityDigest = oldDigest
			}
			e.journal(t, "reject", oldDigest, testKey, "rejected")
			h := &fakeHelper{op: "op", replay: func(flowhelper.ReplayRequest) (flowhelper.Decision, error) {
				return decision("reject", "rejected", nil), nil
			}}
			d := &Decider{RunsRoot: e.root, Helper: h}
			never := func(context.Context, Item) (string, error) {
				t.Error("confirmed a replay")
				return "", errors.New("no")
			}
			got, err := d.Decide(context.Background(), req, never)
			if err != nil || got.Kind != Decided || !got.Replayed {
				t.Fatalf("%+v %v", got, err)
			}
			// Flow has nothing: the original answer stands.
			h.replay = nil
			got, err = d.Decide(context.Background(), req, never)
			if err != nil || got.Kind != tc.want || got.Replayed {
				t.Fatalf("%+v %v, want %v", got, err, tc.want)
			}
			for _, c := range h.calls {
				if _, ok := c.(flowhelper.ActRequest); ok {
					t.Fatal("a replay dispatched")
				}
			}
		})
	}
}

func TestKindString(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for k := NotFound; k <= Failed; k++ {
		s := k.String()
		if s == "" || strings.HasPrefix(s, "Kind(") || seen[s] {
			t.Errorf("kind %d has name %q", int(k), s)
		}
		seen[s] = true
	}
	if got := Kind(0).String(); got != "Kind(0)" {
		t.Errorf("zero kind = %q", got)
	}
}
