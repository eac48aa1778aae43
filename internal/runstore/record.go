package runstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/lazyre"
)

// Phases of a run record.
const (
	PhaseRunning  = "running"
	PhaseTerminal = "terminal"
)

var (
	workflowIDPattern = lazyre.New(`^(workflow_[0-9a-f]{24}(_[1-9][0-9]*)?|local_quickstart)$`)
	digestPattern     = lazyre.New(`^(sha256:)?[0-9a-f]{64}$`)
	messageKeyPattern = lazyre.New(`^[a-z][a-z0-9_]{0,63}$`)
	outcomePattern    = lazyre.New(`^[A-Z][A-Z_]{0,31}$`)
)

// statuses are the terminal statuses a frozen outcome may carry.
var statuses = map[flowrun.Status]bool{
	flowrun.StatusSuccess: true, flowrun.StatusHalt: true, flowrun.StatusRefused: true,
	flowrun.StatusTimeout: true, flowrun.StatusError: true, flowrun.StatusInterrupted: true,
}

// Record is a validated run record (mcp-surface.md §7.1). Every string in it
// matched its pattern; it holds no parameter values, URL, names or paths.
type Record struct {
	RunID      string
	WorkflowID string
	// BaseWorkflowID and BundleContentDigest are "" when the record has none.
	BaseWorkflowID      string
	BundleContentDigest string
	Phase               string
	StartedAt           time.Time
	// EndedAt is nil while the run is running.
	EndedAt *time.Time
	// ExitCode is Flow's exit code when it exited by itself (negative: the
	// signal that killed it), else nil.
	ExitCode *int
	// Outcome is the frozen public outcome; nil while running.
	Outcome *Outcome
}

// Outcome is a frozen public outcome.
type Outcome struct {
	Status           flowrun.Status
	ExecutionOutcome string // "" when none
	EffectVerified   bool
	MessageKey       string
	Summary          flowrun.Summary
}

// Duration is EndedAt − StartedAt, or false while running.
func (r *Record) Duration() (time.Duration, bool) {
	if r.EndedAt == nil {
		return 0, false
	}
	d := r.EndedAt.Sub(r.StartedAt)
	if d < 0 {
		d = 0
	}
	return d, true
}

// Status is the outcome's status, or "running".
func (r *Record) Status() string {
	if r.Outcome == nil {
		return PhaseRunning
	}
	return string(r.Outcome.Status)
}

// rawRecord is the on-disk shape serve writes (serve/state.go runRecord).
type rawRecord struct {
	SchemaVersion       int         `json:"schema_version"`
	RunID               string      `json:"run_id"`
	WorkflowID          string      `json:"workflow_id"`
	BaseWorkflowID      string      `json:"base_workflow_id"`
	BundleContentDigest string      `json:"bundle_content_digest"`
	StartedAt           string      `json:"started_at"`
	EndedAt             *string     `json:"ended_at"`
	Phase               string      `json:"phase"`
	ExitCode            *int        `json:"exit_code"`
	Outcome             *rawOutcome `json:"outcome"`
}

type rawOutcome struct {
	Status           string          `json:"status"`
	ExecutionOutcome string          `json:"execution_outcome"`
	EffectVerified   bool            `json:"effect_verified"`
	MessageKey       string          `json:"message_key"`
	Summary          flowrun.Summary `json:"summary"`
}

var errMalformed = errors.New("malformed")

// parseRecord validates a record's bytes against id. The error never
// quotes a value from the file.
func parseRecord(data []byte, id string) (*Record, error) {
	var raw rawRecord
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: not a JSON record", errMalformed)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data", errMalformed)
	}
	bad := func(field string) error { return fmt.Errorf("%w: invalid %s", errMalformed, field) }
	switch {
	case raw.SchemaVersion != 1:
		return nil, bad("schema_version")
	case raw.RunID != id:
		return nil, bad("run_id")
	case !workflowIDPattern().MatchString(raw.WorkflowID):
		return nil, bad("workflow_id")
	case raw.BaseWorkflowID != "" && !workflowIDPattern().MatchString(raw.BaseWorkflowID):
		return nil, bad("base_workflow_id")
	case raw.BundleContentDigest != "" && !digestPattern().MatchString(raw.BundleContentDigest):
		return nil, bad("bundle_content_digest")
	case raw.ExitCode != nil && (*raw.ExitCode < -255 || *raw.ExitCode > 255):
		return nil, bad("exit_code")
	}
	r := &Record{RunID: raw.RunID, WorkflowID: raw.WorkflowID, BaseWorkflowID: raw.BaseWorkflowID,
		BundleContentDigest: raw.BundleContentDigest, Phase: raw.Phase, ExitCode: raw.ExitCode}
	var err error
	if r.StartedAt, err = parseTime(raw.StartedAt); err != nil {
		return nil, bad("started_at")
	}
	switch raw.Phase {
	case PhaseRunning:
		if raw.Outcome != nil || raw.EndedAt != nil {
			return nil, bad("phase")
		}
	case PhaseTerminal:
		if raw.Outcome == nil || raw.EndedAt == nil {
			return nil, bad("phase")
		}
		t, err := parseTime(*raw.EndedAt)
		if err != nil {
			return nil, bad("ended_at")
		}
		r.EndedAt = &t
		o := raw.Outcome
		switch {
		case !statuses[flowrun.Status(o.Status)]:
			return nil, bad("outcome.status")
		case o.ExecutionOutcome != "" && !outcomePattern().MatchString(o.ExecutionOutcome):
			return nil, bad("outcome.execution_outcome")
		case !messageKeyPattern().MatchString(o.MessageKey):
			return nil, bad("outcome.message_key")
		case !validSummary(o.Summary):
			return nil, bad("outcome.summary")
		}
		r.Outcome = &Outcome{Status: flowrun.Status(o.Status), ExecutionOutcome: o.ExecutionOutcome,
			EffectVerified: o.EffectVerified, MessageKey: o.MessageKey, Summary: o.Summary}
	default:
		return nil, bad("phase")
	}
	return r, nil
}

func parseTime(s string) (time.Time, error) {
	if len(s) > 64 {
		return time.Time{}, errMalformed
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// validSummary holds the same ranges flowrun derives: non-negative counts
// and a non-negative finite total_ms.
func validSummary(s flowrun.Summary) bool {
	for _, p := range []*int{s.StepsTotal, s.StepsOK, s.StepsSkipped} {
		if p != nil && *p < 0 {
			return false
		}
	}
	for _, p := range []*int64{s.HealCount, s.ModelCalls} {
		if p != nil && *p < 0 {
			return false
		}
	}
	if s.TotalMS != nil && (*s.TotalMS < 0 || math.IsInf(*s.TotalMS, 0) || math.IsNaN(*s.TotalMS)) {
		return false
	}
	return true
}
