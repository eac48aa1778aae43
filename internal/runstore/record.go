package runstore

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/workflowid"
)

// Phases of a run record.
const (
	PhaseRunning  = "running"
	PhaseTerminal = "terminal"
)

// SchemaVersion is the run record format this build writes. Version 2
// added the outcome's transaction_outcome and failed_checks; a version 1
// record is still read, and its missing fields mean unknown.
const SchemaVersion = 2

// maxFailedChecks bounds an outcome's failed_checks.
const maxFailedChecks = 32

var (
	digestPattern     = lazyre.New(`^(sha256:)?[0-9a-f]{64}$`)
	checkPattern      = lazyre.New(`^[a-z][a-z0-9_]{0,47}$`)
	messageKeyPattern = lazyre.New(`^[a-z][a-z0-9_]{0,63}$`)
	outcomePattern    = lazyre.New(`^[A-Z][A-Z_]{0,31}$`)
)

// statuses are the terminal statuses a frozen outcome may carry.
var statuses = map[flowrun.Status]bool{
	flowrun.StatusSuccess: true, flowrun.StatusHalt: true, flowrun.StatusRefused: true,
	flowrun.StatusTimeout: true, flowrun.StatusError: true, flowrun.StatusInterrupted: true,
}

// File is a run record as stored, <state>/runs/<run_id>.json: serve
// writes and reads it through a [State], `openadapt-agent runs` reads it
// through a [Store]. It holds no
// parameter values, URL, names or paths. The field order is the file's.
type File struct {
	SchemaVersion       int    `json:"schema_version"`
	RunID               string `json:"run_id"`
	WorkflowID          string `json:"workflow_id"`
	BaseWorkflowID      string `json:"base_workflow_id"`
	BundleContentDigest string `json:"bundle_content_digest"`
	// Owner is the serve instance that started the run; PID, PGID and
	// LeaderStart identify Flow's process group once it has started (0
	// before).
	Owner       string   `json:"owner"`
	PID         int      `json:"pid"`
	PGID        int      `json:"pgid"`
	LeaderStart uint64   `json:"leader_start"`
	StartedAt   string   `json:"started_at"`
	EndedAt     *string  `json:"ended_at"`
	Phase       string   `json:"phase"`
	ExitCode    *int     `json:"exit_code"`
	Outcome     *Outcome `json:"outcome"`
}

// MessageKey names the fixed copy of a frozen outcome (docs/runs.md
// "Messages"); serve holds the copy. It is stored in the run record, so its
// values are part of the record format.
type MessageKey string

// Outcome is a frozen public outcome: the one type for it, in memory and on
// disk. Refused, timed-out and interrupted runs carry no execution outcome,
// effect, transaction outcome or summary; only a refused run carries failed
// checks.
type Outcome struct {
	Status           flowrun.Status  `json:"status"`
	ExecutionOutcome string          `json:"execution_outcome,omitempty"` // "" when none
	EffectVerified   bool            `json:"effect_verified,omitempty"`
	MessageKey       MessageKey      `json:"message_key"`
	Summary          flowrun.Summary `json:"summary"`
	// TransactionOutcome is Flow's transaction outcome of the report (one of
	// flowrun.TransactionOutcomes), "" when unknown: none in the report, or
	// a version 1 record.
	TransactionOutcome string `json:"transaction_outcome,omitempty"`
	// FailedChecks are a governed refusal's closed check codes (status
	// refused only); empty when unknown (a version 1 record). A code this
	// build does not know (a newer writer's) is kept as read: its
	// projection shows it as "other".
	FailedChecks []flowrun.FailedCheck `json:"failed_checks,omitempty"`
}

// Freeze makes f terminal with o, ended at now. It is the one place an
// outcome is frozen: serve's run path, its shutdown and its restart
// reconciliation all call it. A terminal record is never changed, so an
// interrupted run is never upgraded; Freeze then reports false.
func (f *File) Freeze(o Outcome, now time.Time) bool {
	if f.Phase == PhaseTerminal {
		return false
	}
	ended := now.UTC().Format(time.RFC3339Nano)
	f.Phase, f.EndedAt, f.Outcome = PhaseTerminal, &ended, &o
	return true
}

// ValidOwner reports whether id is a serve instance id: 16 lowercase hex
// digits (24 from older builds). Only such an id is ever joined into a path
// under the state folder.
func ValidOwner(id string) bool {
	if len(id) != 16 && len(id) != 24 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Record is a validated run record with its times parsed. Every string in
// it matched its pattern.
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

var errMalformed = errors.New("malformed")

// ParseFile decodes and validates a run record's bytes; id is the run id its
// file name gave, which the record must repeat. The error never quotes a
// value from the file.
func ParseFile(data []byte, id string) (*File, error) {
	f, _, err := parse(data, id)
	return f, err
}

// parseRecord is [ParseFile] plus the parsed times.
func parseRecord(data []byte, id string) (*Record, error) {
	f, r, err := parse(data, id)
	if err != nil {
		return nil, err
	}
	r.RunID, r.WorkflowID, r.BaseWorkflowID, r.BundleContentDigest = f.RunID, f.WorkflowID, f.BaseWorkflowID, f.BundleContentDigest
	r.Phase, r.ExitCode, r.Outcome = f.Phase, f.ExitCode, f.Outcome
	return r, nil
}

func parse(data []byte, id string) (*File, *Record, error) {
	var f File
	// A closed format: every key names a field exactly (no lookalike that
	// differs only in case, nothing unknown).
	if err := pyjson.Unmarshal(data, pyjson.Options{Closed: true}, &f); err != nil {
		return nil, nil, fmt.Errorf("%w: not a JSON record", errMalformed)
	}
	bad := func(field string) (*File, *Record, error) {
		return nil, nil, fmt.Errorf("%w: invalid %s", errMalformed, field)
	}
	switch {
	case f.SchemaVersion != 1 && f.SchemaVersion != SchemaVersion:
		return bad("schema_version")
	case f.RunID != id || !flowrun.ValidRunID(f.RunID):
		return bad("run_id")
	case !workflowid.Valid(f.WorkflowID):
		return bad("workflow_id")
	case f.BaseWorkflowID != "" && !workflowid.Valid(f.BaseWorkflowID):
		return bad("base_workflow_id")
	case f.BundleContentDigest != "" && !digestPattern().MatchString(f.BundleContentDigest):
		return bad("bundle_content_digest")
	case f.Owner != "" && !ValidOwner(f.Owner):
		return bad("owner")
	case f.PID < 0 || f.PGID < 0:
		return bad("pid")
	case f.ExitCode != nil && (*f.ExitCode < -255 || *f.ExitCode > 255):
		return bad("exit_code")
	}
	r := new(Record)
	var err error
	if r.StartedAt, err = parseTime(f.StartedAt); err != nil {
		return bad("started_at")
	}
	switch f.Phase {
	case PhaseRunning:
		if f.Outcome != nil || f.EndedAt != nil {
			return bad("phase")
		}
	case PhaseTerminal:
		if f.Outcome == nil || f.EndedAt == nil {
			return bad("phase")
		}
		t, err := parseTime(*f.EndedAt)
		if err != nil {
			return bad("ended_at")
		}
		r.EndedAt = &t
		o := f.Outcome
		switch {
		case !statuses[o.Status]:
			return bad("outcome.status")
		case o.ExecutionOutcome != "" && !outcomePattern().MatchString(o.ExecutionOutcome):
			return bad("outcome.execution_outcome")
		case !messageKeyPattern().MatchString(string(o.MessageKey)):
			return bad("outcome.message_key")
		case !validSummary(o.Summary):
			return bad("outcome.summary")
		case o.TransactionOutcome != "" && !slices.Contains(flowrun.TransactionOutcomes, o.TransactionOutcome):
			return bad("outcome.transaction_outcome")
		case !validChecks(o.Status, o.FailedChecks):
			return bad("outcome.failed_checks")
		}
	default:
		return bad("phase")
	}
	return &f, r, nil
}

// validChecks: failed checks only on a refusal, each a code-shaped word,
// at most maxFailedChecks.
func validChecks(st flowrun.Status, cs []flowrun.FailedCheck) bool {
	if len(cs) > 0 && st != flowrun.StatusRefused || len(cs) > maxFailedChecks {
		return false
	}
	for _, c := range cs {
		if !checkPattern().MatchString(string(c)) {
			return false
		}
	}
	return true
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
