package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// gateRunner is a flowrun.Runner whose runs end when the test says so: Run
// reports each run id on started, then returns the next result sent on
// release (or interrupted when the run's context ends first).
type gateRunner struct {
	started chan string
	release chan flowrun.Result
}

func newGateRunner() *gateRunner {
	return &gateRunner{started: make(chan string, 8), release: make(chan flowrun.Result)}
}

func (g *gateRunner) Run(ctx context.Context, req flowrun.Request) flowrun.Result {
	g.started <- req.RunID
	select {
	case res := <-g.release:
		return res
	case <-ctx.Done():
		return flowrun.Result{Verdict: flowrun.Verdict{Status: flowrun.StatusInterrupted}}
	}
}

// verifiedSuccess is a VERIFIED success under a production profile: its
// result (status error, effect_verified) can only come from this run.
var verifiedSuccess = flowrun.Result{Verdict: flowrun.Verdict{Status: flowrun.StatusError, Outcome: "VERIFIED",
	Reason: flowrun.ReasonUnsignedProductionSuccess, EffectVerified: true}, ExitCode: intPtr(0), Process: flowrun.Process{PID: 1}}

// gatedServer is runEnv's server with a gateRunner in place of Flow.
func gatedServer(t *testing.T) (*Server, *gateRunner) {
	t.Helper()
	_, o := runEnv(t)
	srv, err := New(o, &syncBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	g := newGateRunner()
	srv.runs.manager.runner = g
	return srv, g
}

// breakRecords makes the state folder's record folder unusable: from now
// on no record can be written or read there.
func breakRecords(t *testing.T, srv *Server) {
	t.Helper()
	records := filepath.Join(srv.state.Dir(), "runs")
	if err := os.RemoveAll(records); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(records, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

type callResult struct {
	res *mcp.CallToolResult
	err error
}

func callAsync(s *session, name string, args map[string]any) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		ch <- callResult{res, err}
	}()
	return ch
}

func (s *session) checkAsync(name string, ch <-chan callResult) map[string]any {
	s.t.Helper()
	r := <-ch
	if r.err != nil {
		s.t.Fatalf("call %s: %v", name, r.err)
	}
	return s.check(name, r.res)
}

// TestRunAnswerComesFromMemory: a run call gets its outcome from the run
// itself when it ends, not by reading the record back: with the record
// folder gone before the run ends, the call still answers with the run's
// outcome at once.
func TestRunAnswerComesFromMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, g := gatedServer(t)
		s := connect(t, srv, &syncBuffer{})
		tool := s.runTool()
		call := callAsync(s, tool, map[string]any{"note": "a", "scenario": "x"})
		<-g.started
		breakRecords(t, srv)
		began := time.Now()
		g.release <- verifiedSuccess
		r := s.checkAsync(tool, call)
		if r["status"] != "error" || r["effect_verified"] != true {
			t.Fatalf("%v", r)
		}
		if waited := time.Since(began); waited != 0 {
			t.Errorf("the answer came %v after the run ended", waited)
		}
	})
}

// TestReplayWaitsOnTheRunInMemory: an identical call (same idempotency
// key) made while the first one runs waits on that run in memory, and both
// answer when it ends, the second as a replay, without reading a record.
func TestReplayWaitsOnTheRunInMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, g := gatedServer(t)
		s := connect(t, srv, &syncBuffer{})
		tool := s.runTool()
		args := map[string]any{"note": "a", "scenario": "x", "idempotency_key": "memory-key-00000001"}
		first := callAsync(s, tool, args)
		<-g.started
		second := callAsync(s, tool, args)
		synctest.Wait() // the second call is waiting too
		breakRecords(t, srv)
		g.release <- verifiedSuccess
		r1, r2 := s.checkAsync(tool, first), s.checkAsync(tool, second)
		if r1["status"] != "error" || r1["effect_verified"] != true || r1["replayed"] != false {
			t.Fatalf("first: %v", r1)
		}
		if r2["status"] != "error" || r2["effect_verified"] != true || r2["replayed"] != true || r2["run_id"] != r1["run_id"] {
			t.Fatalf("second: %v", r2)
		}
		select {
		case id := <-g.started:
			t.Fatalf("the replay started run %s", id)
		default:
		}
	})
}

// stdioClient drives Serve over pipes, one JSON-RPC line at a time.
type stdioClient struct {
	t   *testing.T
	in  *io.PipeWriter
	out *bufio.Reader
}

func (c *stdioClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

func (c *stdioClient) reply() map[string]any {
	c.t.Helper()
	line, err := c.out.ReadString('\n')
	if err != nil {
		c.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		c.t.Fatal(err)
	}
	return m
}

// serveGated starts Serve on a gated server over pipes, initializes the
// session and sends one run call (id 2) whose run is then running.
func serveGated(t *testing.T, ctx context.Context) (*stdioClient, <-chan error, *gateRunner) {
	srv, g := gatedServer(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, inR, outW) }()
	c := &stdioClient{t: t, in: inW, out: bufio.NewReader(outR)}
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.reply()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	tool := "run_" + srv.catalog.cat.workflows[0].id
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"note":"a","scenario":"x"}}}`)
	<-g.started
	return c, served, g
}

// runningReply checks that m answers id 2 with status running.
func runningReply(t *testing.T, m map[string]any) {
	t.Helper()
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if m["id"] != float64(2) || sc["status"] != "running" {
		t.Fatalf("reply %v", m)
	}
}

// TestSignalAnswersPendingCallAtOnce: at a signal (ctx done) with stdin
// still open, a pending run call answers "running" at once, and Serve
// returns as soon as that answer is written: nothing waits on a clock.
func TestSignalAnswersPendingCallAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c, served, _ := serveGated(t, ctx)
		began := time.Now()
		cancel()
		synctest.Wait() // the answer is ready to be written
		runningReply(t, c.reply())
		if err := <-served; err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(began); waited != 0 {
			t.Errorf("Serve returned %v after the signal", waited)
		}
	})
}

// TestInputEndAnswersPendingCallAtOnce: when stdin ends with a run call
// pending, the call answers "running" at once and Serve returns as soon as
// it is written.
func TestInputEndAnswersPendingCallAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, served, _ := serveGated(t, context.Background())
		began := time.Now()
		c.in.Close()
		synctest.Wait()
		runningReply(t, c.reply())
		if err := <-served; err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(began); waited != 0 {
			t.Errorf("Serve returned %v after the input ended", waited)
		}
	})
}

// TestShutdownWaitsForReservedRun: a run reserved when shutdown begins is
// frozen interrupted, shutdown waits until the call starts or abandons it,
// and a start then runs nothing; its waiter answers interrupted.
func TestShutdownWaitsForReservedRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := runstore.Prepare(filepath.Join(t.TempDir(), "runs"))
		if err != nil {
			t.Fatal(err)
		}
		g := newGateRunner()
		m := newRunManager(st, newAuditLog(nil, nil), slog.New(slog.DiscardHandler), "0123456789abcdef", false, 60)
		m.runner = g
		wf := &workflow{id: "workflow_0123456789abcdef01234567", baseID: "workflow_0123456789abcdef01234567"}
		lr := m.reserve("run-"+strings.Repeat("a", 24), wf)
		abandoned := m.reserve("run-"+strings.Repeat("b", 24), wf)
		stopped := make(chan struct{})
		go func() { m.shutdown(); close(stopped) }()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("shutdown returned while runs were reserved")
		default:
		}
		m.abandon(abandoned)
		if err := m.start(lr, flowrun.Request{RunID: lr.id}, outcomeOf); err != nil {
			t.Fatal(err)
		}
		<-stopped
		select {
		case id := <-g.started:
			t.Fatalf("run %s started after shutdown", id)
		default:
		}
		r := m.waitRun(context.Background(), nil, lr, time.Hour)
		if r == nil || r.Phase != runstore.PhaseTerminal || r.Outcome.Status != flowrun.StatusInterrupted {
			t.Fatalf("waiter answered %+v", r)
		}
		if disk := st.Record(lr.id); disk == nil || disk.Outcome == nil || disk.Outcome.Status != flowrun.StatusInterrupted {
			t.Fatalf("record %+v", disk)
		}
		if m.waitRun(context.Background(), nil, abandoned, time.Hour) != nil {
			t.Fatal("an abandoned reservation answered with a record")
		}
	})
}
