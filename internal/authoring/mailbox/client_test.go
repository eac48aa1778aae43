package mailbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/authoring"
	fm "github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakemailbox"
)

// fakeSession records every call and answers from per-tool results.
type fakeSession struct {
	mu      sync.Mutex
	calls   []string // "tool {args json}"
	results map[string]map[string]any
	errs    map[string]error
	// continues answer continue_input in order; then it records.
	continues []map[string]any
}

func (s *fakeSession) Call(_ context.Context, tool string, args map[string]any) (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(args)
	s.calls = append(s.calls, tool+" "+string(b))
	if err := s.errs[tool]; err != nil {
		return nil, err
	}
	if r, ok := s.results[tool]; ok {
		return r, nil
	}
	if tool == "continue_input" {
		if len(s.continues) > 0 {
			r := s.continues[0]
			s.continues = s.continues[1:]
			return r, nil
		}
		return map[string]any{"recorded": true, "reason": nil}, nil
	}
	return map[string]any{}, nil
}

func (s *fakeSession) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// fakeTerminal answers Confirm from a queue (empty: no) and records prompts.
type fakeTerminal struct {
	mu      sync.Mutex
	answers []bool
	prompts []string
	confirm func() // runs inside Confirm (to cancel the context, say)
}

func (t *fakeTerminal) Confirm(ctx context.Context, q string) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.prompts = append(t.prompts, q)
	if t.confirm != nil {
		t.confirm()
	}
	if len(t.answers) == 0 {
		return false, nil
	}
	a := t.answers[0]
	t.answers = t.answers[1:]
	return a, nil
}

func (t *fakeTerminal) WaitEnter(ctx context.Context, m string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.prompts = append(t.prompts, m)
	return nil
}

type harness struct {
	srv    *fm.Server
	sess   *fakeSession
	term   *fakeTerminal
	log    *strings.Builder
	sleeps int
	now    time.Time
	cfg    Config
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{srv: fm.New(t), sess: &fakeSession{results: map[string]map[string]any{}, errs: map[string]error{}},
		term: &fakeTerminal{}, log: &strings.Builder{}, now: time.Now()}
	l, err := ParseLink(h.srv.Link(), h.srv.Origin())
	if err != nil {
		t.Fatal(err)
	}
	h.cfg = Config{
		Link: l, Session: h.sess, Terminal: h.term, Log: h.log, UserAgent: "openadapt-agent/test",
		Sleep: func(ctx context.Context, d time.Duration) error {
			if d != PollPause {
				t.Errorf("slept %v, want %v", d, PollPause)
			}
			h.sleeps++
			return ctx.Err()
		},
		Now: func() time.Time { return h.now },
	}
	return h
}

func (h *harness) run(t *testing.T) error {
	t.Helper()
	err := Run(context.Background(), h.cfg)
	h.checkInvariants(t)
	return err
}

// checkInvariants holds for every scenario: POST-only JSON, the Bearer lease
// on everything but claim, wait_seconds 0 on every poll, no secret in any log
// or callback, and no forbidden key in any callback result.
func (h *harness) checkInvariants(t *testing.T) {
	t.Helper()
	for i, r := range h.srv.Requests() {
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("request %d: %s with Content-Type %q", i, r.Method, r.Header.Get("Content-Type"))
		}
		auth := r.Header.Get("Authorization")
		switch r.Action {
		case "claim":
			if auth != "" {
				t.Errorf("claim sent Authorization")
			}
			if got := r.JSON(t); len(got) != 1 || got["bind"] != fm.Bind {
				t.Errorf("claim body = %v", got)
			}
		case "poll":
			if auth != "Bearer "+fm.Lease {
				t.Errorf("poll Authorization = %q", auth)
			}
			if d := cmp.Diff(map[string]any{"wait_seconds": 0.0, "lease_seconds": 900.0}, r.JSON(t)); d != "" {
				t.Errorf("poll body (-want +got):\n%s", d)
			}
		case "callback", "allow":
			if auth != "Bearer "+fm.Lease {
				t.Errorf("%s Authorization = %q", r.Action, auth)
			}
			body := string(r.Body)
			for _, k := range []string{`"value"`, `"text"`, `"title"`, `"screenshot"`, `"pixels"`, `"backend_pixels"`, `"bind"`, `"leaseSecret"`, `"lease_secret"`, "oals_", "oab_"} {
				if strings.Contains(body, k) {
					t.Errorf("%s body holds %s: %s", r.Action, k, body)
				}
			}
		default:
			t.Errorf("request to %s", r.Path)
		}
	}
	for _, s := range []string{fm.Lease, fm.Lease[5:20], fm.Bind, fm.Bind[4:20]} {
		if strings.Contains(h.log.String(), s) {
			t.Errorf("log holds a secret:\n%s", h.log)
		}
	}
}

// callbacks are the callback bodies, decoded.
func (h *harness) callbacks(t *testing.T) []map[string]any {
	var out []map[string]any
	for _, r := range h.srv.Of("callback") {
		out = append(out, r.JSON(t))
	}
	return out
}

func done(id string, result map[string]any) map[string]any {
	return map[string]any{"command_id": id, "status": "done", "result": result}
}

func refused(id, code string) map[string]any {
	return map[string]any{"command_id": id, "status": "error", "result": map[string]any{"error": code}}
}

var halted = map[string]any{"halted": true, "status": "halted"}

func bindPack(id, sub string) string {
	return fm.Command(fm.Envelope(id, "bind_pack", nil, sub, nil))
}

func TestHappyPathAllowObserveClickPauseCompile(t *testing.T) {
	h := newHarness(t)
	h.term.answers = []bool{true}
	hostile := map[string]any{
		"backend": "web", "provider": "playwright_ax", "recording": true, "agent_drive": true,
		"window":     map[string]any{"process_name": "Chromium", "title": "Jane Doe - Chart", "bounds": map[string]any{"x": 0, "y": 0, "w": 1, "h": 1}},
		"screenshot": "iVBORw0KGgo=", "url": "https://ehr.example/patient/123456",
		"tree": []any{
			map[string]any{"node_id": "n_0000000a", "role": "button", "name": "Save", "enabled": true, "focused": false,
				"bounds": map[string]any{"x": 0.1, "y": 0.1, "w": 0.1, "h": 0.1}, "value": "SECRET-VALUE", "backend_pixels": map[string]any{"x": 1}},
			map[string]any{"node_id": "n_0000000b", "role": "text_input", "name": "jane@example.com", "enabled": true, "focused": true,
				"bounds": map[string]any{"x": 0.2, "y": 0.2, "w": 0.1, "h": 0.1}, "text": "SECRET-TEXT"},
		},
	}
	h.sess.results["observe"] = hostile
	h.sess.results["compile"] = map[string]any{"workflow_id": "wf_abcdefgh12", "status": "VERIFIED", "path": "/secret/path"}
	h.srv.Script("poll", fm.Reply{Status: 204}, fm.Reply{Status: 204})
	h.srv.Poll(
		bindPack("cmd_1", fm.SubA),
		fm.Command(fm.Envelope("cmd_2", "observe", nil, fm.SubA, nil)),
		fm.Envelope("cmd_3", "start_record", nil, fm.SubA, nil), // a bare envelope
		fm.Command(fm.Envelope("cmd_4", "click", map[string]any{"node_id": "n_0000000a"}, fm.SubA, nil)),
		fm.Command(fm.Envelope("cmd_5", "pause_for_input", map[string]any{"param": "password", "secret": true}, fm.SubA, nil)),
		fm.Command(fm.Envelope("cmd_6", "compile", nil, fm.SubA, nil)),
		fm.Command(fm.Envelope("cmd_7", "set_coach", map[string]any{"hint": "Click Save"}, fm.SubA, nil)),
		fm.Command(fm.Envelope("cmd_8", "get_coach", nil, fm.SubA, nil)),
		fm.Command(fm.Envelope("cmd_9", "stop_record", nil, fm.SubA, nil)),
	)
	if err := h.run(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	obs := map[string]any{
		"schema_version": "openadapt.authoring.observe/v1", "backend": "web", "provider": "playwright_ax", "mode": "authoring",
		"agent_drive": true, "coach_only": false, "recording": true,
		"window": map[string]any{"process_name": "Chromium", "role": "window", "bounds": map[string]any{"x": 0.0, "y": 0.0, "w": 1.0, "h": 1.0}},
		"tree": []any{
			map[string]any{"node_id": "n_0000000a", "role": "button", "name": "Save", "enabled": true, "focused": false, "bounds": map[string]any{"x": 0.1, "y": 0.1, "w": 0.1, "h": 0.1}},
			map[string]any{"node_id": "n_0000000b", "role": "text_input", "enabled": true, "focused": true, "bounds": map[string]any{"x": 0.2, "y": 0.2, "w": 0.1, "h": 0.1}},
		},
		"truncated": false, "node_count": 2.0,
	}
	want := []map[string]any{
		done("cmd_1", map[string]any{"allowed": true, "client_display": "ChatGPT"}),
		done("cmd_2", obs),
		done("cmd_3", map[string]any{"status": "recording"}),
		done("cmd_4", map[string]any{"status": "ok", "node_id": "n_0000000a"}),
		done("cmd_5", map[string]any{"recorded": true, "param": "password"}),
		done("cmd_6", map[string]any{"status": "needs_human_admit", "workflow_id": "wf_abcdefgh12", "recording_retained": true}),
		done("cmd_7", map[string]any{"status": "ok", "hint": "Click Save"}),
		done("cmd_8", map[string]any{"hint": nil}),
		done("cmd_9", map[string]any{"status": "stopped", "compiled": false}),
		halted,
	}
	if d := cmp.Diff(want, h.callbacks(t)); d != "" {
		t.Errorf("callbacks (-want +got):\n%s", d)
	}
	wantCalls := []string{`observe {}`, `start_record {}`, `click {"node_id":"n_0000000a"}`,
		`pause_for_input {"param":"password","secret":true}`, `continue_input {"operator_confirmed":true}`, `compile {}`,
		`set_coach {"hint":"Click Save"}`, `get_coach {}`, `stop_record {}`}
	if d := cmp.Diff(wantCalls, h.sess.Calls()); d != "" {
		t.Errorf("session calls (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"Allow ChatGPT to drive this job?", PausePrompt}, h.term.prompts); d != "" {
		t.Errorf("terminal prompts (-want +got):\n%s", d)
	}
	allows := h.srv.Of("allow")
	if len(allows) != 1 || cmp.Diff(map[string]any{"command_id": "cmd_1"}, allows[0].JSON(t)) != "" {
		t.Errorf("allow requests = %v", allows)
	}
	if h.sleeps != 2 {
		t.Errorf("slept %d times, want 2 (one per 204)", h.sleeps)
	}
	for _, s := range []string{"SECRET", "Jane", "jane@", "123456", "iVBOR", "/secret/path", "VERIFIED"} {
		for _, cb := range h.srv.Of("callback") {
			if strings.Contains(string(cb.Body), s) {
				t.Errorf("callback holds %q: %s", s, cb.Body)
			}
		}
	}
}

func TestClaimErrorsEndTheClient(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply fm.Reply
		fatal bool
	}{
		{"401", fm.Reply{Status: 401, Body: `{"error":"x"}`}, true},
		{"404", fm.Reply{Status: 404, Body: `{}`}, true},
		{"409 already claimed", fm.Reply{Status: 409, Body: `{}`}, true},
		{"410 expired", fm.Reply{Status: 410, Body: `{}`}, true},
		{"lease of another family", fm.Reply{Status: 201, Body: `{"leaseSecret":"oals_` + fm.Bind[4:] + `","lease_s":900}`}, false},
		{"no lease", fm.Reply{Status: 201, Body: `{"lease_s":900}`}, false},
		{"bad lease_s", fm.Reply{Status: 201, Body: `{"leaseSecret":"` + fm.Lease + `","lease_s":"900"}`}, false},
		{"200 not 201", fm.Reply{Status: 200, Body: `{"leaseSecret":"` + fm.Lease + `"}`}, false},
		{"no no-store", fm.Reply{Status: 201, Body: `{"leaseSecret":"` + fm.Lease + `"}`, NoStore: new(bool)}, false},
		{"redirect", fm.Reply{Status: 307, Header: map[string]string{"Location": "/elsewhere", "Cache-Control": "no-store"}}, false},
		{"not JSON", fm.Reply{Status: 201, Body: `leaseSecret=` + fm.Lease}, false},
		{"500", fm.Reply{Status: 500, Body: `{}`}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.srv.Script("claim", tc.reply)
			err := h.run(t)
			if err == nil || errors.Is(err, ErrFatal) != tc.fatal || (!tc.fatal && !errors.Is(err, ErrBadResponse)) {
				t.Fatalf("Run = %v (fatal %v)", err, errors.Is(err, ErrFatal))
			}
			if reqs := h.srv.Requests(); len(reqs) != 1 || reqs[0].Action != "claim" {
				t.Fatalf("requests after a failed claim: %+v", reqs)
			}
			if strings.Contains(err.Error(), fm.Lease[5:20]) || strings.Contains(err.Error(), "127.0.0.1") {
				t.Errorf("error holds a secret or URL: %v", err)
			}
		})
	}
}

func TestBadResponsesInARow(t *testing.T) {
	noStore := new(bool)
	big := `{"x":"` + strings.Repeat("a", MaxResponseBody) + `"}`
	for _, tc := range []struct {
		name  string
		reply fm.Reply
	}{
		{"no no-store", fm.Reply{Status: 200, Body: `{"halted":true}`, NoStore: noStore}},
		{"no-store with more", fm.Reply{Status: 200, Body: `{"halted":true}`, Header: map[string]string{"Cache-Control": "no-store, max-age=60"}}},
		{"204 without no-store", fm.Reply{Status: 204, NoStore: noStore}},
		{"HTTP/1.0 garbage", fm.Reply{Raw: "HTTP/1.1 200 OK\r\nCache-Control: no-store\r\nContent-Length: 5\r\nConnection: close\r\n\r\n{\"a\""}},
		{"duplicate key", fm.Reply{Status: 200, Body: `{"halted":false,"halted":true}`}},
		{"nested duplicate key", fm.Reply{Status: 200, Body: `{"command":` + strings.Replace(fm.Envelope("c1", "observe", nil, fm.SubA, nil), `"tool":"observe"`, `"tool":"observe","tool":"click"`, 1) + `}`}},
		{"redirect", fm.Reply{Status: 302, Header: map[string]string{"Location": "/j/" + fm.Pack + "/runner/elsewhere", "Cache-Control": "no-store"}}},
		{"not JSON", fm.Reply{Status: 200, Body: `<html>`}},
		{"JSON array", fm.Reply{Status: 200, Body: `[{"halted":true}]`}},
		{"trailing data", fm.Reply{Status: 200, Body: `{"halted":false} {"halted":true}`}},
		{"oversized", fm.Reply{Status: 200, Body: big}},
		{"empty 200", fm.Reply{Status: 200}},
		{"neither command nor halted", fm.Reply{Status: 200, Body: `{"ok":true}`}},
		{"command without command_id", fm.Reply{Status: 200, Body: fm.Command(fm.Envelope("", "observe", nil, fm.SubA, map[string]any{"command_id": nil}))}},
		{"500", fm.Reply{Status: 500, Body: `{}`}},
		{"400", fm.Reply{Status: 400, Body: `{}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.srv.Script("poll", tc.reply, tc.reply, tc.reply)
			err := h.run(t)
			if !errors.Is(err, ErrTooManyBadResponses) {
				t.Fatalf("Run = %v, want too many bad responses", err)
			}
			if n := len(h.srv.Of("poll")); n != MaxBadResponses {
				t.Errorf("%d polls, want %d", n, MaxBadResponses)
			}
			if n := len(h.srv.Of("")); n != 0 {
				t.Errorf("followed a redirect: %d requests elsewhere", n)
			}
			if len(h.srv.Of("callback")) != 0 {
				t.Errorf("callbacks were sent: %v", h.callbacks(t))
			}
		})
	}
}

// When Flow records nothing (the field is still empty), the pause stays
// open: the terminal says so and waits for Enter again, and the command is
// answered once something was recorded. Enter is the person's
// confirmation.
func TestPauseKeepsWaitingUntilRecorded(t *testing.T) {
	h := newHarness(t)
	h.term.answers = []bool{true}
	h.sess.continues = []map[string]any{
		{"recorded": false, "reason": "empty_secret_field"},
		{"recorded": false, "reason": "unreadable_field"},
	}
	h.srv.Poll(
		bindPack("cmd_1", fm.SubA),
		fm.Command(fm.Envelope("cmd_2", "pause_for_input", map[string]any{"param": "password", "secret": true}, fm.SubA, nil)),
	)
	if err := h.run(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []map[string]any{
		done("cmd_1", map[string]any{"allowed": true, "client_display": "ChatGPT"}),
		done("cmd_2", map[string]any{"recorded": true, "param": "password"}),
		halted,
	}
	if d := cmp.Diff(want, h.callbacks(t)); d != "" {
		t.Errorf("callbacks (-want +got):\n%s", d)
	}
	wantPrompts := []string{"Allow ChatGPT to drive this job?", PausePrompt,
		"Nothing was recorded: the field is still empty. Type in the app, then press Enter",
		"Nothing was recorded: the field could not be read back. Type in the app, then press Enter"}
	if d := cmp.Diff(wantPrompts, h.term.prompts); d != "" {
		t.Errorf("prompts (-want +got):\n%s", d)
	}
	n := 0
	for _, c := range h.sess.Calls() {
		if c == `continue_input {"operator_confirmed":true}` {
			n++
		}
	}
	if n != 3 {
		t.Errorf("session calls %v", h.sess.Calls())
	}
}

func TestBadResponseCountResetsOnAGoodOne(t *testing.T) {
	h := newHarness(t)
	bad := fm.Reply{Status: 200, Body: `{}`, NoStore: new(bool)}
	h.srv.Script("poll", bad, bad, fm.Reply{Status: 204}, bad, bad)
	if err := h.run(t); err != nil {
		t.Fatalf("Run = %v, want halted after the reset", err)
	}
	if n := len(h.srv.Of("poll")); n != 6 {
		t.Errorf("%d polls, want 6", n)
	}
}

func TestFatalMidSession(t *testing.T) {
	for _, status := range []int{401, 404, 410} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			h := newHarness(t)
			h.srv.Script("poll", fm.Reply{Status: 204}, fm.Reply{Status: status, Body: `{}`})
			if err := h.run(t); !errors.Is(err, ErrFatal) {
				t.Fatalf("Run = %v, want fatal", err)
			}
			if len(h.srv.Of("callback")) != 0 {
				t.Error("a callback followed a fatal poll")
			}
		})
	}
	t.Run("callback 401", func(t *testing.T) {
		h := newHarness(t)
		h.srv.Poll(bindPack("cmd_1", fm.SubA))
		h.srv.Script("callback", fm.Reply{Status: 401, Body: `{}`})
		if err := h.run(t); !errors.Is(err, ErrFatal) {
			t.Fatalf("Run = %v, want fatal", err)
		}
	})
}

func TestCallbackIsResentAfterABadResponse(t *testing.T) {
	h := newHarness(t)
	h.term.answers = []bool{true}
	h.srv.Poll(bindPack("cmd_1", fm.SubA))
	h.srv.Script("callback", fm.Reply{Status: 503, Body: `{}`})
	if err := h.run(t); err != nil {
		t.Fatal(err)
	}
	cbs := h.callbacks(t)
	want := done("cmd_1", map[string]any{"allowed": true, "client_display": "ChatGPT"})
	if d := cmp.Diff([]map[string]any{want, want, halted}, cbs); d != "" {
		t.Errorf("callbacks (-want +got):\n%s", d)
	}
}

func TestAllowPerSubject(t *testing.T) {
	h := newHarness(t)
	h.term.answers = []bool{true, false, true}
	h.srv.Poll(
		fm.Command(fm.Envelope("c0", "observe", nil, fm.SubA, nil)), // before any Allow
		bindPack("c1", fm.SubA),
		fm.Command(fm.Envelope("c2", "observe", nil, fm.SubB, nil)), // a second subject
		fm.Command(fm.Envelope("c3", "bind_pack", nil, fm.SubB, map[string]any{"client_display": "Claude"})),
		fm.Command(fm.Envelope("c4", "observe", nil, fm.SubA, nil)), // A still allowed
		fm.Command(fm.Envelope("c5", "bind_pack", map[string]any{"pack_id": fm.Pack}, fm.SubB, map[string]any{"client_display": "Claude"})),
		fm.Command(fm.Envelope("c6", "click", map[string]any{"node_id": "n_00000001"}, fm.SubA, nil)), // A replaced
		fm.Command(fm.Envelope("c7", "click", map[string]any{"node_id": "n_00000001"}, fm.SubB, nil)),
	)
	if err := h.run(t); err != nil {
		t.Fatal(err)
	}
	obsEmpty := authoring.ProjectObserve(map[string]any{})
	ob, _ := json.Marshal(obsEmpty)
	var obs map[string]any
	_ = json.Unmarshal(ob, &obs)
	want := []map[string]any{
		refused("c0", "not_allowed"),
		done("c1", map[string]any{"allowed": true, "client_display": "ChatGPT"}),
		refused("c2", "not_allowed"),
		refused("c3", "denied"),
		done("c4", obs),
		done("c5", map[string]any{"allowed": true, "client_display": "Claude"}),
		refused("c6", "not_allowed"),
		done("c7", map[string]any{"status": "ok", "node_id": "n_00000001"}),
		halted,
	}
	if d := cmp.Diff(want, h.callbacks(t)); d != "" {
		t.Errorf("callbacks (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{`observe {}`, `click {"node_id":"n_00000001"}`}, h.sess.Calls()); d != "" {
		t.Errorf("session calls (-want +got):\n%s", d)
	}
	wantPrompts := []string{
		"Allow ChatGPT to drive this job?",
		"A different Claude account is asking. Allow it to replace the current one?",
		"A different Claude account is asking. Allow it to replace the current one?",
	}
	if d := cmp.Diff(wantPrompts, h.term.prompts); d != "" {
		t.Errorf("prompts (-want +got):\n%s", d)
	}
	if n := len(h.srv.Of("allow")); n != 2 {
		t.Errorf("%d /allow calls, want 2 (a denial sends none)", n)
	}
}

// allowed is a harness whose first poll allows SubA.
func allowed(t *testing.T) *harness {
	h := newHarness(t)
	h.term.answers = []bool{true}
	h.srv.Poll(bindPack("c_allow", fm.SubA))
	return h
}

func TestRefusals(t *testing.T) {
	env := func(id, tool string, args map[string]any, extra map[string]any) string {
		return fm.Command(fm.Envelope(id, tool, args, fm.SubA, extra))
	}
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		name string
		body string
		code string
	}{
		{"type", env("c1", "type", map[string]any{"text": "hunter2"}, nil), "type_refused"},
		{"type_text", env("c1", "type_text", map[string]any{"text": "hunter2"}, nil), "type_refused"},
		{"unknown tool", env("c1", "admit", nil, nil), "unknown_tool"},
		{"continue_input is local only", env("c1", "continue_input", nil, nil), "unknown_tool"},
		{"expired", env("c1", "observe", nil, map[string]any{"expires_at": past}), "unknown_command"},
		{"status expired", env("c1", "observe", nil, map[string]any{"status": "expired"}), "unknown_command"},
		{"unknown field", env("c1", "observe", nil, map[string]any{"note": "x"}), "unknown_command"},
		{"missing expires_at", env("c1", "observe", nil, map[string]any{"expires_at": nil}), "unknown_command"},
		{"bad sub", env("c1", "observe", nil, map[string]any{"oauth_sub_sha256": "ABC"}), "unknown_command"},
		{"bad display", env("c1", "observe", nil, map[string]any{"client_display": "Evil<script>"}), "unknown_command"},
		{"bad schema", env("c1", "observe", nil, map[string]any{"schema_version": "v2"}), "unknown_command"},
		{"oversized", env("c1", "observe", nil, map[string]any{"result": map[string]any{"pad": strings.Repeat("a", MaxEnvelopeBytes)}}), "unknown_command"},
		{"args on observe", env("c1", "observe", map[string]any{"x": 1}, nil), "unknown_command"},
		{"click without node", env("c1", "click", map[string]any{}, nil), "unknown_command"},
		{"click bad node", env("c1", "click", map[string]any{"node_id": "n_XYZ"}, nil), "unknown_command"},
		{"click pixels", env("c1", "click", map[string]any{"x": 1, "y": 2}, nil), "unknown_command"},
		{"pause bad param", env("c1", "pause_for_input", map[string]any{"param": "Pass Word"}, nil), "unknown_command"},
		{"pause without param", env("c1", "pause_for_input", map[string]any{"secret": true}, nil), "unknown_command"},
		{"press is local only", env("c1", "press", map[string]any{"key": "Enter"}, nil), "unknown_tool"},
		{"pause text", env("c1", "pause_for_input", map[string]any{"param": "p", "text": "x"}, nil), "unknown_command"},
		{"coach PHI", env("c1", "set_coach", map[string]any{"hint": "call 555-123-4567"}, nil), "unknown_command"},
		{"other pack", env("c1", "observe", nil, map[string]any{"pack_id": "p.ZZZZZZZZZZZZ"}), "unknown_pack"},
		{"bind other pack", env("c1", "bind_pack", map[string]any{"pack_id": "p.ZZZZZZZZZZZZ"}, nil), "unknown_pack"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := allowed(t)
			h.srv.Poll(tc.body)
			if err := h.run(t); err != nil {
				t.Fatal(err)
			}
			cbs := h.callbacks(t)
			if len(cbs) != 3 || cmp.Diff(refused("c1", tc.code), cbs[1]) != "" {
				t.Fatalf("callbacks = %v, want c1 refused %s", cbs, tc.code)
			}
			if calls := h.sess.Calls(); len(calls) != 0 {
				t.Errorf("the session ran %v", calls)
			}
			if strings.Contains(h.log.String(), "hunter2") || strings.Contains(h.log.String(), "Evil") {
				t.Errorf("log echoes the command: %s", h.log)
			}
		})
	}
}

func TestReplayedCommandIDNeedsReconciliation(t *testing.T) {
	h := allowed(t)
	obs := fm.Command(fm.Envelope("c1", "observe", nil, fm.SubA, nil))
	h.srv.Poll(obs, obs, fm.Command(fm.Envelope("c2", "observe", nil, fm.SubA, nil)))
	if err := h.run(t); err != nil {
		t.Fatal(err)
	}
	cbs := h.callbacks(t)
	if len(cbs) != 5 || cbs[1]["status"] != "done" ||
		cmp.Diff(refused("c1", "RECONCILIATION_REQUIRED"), cbs[2]) != "" ||
		cmp.Diff(refused("c2", "RECONCILIATION_REQUIRED"), cbs[3]) != "" {
		t.Fatalf("callbacks = %v", cbs)
	}
	if n := len(h.sess.Calls()); n != 1 {
		t.Errorf("the session ran %d times, want once", n)
	}
}

func TestFailedClickNeedsReconciliation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		first  string
		sticky bool
	}{
		{"no receipt", fmt.Errorf("helper died: %w", authoring.ErrUncertain), "RECONCILIATION_REQUIRED", true},
		{"garbage", errors.New("bad frame"), "RECONCILIATION_REQUIRED", true},
		{"stale node", &authoring.Refusal{Code: authoring.CodeStaleNode}, "stale_node", false},
		{"coach only", &authoring.Refusal{Code: authoring.CodeCoachOnly}, "COACH_ONLY", false},
		{"no session", fmt.Errorf("x: %w", authoring.ErrUnavailable), "authoring_unavailable", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := allowed(t)
			h.sess.errs["click"] = tc.err
			h.srv.Poll(
				fm.Command(fm.Envelope("c1", "click", map[string]any{"node_id": "n_00000001"}, fm.SubA, nil)),
				fm.Command(fm.Envelope("c2", "get_coach", nil, fm.SubA, nil)),
			)
			if err := h.run(t); err != nil {
				t.Fatal(err)
			}
			cbs := h.callbacks(t)
			if len(cbs) != 4 || cmp.Diff(refused("c1", tc.first), cbs[1]) != "" {
				t.Fatalf("callbacks = %v", cbs)
			}
			if tc.sticky != (cmp.Diff(refused("c2", "RECONCILIATION_REQUIRED"), cbs[2]) == "") {
				t.Errorf("after the click: %v (sticky %v)", cbs[2], tc.sticky)
			}
			wantCalls := 2
			if tc.sticky {
				wantCalls = 1
			}
			if n := len(h.sess.Calls()); n != wantCalls {
				t.Errorf("session calls %v", h.sess.Calls())
			}
		})
	}
}

func TestSessionRefusalCodes(t *testing.T) {
	h := allowed(t)
	h.sess.errs["start_record"] = &authoring.Refusal{Code: authoring.CodeCoachOnly}
	h.sess.errs["compile"] = &authoring.Refusal{Code: authoring.CodeMissingSecretType}
	h.sess.errs["observe"] = authoring.ErrUnavailable
	h.srv.Poll(
		fm.Command(fm.Envelope("c1", "start_record", nil, fm.SubA, nil)),
		fm.Command(fm.Envelope("c2", "compile", nil, fm.SubA, nil)),
		fm.Command(fm.Envelope("c3", "observe", nil, fm.SubA, nil)),
	)
	if err := h.run(t); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		done("c_allow", map[string]any{"allowed": true, "client_display": "ChatGPT"}),
		refused("c1", "COACH_ONLY"), refused("c2", "missing_secret_type"), refused("c3", "authoring_unavailable"), halted,
	}
	if d := cmp.Diff(want, h.callbacks(t)); d != "" {
		t.Errorf("callbacks (-want +got):\n%s", d)
	}
	if n := strings.Count(h.log.String(), UnavailableNotice); n != 1 {
		t.Errorf("the unavailable notice was printed %d times:\n%s", n, h.log)
	}
}

// With no session, every command is answered authoring_unavailable (only
// that code in the callback) and the person is told once.
func TestNoSessionToldOnce(t *testing.T) {
	h := allowed(t)
	for _, tool := range []string{"observe", "start_record", "get_coach", "stop_record"} {
		h.sess.errs[tool] = fmt.Errorf("the Flow helper stopped: %w", authoring.ErrUnavailable)
	}
	h.srv.Poll(
		fm.Command(fm.Envelope("c1", "observe", nil, fm.SubA, nil)),
		fm.Command(fm.Envelope("c2", "start_record", nil, fm.SubA, nil)),
		fm.Command(fm.Envelope("c3", "get_coach", nil, fm.SubA, nil)),
		fm.Command(fm.Envelope("c4", "stop_record", nil, fm.SubA, nil)),
	)
	if err := h.run(t); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		done("c_allow", map[string]any{"allowed": true, "client_display": "ChatGPT"}),
		refused("c1", "authoring_unavailable"), refused("c2", "authoring_unavailable"),
		refused("c3", "authoring_unavailable"), refused("c4", "authoring_unavailable"), halted,
	}
	if d := cmp.Diff(want, h.callbacks(t)); d != "" {
		t.Errorf("callbacks (-want +got):\n%s", d)
	}
	if n := strings.Count(h.log.String(), UnavailableNotice); n != 1 {
		t.Errorf("the unavailable notice was printed %d times:\n%s", n, h.log)
	}
	if strings.Contains(h.log.String(), "helper stopped") {
		t.Errorf("the log holds the session error's text:\n%s", h.log)
	}
}

func TestHaltedForms(t *testing.T) {
	for _, body := range []string{
		`{"halted":true}`,
		`{"head":{"halted":true,"seq":3}}`,
		fm.Command(fm.Envelope("c9", "observe", nil, fm.SubA, map[string]any{"status": "halted"})),
	} {
		h := newHarness(t)
		h.srv.OnEmptyPoll = fm.Reply{Status: 500}
		h.srv.Poll(body)
		if err := h.run(t); err != nil {
			t.Fatalf("%s: Run = %v", body, err)
		}
		if d := cmp.Diff([]map[string]any{halted}, h.callbacks(t)); d != "" {
			t.Errorf("%s: callbacks (-want +got):\n%s", body, d)
		}
		if len(h.sess.Calls()) != 0 {
			t.Errorf("%s: the session ran", body)
		}
	}
}

func TestSignalSendsHaltedCallback(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The person presses Ctrl-C while the Allow prompt is up.
	h.term.confirm = cancel
	h.srv.Poll(bindPack("c1", fm.SubA))
	if err := Run(ctx, h.cfg); err != nil {
		t.Fatalf("Run = %v, want a clean stop", err)
	}
	h.checkInvariants(t)
	if d := cmp.Diff([]map[string]any{halted}, h.callbacks(t)); d != "" {
		t.Errorf("callbacks (-want +got):\n%s", d)
	}
}

func TestSignalHaltedCallbackIsCapped(t *testing.T) {
	h := newHarness(t)
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	// The halted callback never gets an answer; only the cap can end Run.
	h.cfg.HTTPClient = newHTTPClient(time.Hour)
	h.cfg.HaltCap = 20 * time.Millisecond
	h.srv.Script("callback", fm.Reply{Status: 200, Body: `{}`, Block: block})
	ctx, cancel := context.WithCancel(context.Background())
	h.term.confirm = cancel
	h.srv.Poll(bindPack("c1", fm.SubA))
	errc := make(chan error, 1)
	go func() { errc <- Run(ctx, h.cfg) }()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("Run = %v, want interrupted with an undelivered notice", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Run did not return: the halted callback is not capped")
	}
}

func TestInterruptDuringClaimSendsNothingMore(t *testing.T) {
	h := newHarness(t)
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	ctx, cancel := context.WithCancel(context.Background())
	arrived := make(chan struct{})
	h.srv.Script("claim", fm.Reply{Status: 201, Block: block, Arrived: arrived})
	errc := make(chan error, 1)
	go func() { errc <- Run(ctx, h.cfg) }()
	<-arrived // the claim is in flight
	cancel()
	if err := <-errc; !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Run = %v", err)
	}
	if n := len(h.srv.Requests()); n != 1 {
		t.Errorf("%d requests, want the claim only", n)
	}
}

// bodyRoundTripper answers every request with a 204 that carries a body,
// which Go's own HTTP/1.1 transport never delivers (RFC 9110 §15.3.5): the
// client must refuse it if any transport ever does.
type bodyRoundTripper struct{ n int }

func (b *bodyRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	b.n++
	if strings.HasSuffix(r.URL.Path, "/claim") {
		return &http.Response{StatusCode: 201, Header: http.Header{"Cache-Control": {"no-store"}},
			Body: io.NopCloser(strings.NewReader(`{"leaseSecret":"` + fm.Lease + `"}`)), Request: r}, nil
	}
	return &http.Response{StatusCode: 204, Header: http.Header{"Cache-Control": {"no-store"}},
		Body: io.NopCloser(strings.NewReader(`{}`)), Request: r}, nil
}

func TestNoContentWithABodyIsBad(t *testing.T) {
	h := newHarness(t)
	rt := &bodyRoundTripper{}
	h.cfg.HTTPClient = &http.Client{Transport: rt}
	if err := Run(context.Background(), h.cfg); !errors.Is(err, ErrTooManyBadResponses) {
		t.Fatalf("Run = %v", err)
	}
	if rt.n != 1+MaxBadResponses {
		t.Errorf("%d requests", rt.n)
	}
}
