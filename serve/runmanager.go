package serve

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// The run manager (docs/runs.md "Long runs and interruption"): the runs
// this instance owns, their waits, and shutdown. A run belongs to the
// manager, not to the request that started it: a cancelled wait never
// stops the run.

// maxFinished bounds the ended runs whose protected tails are kept.
const maxFinished = 256

// recordGrace bounds how long a replay waits for the record of a run whose
// binding was just published by a concurrent call.
const recordGrace = 2 * time.Second

// progressEvery is the progress notification period;
// testOnlyRunProgressEvery, when positive, replaces it.
const progressEvery = 5 * time.Second

var testOnlyRunProgressEvery time.Duration

// liveRun is a run this instance owns.
type liveRun struct {
	id       string
	wf       *workflow
	start    time.Time
	done     chan struct{}
	doneOnce sync.Once
	// ctx is the run's own context: shutdown cancels it, a request never.
	ctx    context.Context
	cancel context.CancelFunc

	mu  sync.Mutex
	rec *runstore.File
	// ended is Flow's result once the child has ended: protected detail
	// (exit code, output tails, halt, report path) for protected export.
	ended *flowrun.Result
	// froze is true when ended froze the record (not shutdown before it).
	froze bool
}

type runManager struct {
	state  *runstore.State
	runner flowrun.Runner
	audit  *auditLog
	log    *slog.Logger
	owner  string // this server's instance id, the owner of its records
	// keepEnded keeps ended runs' protected detail in memory (protected
	// export); timeout is --timeout, the progress notifications' total.
	keepEnded bool
	timeout   float64

	mu       sync.Mutex
	live     map[string]*liveRun
	wg       sync.WaitGroup
	stopWait chan struct{} // closed at input end: every wait answers at once
	stopOnce sync.Once
	closing  bool

	finishedMu    sync.Mutex
	finished      map[string]*liveRun // export mode: tails of ended runs
	finishedOrder []string
}

func newRunManager(st *runstore.State, audit *auditLog, log *slog.Logger, owner string, keepEnded bool, timeout float64) *runManager {
	return &runManager{state: st, runner: flowrun.CLIRunner{}, audit: audit, log: log, owner: owner, keepEnded: keepEnded, timeout: timeout,
		live: map[string]*liveRun{}, stopWait: make(chan struct{}), finished: map[string]*liveRun{}}
}

// endWaits ends every pending run-tool and get_run_report wait: the end of
// input and a signal call it.
func (m *runManager) endWaits() { m.stopOnce.Do(func() { close(m.stopWait) }) }

// reserve makes runID a live run of this server before anything about it
// is published: an identical call that finds its idempotency binding then
// waits on it in memory. The run is started with [runManager.start], or
// given up with [runManager.abandon].
func (m *runManager) reserve(runID string, wf *workflow) *liveRun {
	now := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	lr := &liveRun{id: runID, wf: wf, start: now, done: make(chan struct{}), ctx: ctx, cancel: cancel, rec: &runstore.File{
		SchemaVersion: runstore.SchemaVersion, RunID: runID, WorkflowID: wf.id, BaseWorkflowID: wf.baseID,
		BundleContentDigest: wf.contentDigest, Owner: m.owner, StartedAt: now.UTC().Format(time.RFC3339Nano),
		Phase: runstore.PhaseRunning,
	}}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.wg.Add(1)
	if !m.closing {
		m.live[runID] = lr
	}
	return lr
}

// abandon gives up a reserved run that was never started: it leaves the
// live set with no record, so its waiters answer with none.
func (m *runManager) abandon(lr *liveRun) {
	lr.cancel()
	lr.mu.Lock()
	lr.rec = nil
	lr.mu.Unlock()
	m.leave(lr)
	m.wg.Done()
}

// start writes the running record of a reserved run and starts Flow
// (req) in the run's own goroutine: the run belongs to the manager, not to
// the request that started it, so a cancelled wait never stops it. The
// goroutine ends in [runManager.finish], which freezes the outcome
// classify gives Flow's result and closes lr.done: that is how every
// waiter learns the answer. start returns an error only when the record
// could not be written (nothing was started; the run is abandoned).
func (m *runManager) start(lr *liveRun, req flowrun.Request, classify func(flowrun.Result) runstore.Outcome) error {
	if err := lr.persist(m.state); err != nil {
		m.abandon(lr)
		return err
	}
	m.mu.Lock()
	closing := m.closing
	m.mu.Unlock()
	if closing {
		// Shutdown began after the reservation: the run is interrupted
		// before anything starts.
		lr.cancel()
		m.finish(lr, interrupted, nil)
		m.wg.Done()
		return nil
	}
	req.Started = func(p flowrun.Process) {
		lr.mu.Lock()
		defer lr.mu.Unlock()
		if lr.rec.Phase != runstore.PhaseRunning {
			return
		}
		lr.rec.PID, lr.rec.PGID, lr.rec.LeaderStart = p.PID, p.PGID, p.StartTime
		_ = m.state.WriteRecord(lr.rec)
	}
	go func() {
		defer m.wg.Done()
		defer lr.cancel()
		res := m.runner.Run(lr.ctx, req)
		// The stderr tail is on disk before the record turns terminal, so a
		// terminal run's tail is there to read.
		if err := m.state.WriteStderrTail(lr.id, res.StderrKept); err != nil {
			m.log.Warn("a run's stderr tail could not be kept")
		}
		m.finish(lr, classify(res), &res)
	}()
	return nil
}

// persist writes lr's record while it is still running. Every write of a
// live run's record holds lr.mu, so a running copy never overwrites a
// frozen one.
func (lr *liveRun) persist(st *runstore.State) error {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.rec.Phase != runstore.PhaseRunning {
		return nil
	}
	return st.WriteRecord(lr.rec)
}

// record is a copy of lr's record (nil for an abandoned run).
func (lr *liveRun) record() *runstore.File {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.rec == nil {
		return nil
	}
	c := *lr.rec
	return &c
}

// finish ends a run with outcome o and Flow's result res (nil when no child
// ran): the outcome is frozen unless shutdown froze it first, then the run
// leaves the live set.
func (m *runManager) finish(lr *liveRun, o runstore.Outcome, res *flowrun.Result) {
	m.freeze(lr, o, res)
	m.drop(lr)
}

// freeze freezes a live run's record with o, persists it and writes the
// audit run_end line; a record already terminal, or none (an abandoned
// reservation), is left as it is.
func (m *runManager) freeze(lr *liveRun, o runstore.Outcome, res *flowrun.Result) {
	lr.mu.Lock()
	if res != nil {
		lr.ended = res
	}
	if lr.rec == nil || !lr.rec.Freeze(o, time.Now()) {
		lr.mu.Unlock()
		return
	}
	if res != nil {
		lr.rec.ExitCode = res.ExitCode
		lr.froze = true
	}
	err := m.state.WriteRecord(lr.rec)
	lr.mu.Unlock()
	if err != nil {
		m.log.Warn("a run record could not be written")
	}
	m.audit.runEnd(lr.wf.id, lr.id, string(o.Status), time.Since(lr.start))
}

func (m *runManager) drop(lr *liveRun) {
	if m.keepEnded {
		// Tails of ended runs stay in memory for protected export, bounded
		// to the most recent maxFinished runs (older ones report null).
		m.finishedMu.Lock()
		if _, ok := m.finished[lr.id]; !ok {
			m.finishedOrder = append(m.finishedOrder, lr.id)
		}
		m.finished[lr.id] = lr
		for len(m.finishedOrder) > maxFinished {
			delete(m.finished, m.finishedOrder[0])
			m.finishedOrder = m.finishedOrder[1:]
		}
		m.finishedMu.Unlock()
	}
	m.leave(lr)
}

// leave takes lr out of the live set and closes lr.done, which answers
// every waiter.
func (m *runManager) leave(lr *liveRun) {
	m.mu.Lock()
	if m.live[lr.id] == lr {
		delete(m.live, lr.id)
	}
	m.mu.Unlock()
	lr.doneOnce.Do(func() { close(lr.done) })
}

func (m *runManager) get(runID string) *liveRun {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live[runID]
}

// ended returns an ended run whose protected detail is still kept, or nil.
func (m *runManager) endedRun(runID string) *liveRun {
	m.finishedMu.Lock()
	defer m.finishedMu.Unlock()
	return m.finished[runID]
}

// record returns the live copy of an owned run's record, else the persisted
// one (nil when there is none).
func (m *runManager) record(runID string) *runstore.File {
	if lr := m.get(runID); lr != nil {
		return lr.record()
	}
	return m.state.Record(runID)
}

// shutdown stops the owned runs (docs/mcp.md "Shutdown"): every owned
// running record becomes interrupted before its group is signalled; then
// the groups are terminated (SIGTERM, SIGKILL after 2 s) and the parameter
// files deleted.
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
		m.freeze(lr, interrupted, nil)
	}
	for _, lr := range runs {
		lr.cancel()
	}
	m.wg.Wait()
	for _, lr := range runs {
		_ = m.state.RemoveParams(lr.id)
	}
}

// wait waits up to d for run runID to become terminal and returns its
// record (nil when it has none). A run of this server is waited for in
// memory ([runManager.waitRun]); a run of another server through its record.
func (m *runManager) wait(ctx context.Context, req *mcp.CallToolRequest, runID string, d time.Duration) *runstore.File {
	if lr := m.get(runID); lr != nil {
		return m.waitRun(ctx, req, lr, d)
	}
	r := m.state.Record(runID)
	if r != nil && (r.Phase == runstore.PhaseTerminal || r.Owner == m.owner) {
		// A run of this server that is not live has ended (its record is
		// frozen before it leaves the live set).
		return r
	}
	return m.waitOther(ctx, req, runID, d)
}

// waitRun waits up to d for a run of this server to end, sending progress
// when the request carries a token. The answer is lr's own record: the
// run's goroutine froze it before closing lr.done.
func (m *runManager) waitRun(ctx context.Context, req *mcp.CallToolRequest, lr *liveRun, d time.Duration) *runstore.File {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	p := m.progress(ctx, req)
	defer p.stop()
	for {
		select {
		case <-lr.done:
			return lr.record()
		case <-p.tick:
			p.send(lr.start)
		case <-deadline.C:
			return lr.record()
		case <-ctx.Done():
			return lr.record()
		case <-m.stopWait:
			return lr.record()
		}
	}
}

// waitOther waits up to d for the run of another server (an idempotency
// replay, or get_run_report's wait_ms) through its record, which only
// that server's process writes: this wait polls the file. A record that
// is not there yet (the other server published the binding but has not
// written the record) is waited for at most recordGrace.
func (m *runManager) waitOther(ctx context.Context, req *mcp.CallToolRequest, runID string, d time.Duration) *runstore.File {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	p := m.progress(ctx, req)
	defer p.stop()
	poll := time.NewTicker(250 * time.Millisecond)
	defer poll.Stop()
	missingSince := time.Now()
	var r *runstore.File
	for {
		r = m.state.Record(runID)
		switch {
		case r == nil && time.Since(missingSince) > recordGrace:
			return nil
		case r != nil && r.Phase == runstore.PhaseTerminal:
			return r
		}
		select {
		case <-poll.C:
		case <-p.tick:
			started := time.Now()
			if r != nil {
				if t, err := time.Parse(time.RFC3339Nano, r.StartedAt); err == nil {
					started = t
				}
			}
			p.send(started)
		case <-deadline.C:
			return m.state.Record(runID)
		case <-ctx.Done():
			return m.state.Record(runID)
		case <-m.stopWait:
			return m.state.Record(runID)
		}
	}
}

// progressSender sends a run wait's progress notifications: every
// progressEvery when the request carries a progress token (tick is nil
// otherwise), the seconds since the run started, strictly increasing.
type progressSender struct {
	ctx    context.Context
	req    *mcp.CallToolRequest
	token  any
	total  float64
	ticker *time.Ticker
	tick   <-chan time.Time
	last   float64
}

func (m *runManager) progress(ctx context.Context, req *mcp.CallToolRequest) *progressSender {
	p := &progressSender{ctx: ctx, req: req, total: m.timeout, last: -1}
	if req != nil && req.Params != nil && req.Session != nil {
		p.token = req.Params.GetProgressToken()
	}
	if p.token != nil {
		p.ticker = time.NewTicker(orDefault(testOnlyRunProgressEvery, progressEvery))
		p.tick = p.ticker.C
	}
	return p
}

func (p *progressSender) send(started time.Time) {
	v := float64(int(time.Since(started).Seconds()))
	if v <= p.last {
		v = p.last + 1
	}
	p.last = v
	_ = p.req.Session.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{
		ProgressToken: p.token, Progress: v, Total: p.total, Message: msgProgress,
	})
}

func (p *progressSender) stop() {
	if p.ticker != nil {
		p.ticker.Stop()
	}
}
