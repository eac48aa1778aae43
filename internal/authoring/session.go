package authoring

import (
	"context"
	"errors"
)

// Session is one live authoring session (Flow's openadapt_flow.authoring
// session, held by the Flow helper). Call runs the closed op of one
// authoring tool (docs/authoring.md, "MCP tools"), named by the tool ("observe", "click", …), with arguments the caller
// has already validated against that tool's closed input schema, and returns
// the session's raw result object. The raw result is untrusted: callers pass
// it through the projection of that tool before it reaches any wire.
//
// Call returns a [*Refusal] when the session refused the tool (nothing was
// done), an error wrapping [ErrUnavailable] when there is no session (or the
// helper stopped before the request was written), and an error wrapping
// [ErrUncertain] when the request reached the session but no receipt came
// back (the helper died or timed out mid-op): the action may have happened.
type Session interface {
	Call(ctx context.Context, tool string, args map[string]any) (map[string]any, error)
}

// Code is a tool-level refusal code. Codes are lowercase everywhere on the MCP
// wire; the mailbox keeps the hosted contract's
// spelling where it differs (see [Code.Mailbox]).
type Code string

// The refusal codes of the authoring tools (docs/authoring.md, "MCP tools";
// docs/mailbox.md, "Codes and results").
const (
	CodeStaleNode            Code = "stale_node"
	CodeInFlight             Code = "in_flight"
	CodeCoachOnly            Code = "coach_only"
	CodeNotRecording         Code = "not_recording"
	CodeNotPaused            Code = "not_paused"
	CodeMissingSecretType    Code = "missing_secret_type"
	CodeAdmitRefused         Code = "admit_refused"
	CodeAuthoringUnavailable Code = "authoring_unavailable"
	CodeInvalidArguments     Code = "invalid_arguments"
	CodeNotCompiled          Code = "not_compiled"
	CodeReconcile            Code = "reconciliation_required"
	CodeUnknownCommand       Code = "unknown_command"
	// The rest of Flow's refusals (docs/authoring.md, Errors): the session
	// was halted; a recording is already running; a pause has no target
	// (no node, no earlier click), or a secret pause's target has no area to
	// redact; and the one reason of every code Flow adds later.
	CodeHalted              Code = "halted"
	CodeAlreadyRecording    Code = "already_recording"
	CodeMissingPauseTarget  Code = "missing_pause_target"
	CodeMissingRedactRegion Code = "missing_redact_region"
	CodeSessionRefused      Code = "session_refused"
)

// Mailbox is the code's spelling in a mailbox callback. The hosted command
// contract (openadapt-types AuthoringErrorCodeV1, which the service validates
// callbacks against) spells two codes in capitals: COACH_ONLY and
// RECONCILIATION_REQUIRED. Interop is exact, so the mailbox keeps them; the
// MCP wire uses the lowercase [Code].
func (c Code) Mailbox() string {
	switch c {
	case CodeCoachOnly:
		return "COACH_ONLY"
	case CodeReconcile:
		return "RECONCILIATION_REQUIRED"
	case CodeInvalidArguments:
		// Flow refused the command's arguments: the mailbox's own code for
		// arguments outside a tool's shape.
		return string(CodeUnknownCommand)
	}
	return string(c)
}

// knownCodes are the codes a session may answer with. Anything else from the
// session is not trusted onto a wire.
var knownCodes = map[Code]bool{
	CodeStaleNode: true, CodeInFlight: true, CodeCoachOnly: true, CodeNotRecording: true,
	CodeNotPaused: true, CodeMissingSecretType: true, CodeAdmitRefused: true,
	CodeAuthoringUnavailable: true, CodeInvalidArguments: true, CodeNotCompiled: true,
	CodeHalted: true, CodeAlreadyRecording: true, CodeMissingPauseTarget: true,
	CodeMissingRedactRegion: true, CodeSessionRefused: true,
}

// ParseCode returns the refusal code named by s when it is one a session may
// answer with.
func ParseCode(s string) (Code, bool) {
	c := Code(s)
	return c, knownCodes[c]
}

// Refusal is a tool-level refusal answered by the session: the tool did not
// act (for click: a terminal receipt that nothing was clicked).
type Refusal struct{ Code Code }

func (r *Refusal) Error() string { return "authoring session refused: " + string(r.Code) }

var (
	// ErrUnavailable means there is no authoring session: Flow lacks
	// openadapt_flow.authoring, or the helper stopped before the request was
	// written. Nothing was done.
	ErrUnavailable = errors.New("no authoring session is available")
	// ErrUncertain means the request reached the session but no receipt came
	// back: the action may or may not have happened.
	ErrUncertain = errors.New("the authoring session gave no receipt")
)

// RefusalCode returns the refusal code of err when err is (or wraps) a
// [*Refusal].
func RefusalCode(err error) (Code, bool) {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Code, true
	}
	return "", false
}
