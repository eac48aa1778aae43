package authoring

import (
	"regexp"
	"slices"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
)

// The closed result shapes of the authoring tools other than observe. Each is
// built in Go from validated values only; the session's raw result supplies
// at most an id that matches its pattern, never free text.

// ParamRE is the shape of a workflow parameter name.
var ParamRE = lazyre.New(`^[a-z][a-z0-9_]{0,31}$`)

// WorkflowIDRE is the shape of a compiled draft's workflow id
// (openadapt-types AuthoringCompileResultV1).
var WorkflowIDRE = lazyre.New(`^wf_[A-Za-z0-9_-]{8,64}$`)

// StatusResult is {"status": S} (start_record: "recording").
type StatusResult struct {
	Status string `json:"status"`
}

// ClickResult is a click's receipt.
type ClickResult struct {
	Status string `json:"status"`
	NodeID string `json:"node_id,omitempty"`
}

// StopResult is halt's and stop_record's receipt: the session stopped
// without compiling.
type StopResult struct {
	Status   string `json:"status"`
	Compiled bool   `json:"compiled"`
}

// TypeResult is type's receipt. It never carries the text.
type TypeResult struct {
	Status   string `json:"status"`
	Recorded bool   `json:"recorded"`
	Param    string `json:"param,omitempty"`
}

// PauseResult is pause_for_input's receipt over MCP: the session waits for
// the person; continue_input records what they typed.
type PauseResult struct {
	Status string `json:"status"`
	Param  string `json:"param,omitempty"`
	Secret bool   `json:"secret,omitempty"`
}

// RecordedResult is continue_input's receipt (and a hosted pause's final
// result): the person's input was recorded with record_observed, or, with
// Recorded false, nothing was recorded for Reason (one of
// [ContinueReasons]) and the pause stays open.
type RecordedResult struct {
	Recorded bool   `json:"recorded"`
	Param    string `json:"param,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// ContinueReasons are why continue_input may record nothing: a secret or
// plain field the person left empty, a masked secret the person did not
// confirm, a field that cannot be read back, or (for a reason Flow does not
// document) not_recorded.
var ContinueReasons = flowhelper.ContinueReasons

// PressKeyRE is the closed grammar of press: a named key that types no
// character, optionally after modifiers (docs/authoring.md, MCP tools);
// [ValidPressKey] also refuses a repeated modifier.
var PressKeyRE = lazyre.New(`^(?:(?:Control|Alt|Meta|Shift)\+){0,4}(?:Enter|Tab|Escape|Backspace|Delete|ArrowUp|ArrowDown|ArrowLeft|ArrowRight|Home|End|PageUp|PageDown|F[1-9]|F1[0-2])$`)

// ValidPressKey reports whether key is in press's grammar.
func ValidPressKey(key string) bool {
	if !PressKeyRE().MatchString(key) {
		return false
	}
	mods := strings.Split(key, "+")
	mods = mods[:len(mods)-1]
	seen := map[string]bool{}
	for _, m := range mods {
		if seen[m] {
			return false
		}
		seen[m] = true
	}
	return true
}

// PressResult is press's receipt: the key (a grammar value, never text).
type PressResult struct {
	Status string `json:"status"`
	Key    string `json:"key,omitempty"`
}

// CompileResult is compile's result: always needs_human_admit, never
// VERIFIED or success.
type CompileResult struct {
	Status            string `json:"status"`
	WorkflowID        string `json:"workflow_id,omitempty"`
	RecordingRetained bool   `json:"recording_retained"`
}

// AdmitResult is admit's result.
type AdmitResult struct {
	Status     string `json:"status"`
	WorkflowID string `json:"workflow_id,omitempty"`
}

// CoachSetResult is set_coach's result: the hint as it passed the filter.
type CoachSetResult struct {
	Status string `json:"status"`
	Hint   string `json:"hint"`
}

// CoachGetResult is get_coach's result; Hint is null when none is set.
type CoachGetResult struct {
	Hint *string `json:"hint"`
}

// ErrorResult is a tool-level refusal on the MCP wire:
// {"status":"error","reason":"<code>"} with a lowercase code.
type ErrorResult struct {
	Status string `json:"status"`
	Reason Code   `json:"reason"`
}

// NewErrorResult is the refusal result for code.
func NewErrorResult(code Code) ErrorResult { return ErrorResult{Status: "error", Reason: code} }

// ProjectClick is click's receipt; nodeID is the validated argument ("" for
// an x/y click).
func ProjectClick(_ map[string]any, nodeID string) ClickResult {
	return ClickResult{Status: "ok", NodeID: nodeID}
}

// ProjectCompile is compile's result. A workflow id is kept only when it
// matches [WorkflowIDRE].
func ProjectCompile(raw map[string]any) CompileResult {
	r := CompileResult{Status: "needs_human_admit", RecordingRetained: true}
	if id, _ := raw["workflow_id"].(string); WorkflowIDRE().MatchString(id) {
		r.WorkflowID = id
	}
	return r
}

// ProjectAdmit is admit's result.
func ProjectAdmit(raw map[string]any) AdmitResult {
	r := AdmitResult{Status: "admitted"}
	if id, _ := raw["workflow_id"].(string); WorkflowIDRE().MatchString(id) {
		r.WorkflowID = id
	}
	return r
}

// ProjectGetCoach is get_coach's result: the session's hint only when it
// passes the label filter.
func ProjectGetCoach(raw map[string]any) CoachGetResult {
	if h := SafeLabel(raw["hint"]); h != "" {
		return CoachGetResult{Hint: &h}
	}
	return CoachGetResult{}
}

// Project is the MCP result of tool built from a helper answer: the op's
// result with the request fields the helper echoes (click node_id; type
// param; press key; pause_for_input param and secret; continue_input the
// pause's param; set_coach hint; docs/authoring.md), or a refusal
// {"status":"error","reason":code}. Every value is validated again; ok is
// false when raw is not an answer of tool (a helper that misbehaved).
func Project(tool string, raw map[string]any) (result any, ok bool) {
	if raw["status"] == "error" {
		code, _ := raw["reason"].(string)
		c, known := ParseCode(code)
		if !known {
			return nil, false
		}
		return NewErrorResult(c), true
	}
	// id is raw[k] when it is absent (ok) or matches re (ok), else not ok.
	id := func(k string, re *regexp.Regexp) (string, bool) {
		v, present := raw[k]
		if !present {
			return "", true
		}
		s, isStr := v.(string)
		return s, isStr && re.MatchString(s)
	}
	param, pok := id("param", ParamRE())
	switch tool {
	case "observe":
		return ProjectObserve(raw), true
	case "start_record":
		return StatusResult{Status: "recording"}, true
	case "click":
		node, nok := id("node_id", NodeIDRE())
		return ClickResult{Status: "ok", NodeID: node}, nok
	case "halt":
		return StopResult{Status: "halted"}, true
	case "stop_record":
		return StopResult{Status: "stopped"}, true
	case "type":
		return TypeResult{Status: "ok", Recorded: true, Param: param}, pok
	case "press":
		k, present := raw["key"].(string)
		return PressResult{Status: "ok", Key: k}, present && ValidPressKey(k)
	case "pause_for_input":
		secret, present := raw["secret"]
		return PauseResult{Status: "paused", Param: param, Secret: secret == true}, pok && (!present || secret == true)
	case "continue_input":
		switch raw["recorded"] {
		case true:
			return RecordedResult{Recorded: true, Param: param}, pok && raw["reason"] == nil
		case false:
			r, _ := raw["reason"].(string)
			return RecordedResult{Recorded: false, Param: param, Reason: r}, pok && slices.Contains(ContinueReasons, r)
		}
		return nil, false
	case "compile":
		return ProjectCompile(raw), true
	case "admit":
		return ProjectAdmit(raw), true
	case "set_coach":
		h := SafeLabel(raw["hint"])
		return CoachSetResult{Status: "ok", Hint: h}, h != ""
	case "get_coach":
		return ProjectGetCoach(raw), true
	}
	return nil, false
}
