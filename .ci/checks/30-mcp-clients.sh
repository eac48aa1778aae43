#!/usr/bin/env bash
# Real MCP clients against the real `openadapt-agent serve` binary over stdio
# (docs/mcp.md, Result envelopes), with the fake Flow (internal/testing/fakeflow) on PATH:
#   1. the official TypeScript SDK client (@modelcontextprotocol/sdk@1.32.2):
#      lists tools, calls every read tool, a run tool and failure cases, and
#      validates every structuredContent against the declared outputSchema
#      with ajv (which the SDK itself depends on);
#   2. the MCP Inspector CLI (@modelcontextprotocol/inspector@2.12.0 --cli):
#      tools/list, a read tool and a run tool; exit 5 for an isError result;
#   3. both clients against the modes (docs/mcp.md, Modes and Missing Flow):
#      `serve` with no flags is the sandbox (every case's result validates and
#      says sandbox: true, the long run resolves through get_run_report), and
#      `serve --mode production` with no openadapt-flow on PATH starts and
#      answers flow_not_found with the decision fields.
# Installs what it needs from the npm registry into a temporary prefix.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "build: openadapt-agent and the fake openadapt-flow"
mkdir -p "$tmp/bin"
go build -o "$tmp/bin/openadapt-agent" ./cmd/openadapt-agent
go build -o "$tmp/bin/openadapt-flow" ./internal/testing/fakeflow/cmd/fakeflow

echo "npm: @modelcontextprotocol/sdk@1.32.2 @modelcontextprotocol/inspector@2.12.0"
npm install --silent --no-audit --no-fund --prefix "$tmp/npm" \
  @modelcontextprotocol/sdk@1.32.2 @modelcontextprotocol/inspector@2.12.0 >/dev/null

bundles="$repo/testdata/flow/plain"
reports="$repo/testdata/flow/reports"
runs="$tmp/runs"
wf=workflow_70323b828fe8286e021894bf # plain/mockmed-triage-v3 (Python-parity id)
export PATH="$tmp/bin:$PATH"

cat >"$tmp/npm/client.mjs" <<'EOF'
// TypeScript SDK client: every call's structuredContent must validate
// against the tool's outputSchema (the SDK checks too and would throw -32602).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import Ajv from "ajv";

const [bin, bundles, runs, wf, path, reports] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: bin,
  args: ["serve", "--bundles", bundles, "--allow-run", "--runs-dir", runs],
  env: {
    PATH: path,
    HOME: process.env.HOME ?? "/tmp",
    OPENADAPT_FAKE_FLOW_REPORTS_DIR: reports,
    OPENADAPT_FAKE_FLOW_REPORT: "legacy-success",
  },
  stderr: "inherit",
});
const client = new Client({ name: "ci-ts-sdk", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const ajv = new Ajv({ strict: false, allErrors: true });
const schemas = new Map(tools.map((t) => [t.name, t.outputSchema]));
const fail = (msg) => { console.error("FAIL: " + msg); process.exit(1); };
for (const t of tools) {
  if (!t.outputSchema || t.outputSchema.type !== "object" || !Array.isArray(t.outputSchema.oneOf)) fail(`${t.name}: outputSchema`);
  if (t.inputSchema.additionalProperties !== false) fail(`${t.name}: open input schema`);
  const a = t.annotations ?? {};
  for (const k of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]) {
    if (typeof a[k] !== "boolean") fail(`${t.name}: annotation ${k}`);
  }
}
const names = tools.map((t) => t.name);
const want = ["list_workflows", "get_workflow", "get_run_report", "list_needs_attention", "get_attention_item"];
if (JSON.stringify(names.slice(0, 5)) !== JSON.stringify(want)) fail(`tool order ${names}`);
const run = `run_${wf}`;
if (!names.includes(run)) fail(`no ${run}`);
if (tools.find((t) => t.name === run)._meta?.requires_seal !== true) fail("requires_seal");

async function call(name, args, expectError) {
  const res = await client.callTool({ name, arguments: args });
  const sc = res.structuredContent;
  if (!sc) fail(`${name}: no structuredContent`);
  const validate = ajv.compile(schemas.get(name));
  if (!validate(sc)) fail(`${name}: ${JSON.stringify(validate.errors)}`);
  const matches = schemas.get(name).oneOf.filter((s) => ajv.validate(s, sc)).length;
  if (matches !== 1) fail(`${name}: ${matches} oneOf branches match`);
  if (JSON.stringify(JSON.parse(res.content[0].text)) !== JSON.stringify(sc)) fail(`${name}: text differs`);
  if (Boolean(res.isError) !== expectError) fail(`${name}: isError ${res.isError}`);
  console.log(`ok ${name}${expectError ? " (" + sc.error.code + ")" : sc.status ? " (" + sc.status + ")" : ""}`);
  return sc;
}
await call("list_workflows", {}, false);
await call("get_workflow", { workflow: wf }, false);
await call("list_needs_attention", {}, false);
const r = await call(run, { note: "synthetic", idempotency_key: "ci-ts-sdk-key-000001" }, false);
if (r.status !== "success") fail(`run status ${r.status}`);
const again = await call(run, { note: "synthetic", idempotency_key: "ci-ts-sdk-key-000001" }, false);
if (!again.replayed || again.run_id !== r.run_id) fail("idempotent replay");
const rep = await call("get_run_report", { run_id: r.run_id, wait_ms: 1000 }, false);
if (rep.status !== r.status) fail("report status");
// Failure envelopes validate too (the SDK validates them even when isError).
await call("get_workflow", { workflow: "workflow_000000000000000000000000" }, true);
await call("get_run_report", { run_id: "../secrets" }, true);
await call("get_attention_item", { attention_id: "000000000000000000000000" }, true);
await call(run, { note: "x", unknown: "y" }, true);
await call(run, { note: "x", url: "" }, true);
await client.close();
console.log("ts sdk client: ok");
EOF
echo "client: @modelcontextprotocol/sdk"
node "$tmp/npm/client.mjs" "$tmp/bin/openadapt-agent" "$bundles" "$runs" "$wf" "$PATH" "$reports"

echo "client: @modelcontextprotocol/inspector --cli"
inspector="$tmp/npm/node_modules/.bin/mcp-inspector"
server=("$tmp/bin/openadapt-agent" serve --bundles "$bundles" --allow-run --runs-dir "$runs")
envs=(-e "PATH=$PATH" -e "OPENADAPT_FAKE_FLOW_REPORTS_DIR=$reports" -e "OPENADAPT_FAKE_FLOW_REPORT=legacy-success")
"$inspector" --cli --method tools/list "${envs[@]}" -- "${server[@]}" >"$tmp/list.json"
"$inspector" --cli --method tools/call --tool-name get_workflow --tool-arg "workflow=$wf" "${envs[@]}" -- "${server[@]}" >"$tmp/read.json"
"$inspector" --cli --method tools/call --tool-name "run_$wf" --tool-arg note=synthetic "${envs[@]}" -- "${server[@]}" >"$tmp/run.json"
set +e
"$inspector" --cli --method tools/call --tool-name get_workflow --tool-arg workflow=workflow_000000000000000000000000 "${envs[@]}" -- "${server[@]}" >"$tmp/fail.json"
rc=$?
set -e
if [ "$rc" -ne 5 ]; then echo "FAIL: inspector exit $rc for an isError result (want 5)"; exit 1; fi

cat >"$tmp/npm/check.mjs" <<'EOF'
// Validate the Inspector's results against the declared outputSchemas.
import { readFileSync } from "node:fs";
import Ajv from "ajv";
const [list, ...calls] = process.argv.slice(2);
const tools = JSON.parse(readFileSync(list, "utf8")).tools;
const ajv = new Ajv({ strict: false });
for (const spec of calls) {
  const [file, name, status] = spec.split(":");
  const res = JSON.parse(readFileSync(file, "utf8"));
  const schema = tools.find((t) => t.name === name)?.outputSchema;
  if (!schema || !res.structuredContent || !ajv.validate(schema, res.structuredContent)) {
    console.error(`FAIL: inspector ${name}: ${JSON.stringify(ajv.errors)}`);
    process.exit(1);
  }
  const got = res.structuredContent.status ?? res.structuredContent.error?.code ?? "ok";
  if (status && got !== status) { console.error(`FAIL: inspector ${name}: ${got}`); process.exit(1); }
  console.log(`ok inspector ${name} (${got})`);
}
EOF
node "$tmp/npm/check.mjs" "$tmp/list.json" "$tmp/read.json:get_workflow:" "$tmp/run.json:run_$wf:success" "$tmp/fail.json:get_workflow:unknown_workflow"
mkdir -p "$tmp/noflow" # a PATH without openadapt-flow
cat >"$tmp/npm/modes.mjs" <<'EOF'
// The modes through the TypeScript SDK client: the sandbox with no flags,
// and --mode production without Flow.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import Ajv from "ajv";

const [bin, bundles, runs, wf, noflow] = process.argv.slice(2);
const ajv = new Ajv({ strict: false, allErrors: true });
const fail = (msg) => { console.error("FAIL: " + msg); process.exit(1); };

async function session(args) {
  const transport = new StdioClientTransport({
    command: bin, args, env: { PATH: noflow, HOME: process.env.HOME ?? "/tmp" }, stderr: "inherit",
  });
  const client = new Client({ name: "ci-ts-sdk-modes", version: "1.0.0" });
  await client.connect(transport);
  const { tools } = await client.listTools();
  const schemas = new Map(tools.map((t) => [t.name, t.outputSchema]));
  const call = async (name, args, expectError) => {
    const res = await client.callTool({ name, arguments: args });
    const sc = res.structuredContent;
    if (!sc) fail(`${name}: no structuredContent`);
    const validate = ajv.compile(schemas.get(name));
    if (!validate(sc)) fail(`${name}: ${JSON.stringify(validate.errors)}`);
    if (Boolean(res.isError) !== expectError) fail(`${name}: isError ${res.isError}`);
    return sc;
  };
  return { client, tools, call };
}

const decision = (sc, want, what) => {
  for (const [k, v] of Object.entries(want)) {
    if (JSON.stringify(sc[k]) !== JSON.stringify(v)) fail(`${what}: ${k} ${JSON.stringify(sc[k])}, want ${JSON.stringify(v)}`);
  }
};

// serve with no flags: the sandbox, no Flow needed.
{
  const { client, tools, call } = await session(["serve"]);
  const list = await call("list_workflows", {}, false);
  const byName = new Map(list.workflows.map((w) => [w.name, w.id]));
  const cases = {
    sandbox_success: { status: "success", record_changed: "yes", safe_to_retry: false, next_step: "none", proof: "simulated" },
    sandbox_halt: { status: "halt", next_step: "wait_for_person", safe_to_retry: false },
    sandbox_refused: { status: "refused", record_changed: "no", safe_to_retry: true, next_step: "fix_setup" },
    sandbox_timeout: { status: "timeout", record_changed: "unknown", safe_to_retry: false, next_step: "check_record" },
    sandbox_interrupted: { status: "interrupted", record_changed: "unknown", next_step: "check_record" },
    sandbox_unsigned_production_success: { status: "error", record_changed: "yes", safe_to_retry: false, effect_verified: true },
    sandbox_long_run: { status: "running", next_step: "call_get_run_report" },
  };
  for (const [name, want] of Object.entries(cases)) {
    const id = byName.get(name);
    if (!id || !tools.some((t) => t.name === `run_${id}`)) fail(`sandbox: no run tool for ${name}`);
    const sc = await call(`run_${id}`, {}, false);
    decision(sc, { ...want, sandbox: true, sandbox_engine: "simulated" }, name);
    if (name === "sandbox_refused" && !(sc.failed_checks?.length > 0)) fail("sandbox_refused: no failed_checks");
    if (name === "sandbox_long_run") {
      const rep = await call("get_run_report", { run_id: sc.run_id, wait_ms: 10000 }, false);
      decision(rep, { status: "success", sandbox: true }, "sandbox_long_run report");
    }
    console.log(`ok sandbox ${name} (${sc.status})`);
  }
  const bad = await call(`run_${byName.get("sandbox_invalid_inputs")}`, { visit_date: "2026-02-30", priority: "routine", note: "x" }, true);
  decision(bad, { record_changed: "no", safe_to_retry: true, next_step: "fix_inputs", sandbox: true }, "sandbox_invalid_inputs");
  if (bad.error.code !== "invalid_arguments" || !bad.invalid_inputs?.some((p) => p.input === "visit_date" && p.problem === "not_a_date")) fail(`sandbox_invalid_inputs: ${JSON.stringify(bad)}`);
  console.log("ok sandbox sandbox_invalid_inputs (invalid_arguments)");
  const q = await call("list_needs_attention", {}, false);
  if (q.open_count < 1) fail("sandbox: the halt opened no Needs Attention item");
  await client.close();
}

// --mode production without openadapt-flow: it starts, reads work, the run
// tool answers flow_not_found with the fix and the decision fields.
{
  const { client, call } = await session(["serve", "--mode", "production", "--bundles", bundles, "--runs-dir", runs + "-noflow"]);
  await call("get_workflow", { workflow: wf }, false);
  const sc = await call(`run_${wf}`, { note: "synthetic" }, true);
  if (sc.error.code !== "flow_not_found" || !/install openadapt-flow/.test(sc.error.recovery)) fail(`production without Flow: ${JSON.stringify(sc)}`);
  decision(sc, { record_changed: "no", safe_to_retry: true, next_step: "fix_setup", proof: "none" }, "production without Flow");
  console.log("ok --mode production without openadapt-flow (flow_not_found)");
  await client.close();
}
console.log("ts sdk client, modes: ok");
EOF
echo "client: @modelcontextprotocol/sdk, modes"
node "$tmp/npm/modes.mjs" "$tmp/bin/openadapt-agent" "$bundles" "$runs" "$wf" "$tmp/noflow"

echo "client: @modelcontextprotocol/inspector --cli, modes"
noenv=(-e "PATH=$tmp/noflow")
"$inspector" --cli --method tools/list "${noenv[@]}" -- "$tmp/bin/openadapt-agent" serve >"$tmp/sandbox-list.json"
"$inspector" --cli --method tools/call --tool-name list_workflows "${noenv[@]}" -- "$tmp/bin/openadapt-agent" serve >"$tmp/sandbox-read.json"
prod=("$tmp/bin/openadapt-agent" serve --mode production --bundles "$bundles" --runs-dir "$runs-noflow")
"$inspector" --cli --method tools/list "${noenv[@]}" -- "${prod[@]}" >"$tmp/prod-list.json"
set +e
"$inspector" --cli --method tools/call --tool-name "run_$wf" --tool-arg note=synthetic "${noenv[@]}" -- "${prod[@]}" >"$tmp/prod-run.json"
rc=$?
set -e
if [ "$rc" -ne 5 ]; then echo "FAIL: inspector exit $rc for flow_not_found (want 5)"; exit 1; fi
node "$tmp/npm/check.mjs" "$tmp/sandbox-list.json" "$tmp/sandbox-read.json:list_workflows:"
node "$tmp/npm/check.mjs" "$tmp/prod-list.json" "$tmp/prod-run.json:run_$wf:flow_not_found"
node -e '
const w = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).structuredContent.workflows;
if (w.length !== 8 || !w.every((x) => x.name.startsWith("sandbox_"))) { console.error("FAIL: inspector sandbox listing"); process.exit(1); }
console.log("ok inspector sandbox listing (8 sandbox_ workflows)");' "$tmp/sandbox-read.json"
echo "mcp clients: ok"
