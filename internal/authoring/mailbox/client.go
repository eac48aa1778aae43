package mailbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/authoring"
)

// Timing of the client (docs/mailbox.md, "Transport" and "Handling a
// command").
const (
	PollPause       = 1 * time.Second        // the local pause after a 204
	HaltedCap       = 500 * time.Millisecond // the halted callback on SIGINT/SIGTERM
	MaxBadResponses = 3                      // consecutive bad responses before exit 1
	leaseSeconds    = 900
)

// The prompts on the controlling terminal.
const (
	PausePrompt   = "Sign in in the app, then press Enter"
	BoundSentence = "OpenAdapt is installed on this computer, so an agent can drive only through OpenAdapt."
)

// The mailbox's own refusal codes (docs/mailbox.md, "Codes and results"). Session refusals use
// [authoring.Code.Mailbox].
const (
	codeNotAllowed     = "not_allowed"
	codeReconcile      = "RECONCILIATION_REQUIRED"
	codeUnknownCommand = "unknown_command"
	codeUnknownPack    = "unknown_pack"
	codeUnknownTool    = "unknown_tool"
	codeDenied         = "denied"
	codeTypeRefused    = "type_refused"
	codeUnavailable    = "authoring_unavailable"
)

// mailboxTools are the tools the hosted side may enqueue.
var mailboxTools = set("observe", "start_record", "click", "halt", "stop_record", "compile",
	"pause_for_input", "set_coach", "get_coach", "bind_pack")

var (
	// ErrTooManyBadResponses ends the client after [MaxBadResponses] bad
	// responses in a row.
	ErrTooManyBadResponses = errors.New("the mailbox sent too many bad responses in a row")
	// ErrInterrupted means SIGINT/SIGTERM (the context) stopped the client.
	ErrInterrupted = errors.New("stopped by a signal")
)

// Config is what [Run] needs. Link, Session and Terminal are required.
type Config struct {
	Link     Link
	Session  authoring.Session // the local authoring session (already probed and open)
	Terminal Terminal          // the controlling terminal
	Log      io.Writer         // status lines for the person (stderr); nil discards

	// UserAgent is sent with every request.
	UserAgent string

	// Test knobs; zero values are the production behaviour.
	HTTPClient *http.Client                                     // nil: 10 s timeouts, no redirects
	Sleep      func(ctx context.Context, d time.Duration) error // nil: a timer honouring ctx
	Now        func() time.Time                                 // nil: time.Now
	HaltCap    time.Duration                                    // 0: HaltedCap
}

// Run claims the link's job and serves it until the mailbox says halted
// (nil), the context ends (SIGINT/SIGTERM: a best-effort halted callback of
// at most 500 ms, then nil when it was delivered and an error wrapping
// [ErrInterrupted] when not), or the session cannot go on (an error wrapping
// [ErrFatal] or [ErrTooManyBadResponses]). Errors
// never hold a secret, a URL or server text.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Session == nil || cfg.Terminal == nil || cfg.Link.Bind.IsZero() {
		return errors.New("mailbox: Run needs a link, a session and a terminal")
	}
	c := &client{cfg: cfg, seen: map[string]bool{}}
	if c.cfg.Log == nil {
		c.cfg.Log = io.Discard
	}
	if c.cfg.Now == nil {
		c.cfg.Now = time.Now
	}
	if c.cfg.Sleep == nil {
		c.cfg.Sleep = sleepCtx
	}
	if c.cfg.HaltCap == 0 {
		c.cfg.HaltCap = HaltedCap
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = newHTTPClient(RequestTimeout)
	}
	c.t = &transport{origin: cfg.Link.Origin, pack: cfg.Link.Pack, client: hc, userAgent: cfg.UserAgent}
	return c.run(ctx)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

type client struct {
	cfg   Config
	t     *transport
	lease Secret
	bad   int // consecutive bad responses

	allowedSub string          // the one OAuth subject allowed to drive
	seen       map[string]bool // every command id answered
	reconcile  bool            // sticky: answer RECONCILIATION_REQUIRED until restart
	// saidUnavailable: the person was told once that the session is gone.
	saidUnavailable bool
}

// UnavailableNotice is printed once on stderr when the local authoring
// session is not available and commands are answered authoring_unavailable.
const UnavailableNotice = "the local authoring session is not available; every command is answered authoring_unavailable until you restart authoring connect"

// logTool is the tool name as it may be printed: only names this client
// knows, never a string the service chose.
func logTool(tool string) string {
	if mailboxTools[tool] || tool == "type" || tool == "type_text" {
		return tool
	}
	return ""
}

func (c *client) logf(format string, a ...any) {
	fmt.Fprintf(c.cfg.Log, "authoring connect: "+format+"\n", a...)
}

func (c *client) run(ctx context.Context) error {
	if err := c.claim(ctx); err != nil {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		return err
	}
	c.logf("%s", BoundSentence)
	c.logf("claimed the job; waiting for ChatGPT or Claude to ask for Allow (Ctrl-C stops)")
	for {
		err := c.pollOnce(ctx)
		if errors.Is(err, errHalted) {
			c.logf("the job was halted; stopping")
			return nil
		}
		if ctx.Err() != nil {
			return c.interrupted()
		}
		if err != nil {
			return err
		}
	}
}

// interrupted sends the best-effort halted callback, capped at HaltCap. A
// delivered notice ends the client cleanly (nil), as a halted job does.
func (c *client) interrupted() error {
	hctx, cancel := context.WithTimeout(context.Background(), c.cfg.HaltCap)
	defer cancel()
	_, err := c.t.post(hctx, "callback", haltedCallback(), c.lease, http.StatusOK, http.StatusAccepted)
	if err != nil {
		return fmt.Errorf("%w; the halted notice could not be delivered to the mailbox", ErrInterrupted)
	}
	c.logf("stopped; the mailbox was told the job halted")
	return nil
}

func haltedCallback() map[string]any { return map[string]any{"halted": true, "status": "halted"} }

// errHalted ends the loop cleanly.
var errHalted = errors.New("halted")

// count records a failed response: a bad response increments the
// consecutive count (and ends the client at MaxBadResponses); other errors
// are returned as they are. Accepted responses reset the count where they
// are accepted.
func (c *client) count(err error) error {
	if !errors.Is(err, ErrBadResponse) {
		return err
	}
	c.bad++
	c.logf("%s (%d of %d in a row)", err, c.bad, MaxBadResponses)
	if c.bad >= MaxBadResponses {
		return fmt.Errorf("%w: %w", ErrTooManyBadResponses, err)
	}
	return nil
}

// claim spends the one-time bind token: exactly one attempt, since a retry
// of a claim that succeeded server-side could only give 409.
func (c *client) claim(ctx context.Context) error {
	r, err := c.t.post(ctx, "claim", map[string]any{"bind": c.cfg.Link.Bind.reveal()}, Secret{}, http.StatusCreated)
	if err != nil {
		return fmt.Errorf("claiming the job: %w", err)
	}
	var lease string
	if json.Unmarshal(r.body["leaseSecret"], &lease) != nil || !ValidLease(lease) {
		return fmt.Errorf("claiming the job: %w: the claim response held no oals_ lease", ErrBadResponse)
	}
	if v, ok := r.body["lease_s"]; ok {
		var n int64
		if json.Unmarshal(v, &n) != nil || n <= 0 {
			return fmt.Errorf("claiming the job: %w: the claim response's lease_s is not a positive integer", ErrBadResponse)
		}
	}
	c.lease = Secret{lease}
	return nil
}

// pollOnce polls once and handles what came back. A 204 or a bad response
// is followed by the local one-second pause.
func (c *client) pollOnce(ctx context.Context) error {
	r, err := c.t.post(ctx, "poll", map[string]any{"wait_seconds": 0, "lease_seconds": leaseSeconds},
		c.lease, http.StatusOK, http.StatusNoContent)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return c.afterBad(ctx, c.count(err))
	}
	if r.status == http.StatusNoContent {
		c.bad = 0
		return c.cfg.Sleep(ctx, PollPause)
	}
	return c.handleBody(ctx, r)
}

// handleBody reads a 200 poll body: halted, {"command": envelope}, or a bare
// envelope. Anything else is a bad response.
func (c *client) handleBody(ctx context.Context, r reply) error {
	if isTrue(r.body["halted"]) {
		c.bad = 0
		return c.halt(ctx)
	}
	if h, ok := r.body["head"]; ok {
		var head map[string]json.RawMessage
		if json.Unmarshal(h, &head) == nil && isTrue(head["halted"]) {
			c.bad = 0
			return c.halt(ctx)
		}
	}
	raw := r.raw
	if cmd, ok := r.body["command"]; ok {
		raw = cmd
	} else if _, ok := r.body["tool"]; !ok {
		return c.afterBad(ctx, c.count(badf("the poll response held neither a command nor halted")))
	}
	e, err := DecodeEnvelope(raw)
	if err != nil {
		id, _ := isEnvelopeError(err)
		if id == "" {
			return c.afterBad(ctx, c.count(badf("the poll response held a command without a usable command_id")))
		}
		c.bad = 0
		if c.seen[id] {
			c.reconcile = true
			return c.answerError(ctx, id, "", codeReconcile)
		}
		c.seen[id] = true
		return c.answerError(ctx, id, "", codeUnknownCommand)
	}
	c.bad = 0
	if e.Status == "halted" {
		return c.halt(ctx)
	}
	return c.handle(ctx, e)
}

func (c *client) afterBad(ctx context.Context, err error) error {
	if err != nil {
		return err
	}
	return c.cfg.Sleep(ctx, PollPause)
}

func isTrue(v json.RawMessage) bool { return string(v) == "true" }

// halt answers halted with the final callback and ends the loop.
func (c *client) halt(ctx context.Context) error {
	if err := c.send(ctx, "callback", haltedCallback()); err != nil {
		return err
	}
	return errHalted
}

// send posts a callback or allow body, re-sending it after a bad response
// (with the local pause) until it is accepted or the bad-response bound is
// reached.
func (c *client) send(ctx context.Context, action string, body map[string]any) error {
	for {
		_, err := c.t.post(ctx, action, body, c.lease, http.StatusOK, http.StatusAccepted)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			c.bad = 0
			return nil
		}
		if err := c.count(err); err != nil {
			return err
		}
		if err := c.cfg.Sleep(ctx, PollPause); err != nil {
			return err
		}
	}
}

// answerError sends the error callback {"status":"error","result":{"error":code}}.
func (c *client) answerError(ctx context.Context, id, tool, code string) error {
	if code == codeUnavailable && !c.saidUnavailable {
		c.saidUnavailable = true
		c.logf("%s", UnavailableNotice)
	}
	if tool = logTool(tool); tool != "" {
		c.logf("%s: refused (%s)", tool, code)
	} else {
		c.logf("a command was refused (%s)", code)
	}
	return c.send(ctx, "callback", map[string]any{
		"command_id": id, "status": "error", "result": map[string]any{"error": code},
	})
}

// answerDone sends the done callback with the projected result.
func (c *client) answerDone(ctx context.Context, id, tool string, result any) error {
	c.logf("%s: done", tool)
	return c.send(ctx, "callback", map[string]any{"command_id": id, "status": "done", "result": result})
}

// handle applies docs/mailbox.md, "Handling a command", to one well-formed
// envelope, in order: a
// replayed id, the sticky reconciliation state, expiry, the pack, the tool,
// its arguments, Allow per subject, then the session.
func (c *client) handle(ctx context.Context, e Envelope) error {
	if c.seen[e.CommandID] {
		// The service re-delivered a command this client already answered:
		// its view and ours differ, so nothing more runs until a restart.
		c.reconcile = true
		return c.answerError(ctx, e.CommandID, e.Tool, codeReconcile)
	}
	c.seen[e.CommandID] = true
	if c.reconcile {
		return c.answerError(ctx, e.CommandID, e.Tool, codeReconcile)
	}
	if !c.cfg.Now().Before(e.ExpiresAt) || e.Status == "expired" {
		return c.answerError(ctx, e.CommandID, e.Tool, codeUnknownCommand)
	}
	if e.PackID != c.cfg.Link.Pack {
		return c.answerError(ctx, e.CommandID, e.Tool, codeUnknownPack)
	}
	if e.Tool == "type" || e.Tool == "type_text" {
		return c.answerError(ctx, e.CommandID, e.Tool, codeTypeRefused)
	}
	if !mailboxTools[e.Tool] {
		return c.answerError(ctx, e.CommandID, "", codeUnknownTool)
	}
	args, ok := parseArgs(e.Tool, e.Args)
	if !ok {
		return c.answerError(ctx, e.CommandID, e.Tool, codeUnknownCommand)
	}
	if e.Tool == "bind_pack" {
		if args.packID != "" && args.packID != c.cfg.Link.Pack {
			return c.answerError(ctx, e.CommandID, e.Tool, codeUnknownPack)
		}
		return c.allow(ctx, e)
	}
	if c.allowedSub == "" || e.Sub != c.allowedSub {
		return c.answerError(ctx, e.CommandID, e.Tool, codeNotAllowed)
	}
	result, code := c.execute(ctx, e.Tool, args)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if code != "" {
		return c.answerError(ctx, e.CommandID, e.Tool, code)
	}
	return c.answerDone(ctx, e.CommandID, e.Tool, result)
}

// allow asks the person whether this subject may drive the job. Yes records
// the subject, calls /allow (the Python client's behaviour; Desktop instead
// sends {"allowed": true} in a callback) and answers the bind_pack done;
// anything else answers denied and keeps the previous subject.
func (c *client) allow(ctx context.Context, e Envelope) error {
	display := e.ClientDisplay
	if display == "" {
		display = "the chat app"
	}
	q := "Allow " + display + " to drive this job?"
	if c.allowedSub != "" && c.allowedSub != e.Sub {
		q = "A different " + display + " account is asking. Allow it to replace the current one?"
	}
	yes, err := c.cfg.Terminal.Confirm(ctx, q)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil || !yes {
		return c.answerError(ctx, e.CommandID, e.Tool, codeDenied)
	}
	if err := c.send(ctx, "allow", map[string]any{"command_id": e.CommandID}); err != nil {
		return err
	}
	c.allowedSub = e.Sub
	res := map[string]any{"allowed": true}
	if e.ClientDisplay != "" {
		res["client_display"] = e.ClientDisplay
	}
	c.logf("allowed %s to drive this job", display)
	return c.answerDone(ctx, e.CommandID, e.Tool, res)
}

// args are one command's validated arguments.
type args struct {
	nodeID string
	param  string
	secret bool
	hint   string
	packID string
}

// parseArgs validates a command's args against its closed shape
// (openadapt-types authoring-command-v1). Anything else is unknown_command.
func parseArgs(tool string, raw map[string]json.RawMessage) (args, bool) {
	var a args
	allowed := map[string]bool{}
	switch tool {
	case "click":
		allowed["node_id"] = true
	case "pause_for_input":
		allowed["param"], allowed["secret"] = true, true
	case "set_coach":
		allowed["hint"] = true
	case "bind_pack":
		allowed["pack_id"] = true
	}
	for k := range raw {
		if !allowed[k] {
			return a, false
		}
	}
	str := func(k string) (string, bool, bool) { // value, present, ok
		v, ok := raw[k]
		if !ok || string(v) == "null" {
			return "", false, true
		}
		var s string
		return s, true, json.Unmarshal(v, &s) == nil
	}
	switch tool {
	case "click":
		s, present, ok := str("node_id")
		if !present || !ok || !authoring.NodeIDRE().MatchString(s) {
			return a, false
		}
		a.nodeID = s
	case "pause_for_input":
		// Flow's pause needs the parameter the input binds to.
		s, present, ok := str("param")
		if !ok || !present || !authoring.ParamRE().MatchString(s) {
			return a, false
		}
		a.param = s
		if v, ok := raw["secret"]; ok && string(v) != "null" {
			if json.Unmarshal(v, &a.secret) != nil {
				return a, false
			}
		}
	case "set_coach":
		s, present, ok := str("hint")
		if !present || !ok {
			return a, false
		}
		if a.hint = authoring.SafeLabel(s); a.hint == "" || a.hint != s {
			return a, false
		}
	case "bind_pack":
		s, present, ok := str("pack_id")
		if !ok || (present && !ValidPack(s)) {
			return a, false
		}
		a.packID = s
	}
	return a, true
}

// execute runs one allowed command against the session and returns its
// projected result, or the code to refuse it with. Only projections built in
// Go from validated values are returned: no value, text, title, screenshot,
// pixels, bind or lease field can reach a callback.
func (c *client) execute(ctx context.Context, tool string, a args) (any, string) {
	switch tool {
	case "observe":
		raw, err := c.cfg.Session.Call(ctx, "observe", map[string]any{})
		if err != nil {
			return nil, c.sessionCode(err, false)
		}
		return authoring.ProjectObserve(raw), ""
	case "start_record":
		if _, err := c.cfg.Session.Call(ctx, "start_record", map[string]any{}); err != nil {
			return nil, c.sessionCode(err, false)
		}
		return authoring.StatusResult{Status: "recording"}, ""
	case "click":
		raw, err := c.cfg.Session.Call(ctx, "click", map[string]any{"node_id": a.nodeID})
		if err != nil {
			return nil, c.sessionCode(err, true)
		}
		return authoring.ProjectClick(raw, a.nodeID), ""
	case "halt":
		if _, err := c.cfg.Session.Call(ctx, "halt", map[string]any{}); err != nil {
			return nil, c.sessionCode(err, false)
		}
		return authoring.StopResult{Status: "halted"}, ""
	case "stop_record":
		if _, err := c.cfg.Session.Call(ctx, "stop_record", map[string]any{}); err != nil {
			return nil, c.sessionCode(err, false)
		}
		return authoring.StopResult{Status: "stopped"}, ""
	case "compile":
		raw, err := c.cfg.Session.Call(ctx, "compile", map[string]any{})
		if err != nil {
			return nil, c.sessionCode(err, false)
		}
		return authoring.ProjectCompile(raw), ""
	case "pause_for_input":
		return c.pause(ctx, a)
	case "set_coach":
		if _, err := c.cfg.Session.Call(ctx, "set_coach", map[string]any{"hint": a.hint}); err != nil {
			return nil, c.sessionCode(err, false)
		}
		return authoring.CoachSetResult{Status: "ok", Hint: a.hint}, ""
	case "get_coach":
		raw, err := c.cfg.Session.Call(ctx, "get_coach", map[string]any{})
		if err != nil {
			return nil, c.sessionCode(err, false)
		}
		return authoring.ProjectGetCoach(raw), ""
	}
	return nil, codeUnknownTool
}

// pause is the hosted pause: the session captures the pause target, the
// person types in the app and presses Enter here, and continue_input records
// what they typed with record_observed (never type_text). Enter is the
// person's confirmation (operator_confirmed). When Flow records nothing (an
// empty or unreadable field) the pause stays open: the terminal says why
// and waits for Enter again; the command is answered once something was
// recorded.
func (c *client) pause(ctx context.Context, a args) (any, string) {
	req := map[string]any{"param": a.param}
	if a.secret {
		req["secret"] = true
	}
	if _, err := c.cfg.Session.Call(ctx, "pause_for_input", req); err != nil {
		return nil, c.sessionCode(err, false)
	}
	prompt := PausePrompt
	for {
		if err := c.cfg.Terminal.WaitEnter(ctx, prompt); err != nil {
			if ctx.Err() != nil {
				return nil, ""
			}
			return nil, codeUnavailable
		}
		raw, err := c.cfg.Session.Call(ctx, "continue_input", map[string]any{"operator_confirmed": true})
		if err != nil {
			return nil, c.sessionCode(err, false)
		}
		if raw["recorded"] == true {
			return authoring.RecordedResult{Recorded: true, Param: a.param}, ""
		}
		r, _ := raw["reason"].(string)
		prompt = notRecordedPrompt(r)
	}
}

// notRecordedPrompt is the terminal line after Flow recorded nothing, by
// continue_input's closed reason.
func notRecordedPrompt(reason string) string {
	switch reason {
	case "empty_secret_field", "empty_field":
		return "Nothing was recorded: the field is still empty. Type in the app, then press Enter"
	case "unreadable_field":
		return "Nothing was recorded: the field could not be read back. Type in the app, then press Enter"
	}
	return "Nothing was recorded. Type in the app, then press Enter"
}

// sessionCode maps a session error to the callback code. For a click, any
// failure without a terminal receipt (not a refusal: the helper died, timed
// out, or answered garbage) makes the state uncertain: this command and every
// later one get RECONCILIATION_REQUIRED until the person restarts.
func (c *client) sessionCode(err error, click bool) string {
	if code, ok := authoring.RefusalCode(err); ok {
		return code.Mailbox()
	}
	if click && !errors.Is(err, authoring.ErrUnavailable) {
		c.reconcile = true
		return codeReconcile
	}
	return codeUnavailable
}
