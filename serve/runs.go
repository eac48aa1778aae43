package serve

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flowrun"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// liveRun is a run this instance owns. It belongs to the run manager, not to
// the request that started it (§7.4).
type liveRun struct {
	id       string
	wf       *workflow
	start    time.Time
	done     chan struct{}
	doneOnce sync.Once
	cancel   context.CancelFunc
	mu       sync.Mutex
	rec      *runRecord
	tails    [2]*string // stdout, stderr (protected export only)
	exit     *int
	halt     any
	repPath  *string
	detail   string
}

type runManager struct {
	s        *Server
	mu       sync.Mutex
	live     map[string]*liveRun
	wg       sync.WaitGroup
	stopWait chan struct{} // closed at input end: every wait answers at once
	stopOnce sync.Once
	closing  bool
}

func newRunManager(s *Server) *runManager {
	return &runManager{s: s, live: map[string]*liveRun{}, stopWait: make(chan struct{})}
}

// endWaits ends every pending run-tool and get_run_report wait (§12).
func (m *runManager) endWaits() { m.stopOnce.Do(func() { close(m.stopWait) }) }

// runArgs are validated run arguments.
type runArgs struct {
	wf     *workflow
	params map[string]string
	url    *string // override, nil when absent
	idem   string
}

// handleRun is the run call pipeline of §7.2, steps 2–9.
func (s *Server) handleRun(ctx context.Context, e *toolEntry, req *mcp.CallToolRequest, args map[string]any, rec *auditRec) (any, *failure) {
	ra, f := s.validateRunArgs(e, args)
	if f != nil {
		return nil, f
	}
	rec.WorkflowID = &ra.wf.id
	// 3. idempotency lookup
	var idemPath string
	var digest string
	if ra.idem != "" {
		digest = s.idem.digest(ra.wf.baseID, ra.params, ra.url)
		b, err := s.idem.lookup(ra.idem)
		if err != nil {
			return nil, fail(CodeInternalError)
		}
		if b != nil {
			if b.Digest != digest {
				return nil, fail(CodeIdempotencyConflict)
			}
			return s.replay(ctx, req, b.RunID, rec)
		}
		idemPath = ra.idem
	}
	// 4. a fresh full verification of this bundle, then the admission gate
	bundleSHA, verified := s.verifyForRun(ra.wf)
	if s.gateOn() {
		if !verified {
			return nil, failAdmission("unverifiable")
		}
		if reason, ok := s.admit(bundleSHA); !ok {
			return nil, failAdmission(reason)
		}
	} else if !verified {
		return nil, fail(CodeWorkflowUnavailable)
	}
	// 5. resolve Flow
	flow, err := s.resolveFlow()
	if err != nil {
		return nil, fail(CodeFlowNotFound)
	}
	// 6. reserve
	runID := "run-" + randomHex(12)
	if idemPath != "" {
		err := s.idem.publish(ra.idem, binding{Digest: digest, RunID: runID, CreatedAt: time.Now().UTC().Format(time.RFC3339Nano)})
		if errors.Is(err, fs.ErrExist) {
			// A concurrent identical call won the race: this one replays.
			b, lerr := s.idem.lookup(ra.idem)
			if lerr != nil || b == nil {
				return nil, fail(CodeInternalError)
			}
			if b.Digest != digest {
				return nil, fail(CodeIdempotencyConflict)
			}
			return s.replay(ctx, req, b.RunID, rec)
		} else if err != nil {
			return nil, fail(CodeInternalError)
		}
	}
	rec.RunID = &runID
	lr, startErr := s.runs.start(runID, ra, flow)
	if startErr != nil {
		// The record could not be written, so nothing was spawned; a key
		// bound above stays bound forever (§7.2).
		return nil, fail(CodeInternalError)
	}
	return s.waitAndProject(ctx, req, lr.id, false, time.Duration(s.opts.RunWait)*time.Second, rec)
}

// validateRunArgs applies §5.6's argument rules (and §5.8 for run_workflow).
func (s *Server) validateRunArgs(e *toolEntry, args map[string]any) (*runArgs, *failure) {
	// url is checked before anything else, whatever its value.
	if _, has := args["url"]; has && !s.opts.AllowURLOverride {
		return nil, fail(CodeURLOverrideRefused)
	}
	ra := &runArgs{params: map[string]string{}}
	var flat map[string]any
	switch e.kind {
	case kindRunPerWorkflow:
		ra.wf = e.wf
		flat = map[string]any{}
		for k, v := range args {
			if k == "url" || k == "idempotency_key" {
				continue
			}
			flat[k] = v
		}
	case kindRunCatalog:
		for k := range args {
			switch k {
			case "workflow_id", "params", "url", "idempotency_key":
			default:
				return nil, fail(CodeInvalidArguments)
			}
		}
		id, ok := args["workflow_id"].(string)
		if !ok {
			return nil, fail(CodeInvalidArguments)
		}
		p, ok := args["params"].(map[string]any)
		if !ok {
			return nil, fail(CodeInvalidArguments)
		}
		flat = p
		w := s.cat.lookup(id)
		if w == nil {
			return nil, fail(CodeUnknownWorkflow)
		}
		if !w.available {
			return nil, fail(CodeWorkflowUnavailable)
		}
		ra.wf = w
	}
	declared := map[string]bool{}
	for _, p := range ra.wf.params {
		declared[p] = true
	}
	for k, v := range flat {
		str, ok := v.(string)
		if !ok || !declared[k] {
			return nil, fail(CodeInvalidArguments)
		}
		ra.params[k] = str
	}
	if !s.opts.AllowSyntheticRecordedDefaults {
		for _, p := range ra.wf.params {
			if _, ok := ra.params[p]; !ok {
				return nil, fail(CodeInvalidArguments)
			}
		}
	}
	if v, has := args["url"]; has {
		u, ok := v.(string)
		if !ok {
			return nil, fail(CodeInvalidArguments)
		}
		if u != "" {
			if !validOverrideURL(u) {
				return nil, fail(CodeInvalidArguments)
			}
			ra.url = &u
		}
	}
	if v, has := args["idempotency_key"]; has {
		k, ok := v.(string)
		if !ok || !idemKeyRE.MatchString(k) {
			return nil, fail(CodeInvalidArguments)
		}
		ra.idem = k
	}
	return ra, nil
}

func validOverrideURL(s string) bool {
	if len(s) > 2048 {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" {
		return false
	}
	return true
}

// start reserves and spawns a run (§7.2 steps 6–8). It returns an error only
// when the running record could not be written (nothing spawned).
func (m *runManager) start(runID string, ra *runArgs, flow []string) (*liveRun, error) {
	s := m.s
	now := time.Now()
	r := &runRecord{
		SchemaVersion: 1, RunID: runID, WorkflowID: ra.wf.id, BaseWorkflowID: ra.wf.baseID,
		BundleContentDigest: ra.wf.contentDigest, Owner: s.instance, StartedAt: now.UTC().Format(time.RFC3339Nano),
		Phase: phaseRunning,
	}
	if err := s.state.writeRecord(r); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	lr := &liveRun{id: runID, wf: ra.wf, start: now, done: make(chan struct{}), rec: r, cancel: cancel}
	m.mu.Lock()
	if m.closing {
		m.mu.Unlock()
		cancel()
		m.finish(lr, terminal{status: "interrupted", messageKey: "interrupted"})
		return lr, nil
	}
	m.live[runID] = lr
	m.wg.Add(1)
	m.mu.Unlock()

	req := flowrun.Request{
		Flow:      flow,
		BundleDir: ra.wf.dir,
		RunsDir:   s.prep.runsDir,
		RunID:     runID,
		ParamsDir: filepath.Join(s.state.dir, "tmp"),
		Params:    ra.params,
		Config:    s.opts.Config,
		Policy:    s.opts.Policy,
		ExtraArgs: s.opts.ExtraRunArgs,
		Env:       s.childEnv,
		Timeout:   time.Duration(s.opts.Timeout * float64(time.Second)),
		Started: func(p flowrun.Process) {
			lr.mu.Lock()
			if lr.rec.Phase == phaseRunning {
				lr.rec.PID, lr.rec.PGID, lr.rec.LeaderStart = p.PID, p.PGID, p.StartTime
				c := *lr.rec
				lr.mu.Unlock()
				_ = s.state.writeRecord(&c)
				return
			}
			lr.mu.Unlock()
		},
	}
	if ra.url != nil {
		req.URL = *ra.url
	} else {
		req.URL = s.opts.URL
	}
	go func() {
		defer m.wg.Done()
		defer cancel()
		res := s.runner.Run(ctx, req)
		t := terminalFrom(res)
		lr.mu.Lock()
		lr.exit = res.ExitCode
		if s.opts.AllowProtectedExport {
			out, errs := res.StdoutTail, res.StderrTail
			lr.tails = [2]*string{&out, &errs}
		}
		lr.mu.Unlock()
		m.finish(lr, t)
	}()
	return lr, nil
}

// terminal is a classified end state.
type terminal struct {
	status     string
	outcome    string
	effect     bool
	messageKey string
	summary    flowrun.Summary
	halt       any
	reportPath *string
	detail     string
}

// terminalFrom maps a flowrun result to the frozen outcome and its message
// key (§8 "Messages").
func terminalFrom(res flowrun.Result) terminal {
	t := terminal{status: string(res.Status), outcome: res.Outcome, effect: res.EffectVerified, summary: res.Summary}
	switch res.Status {
	case flowrun.StatusSuccess:
		t.messageKey = "success"
	case flowrun.StatusHalt:
		switch {
		case res.Reason == flowrun.ReasonNoReport:
			t.messageKey = "halt_no_report"
		case res.Outcome == flowrun.OutcomeHalted:
			t.messageKey = "halt_halted"
		case res.Outcome == flowrun.OutcomeCompletedUnverified:
			t.messageKey = "halt_completed_unverified"
		case res.Outcome == flowrun.OutcomeRolledBack:
			t.messageKey = "halt_rolled_back"
		default:
			t.messageKey = "halt"
		}
	case flowrun.StatusRefused:
		t.messageKey = "refused"
	case flowrun.StatusTimeout:
		t.messageKey = "timeout"
	case flowrun.StatusInterrupted:
		t.messageKey = "interrupted"
	default:
		t.status = string(flowrun.StatusError)
		if res.Reason == flowrun.ReasonUnsignedProductionSuccess {
			t.messageKey = "unsigned_production_success"
		} else {
			t.messageKey = "error"
			t.effect = false
		}
	}
	if t.status == "timeout" || t.status == "interrupted" || t.status == "refused" {
		t.outcome, t.effect, t.summary = "", false, flowrun.Summary{}
	}
	if res.Halt != nil {
		t.halt = res.Halt
	}
	if res.ReportPath != "" {
		p := res.ReportPath
		t.reportPath = &p
	}
	t.detail = "Flow finished with status " + t.status + "."
	return t
}

// finish freezes the outcome: the record becomes terminal, unless shutdown
// already froze it as interrupted, which is never upgraded (§7.4).
func (m *runManager) finish(lr *liveRun, t terminal) {
	s := m.s
	lr.mu.Lock()
	if lr.rec.Phase == phaseTerminal {
		lr.mu.Unlock()
		m.drop(lr)
		return
	}
	ended := time.Now().UTC().Format(time.RFC3339Nano)
	lr.rec.Phase = phaseTerminal
	lr.rec.EndedAt = &ended
	lr.rec.ExitCode = lr.exit
	lr.rec.Outcome = &frozenOutcome{Status: t.status, ExecutionOutcome: t.outcome, EffectVerified: t.effect, MessageKey: t.messageKey, Summary: t.summary}
	lr.halt, lr.repPath, lr.detail = t.halt, t.reportPath, t.detail
	rec := *lr.rec
	lr.mu.Unlock()
	if err := s.state.writeRecord(&rec); err != nil {
		s.log.Warn("a run record could not be written")
	}
	s.auditRunEnd(lr.wf.id, lr.id, t.status, time.Since(lr.start))
	m.drop(lr)
}

func (m *runManager) drop(lr *liveRun) {
	if m.s.opts.AllowProtectedExport {
		// Tails of ended runs stay in memory for protected export, bounded
		// to the most recent maxFinished runs (older ones report null).
		m.s.finishedMu.Lock()
		if _, ok := m.s.finished[lr.id]; !ok {
			m.s.finishedOrder = append(m.s.finishedOrder, lr.id)
		}
		m.s.finished[lr.id] = lr
		for len(m.s.finishedOrder) > maxFinished {
			delete(m.s.finished, m.s.finishedOrder[0])
			m.s.finishedOrder = m.s.finishedOrder[1:]
		}
		m.s.finishedMu.Unlock()
	}
	m.mu.Lock()
	delete(m.live, lr.id)
	m.mu.Unlock()
	lr.doneOnce.Do(func() { close(lr.done) })
}

func (m *runManager) get(runID string) *liveRun {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live[runID]
}

// shutdown is §1.7 steps 2–4: every owned running record becomes
// interrupted before its group is signalled; then the groups are terminated
// (SIGTERM, SIGKILL after 2 s) and the parameter files deleted.
func (m *runManager) shutdown() {
	m.endWaits()
	m.mu.Lock()
	m.closing = true
	runs := make([]*liveRun, 0, len(m.live))
	for _, lr := range m.live {
		runs = append(runs, lr)
	}
	m.mu.Unlock()
	for _, lr := range runs {
		lr.mu.Lock()
		if lr.rec.Phase == phaseTerminal {
			lr.mu.Unlock()
			continue
		}
		ended := time.Now().UTC().Format(time.RFC3339Nano)
		lr.rec.Phase = phaseTerminal
		lr.rec.EndedAt = &ended
		lr.rec.Outcome = &frozenOutcome{Status: "interrupted", MessageKey: "interrupted"}
		rec := *lr.rec
		lr.mu.Unlock()
		if err := m.s.state.writeRecord(&rec); err != nil {
			m.s.log.Warn("a run record could not be written")
		}
		m.s.auditRunEnd(lr.wf.id, lr.id, "interrupted", time.Since(lr.start))
	}
	for _, lr := range runs {
		lr.cancel()
	}
	m.wg.Wait()
	for _, lr := range runs {
		_ = flowrun.RemoveParamsFile(filepath.Join(m.s.state.dir, "tmp", flowrun.ParamsFileName(lr.id)))
	}
}

// replay answers an idempotent retry: R rebuilt from the run record, with
// replayed true. A running run is waited for like a fresh call (§7.3).
func (s *Server) replay(ctx context.Context, req *mcp.CallToolRequest, runID string, rec *auditRec) (any, *failure) {
	t := true
	rec.Replayed = &t
	rec.RunID = &runID
	return s.waitAndProject(ctx, req, runID, true, time.Duration(s.opts.RunWait)*time.Second, rec)
}

// waitAndProject waits up to d for the run to be terminal, sending progress
// when the request carries a token, then builds R.
func (s *Server) waitAndProject(ctx context.Context, req *mcp.CallToolRequest, runID string, replayed bool, d time.Duration, rec *auditRec) (any, *failure) {
	r := s.waitRun(ctx, req, runID, d)
	if r == nil {
		return nil, fail(CodeInternalError)
	}
	out := s.projectRun(r, replayed, true)
	rec.Status = &out.Status
	return out, nil
}

// waitRun waits for a run to become terminal, for at most d, and returns its
// current record (nil when it has none).
func (s *Server) waitRun(ctx context.Context, req *mcp.CallToolRequest, runID string, d time.Duration) *runRecord {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	var token any
	if req != nil && req.Params != nil {
		token = req.Params.GetProgressToken()
	}
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	poll := time.NewTicker(250 * time.Millisecond)
	defer poll.Stop()
	var lastProgress float64 = -1
	missingSince := time.Now()
	for {
		lr := s.runs.get(runID)
		var done <-chan struct{}
		if lr != nil {
			done = lr.done
		} else {
			r := s.state.readRecord(runID)
			switch {
			case r == nil && time.Since(missingSince) > recordGrace:
				return nil
			case r == nil:
				// A concurrent identical call published the binding but has
				// not written the record yet: poll briefly.
			case r.Phase == phaseTerminal:
				return r
			}
		}
		select {
		case <-done:
			return s.state.readRecordOrLive(s, runID)
		case <-poll.C:
			continue
		case <-tick.C:
			if token != nil && req.Session != nil {
				started := s.runStart(runID)
				p := float64(int(time.Since(started).Seconds()))
				if p <= lastProgress {
					p = lastProgress + 1
				}
				lastProgress = p
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: p, Total: s.opts.Timeout, Message: msgProgress,
				})
			}
		case <-deadline.C:
			return s.state.readRecordOrLive(s, runID)
		case <-ctx.Done():
			return s.state.readRecordOrLive(s, runID)
		case <-s.runs.stopWait:
			return s.state.readRecordOrLive(s, runID)
		}
	}
}

// maxFinished bounds the ended runs whose protected tails are kept.
const maxFinished = 256

// recordGrace bounds how long a replay waits for the record of a run whose
// binding was just published by a concurrent call.
const recordGrace = 2 * time.Second

// progressEvery is the progress notification period (§7.4).
var progressEvery = 5 * time.Second

func (s *Server) runStart(runID string) time.Time {
	if lr := s.runs.get(runID); lr != nil {
		return lr.start
	}
	if r := s.state.readRecord(runID); r != nil {
		if t, err := time.Parse(time.RFC3339Nano, r.StartedAt); err == nil {
			return t
		}
	}
	return time.Now()
}

// readRecordOrLive returns the live copy of an owned run's record, else the
// persisted one.
func (d stateDir) readRecordOrLive(s *Server, runID string) *runRecord {
	if lr := s.runs.get(runID); lr != nil {
		lr.mu.Lock()
		defer lr.mu.Unlock()
		c := *lr.rec
		return &c
	}
	return d.readRecord(runID)
}

// message returns the fixed copy for a frozen message key.
func message(key string) string {
	switch key {
	case "success":
		return msgSuccess
	case "halt_halted":
		return msgHaltHalted
	case "halt_completed_unverified":
		return msgHaltCompletedUnv
	case "halt_rolled_back":
		return msgHaltRolledBack
	case "halt_no_report":
		return msgHaltNoReport
	case "halt":
		return msgHaltOther
	case "refused":
		return msgRefused
	case "timeout":
		return msgTimeout
	case "unsigned_production_success":
		return msgUnsignedProd
	case "interrupted":
		return msgInterrupted
	default:
		return msgErrorOther
	}
}

// projectRun builds R from a record.
func (s *Server) projectRun(r *runRecord, replayed, withAttention bool) runOutcomeP {
	out := runOutcomeP{
		SchemaVersion: 1, WorkflowID: r.WorkflowID, RunID: r.RunID, Sealed: false, RequiresSeal: true, Replayed: replayed,
	}
	if r.Phase != phaseTerminal || r.Outcome == nil {
		out.Status = "running"
		out.Message = msgRunning
	} else {
		o := r.Outcome
		out.Status = o.Status
		out.Success = o.Status == "success"
		out.Message = message(o.MessageKey)
		out.Summary = o.Summary
		out.ExecutionOutcome = o.ExecutionOutcome
		if o.EffectVerified {
			out.EffectVerified = boolPtr(true)
		}
		if o.Status == "halt" && withAttention {
			out.NeedsAttention = &attentionSlot{item: s.attentionForRun(r.RunID)}
		}
	}
	if s.opts.AllowProtectedExport {
		out.Protected = s.protectedRun(r)
	}
	return out
}

func (s *Server) protectedRun(r *runRecord) *runProtectedP {
	p := &runProtectedP{RunDir: filepath.Join(s.prep.runsDir, r.RunID), ExitCode: r.ExitCode}
	if w := s.cat.byID[r.WorkflowID]; w != nil {
		p.Workflow = w.name
	}
	if lr := s.runs.get(r.RunID); lr != nil {
		p.Detail = "The run is still in progress."
		return p
	}
	p.Detail = "Outcome " + strings.ReplaceAll(statusOf(r), "_", " ") + "."
	s.finishedMu.Lock()
	fin := s.finished[r.RunID]
	s.finishedMu.Unlock()
	if fin != nil {
		p.StdoutTail, p.StderrTail = fin.tails[0], fin.tails[1]
		p.Halt = fin.halt
		p.ReportPath = fin.repPath
		if fin.detail != "" {
			p.Detail = fin.detail
		}
	}
	return p
}

func statusOf(r *runRecord) string {
	if r.Outcome == nil {
		return "running"
	}
	return r.Outcome.Status
}
