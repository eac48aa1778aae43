//go:build unix

package serve

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
)

const attCanary = "CANARY-ATTENDED-PHI-51c0"

// attEnv is a runs dir with Flow's real signed pause vector (run-0001) and
// the fake helper.
type attEnv struct {
	*env
	record string
	item   attention.Item
}

func newAttEnv(t *testing.T, mode string, rules ...fakehelper.Rule) *attEnv {
	t.Helper()
	e := newEnv(t)
	e.demo("demo", testBundle{salt: "att"})
	src, _ := filepath.Abs("../testdata/flow/attended/runs/run-0001")
	if err := os.MkdirAll(e.runsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", src, filepath.Join(e.runsDir, "run-0001")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if err := os.Chmod(filepath.Join(e.runsDir, "run-0001", ".attended_capability.key"), 0o600); err != nil {
		t.Fatal(err)
	}
	it, err := attention.Get(e.runsDir, attention.ID("run-0001"))
	if err != nil || it.Capability == nil {
		t.Fatalf("fixture item: %v %+v", err, it)
	}
	a := &attEnv{env: e, record: filepath.Join(e.root, "helper-record"), item: it}
	if err := os.Mkdir(a.record, 0o700); err != nil {
		t.Fatal(err)
	}
	e.environ = append(e.environ, "OPENADAPT_FAKE_HELPER_RECORD="+a.record, "OPENADAPT_FAKE_HELPER_MODE="+mode)
	if len(rules) > 0 {
		e.environ = append(e.environ, "OPENADAPT_FAKE_HELPER_SCRIPT="+fakehelper.WriteScript(t, rules...))
	}
	return a
}

func (a *attEnv) opts() Options {
	o := a.env.opts()
	o.AllowAttendedActions = true
	o.FlowPython = fakehelper.Install(a.t)
	o.FlowCLI = filepath.Join(a.root, "no-such-openadapt-flow")
	return o
}

// acts returns the attended.act requests the fake helper received.
func (a *attEnv) acts() []map[string]any {
	var out []map[string]any
	for _, r := range fakehelper.Requests(a.t, a.record) {
		if r["op"] == "attended.act" {
			out = append(out, r)
		}
	}
	return out
}

func (a *attEnv) args(key string, extra ...any) map[string]any {
	m := map[string]any{"attention_id": a.item.ID, "capability_digest": a.item.Capability.Digest, "idempotency_key": key}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

// elicitSession connects a client whose elicitation handler answers with
// answer (nil: the client does not advertise elicitation).
func elicitSession(t *testing.T, o Options, era string, answer func(*mcp.ElicitRequest) (*mcp.ElicitResult, error)) *session {
	t.Helper()
	return elicitSessionMRTR(t, o, era, answer, false)
}

func elicitSessionMRTR(t *testing.T, o Options, era string, answer func(*mcp.ElicitRequest) (*mcp.ElicitResult, error), noMRTR bool) *session {
	t.Helper()
	stderr := &syncBuffer{}
	srv, err := New(o, stderr)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	wire := &syncBuffer{}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.MCPServer().Connect(ctx, &mcp.LoggingTransport{Transport: st, Writer: wire}, nil)
	if err != nil {
		t.Fatal(err)
	}
	copts := &mcp.ClientOptions{}
	if noMRTR {
		copts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	if answer != nil {
		copts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return answer(r) }
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, srv: srv, cs: cs, wire: wire, stderr: stderr, tools: map[string]*mcp.Tool{}, prog: &progressLog{mu: make(chan struct{}, 1)}}
	t.Cleanup(func() { cs.Close(); ss.Wait(); srv.Close() })
	s.loadTools()
	return s
}

func accept(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": true}}, nil
}

func TestAttendedRegistration(t *testing.T) {
	t.Parallel()
	a := newAttEnv(t, "")
	s := elicitSession(t, a.opts(), "2025-11-25", accept)
	got := toolNames(s)
	want := []string{"list_workflows", "get_workflow", "get_run_report", "list_needs_attention", "get_attention_item", "reject_attention", "teach_attention", "escalate_attention"}
	if !slices.Equal(got, want) {
		t.Fatalf("tools %v", got)
	}
	if r := s.tools["reject_attention"].Annotations; r.ReadOnlyHint || !*r.DestructiveHint || !r.IdempotentHint || *r.OpenWorldHint {
		t.Errorf("reject annotations %+v", r)
	}
	if r := s.tools["teach_attention"].Annotations; r.ReadOnlyHint || *r.DestructiveHint || !r.IdempotentHint || *r.OpenWorldHint {
		t.Errorf("teach annotations %+v", r)
	}
	if in := string(attendedInput("request_assistance")); !strings.Contains(in, `"request_assistance":{"type":"boolean","const":true`) || !strings.HasSuffix(in, `"additionalProperties":false}`) {
		t.Errorf("escalate input %s", in)
	}
	if in, _ := json.Marshal(s.tools["escalate_attention"].InputSchema); !strings.Contains(string(in), `"request_assistance":{"const":true`) {
		t.Errorf("escalate input on the wire %s", in)
	}
	if b := s.srv.Banner(); !strings.Contains(b, "attended decisions enabled; live Continue/Skip not configured") {
		t.Errorf("banner %q", b)
	}
	q := s.call("list_needs_attention", map[string]any{})
	if q["actions_enabled"] != true || q["live_actions_ready"] != false {
		t.Errorf("queue wrapper %v %v", q["actions_enabled"], q["live_actions_ready"])
	}

	// With --config and --headed: the live service opens and all five register.
	cfg := filepath.Join(a.root, "deploy.yaml")
	os.WriteFile(cfg, []byte("backend:\n  kind: web\n  url: http://127.0.0.1:9/\n"), 0o600)
	o := a.opts()
	o.Config, o.Headed = cfg, true
	s2 := elicitSession(t, o, "2025-11-25", accept)
	got = toolNames(s2)
	want = []string{"list_workflows", "get_workflow", "get_run_report", "list_needs_attention", "get_attention_item", "continue_attention", "skip_attention", "reject_attention", "teach_attention", "escalate_attention"}
	if !slices.Equal(got, want) {
		t.Fatalf("tools with --config %v", got)
	}
	if r := s2.tools["continue_attention"].Annotations; r.ReadOnlyHint || !*r.DestructiveHint || !r.IdempotentHint || !*r.OpenWorldHint {
		t.Errorf("continue annotations %+v", r)
	}
	if b := s2.srv.Banner(); !strings.Contains(b, "live Continue/Skip ready") {
		t.Errorf("banner %q", b)
	}
	var opened map[string]any
	for _, r := range fakehelper.Requests(t, a.record) {
		if r["op"] == "service.open" {
			opened = r
		}
	}
	if opened == nil || opened["deployment_config"] != cfg || opened["headed"] != true || opened["url"] != nil {
		t.Errorf("service.open request %v", opened)
	}
}

// TestAttendedStartupRefusals: the "operator" and "no hello" cases set
// package variables and stay sequential; the others run in parallel after
// them.
func TestAttendedStartupRefusals(t *testing.T) {
	cfg := func(a *attEnv, body string) string {
		p := filepath.Join(a.root, "deploy.yaml")
		os.WriteFile(p, []byte(body), 0o600)
		return p
	}
	check := func(t *testing.T, o Options, want string) {
		t.Helper()
		_, err := New(o, nil)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Msg != want {
			t.Fatalf("New = %v, want %q", err, want)
		}
	}
	t.Run("flow-python alone", func(t *testing.T) {
		t.Parallel()
		a := newAttEnv(t, "")
		o := a.opts()
		o.AllowAttendedActions = false
		check(t, o, "--flow-python requires --allow-attended-actions, --tutorial, or --authoring")
	})
	t.Run("operator", func(t *testing.T) {
		a := newAttEnv(t, "")
		defer func() { testOnlyOperator = nil }()
		testOnlyOperator = func() (string, error) { return "", errors.New("no account") }
		check(t, a.opts(), "attended actions require a server-derived local operator identity")
	})
	t.Run("operator mismatch", func(t *testing.T) {
		t.Parallel()
		a := newAttEnv(t, "operator=someone-else")
		check(t, a.opts(), "attended actions require a server-derived local operator identity")
	})
	t.Run("no interpreter", func(t *testing.T) {
		t.Parallel()
		a := newAttEnv(t, "")
		o := a.opts()
		o.FlowPython = ""
		sh := filepath.Join(a.root, "openadapt-flow")
		os.WriteFile(sh, []byte("#!/bin/sh\nexec python3 -m openadapt_flow \"$@\"\n"), 0o755)
		o.FlowCLI = sh
		check(t, o, "the Flow Python interpreter could not be determined from "+sh+"; pass --flow-python")
	})
	t.Run("version", func(t *testing.T) {
		t.Parallel()
		a := newAttEnv(t, "hello-version=1.33.0")
		check(t, a.opts(), "openadapt-flow 1.33.0 is not supported by attended actions; supported: 1.32.x")
	})
	t.Run("no hello", func(t *testing.T) {
		a := newAttEnv(t, "no-hello")
		o := a.opts()
		srvTimeouts(&o)
		_, err := newWithTimeouts(o, flowhelper.Timeouts{Hello: time.Second})
		if err == nil || err.Error() != "the Flow helper could not be started with "+o.FlowPython {
			t.Fatalf("New = %v", err)
		}
	})
	t.Run("run command version", func(t *testing.T) {
		t.Parallel()
		a := newAttEnv(t, "")
		o := a.opts()
		run := filepath.Join(a.root, "openadapt-flow")
		os.WriteFile(run, []byte("#!/bin/sh\necho 'openadapt-flow 1.32.1'\n"), 0o755)
		o.FlowCLI = run
		check(t, o, "the Flow helper runs openadapt-flow 1.32.0 but the run command reports 1.32.1; they must match")
	})
	t.Run("config unreadable by Flow", func(t *testing.T) {
		t.Parallel()
		a := newAttEnv(t, "", fakehelper.Rule{Op: "deployment.check", Error: fakehelper.ErrorFrame("invalid", "deployment_config", false, "")})
		o := a.opts()
		o.Config = cfg(a, "backend: {kind: web}\n")
		check(t, o, "the deployment config could not be read: "+o.Config)
	})
	t.Run("no url", func(t *testing.T) {
		t.Parallel()
		a := newAttEnv(t, "", fakehelper.Rule{Op: "deployment.check", Reply: json.RawMessage(`{"backend_kind":"web","headed":true,"url_present":false}`)})
		o := a.opts()
		o.Config = cfg(a, "backend: {kind: web}\n")
		check(t, o, "attended Continue/Skip need the application URL: set deployment.backend.url in --config or pass --url")
	})
	t.Run("not headed", func(t *testing.T) {
		t.Parallel()
		a := newAttEnv(t, "")
		o := a.opts()
		o.Config = cfg(a, "backend: {kind: web}\n")
		check(t, o, "attended Continue/Skip need a visible browser: set deployment.backend.headed: true in --config or pass --headed")
	})
	t.Run("live session", func(t *testing.T) {
		t.Parallel()
		a := newAttEnv(t, "", fakehelper.Rule{Op: "service.open", Error: fakehelper.ErrorFrame("unavailable", "live_session", false, "")})
		o := a.opts()
		o.Config, o.Headed = cfg(a, "backend: {kind: web}\n"), true
		check(t, o, "the attended live session could not be started; see the protected local log")
	})
}

func srvTimeouts(*Options) {}

// newWithTimeouts is New with shortened helper deadlines.
func newWithTimeouts(o Options, to flowhelper.Timeouts) (*Server, error) {
	testOnlyTimeouts = to
	defer func() { testOnlyTimeouts = flowhelper.Timeouts{} }()
	return New(o, nil)
}

func TestAttendedDecisionFlow(t *testing.T) {
	t.Parallel()
	for _, era := range []string{"2025-11-25", "2025-06-18", ""} {
		t.Run("era "+era, func(t *testing.T) {
			t.Parallel()
			a := newAttEnv(t, "")
			var asked []*mcp.ElicitRequest
			s := elicitSession(t, a.opts(), era, func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked = append(asked, r)
				return accept(r)
			})
			got := s.call("escalate_attention", a.args("escalate-key-00000001", "request_assistance", true))
			if got["status"] != "escalated" || got["success"] != false || got["attention_id"] != a.item.ID || got["action"] != "escalate" {
				t.Fatalf("escalate = %v", got)
			}
			if id, _ := got["decision_id"].(string); len(id) != 32 {
				t.Errorf("decision_id %v", got["decision_id"])
			}
			if len(asked) != 1 || !strings.Contains(asked[0].Params.Message, "audited escalation") {
				t.Fatalf("elicitations %d", len(asked))
			}
			acts := a.acts()
			if len(acts) != 1 || acts[0]["decided_by"] != "automation" || acts[0]["disposition"] != "needs_assistance" || acts[0]["runs_root"] != a.runsDir {
				t.Fatalf("acts %v", acts)
			}
		})
	}
}

func TestAttendedChecksOrder(t *testing.T) {
	t.Parallel()
	a := newAttEnv(t, "")
	declines := 0
	s := elicitSession(t, a.opts(), "2025-11-25", func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		declines++
		return &mcp.ElicitResult{Action: "decline"}, nil
	})
	for _, tc := range []struct {
		name string
		args map[string]any
		code string
	}{
		{"confirmation false", a.args("k-0000000000000001", "request_assistance", false), "invalid_arguments"},
		{"extra key", a.args("k-0000000000000001", "request_assistance", true, "note", "x"), "invalid_arguments"},
		{"short key", a.args("short", "request_assistance", true), "invalid_arguments"},
		{"unknown id", map[string]any{"attention_id": strings.Repeat("a", 24), "capability_digest": a.item.Capability.Digest, "idempotency_key": "k-0000000000000001", "request_assistance": true}, "attention_not_found"},
		{"stale digest", map[string]any{"attention_id": a.item.ID, "capability_digest": "sha256:" + strings.Repeat("0", 64), "idempotency_key": "k-0000000000000001", "request_assistance": true}, "capability_stale"},
		{"declined", a.args("k-0000000000000001", "request_assistance", true), "operator_declined"},
	} {
		got := s.call("escalate_attention", tc.args)
		if errorCode(got) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, got, tc.code)
		}
	}
	if declines != 1 {
		t.Errorf("elicited %d times, want once (only after checks 3-5)", declines)
	}
	if n := len(a.acts()); n != 0 {
		t.Errorf("%d acts dispatched", n)
	}
	// An action the capability does not allow.
	if !slices.Contains(a.item.Capability.AllowedActions, "skip") {
		// skip is not registered without --config; reject is allowed here.
		t.Logf("allowed %v", a.item.Capability.AllowedActions)
	}
}

// TestAttendedElicitationAnswers: the answer cases run in parallel once the
// sequential "timeout" case (it sets testOnlyElicitTimeout) has restored the default.
func TestAttendedElicitationAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(*mcp.ElicitRequest) (*mcp.ElicitResult, error)
	}{
		{"decline", func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: "decline"}, nil }},
		{"cancel", func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: "cancel"}, nil }},
		{"false", func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": false}}, nil
		}},
		{"string", func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": "true"}}, nil
		}},
		{"error", func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, errors.New("client failed") }},
	} {
		for _, era := range []string{"2025-11-25", ""} {
			t.Run(tc.name+" "+era, func(t *testing.T) {
				t.Parallel()
				a := newAttEnv(t, "")
				s := elicitSession(t, a.opts(), era, tc.answer)
				res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "teach_attention", Arguments: a.args("teach-key-0000000001", "request_demonstration", true)})
				switch {
				case err != nil && era == "" && (tc.name == "string" || tc.name == "error"):
					// 2026-07-28: the client's own round trip fails
					// (schema check, handler error); the retry never comes.
				case err != nil:
					t.Fatal(err)
				default:
					if got := s.check("teach_attention", res); errorCode(got) != "operator_declined" {
						t.Fatalf("got %v", got)
					}
				}
				if n := len(a.acts()); n != 0 {
					t.Fatalf("%d acts dispatched", n)
				}
			})
		}
	}
	t.Run("timeout", func(t *testing.T) {
		a := newAttEnv(t, "")
		defer func() { testOnlyElicitTimeout = 0 }()
		testOnlyElicitTimeout = 50 * time.Millisecond
		release := make(chan struct{})
		defer close(release)
		s := elicitSession(t, a.opts(), "2025-11-25", func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) { <-release; return nil, errors.New("late") })
		if got := s.call("teach_attention", a.args("teach-key-0000000001", "request_demonstration", true)); errorCode(got) != "operator_declined" {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("no elicitation", func(t *testing.T) {
		for _, era := range []string{"2025-11-25", "2025-03-26", ""} {
			a := newAttEnv(t, "")
			s := elicitSession(t, a.opts(), era, nil)
			got := s.call("reject_attention", a.args("reject-key-000000001", "confirmed_reject", true))
			if errorCode(got) != "elicitation_unsupported" {
				t.Fatalf("era %q: %v", era, got)
			}
			rec := got["error"].(map[string]any)["recovery"].(string)
			if !strings.Contains(rec, "openadapt-agent attention") {
				t.Errorf("recovery %q", rec)
			}
		}
	})
}

// A legacy-era client's unasked inputResponses never count as a
// confirmation; the server still elicits.
func TestAttendedUnaskedInputResponses(t *testing.T) {
	t.Parallel()
	a := newAttEnv(t, "")
	s := elicitSession(t, a.opts(), "2025-11-25", func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: "decline"}, nil })
	p := &mcp.CallToolParams{Name: "escalate_attention", Arguments: a.args("escalate-key-00000001", "request_assistance", true),
		InputResponses: mcp.InputResponseMap{inputKey: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": true}}}}
	res, err := s.cs.CallTool(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.check("escalate_attention", res); errorCode(got) != "operator_declined" {
		t.Fatalf("got %v", got)
	}
	if len(a.acts()) != 0 {
		t.Fatal("dispatched on an unasked inputResponse")
	}
}

// 2026-07-28: input-required with a signed RequestState; a replayed,
// forged or mismatched state declines.
func TestAttendedRequestState(t *testing.T) {
	t.Parallel()
	a := newAttEnv(t, "")
	// Without the client's multi-round-trip middleware, which would fulfil
	// the input request by itself.
	s := elicitSessionMRTR(t, a.opts(), "", accept, true)
	args := a.args("escalate-key-00000001", "request_assistance", true)
	res, err := s.srv.testCall(s, "escalate_attention", args, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.RequestState == "" || res.InputRequests[inputKey] == nil || res.StructuredContent != nil {
		t.Fatalf("first answer %+v", res)
	}
	yes := mcp.InputResponseMap{inputKey: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": true}}}
	ok, err := s.srv.testCall(s, "escalate_attention", args, yes, res.RequestState)
	if err != nil || ok.IsError {
		t.Fatalf("retry %+v %v", ok, err)
	}
	// The same state again: single use.
	again, _ := s.srv.testCall(s, "escalate_attention", args, yes, res.RequestState)
	if c := resultCode(again); c != "operator_declined" {
		t.Fatalf("replayed state: %s", c)
	}
	// Other arguments with a fresh state.
	res2, _ := s.srv.testCall(s, "escalate_attention", args, nil, "")
	other := a.args("escalate-key-00000002", "request_assistance", true)
	if c := resultCode(mustCall(s.srv.testCall(s, "escalate_attention", other, yes, res2.RequestState))); c != "operator_declined" {
		t.Fatalf("args mismatch: %s", c)
	}
	forged := res2.RequestState[:len(res2.RequestState)-2] + "AA"
	if c := resultCode(mustCall(s.srv.testCall(s, "escalate_attention", args, yes, forged))); c != "operator_declined" {
		t.Fatalf("forged: %s", c)
	}
	if n := len(a.acts()); n != 1 {
		t.Fatalf("%d acts, want 1", n)
	}
}

func mustCall(r *mcp.CallToolResult, err error) *mcp.CallToolResult {
	if err != nil {
		panic(err)
	}
	return r
}

func resultCode(r *mcp.CallToolResult) string {
	if r == nil {
		return ""
	}
	var m map[string]any
	b, _ := json.Marshal(r.StructuredContent)
	_ = json.Unmarshal(b, &m)
	return errorCode(m)
}

// TestAttendedResultMapping: every helper answer maps to its result or
// error code (docs/attended.md "Results"), table-driven through the fake
// helper's error frames.
func TestAttendedResultMapping(t *testing.T) {
	t.Parallel()
	dec := func(status string) json.RawMessage {
		return json.RawMessage(`{"decision":{"decision_id":"` + strings.Repeat("e", 32) + `","action":"escalate","status":"` + status + `","message":"Flow says ` + attCanary + `","report_success":null,"next_transition":null,"transition_receipt_digest":null}}`)
	}
	for _, tc := range []struct {
		name   string
		rule   fakehelper.Rule
		status string // D status, or "" for a failure
		code   string
		copyIn string
	}{
		{"escalated", fakehelper.Rule{Reply: dec("escalated")}, "escalated", "", "audited escalation"},
		{"refused frame", fakehelper.Rule{Error: fakehelper.ErrorFrame("refused", "", true, "openadapt_flow.x.AttendedActionRefused "+attCanary)}, "refused", "", "Reload the item"},
		{"busy", fakehelper.Rule{Error: fakehelper.ErrorFrame("busy", "", true, "")}, "refused", "", "retry with the same idempotency_key"},
		{"operator", fakehelper.Rule{Error: fakehelper.ErrorFrame("refused", "operator_mismatch", false, "")}, "refused", "", "Reload"},
		{"not found", fakehelper.Rule{Error: fakehelper.ErrorFrame("refused", "attention_not_found", false, "")}, "", "attention_not_found", ""},
		{"uncertain", fakehelper.Rule{Error: fakehelper.ErrorFrame("uncertain", "journal_in_flight", true, "")}, "", "delivery_uncertain", ""},
		{"internal dispatched", fakehelper.Rule{Error: fakehelper.ErrorFrame("internal", "", true, "")}, "", "delivery_uncertain", ""},
		{"internal local", fakehelper.Rule{Error: fakehelper.ErrorFrame("internal", "", false, "")}, "", "internal_error", ""},
		{"invalid", fakehelper.Rule{Error: fakehelper.ErrorFrame("invalid", "bad_request", false, "")}, "", "internal_error", ""},
		{"unavailable", fakehelper.Rule{Error: fakehelper.ErrorFrame("unavailable", "not_open", false, "")}, "", "internal_error", ""},
		{"prepared status", fakehelper.Rule{Reply: dec("prepared")}, "", "delivery_uncertain", ""},
		{"bad decision id", fakehelper.Rule{Reply: json.RawMessage(`{"decision":{"decision_id":"xyz","action":"escalate","status":"escalated","message":"","report_success":null,"next_transition":null,"transition_receipt_digest":null}}`)}, "", "delivery_uncertain", ""},
		{"crash", fakehelper.Rule{Then: "crash"}, "", "delivery_uncertain", ""},
		{"garbage", fakehelper.Rule{Then: "garbage"}, "", "delivery_uncertain", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.rule.Op = "attended.act"
			a := newAttEnv(t, "", tc.rule)
			s := elicitSession(t, a.opts(), "2025-11-25", accept)
			got := s.call("escalate_attention", a.args("escalate-key-00000001", "request_assistance", true))
			if tc.status != "" {
				if got["status"] != tc.status || !strings.Contains(got["message"].(string), tc.copyIn) {
					t.Fatalf("got %v", got)
				}
				if tc.status == "refused" && got["decision_id"] != nil {
					t.Errorf("refused with a decision id %v", got["decision_id"])
				}
			} else if errorCode(got) != tc.code {
				t.Fatalf("got %v, want %s", got, tc.code)
			}
			if strings.Contains(s.wire.String(), attCanary) || strings.Contains(s.stderr.String(), attCanary) {
				t.Errorf("Flow text crossed the wire or stderr")
			}
			audit, _ := os.ReadFile(filepath.Join(a.runsDir, ".openadapt-agent", "audit.jsonl"))
			if strings.Contains(string(audit), attCanary) {
				t.Errorf("Flow text in the audit log")
			}
			if tc.name == "operator" && !strings.Contains(s.stderr.String(), "serve: the Flow helper disagreed on the local operator identity") {
				t.Errorf("stderr %q", s.stderr.String())
			}
			if tc.name == "crash" || tc.name == "garbage" {
				<-s.srv.helper.h.Done()
				again := s.call("escalate_attention", a.args("escalate-key-00000002", "request_assistance", true))
				if errorCode(again) != "attended_unavailable" {
					t.Fatalf("after death: %v", again)
				}
				q := s.call("list_needs_attention", map[string]any{})
				if q["actions_enabled"] != false || q["live_actions_ready"] != false {
					t.Errorf("queue after death %v", q)
				}
				if !strings.Contains(s.stderr.String(), "serve: the Flow helper stopped; attended actions and the tutorial are unavailable until the server restarts") {
					t.Errorf("stderr %q", s.stderr.String())
				}
				if n := len(fakehelper.Records(t, a.record)); n != 1 {
					t.Errorf("%d helper spawns", n)
				}
			}
		})
	}
}

// A byte-identical retry of a journaled decision answers without an
// elicitation when the digest is no longer current (docs/attended.md
// "Replay after close").
func TestAttendedReplayAfterClose(t *testing.T) {
	t.Parallel()
	oldDigest := "sha256:" + strings.Repeat("1", 64)
	key := "escalate-key-00000001"
	a := newAttEnv(t, "", fakehelper.Rule{Op: "attended.replay", Reply: json.RawMessage(`{"decision":{"decision_id":"` + strings.Repeat("f", 32) + `","action":"escalate","status":"escalated","message":"m","report_success":null,"next_transition":null,"transition_receipt_digest":null}}`)})
	journal := map[string]any{"decisions": []map[string]any{{"idempotency_key": key, "request_digest": flowhelper.RequestDigest("escalate", oldDigest, key), "status": "escalated"}}}
	b, _ := json.Marshal(journal)
	os.WriteFile(filepath.Join(a.runsDir, "run-0001", "attended_decisions.json"), b, 0o600)
	s := elicitSession(t, a.opts(), "2025-11-25", nil) // no elicitation at all
	args := map[string]any{"attention_id": a.item.ID, "capability_digest": oldDigest, "idempotency_key": key, "request_assistance": true}
	got := s.call("escalate_attention", args)
	if got["decision_id"] != strings.Repeat("f", 32) || got["status"] != "escalated" {
		t.Fatalf("replay = %v", got)
	}
	// Another key, or another action with that key, stays capability_stale.
	args["idempotency_key"] = "escalate-key-00000009"
	if got := s.call("escalate_attention", args); errorCode(got) != "capability_stale" {
		t.Fatalf("other key: %v", got)
	}
	args["idempotency_key"] = key
	if got := s.call("teach_attention", map[string]any{"attention_id": a.item.ID, "capability_digest": oldDigest, "idempotency_key": key, "request_demonstration": true}); errorCode(got) != "capability_stale" {
		t.Fatalf("other action: %v", got)
	}
	if len(a.acts()) != 0 {
		t.Fatal("a replay dispatched")
	}
	if got := s.call("get_attention_item", map[string]any{"attention_id": strings.Repeat("a", 24)}); errorCode(got) != "attention_not_found" {
		t.Fatalf("get: %v", got)
	}
}

// testCall sends one tools/call without the client's multi-round-trip
// middleware, so an input-required result is seen as it is.
func (srv *Server) testCall(s *session, name string, args map[string]any, responses mcp.InputResponseMap, state string) (*mcp.CallToolResult, error) {
	p := &mcp.CallToolParams{Name: name, Arguments: args, InputResponses: responses, RequestState: state}
	return s.cs.CallTool(context.Background(), p)
}

// Startup sweeps a dead owner's private helper directory.
func TestAttendedStartupSweep(t *testing.T) {
	t.Parallel()
	a := newAttEnv(t, "")
	stale := filepath.Join(a.runsDir, ".openadapt-agent", "tmp", "helper-deadbeefdeadbeef")
	if err := os.MkdirAll(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	elicitSession(t, a.opts(), "2025-11-25", accept)
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dead owner's helper dir survived startup: %v", err)
	}
}
