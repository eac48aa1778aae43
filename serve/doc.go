// Package serve is `openadapt-agent serve`: the governed local-stdio MCP
// server for verified workflow bundles (docs/mcp.md).
//
// [New] validates [Options] in the documented order (a *[ConfigError]
// carries the exact exit-2 copy), prepares the agent state directory,
// discovers bundles fail-soft and has each feature register its tools;
// [Server.Serve] speaks newline-delimited JSON-RPC over a bounded transport
// (4 MiB frames, the end of input withheld until every delivered request is
// answered) and shuts down at the end of input or cancellation, recording
// unfinished runs as interrupted.
//
// Every tool result is a PHI-safe allowlist projection: structuredContent
// that validates against the tool's declared outputSchema, the same JSON as
// text, and failure envelopes with stable codes and fixed recovery copy.
// Protected data (names, recorded values, intents, paths, report bodies,
// Flow output, exception text) reaches the wire only with
// [Options].AllowProtectedExport. Runs go through internal/flow/flowrun
// (Flow's fail-closed `run` as a child process); the server never executes
// anything itself. There is no HTTP listener.
//
// Map. The protocol engine: server.go (Server: New, Banner, Serve, Close),
// options.go (validation), tools.go (the registry: tool entries, exact
// schema bytes, the wire order, tools/list pages), dispatch.go (receiving
// middleware: unknown names, audit; tool middleware: panics, arguments,
// frame bound, output schema), audit.go, schemas.go, projection.go (every
// wire type), codes.go (every fixed copy), and the stdio transport in
// serve/internal/stdio. The features, each a type that registers its own
// tools with explicit dependencies:
//
//   - catalogTools (workflows.go): list_workflows or search_workflows,
//     get_workflow; over the catalog (catalog.go) that discovery builds
//     (discover.go, cache.go, snapshot_*.go: bundleLoader), with each
//     workflow's card (cards.go, read by internal/cards).
//   - runTools (runcall.go, inputs.go, report.go, runmanager.go,
//     outcome.go, decision.go): the run tools, their typed inputs and
//     get_run_report; the run call reads top to bottom in runTools.call,
//     the run manager owns the run, and its frozen outcome answers through
//     the run's done channel; decision.go is the one table of the decision
//     fields every run result and run tool failure carries. Run state is
//     internal/runstore's; the admission gate (gate.go) is ledger's.
//   - attentionTools (attention.go, attended.go): the Needs Attention tools
//     and the attended actions, which decide through attention.Decider;
//     serve keeps the tool table, the form (elicit.go) and the map from a
//     decision's kind to a result or an error code.
//   - tutorialTools (tutorial.go) and authoringTools (authoring.go).
//   - sandbox (sandbox.go): serve without --bundles, --tutorial,
//     --authoring or --allow-run; synthetic workflows served by the
//     catalog, their simulated runs (its own run tools and
//     get_run_report) and Needs Attention items (an attentionTools source,
//     decided through the same form), every result marked sandbox: true.
//
// The features share the Flow helper (helper.go, started by
// flowhelper.Launch), the Flow command (flow.go) and the form
// (elicit.go). A run call: transport → dispatch → runTools.call →
// runManager.start → flowrun → outcomeOf → freeze → done → projectRun.
//
// Stable: [New], [Options], [ConfigError], [Server.Serve], [Server.Banner],
// [Server.MCPServer], [Server.Close], [ErrFrameTooLarge], [RunMessage],
// [RunningMessage]. Everything else may change.
package serve
