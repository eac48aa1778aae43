package serve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
	"github.com/OpenAdaptAI/openadapt-agent/serve/internal/stdio"
)

// Server is one governed MCP server instance: its catalog, run manager,
// audit log and the go-sdk server with its tools.
type Server struct {
	opts   Options
	prep   *prepared
	log    *slog.Logger
	stderr io.Writer

	cat     *catalog
	tools   map[string]*toolEntry // by name
	list    []*toolEntry          // registration (§4.2) order
	schemas map[string]cachedSchema
	results validatedResults // dispatch.go
	pages   toolPages        // tools/list pages, pre-encoded (tools.go)
	mcp     *mcp.Server
	// conn is Serve's stdio connection, once Serve has started.
	conn atomic.Pointer[stdio.Transport]

	audit *auditLog
	runs  *runManager
	gate  *gate

	state       *runstore.State
	instance    string
	runner      flowrun.Runner
	childEnv    []string
	bindings    *runstore.Bindings
	failedCount int
	flowMissing bool
	closeOnce   sync.Once

	sessMu   sync.Mutex
	sessions map[*mcp.ServerSession]string

	// testOnlyPanic, when set, makes the named tool panic (tests of the
	// internal_error path).
	testOnlyPanic string

	// helper is the Flow-side helper (nil unless a flag needs it).
	helper *helperState
	// authoring is the D4 session (nil unless --authoring).
	authoring      *authoringState
	tut            *tutorialState // tutorial mode (tutorial.go)
	states         stateKeeper
	operatorWarned sync.Once
}

// New validates opts (mcp-surface.md §1.3) and performs the startup sequence
// of §1.5 up to building the tool list. Diagnostics go to stderr. The
// returned error is a *[ConfigError] for configuration errors.
//
// Close must be called to release the owner lock and stop owned runs.
func New(opts Options, stderr io.Writer) (*Server, error) {
	opts = opts.withDefaults()
	if stderr == nil {
		stderr = io.Discard
	}
	// Rule 1: a bad --tool-mode or --run-wait is a flag value error.
	switch opts.ToolMode {
	case "per-workflow", "catalog":
	default:
		return nil, &ConfigError{Msg: "--tool-mode must be per-workflow or catalog", Flag: true}
	}
	if opts.RunWait < 1 || opts.RunWait > 3600 {
		return nil, &ConfigError{Msg: "--run-wait must be an integer from 1 to 3600", Flag: true}
	}
	prep, err := validate(opts)
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts:     opts,
		prep:     prep,
		stderr:   stderr,
		log:      slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		state:    prep.state,
		instance: randomHex(8),
		runner:   flowrun.CLIRunner{},
	}
	s.audit = &auditLog{f: prep.auditLog, warn: func() { fmt.Fprintln(stderr, "serve: warning: the audit log could not be written") }}
	if opts.Environ == nil {
		opts.Environ = os.Environ()
		s.opts.Environ = opts.Environ
	}
	s.childEnv = flowrun.ChildEnv(opts.Environ, opts.PassEnv)
	s.runs = newRunManager(s)
	// 4–7 only for a stateful server: a read-only one writes no state
	// (round2-decisions.md 2) and has no run tools that would need it.
	if prep.stateful {
		// 4. owner lock
		if err := s.state.Lock(s.instance); err != nil {
			s.audit.close()
			return nil, configErrorf("the runs directory could not be prepared: %s; pass an absolute --runs-dir", prep.runsDir)
		}
		// 5–6. reconcile dead owners, sweep orphaned parameter files
		s.state.Reconcile(interrupted)
		b, err := s.state.Bindings()
		if err != nil {
			s.Close()
			return nil, configErrorf("the runs directory could not be prepared: %s; pass an absolute --runs-dir", prep.runsDir)
		}
		s.bindings = b
		s.recordAuthorityDB()
	}
	// 8. gate
	s.gate = newGate(s)
	// 9. discovery
	var ws []*workflow
	var failed int
	// Tutorial mode has no --bundles: its one workflow comes at step 11.
	if !opts.authoringOnly() && !prep.tutorial {
		ws, failed = s.discover()
	}
	s.cat = newCatalog(ws)
	s.failedCount = failed
	// 10. Flow
	if _, err := s.resolveFlow(); err != nil {
		s.flowMissing = true
	}
	// 11. the Flow-side helper (flow-helper.md §2.1).
	if opts.needsHelper() {
		if err := s.startHelper(); err != nil {
			s.Close()
			return nil, err
		}
	}
	// 11, D3: the synthetic tutorial (flow-helper.md §2.1 g).
	if prep.tutorial {
		if err := s.startTutorial(); err != nil {
			s.Close()
			return nil, err
		}
	}
	// 12. tools
	s.buildMCP()
	return s, nil
}

// Banner is the one-line startup banner of §1.6, followed by any warning
// lines.
func (s *Server) Banner() string {
	onOff := func(b bool, on, off string) string {
		if b {
			return on
		}
		return off
	}
	var b strings.Builder
	if s.opts.authoringOnly() {
		// §1.6: the authoring-only banner.
		fmt.Fprintf(&b, "openadapt-agent %s: authoring tools enabled over local stdio; run tools disabled; --authoring does not imply --allow-run; audit log %s\n",
			s.opts.Version, onOff(s.prep.auditLog != nil, "on", "off"))
		return b.String()
	}
	fmt.Fprintf(&b, "openadapt-agent %s: serving %d workflow(s) over local stdio; run tools %s; attended decisions %s; live Continue/Skip %s; protected MCP export %s; synthetic recorded defaults %s; tutorial %s; authoring "+onOff(s.authoring != nil, "enabled", "disabled"),
		s.opts.Version, len(s.cat.workflows),
		onOff(s.opts.AllowRun, "enabled", "disabled"),
		onOff(s.helper != nil && s.opts.AllowAttendedActions, "enabled", "disabled"),
		onOff(s.helper != nil && s.helper.live, "ready", "not configured"),
		onOff(s.opts.AllowProtectedExport, "ENABLED", "disabled"),
		onOff(s.opts.AllowSyntheticRecordedDefaults, "ENABLED", "disabled"),
		onOff(s.tut != nil, "enabled", "disabled"))
	if s.tut != nil {
		// Tutorial mode (issue 14 item 3): the one workflow passes on the
		// exemption bound to the digest this server prepared, never on
		// the gate being off.
		fmt.Fprintf(&b, "; tool mode %s; %s", s.opts.ToolMode, s.tutorialGate())
	} else {
		fmt.Fprintf(&b, "; tool mode %s; admission gate %s", s.opts.ToolMode, s.gateName())
	}
	if s.gateOn() && s.tut == nil {
		if s.opts.Ledger == "" {
			b.WriteString(" (embedded ledger snapshot)")
		}
		if !s.gate.verified() {
			b.WriteString(" (ledger unverified: every run is refused)")
		}
	}
	fmt.Fprintf(&b, "; audit log %s", onOff(s.prep.auditLog != nil, "on", "off"))
	if !s.prep.stateful {
		b.WriteString(" (read-only: no state is written)")
	}
	b.WriteString("\n")
	if s.failedCount > 0 {
		fmt.Fprintf(&b, "%d workflow(s) could not be loaded safely; details stay local\n", s.failedCount)
	}
	if s.flowMissing {
		b.WriteString("openadapt-flow was not found; run tools will fail with flow_not_found\n")
	}
	if s.opts.AllowRun && s.opts.ToolMode == "per-workflow" {
		n := 0
		for _, e := range s.list {
			if e.run {
				n++
			}
		}
		if n > 100 {
			fmt.Fprintf(&b, "%d run tools registered; consider --tool-mode catalog\n", n)
		}
	}
	return b.String()
}

// MCPServer returns the go-sdk server, for in-process transports.
func (s *Server) MCPServer() *mcp.Server { return s.mcp }

// Close performs §1.7 steps 2–5: owned running runs become interrupted,
// their process groups are terminated, parameter files are deleted and the
// owner lock is released. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.runs.shutdown()
		s.closeHelper()
		s.closeTutorial()
		s.state.Unlock()
		s.audit.close()
	})
}

// Serve runs the server over in/out (newline-delimited JSON-RPC) until the
// input ends or ctx is done, then shuts down. It returns nil on EOF or
// cancellation, and an error wrapping [ErrFrameTooLarge] when an oversized
// frame ended the session.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	t := &stdio.Transport{In: in, Out: out, OnInputEnd: s.runs.endWaits, Rewritable: []string{"tools/list"}}
	s.conn.Store(t)
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		s.Close()
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = ss.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		// Every pending wait answers at once; give delivered requests up to
		// 2 s to be written, then close (docs/mcp.md "Shutdown").
		s.runs.endWaits()
		t.WaitIdle(stdio.WithholdLimit)
		ss.Close()
		<-done
	}
	s.Close()
	if t.Oversized() {
		fmt.Fprintln(s.stderr, "serve: an inbound frame exceeded 4 MiB; session closed")
		return ErrFrameTooLarge
	}
	return nil
}

// ErrFrameTooLarge is returned by [Server.Serve] when an inbound frame
// exceeded 4 MiB and ended the session (after every delivered request was
// answered).
var ErrFrameTooLarge = stdio.ErrFrameTooLarge

// resolveFlow splits --flow-cli and resolves its program (§7.2 step 5).
func (s *Server) resolveFlow() ([]string, error) {
	words, err := flowrun.SplitCommand(s.opts.FlowCLI)
	if err != nil {
		return nil, err
	}
	look := s.opts.LookPath
	var p string
	if look != nil {
		p, err = look(words[0])
	} else {
		p, err = flowrun.LookFlow(words)
	}
	if err != nil {
		return nil, err
	}
	out := append([]string{p}, words[1:]...)
	return out, nil
}
