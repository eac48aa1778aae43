package cmd

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/buildinfo"
	"github.com/OpenAdaptAI/openadapt-agent/serve"
)

// newServeCmd is `serve`, the governed local stdio MCP server
// (docs/mcp.md).
func newServeCmd(io *IO) *cobra.Command {
	var o serve.Options
	var roots []string
	var sandboxEngine string
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the governed local stdio MCP server",
		Long: `serve runs the governed MCP server over local stdio (never HTTP). Stdout carries
JSON-RPC only; the banner, warnings and logs go to stderr.

Without --bundles, --tutorial, --authoring or --allow-run it is a sandbox: a
synthetic workflow set, simulated by default (--sandbox-engine simulated: no
Flow, no process, no state), whose workflows show every result a real run can
answer through the same tools; every sandbox result says sandbox: true.

Register it with an MCP client, for example:
  claude mcp add --scope user openadapt-agent -- /ABSOLUTE/PATH/TO/openadapt-agent serve --mode production --bundles /ABSOLUTE/PATH/TO/bundles

A read-only server (no --allow-run) writes no state: no runs folder, no
audit log unless --audit-log names one. The verified-digest cache lives in
$XDG_CACHE_HOME/openadapt-agent (else ~/.cache/openadapt-agent). A server that
runs Flow keeps run state in --runs-dir, by default the per-user state folder:
$XDG_STATE_HOME/openadapt-agent/runs or ~/.local/state/openadapt-agent/runs
on Linux, ~/Library/Application Support/openadapt-agent/runs on macOS,
%LOCALAPPDATA%\openadapt-agent\runs on Windows. --runs-dir "" is the default.

--bundles is repeatable: every root is served, in the order given, and
duplicate workflow ids get _2, _3, ... across all roots in that order. A root
given twice (the same folder) or inside another is refused. A root of skill
folders (<skill>/SKILL.md with <skill>/bundle/) serves each skill's bundle;
links are never followed, so serve ~/.agents/skills (where skill install puts
the real copies), not .claude/skills, whose entries are links.

Environment: OPENADAPT_BUNDLE_KEY is the passphrase of sealed bundles
(workflow.json.enc); without it a sealed bundle is listed as unavailable
(missing_key). Set it in the env block of the MCP client that starts serve.`,
		Example: `  openadapt-agent serve
  openadapt-agent serve --bundles ~/openadapt/bundles
  openadapt-agent serve --bundles ~/openadapt/bundles --bundles ~/.agents/skills --labels ~/openadapt/labels.json
  openadapt-agent serve --bundles ~/openadapt/bundles --allow-run --runs-dir ~/openadapt/runs
  OPENADAPT_BUNDLE_KEY=… openadapt-agent serve --bundles ~/openadapt/sealed --tool-mode catalog`,
		Args: noArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			o.FlowCLISet = c.Flags().Changed("flow-cli")
			for _, r := range roots { // --bundles "" means none, as before
				if r != "" {
					o.BundleRoots = append(o.BundleRoots, r)
				}
			}
			if len(o.BundleRoots) > 0 {
				o.Bundles = o.BundleRoots[0]
			}
			// Nothing to serve and nothing to run: the sandbox.
			o.Sandbox = o.Bundles == "" && !o.AllowRun && !o.Tutorial && !o.Authoring
			if c.Flags().Changed("sandbox-engine") {
				o.SandboxEngine = sandboxEngine
			}
			o.Version = buildinfo.Version()
			// Nothing but JSON-RPC may reach stdout: route the process-wide
			// loggers to stderr.
			log.SetOutput(io.Err)
			slog.SetDefault(slog.New(slog.NewTextHandler(io.Err, &slog.HandlerOptions{Level: slog.LevelWarn})))

			srv, err := serve.New(o, io.Err)
			if err != nil {
				var ce *serve.ConfigError
				if errors.As(err, &ce) && ce.Flag {
					return usageError(errors.New(ce.Msg))
				}
				if errors.As(err, &ce) {
					fmt.Fprintf(io.Err, "serve: %s\n", oneLine(ce.Msg))
					return usageError(errCheckFailed)
				}
				return err
			}
			fmt.Fprint(io.Err, srv.Banner())
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGHUP)
			defer stop()
			if err := srv.Serve(ctx, io.In, io.Out); err != nil {
				if errors.Is(err, serve.ErrFrameTooLarge) {
					return errCheckFailed
				}
				return errors.New("serve: the session ended with an internal failure")
			}
			return nil
		},
	}
	f := c.Flags()
	f.SortFlags = false
	f.StringVar(&o.Mode, "mode", "", "a preset: sandbox (the synthetic sandbox, no Flow needed), production (= --allow-run; needs --bundles) or attended (= production + --allow-attended-actions); without it the other flags decide")
	f.StringArrayVar(&roots, "bundles", nil, "a bundle folder, a folder of bundle folders, or a folder of skill folders (<skill>/SKILL.md + <skill>/bundle/); repeatable: every root is served, in order")
	f.BoolVar(&o.AllowRun, "allow-run", false, "register one governed run tool per available workflow")
	f.BoolVar(&o.AllowProtectedExport, "allow-protected-export", false, "DANGER: add raw labels, recorded values, intents, local paths, report bodies and Flow output to results; only for a client inside the same protected data boundary")
	f.BoolVar(&o.AllowSyntheticRecordedDefaults, "allow-synthetic-recorded-defaults", false, "DEMO ONLY: omitted parameters fall back to recorded values inside Flow (requires --allow-run)")
	f.BoolVar(&o.AllowAttendedActions, "allow-attended-actions", false, "register the attended Reject/Teach/Escalate actions through the Flow-side helper (Continue and Skip also need --config with a headed web deployment)")
	f.StringVar(&o.AttendedActions, "attended-actions", "both", "both: the attended actions as model-visible tools and as app-only tools for MCP Apps cards; app-only: only the app-only tools, listed only to clients that render MCP Apps")
	f.StringVar(&o.URL, "url", "", "target URL passed to every flow run")
	f.StringVar(&o.Config, "config", "", "deployment config YAML, forwarded to flow run and certify")
	f.StringVar(&o.Policy, "policy", "", "policy name or path, forwarded to flow run and certify")
	f.StringVar(&o.RunsDir, "runs-dir", "", "run folders and the agent state folder; created only by a server that runs Flow (default <per-user state dir>/openadapt-agent/runs)")
	f.Float64Var(&o.Timeout, "timeout", 600, "hard limit in seconds per Flow process")
	f.BoolVar(&o.AllowURLOverride, "allow-url-override", false, "permit a per-call url argument")
	f.StringVar(&o.FlowCLI, "flow-cli", "openadapt-flow", "Flow command prefix (POSIX shell quoting, no expansion)")
	f.StringArrayVar(&o.ExtraRunArgs, "extra-run-arg", nil, "argument appended verbatim to every flow run (repeatable; use --extra-run-arg=--flag)")
	f.BoolVar(&o.Headed, "headed", false, "visible browser for the attended live session (overrides deployment.backend.headed to true)")
	f.BoolVar(&o.AllowModelGrounding, "allow-model-grounding", false, "let the attended live session use model grounding (overrides runtime.allow_model_grounding to true)")
	f.BoolVar(&o.Tutorial, "tutorial", false, "serve Flow's synthetic MockMed tutorial (read tools; with --allow-run also run_local_quickstart); --allow-run without --bundles implies it")
	f.BoolVar(&o.Authoring, "authoring", false, "register the 15 authoring tools (needs an openadapt_flow.authoring of the expected API; fails closed without it)")
	f.StringVar(&o.ToolMode, "tool-mode", "per-workflow", "per-workflow or catalog (search_workflows + run_workflow, for large bundle sets)")
	f.IntVar(&o.RunWait, "run-wait", 40, "seconds a run call waits before returning status running (1-3600)")
	f.StringArrayVar(&o.PassEnv, "pass-env", nil, "pass one more environment variable to Flow (repeatable, at most 32)")
	f.StringVar(&o.AuditLog, "audit-log", "", "audit log path, or off (default: <runs-dir>/.openadapt-agent/audit.jsonl when the server runs Flow; off when read-only)")
	f.StringVar(&o.Ledger, "ledger", "", "admission ledger file or evidence-root directory (default: the embedded snapshot)")
	f.StringVar(&o.Labels, "labels", "", "operator labels file: a short label and description per workflow id, shown in list/search/get and matched by search (write a starter with skill emit --labels-starter)")
	f.StringVar(&sandboxEngine, "sandbox-engine", serve.EngineSimulated, "the sandbox's engine: simulated (no Flow, no process, no state), flow (Flow's synthetic tutorial where Flow can produce the case) or auto (flow when the Flow helper's version probe passes)")
	f.StringVar(&o.FlowPython, "flow-python", "", "Python interpreter of the Flow install for the Flow-side helper (default: from the openadapt-flow script's shebang)")
	return c
}
