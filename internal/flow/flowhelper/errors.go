package flowhelper

import (
	"errors"
	"fmt"
	"strings"
)

// Error kinds of a helper error frame (docs/helper.md, "Error model").
const (
	KindRefused     = "refused"
	KindBusy        = "busy"
	KindInvalid     = "invalid"
	KindUnavailable = "unavailable"
	KindUncertain   = "uncertain"
	KindInternal    = "internal"
)

// Error is a helper error frame: kind, reason, Flow's exception type and
// MRO, and whether Flow's execute/prior was entered. It never carries text.
type Error struct {
	Kind       string
	Reason     string // "" when the frame's reason is null
	FlowType   string // "" when null; module.QualName of Flow's exception
	MRO        []string
	Dispatched bool
}

func (e *Error) Error() string {
	s := "flow helper: " + e.Kind
	if e.Reason != "" {
		s += "/" + e.Reason
	}
	if e.Dispatched {
		s += " (dispatched)"
	}
	return s
}

// ErrDead is wrapped by every [*TransportError] of a helper that stopped:
// it exited, closed its pipe, sent a bad frame, or was killed.
var ErrDead = errors.New("the Flow helper stopped")

// ErrDeadline is wrapped (together with [ErrDead]) when a request's
// deadline passed; the helper is killed (docs/helper.md, "Concurrency and
// deadlines").
var ErrDeadline = fmt.Errorf("%w: request deadline passed", ErrDead)

// TransportError reports a request that got no valid answer because the
// helper died. Written tells whether any byte of the request frame was
// written: an attended action written even partly may have been delivered
// (docs/helper.md, "Death, no restart").
type TransportError struct {
	Op      string
	Written bool
	Err     error
}

func (e *TransportError) Error() string {
	w := "not written"
	if e.Written {
		w = "written"
	}
	return fmt.Sprintf("flow helper %s (%s): %v", e.Op, w, e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

// StartError is a startup failure with the exact operator message (never
// prefixed: serve adds "serve: "). Stage says which startup step failed.
type StartError struct {
	Stage Stage
	Msg   string
	Err   error
	// Interpreter is the interpreter the helper was started with, when
	// [Launch] failed after finding it (the zero value before).
	Interpreter Interpreter
}

func (e *StartError) Error() string { return e.Msg }
func (e *StartError) Unwrap() error { return e.Err }

// Stage names a startup step of the helper, in the order [Launch] runs
// them (docs/helper.md, "Startup").
type Stage string

// The startup steps.
const (
	// StageOperator: the local operator identity could not be derived, or
	// the helper computed a different one.
	StageOperator Stage = "operator"
	// StageInterpreter: Flow's Python interpreter could not be found (from
	// the Flow command's #! line, or the --flow-python given).
	StageInterpreter Stage = "interpreter"
	// StageStart: the program could not be staged or spawned, or hello
	// failed (timeout, bad frame, digest, protocol, Python version, Flow not
	// importable).
	StageStart Stage = "start"
	// StageFlowVersion: attended actions or the tutorial were asked for and
	// the helper's Flow is not the supported minor.
	StageFlowVersion Stage = "flow_version"
	// StageAuthoring: authoring was asked for and the helper's Flow has no
	// usable openadapt_flow.authoring.
	StageAuthoring Stage = "authoring"
	// StageRunVersion: the run command reports another Flow version than the
	// helper.
	StageRunVersion Stage = "run_version"
)

// ErrUnsupportedFlow is wrapped by the StartError of a Flow version other
// than 1.32.x for a feature that needs it.
var ErrUnsupportedFlow = errors.New("unsupported openadapt-flow version")

// CleanVersion returns v when it matches ^[0-9A-Za-z.+-]{1,32}$, else
// "unknown": a version from Flow is shown only when it looks like one.
func CleanVersion(v string) string {
	if len(v) == 0 || len(v) > 32 {
		return "unknown"
	}
	for _, r := range v {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || strings.ContainsRune(".+-", r)) {
			return "unknown"
		}
	}
	return v
}

func startedWith(interp string, err error) *StartError {
	return &StartError{Stage: StageStart, Msg: "the Flow helper could not be started with " + interp, Err: err}
}

// MsgOperator is the message of a local operator identity that cannot be
// derived, or that the helper disagrees with.
const MsgOperator = "attended actions require a server-derived local operator identity"
