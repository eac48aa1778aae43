#!/usr/bin/env bash
# Real MCP clients against the real `openadapt-agent serve` binary over stdio
# (docs/mcp.md, Result envelopes), with the fake Flow (internal/testing/fakeflow) on PATH:
#   1. the official TypeScript SDK client (@modelcontextprotocol/sdk@1.32.2):
#      lists tools, calls every read tool, a run tool and failure cases, and
#      validates every structuredContent against the declared outputSchema
#      with ajv (which the SDK itself depends on);
#   2. the MCP Inspector CLI (@modelcontextprotocol/inspector@2.12.0 --cli):
#      tools/list, a read tool and a run tool; exit 5 for an isError result.
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
echo "mcp clients: ok"
