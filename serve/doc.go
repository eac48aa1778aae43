// Package serve is `openadapt-agent serve`: the governed local-stdio MCP
// server for verified workflow bundles (shared/spec/mcp-surface.md, D1).
//
// [New] validates [Options] in the order of mcp-surface.md §1.3 (a
// *[ConfigError] carries the exact exit-2 copy), prepares the agent state
// directory, discovers bundles fail-soft and registers the tools; [Server.Serve]
// speaks newline-delimited JSON-RPC over a bounded transport (4 MiB frames,
// EOF withheld until every delivered request is answered, go-sdk#1061) and
// shuts down at EOF or cancellation, recording unfinished runs as interrupted.
//
// Every tool result is a PHI-safe allowlist projection: structuredContent
// that validates against the tool's declared outputSchema, the same JSON as
// text, and failure envelopes with stable codes and fixed recovery copy.
// Protected data (names, recorded values, intents, paths, report bodies,
// Flow output, exception text) reaches the wire only with
// [Options].AllowProtectedExport. Runs go through internal/flow/flowrun (Flow's
// fail-closed `run` as a child process); the server never executes anything
// itself. There is no HTTP listener.
//
// Map. server.go: New, Banner, Serve, Close. options.go: §1.3 validation.
// tools.go: registration, schemas bytes, §4.2 order, paging. dispatch.go:
// receiving middleware (unknown names, audit) and tool middleware (panics,
// argument decoding and checks, frame bound, output schema). workflows.go,
// report.go, attention.go: the read tools. runcall.go: the run call
// pipeline (§7.2) top to bottom; runmanager.go: live runs, waits, shutdown;
// outcome.go: the one frozen outcome and freeze; state.go, idempotency.go:
// records, owner locks, reconciliation, bindings; gate.go: admission via
// ledger; projection.go: every wire value; codes.go: every fixed copy.
// A run call: transport → dispatch → runcall → runmanager → flowrun →
// outcomeOf → freeze → projectRun.
//
// Stable: [New], [Options], [ConfigError], [Server.Serve], [Server.Banner],
// [Server.MCPServer], [Server.Close]. Everything else may change.
package serve
