package serve

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// The run manager (§7.4): the runs this instance owns, their waits, and
// shutdown. A run belongs to the manager, not to the request that started
// it: a cancelled wait never stops the run.

// maxFinished bounds the ended runs whose protected tails are kept.
const maxFinished = 256

// recordGrace bounds how long a replay waits for the record of a run whose
// binding was just published by a concurrent call.
const recordGrace = 2 * time.Second

// progressEvery is the progress notification period (§7.4);
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
	cancel   context.CancelFunc

	mu  sync.Mutex
	rec *runstore.File
	// ended is Flow's result once the child has ended: protected detail
	// (exit code, output tails, halt, report path) for protected export.
	ended *flowrun.Result
	// froze is true when ended froze the record (not shutdown before it).
	froze bool
}

type runManager struct {
	s        *Server
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

func newRunManager(s *Server) *runManager {
	return &runManager{s: s, live: map[string]*liveRun{}, stopWait: make(chan struct{}), finished: map[string]*liveRun{}}
}

// endWaits ends every pending run-tool and get_run_report wait (§12).
func (m *runManager) endWaits() { m.stopOnce.Do(func() { close(m.stopWait) }) }

// start writes the running record and spawns the run (§7.2 steps 6–8). It
// returns an error only when the record could not be written (nothing
// spawned).
func (m *runManager) start(runID string, ra *runArgs, flow []string) (*liveRun, error) {
	s := m.s
	now := time.Now()
	r := &runstore.File{
		SchemaVersion: 1, RunID: runID, WorkflowID: ra.wf.id, BaseWorkflowID: ra.wf.baseID,
		BundleContentDigest: ra.wf.contentDigest, Owner: s.instance, StartedAt: now.UTC().Format(time.RFC3339Nano),
		Phase: runstore.PhaseRunning,
	}
	if err := s.state.WriteRecord(r); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	lr := &liveRun{id: runID, wf: ra.wf, start: now, done: make(chan struct{}), rec: r, cancel: cancel}
	m.mu.Lock()
	if m.closing {
		m.mu.Unlock()
		cancel()
		m.finish(lr, interrupted, nil)
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
		ParamsDir: s.state.ParamsDir(),
		Params:    ra.params,
		URL:       s.opts.URL,
		Config:    s.opts.Config,
		Policy:    s.opts.Policy,
		ExtraArgs: s.opts.ExtraRunArgs,
		Env:       s.childEnv,
		Timeout:   time.Duration(s.opts.Timeout * float64(time.Second)),
		Started: func(p flowrun.Process) {
			lr.mu.Lock()
			if lr.rec.Phase != runstore.PhaseRunning {
				lr.mu.Unlock()
				return
			}
			lr.rec.PID, lr.rec.PGID, lr.rec.LeaderStart = p.PID, p.PGID, p.StartTime
			c := *lr.rec
			lr.mu.Unlock()
			_ = s.state.WriteRecord(&c)
		},
	}
	if ra.url != nil {
		req.URL = *ra.url
	}
	tut := s.isTutorial(ra.wf)
	if tut {
		s.tutorialRun(&req)
	}
	go func() {
		defer m.wg.Done()
		defer cancel()
		res := s.runner.Run(ctx, req)
		// The stderr tail is on disk before the record turns terminal, so a
		// terminal run's tail is there to read.
		if err := s.state.WriteStderrTail(runID, res.StderrKept); err != nil {
			s.log.Warn("a run's stderr tail could not be kept")
		}
		o := outcomeOf(res)
		if tut {
			o = tutorialOutcome(o)
		}
		m.finish(lr, o, &res)
	}()
	return lr, nil
}

// finish ends a run with outcome o and Flow's result res (nil when no child
// ran): the outcome is frozen unless shutdown froze it first, then the run
// leaves the live set.
func (m *runManager) finish(lr *liveRun, o runstore.Outcome, res *flowrun.Result) {
	m.freeze(lr, o, res)
	m.drop(lr)
}

// freeze freezes a live run's record with o, persists it and writes the
// audit run_end line; a record already terminal is left as it is.
func (m *runManager) freeze(lr *liveRun, o runstore.Outcome, res *flowrun.Result) {
	s := m.s
	lr.mu.Lock()
	if res != nil {
		lr.ended = res
	}
	if !lr.rec.Freeze(o, time.Now()) {
		lr.mu.Unlock()
		return
	}
	if res != nil {
		lr.rec.ExitCode = res.ExitCode
		lr.froze = true
	}
	rec := *lr.rec
	lr.mu.Unlock()
	if err := s.state.WriteRecord(&rec); err != nil {
		s.log.Warn("a run record could not be written")
	}
	s.auditRunEnd(lr.wf.id, lr.id, string(o.Status), time.Since(lr.start))
}

func (m *runManager) drop(lr *liveRun) {
	if m.s.opts.AllowProtectedExport {
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
		lr.mu.Lock()
		defer lr.mu.Unlock()
		c := *lr.rec
		return &c
	}
	return m.s.state.Record(runID)
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
		m.freeze(lr, interrupted, nil)
	}
	for _, lr := range runs {
		lr.cancel()
	}
	m.wg.Wait()
	for _, lr := range runs {
		_ = m.s.state.RemoveParams(lr.id)
	}
}

// wait waits for a run to become terminal, for at most d, sending progress
// when the request carries a token, and returns its current record (nil
// when it has none).
func (m *runManager) wait(ctx context.Context, req *mcp.CallToolRequest, runID string, d time.Duration) *runstore.File {
	s := m.s
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	var token any
	if req != nil && req.Params != nil {
		token = req.Params.GetProgressToken()
	}
	tick := time.NewTicker(orDefault(testOnlyRunProgressEvery, progressEvery))
	defer tick.Stop()
	poll := time.NewTicker(250 * time.Millisecond)
	defer poll.Stop()
	var lastProgress float64 = -1
	missingSince := time.Now()
	for {
		lr := m.get(runID)
		var done <-chan struct{}
		if lr != nil {
			done = lr.done
		} else {
			r := s.state.Record(runID)
			switch {
			case r == nil && time.Since(missingSince) > recordGrace:
				return nil
			case r == nil:
				// A concurrent identical call published the binding but has
				// not written the record yet: poll briefly.
			case r.Phase == runstore.PhaseTerminal:
				return r
			}
		}
		select {
		case <-done:
			return m.record(runID)
		case <-poll.C:
			continue
		case <-tick.C:
			if token != nil && req.Session != nil {
				p := float64(int(time.Since(m.startedAt(runID)).Seconds()))
				if p <= lastProgress {
					p = lastProgress + 1
				}
				lastProgress = p
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: p, Total: s.opts.Timeout, Message: msgProgress,
				})
			}
		case <-deadline.C:
			return m.record(runID)
		case <-ctx.Done():
			return m.record(runID)
		case <-m.stopWait:
			return m.record(runID)
		}
	}
}

// startedAt is when a run started, for progress.
func (m *runManager) startedAt(runID string) time.Time {
	if lr := m.get(runID); lr != nil {
		return lr.start
	}
	if r := m.s.state.Record(runID); r != nil {
		if t, err := time.Parse(time.RFC3339Nano, r.StartedAt); err == nil {
			return t
		}
	}
	return time.Now()
}
