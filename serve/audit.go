package serve

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/workflowid"
)

// auditRec is the typed audit record (docs/mcp.md "Audit log"). The writer accepts only this
// type; every string field is an enum, a registered tool name, or an id that
// passed its pattern and belongs to this server. Handlers set ids only after
// resolving them, so an unknown caller-supplied id is never recorded.
type auditRec struct {
	Tool     *string
	Status   *string
	Code     *string
	Replayed *bool
	auditIDs
}

// auditIDs are the resolved ids of a call or a run.
type auditIDs struct {
	WorkflowID  *string `json:"workflow_id"`
	RunID       *string `json:"run_id"`
	AttentionID *string `json:"attention_id"`
}

type auditLine struct {
	V          int     `json:"v"`
	TS         string  `json:"ts"`
	Event      string  `json:"event"`
	Session    *string `json:"session"`
	Tool       *string `json:"tool"`
	Status     *string `json:"status"`
	Code       *string `json:"code"`
	IsError    bool    `json:"is_error"`
	DurationMS int64   `json:"duration_ms"`
	Replayed   *bool   `json:"replayed"`
	auditIDs
	DecisionID *string `json:"decision_id"`
	Protocol   *string `json:"protocol"`
}

// auditLog is the audit log: one JSON line per tools/call and per run
// end, or nothing when it is off (f nil).
type auditLog struct {
	mu     sync.Mutex
	f      *os.File
	warned bool
	warn   func()

	sessMu   sync.Mutex
	sessions map[*mcp.ServerSession]string
}

// newAuditLog writes to f (nil: off); warn is called once, at the first
// failed write.
func newAuditLog(f *os.File, warn func()) *auditLog {
	return &auditLog{f: f, warn: warn}
}

var knownProtocols = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

var statusEnum = []string{"success", "halt", "refused", "timeout", "error", "running", "interrupted", "ok"}

func (a *auditLog) write(l auditLine) {
	if a == nil || a.f == nil {
		return
	}
	l.V = 1
	l.TS = time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	if l.Status != nil && !slices.Contains(statusEnum, *l.Status) {
		l.Status = nil
	}
	if l.Code != nil {
		if _, ok := copyFor[Code(*l.Code)]; !ok {
			l.Code = nil
		}
	}
	if l.Protocol != nil && !slices.Contains(knownProtocols, *l.Protocol) {
		l.Protocol = nil
	}
	if l.WorkflowID != nil && !workflowid.Valid(*l.WorkflowID) {
		l.WorkflowID = nil
	}
	if l.RunID != nil && !flowrun.ValidRunID(*l.RunID) {
		l.RunID = nil
	}
	if l.AttentionID != nil && !attention.ValidID(*l.AttentionID) {
		l.AttentionID = nil
	}
	data, err := json.Marshal(l)
	if err != nil {
		return
	}
	data = append(data, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.f.Write(data); err != nil && !a.warned {
		a.warned = true
		if a.warn != nil {
			a.warn()
		}
	}
}

func (a *auditLog) close() {
	if a == nil || a.f == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.f.Close()
	a.f = nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// sessionID returns the random per-session audit id.
func (a *auditLog) sessionID(ss *mcp.ServerSession) *string {
	if ss == nil {
		return nil
	}
	a.sessMu.Lock()
	defer a.sessMu.Unlock()
	if a.sessions == nil {
		a.sessions = map[*mcp.ServerSession]string{}
	}
	id, ok := a.sessions[ss]
	if !ok {
		id = randomHex(8)
		a.sessions[ss] = id
	}
	return &id
}

// call writes the tool_call line of one tools/call.
func (a *auditLog) call(ss *mcp.ServerSession, rec *auditRec, start time.Time, isErr bool) {
	var proto *string
	if ss != nil {
		if ip := ss.InitializeParams(); ip != nil {
			p := ip.ProtocolVersion
			proto = &p
		}
	}
	tool := rec.Tool
	if tool == nil {
		u := "unknown"
		tool = &u
	}
	status := rec.Status
	if status == nil && rec.Code == nil && !isErr {
		ok := "ok"
		status = &ok
	}
	a.write(auditLine{
		Event: "tool_call", Session: a.sessionID(ss), Tool: tool, Status: status, Code: rec.Code,
		IsError: isErr, DurationMS: time.Since(start).Milliseconds(), Replayed: rec.Replayed,
		auditIDs: rec.auditIDs, Protocol: proto,
	})
}

// runEnd writes the run_end line of a run that became terminal.
func (a *auditLog) runEnd(workflowID, runID, status string, dur time.Duration) {
	a.write(auditLine{
		Event: "run_end", Status: &status, DurationMS: dur.Milliseconds(),
		auditIDs: auditIDs{WorkflowID: &workflowID, RunID: &runID},
	})
}
