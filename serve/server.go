package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/serve/internal/stdio"
)

// Server is one governed MCP server instance: the protocol engine. It holds
// the options, the tool registry, the go-sdk server, the audit log and the
// stdio connection; each feature (catalog, runs, attention, tutorial,
// authoring) is its own type that registers its own tools.
type Server struct {
	opts   Options
	prep   *prepared
	stderr io.Writer

	reg   registry
	mcp   *mcp.Server
	audit *auditLog
	// conn is Serve's stdio connection, once Serve has started.
	conn atomic.Pointer[stdio.Transport]
	// state is the runs folder's state directory; instance is this
	// server's owner id in it.
	state    *runstore.State
	instance string

	// The features, in the order they register their tools (buildMCP).
	catalog   *catalogTools
	runs      *runTools
	attention *attentionTools
	tutorial  *tutorialTools  // nil outside tutorial mode
	authoring *authoringTools // nil without --authoring
	sandbox   *sandbox        // nil outside the sandbox
	// helper is the Flow helper process (nil unless a flag needs it); the
	// attention, tutorial and authoring features share it.
	helper *helperProc
	// form is the operator's confirmation form the attended actions and
	// admit share; Serve withdraws its pending forms when stopping.
	form *confirmer

	// Startup facts for the banner.
	failedCount int
	flowMissing bool
	// missing stands in for the features whose helper did not start
	// because Flow is not installed (nil otherwise).
	missing *missingFlow

	closeOnce sync.Once
}

// New validates opts (docs/mcp.md "Configuration errors") and runs the
// startup sequence (docs/mcp.md "Startup") up to building the tool list.
// Diagnostics go to stderr. The returned error is a *[ConfigError] for
// configuration errors.
//
// Close must be called to release the owner lock and stop owned runs.
func New(opts Options, stderr io.Writer) (*Server, error) {
	opts = opts.withDefaults()
	opts, err := opts.applyMode()
	if err != nil {
		return nil, err
	}
	if opts.Mode == ModeSandbox {
		opts.Sandbox = true
	}
	if opts.Sandbox {
		if err := opts.sandboxFlags(); err != nil {
			return nil, err
		}
		if opts.SandboxEngine == EngineAuto {
			return newAutoSandbox(opts, stderr)
		}
	}
	if stderr == nil {
		stderr = io.Discard
	}
	// A bad --tool-mode or --run-wait is a flag value error.
	switch opts.ToolMode {
	case "per-workflow", "catalog":
	default:
		return nil, &ConfigError{Msg: "--tool-mode must be per-workflow or catalog", Flag: true}
	}
	if opts.AttendedActions != AttendedBoth && opts.AttendedActions != AttendedAppOnly {
		return nil, &ConfigError{Msg: "--attended-actions must be both or app-only", Flag: true}
	}
	// app-only narrows the attended tools; outside the sandbox (whose
	// attention item has its own actions) there are none without
	// --allow-attended-actions, so the flag would silently do nothing.
	if opts.AttendedActions == AttendedAppOnly && !opts.AllowAttendedActions && !opts.Sandbox {
		return nil, configErrorf("--attended-actions app-only needs --allow-attended-actions (or --mode attended): without it there are no attended actions to narrow")
	}
	if opts.RunWait < 1 || opts.RunWait > 3600 {
		return nil, &ConfigError{Msg: "--run-wait must be an integer from 1 to 3600", Flag: true}
	}
	prep, err := validate(opts)
	if err != nil {
		return nil, err
	}
	if opts.Environ == nil {
		opts.Environ = os.Environ()
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := &Server{
		opts:     opts,
		prep:     prep,
		stderr:   stderr,
		reg:      registry{log: log},
		state:    prep.state,
		instance: randomHex(8),
	}
	s.audit = newAuditLog(prep.auditLog, func() { fmt.Fprintln(stderr, "serve: warning: the audit log could not be written") })
	flow := newFlowCommand(opts)
	// Only a stateful server locks, reconciles and binds: a read-only one
	// writes no state and has no run tools that would need it.
	var bindings *runstore.Bindings
	if prep.stateful {
		if err := s.state.Lock(s.instance); err != nil {
			s.audit.close()
			return nil, configErrorf("the runs directory could not be prepared: %s; pass an absolute --runs-dir", prep.runsDir)
		}
		// Runs of dead owners become interrupted; orphaned parameter
		// files go.
		s.state.Reconcile(interrupted)
		if bindings, err = s.state.Bindings(); err != nil {
			s.Close()
			var ne *fsutil.NotOursError
			if errors.As(err, &ne) {
				return nil, configErrorf("%s", ne)
			}
			return nil, configErrorf("the runs directory could not be prepared: %s; pass an absolute --runs-dir", prep.runsDir)
		}
		recordAuthorityDB(s.state, flow.env, stderr)
	}
	gate := newGate(prep.profile, opts.Ledger)
	// Discovery. Tutorial mode has no --bundles: its one workflow comes
	// with the tutorial below.
	loader := newBundleLoader(opts, prep, stderr)
	var ws []*workflow
	switch {
	case opts.Sandbox:
		engine := EngineSimulated
		if opts.flowSandbox() {
			engine = EngineFlow
		}
		s.sandbox, ws = newSandbox(&s.opts, engine)
	case !opts.authoringOnly() && !prep.tutorial:
		ws, s.failedCount = loader.discover()
	}
	cat := newCatalog(ws)
	if !opts.Sandbox {
		if _, err := flow.resolve(); err != nil {
			s.flowMissing = true
		}
	}
	// The Flow helper, its authoring session and its attended live
	// service (docs/helper.md "Startup").
	confirm := &confirmer{} // the operator's form, for attended actions and admit
	s.form = confirm
	live := false
	if opts.needsHelper() {
		s.helper, err = launchHelper(context.Background(), opts, flow, s.state, s.instance, stderr)
		var ce *ConfigError
		switch {
		case err == nil:
		case errors.As(err, &ce) && ce.flowMissing && !opts.Authoring:
			// Flow is not installed: start anyway, every tool that needs it
			// answers flow_not_found (flowmissing.go). Authoring fails
			// closed.
			s.flowMissing = true
			s.missing = &missingFlow{tutorial: prep.tutorial, allowRun: opts.AllowRun, attended: opts.AllowAttendedActions}
		default:
			s.Close()
			return nil, err
		}
	}
	if s.helper != nil {
		if opts.Authoring {
			if s.authoring, err = startAuthoring(context.Background(), opts, s.helper, s.state, s.instance, prep.runsDir, confirm); err != nil {
				s.Close()
				return nil, err
			}
		}
		if opts.AllowAttendedActions && opts.Config != "" {
			if err := openLiveService(context.Background(), opts, s.helper); err != nil {
				s.Close()
				return nil, err
			}
			live = true
		}
	}
	// The synthetic tutorial: its prepared bundle is the catalog.
	if prep.tutorial && s.missing != nil {
		cat = newCatalog(nil)
	} else if prep.tutorial {
		if s.tutorial, err = startTutorial(context.Background(), opts, s.helper, s.state, s.instance, prep.runsDir, loader, stderr); err != nil {
			s.Close()
			return nil, err
		}
		if s.sandbox == nil {
			cat = newCatalog([]*workflow{s.tutorial.wf})
		}
	}
	// The features, with what each needs.
	s.catalog = &catalogTools{opts: &s.opts, cat: cat, gate: gate, labels: prep.labels, flow: flow}
	s.runs = &runTools{opts: &s.opts, runsDir: prep.runsDir, cat: cat, loader: loader, gate: gate, flow: flow, labels: prep.labels,
		bindings: bindings, tutorial: s.tutorial,
		manager: newRunManager(s.state, s.audit, log, s.instance, opts.AllowProtectedExport, opts.Timeout)}
	s.attention = &attentionTools{opts: &s.opts, runsDir: prep.runsDir, helper: s.helper, live: live, cat: cat, confirm: confirm, stderr: stderr, sandbox: s.sandbox,
		flowMissing: s.missing != nil && s.missing.attended, instance: s.instance}
	if s.sandbox != nil {
		s.sandbox.cat, s.sandbox.runs = cat, s.runs
	}
	s.buildMCP()
	return s, nil
}

// Banner is the one-line startup banner (docs/mcp.md "Startup"), followed
// by any warning lines.
func (s *Server) Banner() string {
	onOff := func(b bool, on, off string) string {
		if b {
			return on
		}
		return off
	}
	var b strings.Builder
	if s.opts.authoringOnly() {
		fmt.Fprintf(&b, "openadapt-agent %s: authoring tools enabled over local stdio; run tools disabled; --authoring does not imply --allow-run; audit log %s\n",
			s.opts.Version, onOff(s.prep.auditLog != nil, "on", "off"))
		return b.String()
	}
	if s.sandbox != nil {
		what := "nothing runs and no state is written"
		if s.sandbox.engine == EngineFlow {
			what = "sandbox_" + sandboxUnsignedProd + " runs Flow's synthetic tutorial, the other cases are simulated; run state in the runs folder"
		}
		fmt.Fprintf(&b, "openadapt-agent %s: SANDBOX: serving %d synthetic workflow(s) over local stdio, engine %s; %s; every result says sandbox: true; tool mode %s; audit log %s\n",
			s.opts.Version, len(s.catalog.cat.workflows), s.sandbox.engine, what, s.opts.ToolMode, onOff(s.prep.auditLog != nil, "on", "off"))
		b.WriteString("serve real workflows with --bundles (read-only) and --allow-run; see docs/mcp.md\n")
		return b.String()
	}
	gate := s.catalog.gate
	fmt.Fprintf(&b, "openadapt-agent %s: serving %d workflow(s) over local stdio; run tools %s; attended decisions %s; live Continue/Skip %s; protected MCP export %s; synthetic recorded defaults %s; tutorial %s; authoring "+onOff(s.authoring != nil, "enabled", "disabled"),
		s.opts.Version, len(s.catalog.cat.workflows),
		onOff(s.opts.AllowRun, "enabled", "disabled"),
		onOff(s.attention.actions(), onOff(s.attention.flowMissing, "unavailable (openadapt-flow not found)", "enabled"), "disabled"),
		onOff(s.attention.live, "ready", "not configured"),
		onOff(s.opts.AllowProtectedExport, "ENABLED", "disabled"),
		onOff(s.opts.AllowSyntheticRecordedDefaults, "ENABLED", "disabled"),
		onOff(s.tutorial != nil, "enabled", onOff(s.missing != nil && s.missing.tutorial, "unavailable (openadapt-flow not found)", "disabled")))
	if s.tutorial != nil {
		// The one tutorial workflow passes on the exemption bound to the
		// digest this server prepared, never on the gate being off.
		fmt.Fprintf(&b, "; tool mode %s; %s", s.opts.ToolMode, s.tutorial.gateClause())
	} else {
		fmt.Fprintf(&b, "; tool mode %s; admission gate %s", s.opts.ToolMode, gate.name())
	}
	if gate.on() && s.tutorial == nil {
		if s.opts.Ledger == "" {
			b.WriteString(" (embedded ledger snapshot)")
		}
		if !gate.verified() {
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
		b.WriteString(s.missing.banner(s.opts.AllowRun))
	}
	if s.prep.noState {
		b.WriteString("the run state could not be read (no per-user folder, or an unreadable runs directory); get_run_report and the Needs Attention tools find nothing; pass a readable --runs-dir\n")
	}
	if n := len(s.catalog.cat.workflows); s.opts.ToolMode == "per-workflow" && n > CatalogModeAdvisedAbove {
		fmt.Fprintf(&b, "%d workflows are more than per-workflow tool mode suits (%d): serve them with --tool-mode catalog\n", n, CatalogModeAdvisedAbove)
	}
	return b.String()
}

// MCPServer returns the go-sdk server, for in-process transports.
func (s *Server) MCPServer() *mcp.Server { return s.mcp }

// Close shuts the server down (docs/mcp.md "Shutdown"): owned running runs
// become interrupted, their process groups are terminated, parameter files
// are deleted, the helper stops and the owner lock is released. It is safe
// to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.sandbox.close()
		if s.runs != nil {
			s.runs.manager.shutdown()
		}
		s.helper.close()
		s.tutorial.close()
		s.state.Unlock()
		s.audit.close()
	})
}

// Serve runs the server over in/out (newline-delimited JSON-RPC) until the
// input ends or ctx is done, then shuts down. It returns nil on the end of
// input or cancellation, and an error wrapping [ErrFrameTooLarge] when an
// oversized frame ended the session.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	// At the input's end or a signal, every pending run wait answers at
	// once and every pending confirmation form is withdrawn (its call
	// answers server_stopping), so the delivered requests are answered
	// within the withhold window.
	stopping := func() {
		s.form.stop()
		s.runs.manager.endWaits()
		s.sandbox.close()
	}
	t := &stdio.Transport{In: in, Out: out, OnInputEnd: stopping, Rewritable: []string{"tools/list"}}
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
		// Every pending wait and form answers at once; give delivered
		// requests up to 2 s to be written, then close.
		stopping()
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
