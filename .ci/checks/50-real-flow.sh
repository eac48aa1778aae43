#!/usr/bin/env bash
# Real Flow end to end. Runs only when OPENADAPT_REALFLOW_DIR names a
# prepared Flow runtime: a folder with bin/openadapt-flow (Flow's command
# line) and bin/flow-python (the interpreter Flow is installed in). Without
# one it says loudly that it skipped and exits 0: CI never fails for want
# of a runtime. With one it runs, each under `timeout`:
#   1. the real-Flow contract tests of the embedded helper (internal/flow/flowhelper);
#   2. the tutorial checks: a cold serve start prepares the tutorial once; a
#      warm start, `tutorial prepare` and the helper test reuse it;
#   3. the attended end-to-end checks through the real binary (serve +
#      helper) on that shared tutorial bundle; optionally (env
#      OPENADAPT_CI_HEADED_CONTINUE=1, off by default, needs
#      bin/with-xvfb) headed Continue;
#   4. the authoring checks (serve --authoring; authoring connect on a
#      pseudo-terminal; doctor's authoring line).
# The tests themselves live beside the code they check and skip the same
# way when run by hand without a runtime.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

rf_dir=${OPENADAPT_REALFLOW_DIR:-}
if [ -z "$rf_dir" ] || [ ! -x "$rf_dir/bin/openadapt-flow" ] || [ ! -x "$rf_dir/bin/flow-python" ]; then
  cat >&2 <<MSG
########################################################################
# 50-real-flow: SKIPPED -- no prepared Flow runtime.
# Set OPENADAPT_REALFLOW_DIR to a folder with bin/openadapt-flow and
# bin/flow-python (now: '${rf_dir}').
# The real-Flow checks (attended actions through the embedded helper,
# the tutorial, authoring) did NOT run.
########################################################################
MSG
  exit 0
fi
export OPENADAPT_REALFLOW_DIR
OPENADAPT_REALFLOW_DIR=$(cd "$rf_dir" && pwd)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
elapsed() { echo "$(( $(date +%s) - start ))s"; }
rf_flow="$OPENADAPT_REALFLOW_DIR/bin/openadapt-flow"
rf_python="$OPENADAPT_REALFLOW_DIR/bin/flow-python"
flow_version=$("$rf_python" -c 'import importlib.metadata as m; print(m.version("openadapt-flow"))')
echo "50-real-flow: runtime $OPENADAPT_REALFLOW_DIR (openadapt-flow $flow_version)"

echo "50-real-flow: helper contract tests against real Flow"
timeout 600 go test -count=1 -run 'RealFlow' ./internal/flow/flowhelper/

# ---------------------------------------------------------------- tutorial, cold serve start
# ONE tutorial preparation per CI run, made by the first,
# cold `serve --allow-run --runs-dir …` start without bundles (Flow's
# record/compile/certify through the embedded helper; the client's connect
# timeout is raised for this cold case only). Everything after it
# reuses that preparation: a second serve start, `openadapt-agent tutorial
# prepare` for the attended checks, the helper's real-Flow tutorial test.
# The official TypeScript SDK client calls run_local_quickstart: Flow must
# reach VERIFIED and the result must be exactly the tutorial's answer
# (status error, execution_outcome VERIFIED, effect_verified true, sealed
# false, the tutorial's own message). After shutdown no helper, MockMed or
# Flow process may be left.
tut_tmp="$tmp/tutorial"
tut_runs="$tut_tmp/runs"
mkdir -p "$tut_tmp/bin" "$tut_tmp/home"
go build -o "$tut_tmp/bin/openadapt-agent" ./cmd/openadapt-agent
echo "50-real-flow: npm @modelcontextprotocol/sdk@1.32.2"
npm install --silent --no-audit --no-fund --prefix "$tut_tmp/npm" @modelcontextprotocol/sdk@1.32.2 >/dev/null
cat >"$tut_tmp/npm/quickstart.mjs" <<'EOF'
// A real MCP client (official TypeScript SDK) against the real binary in
// tutorial mode: run_local_quickstart must reach Flow's VERIFIED and report
// exactly the tutorial's answer; every result validates against its outputSchema.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import Ajv from "ajv";

const [bin, runs, flow, python, home, mode, start] = process.argv.slice(2);
const fail = (msg) => { console.error("FAIL: " + msg); process.exit(1); };
const transport = new StdioClientTransport({
  command: bin,
  args: ["serve", "--allow-run", "--runs-dir", runs, "--flow-cli", flow, "--flow-python", python, "--run-wait", "40"],
  env: { PATH: process.env.PATH, HOME: home },
  stderr: "inherit",
});
const client = new Client({ name: "ci-tutorial", version: "1.0.0" });
// A cold start prepares the tutorial before it answers initialize (minutes
// under load); only that case gets the long connect timeout.
await client.connect(transport, start === "cold" ? { timeout: 1200000 } : undefined);
const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
const runTools = names.filter((n) => n.startsWith("run_"));
if (JSON.stringify(runTools) !== JSON.stringify(["run_local_quickstart"])) fail(`run tools ${runTools}`);
const tool = tools.find((t) => t.name === "run_local_quickstart");
if (tool._meta?.requires_seal !== true || tool.annotations?.readOnlyHint !== false) fail("annotations/_meta");
if (JSON.stringify(Object.keys(tool.inputSchema.properties)) !== JSON.stringify(["idempotency_key"])) fail("input schema");
const ajv = new Ajv({ strict: false, allErrors: true });
const schemas = new Map(tools.map((t) => [t.name, t.outputSchema]));
async function call(name, args) {
  const res = await client.callTool({ name, arguments: args }, undefined, { timeout: 600000 });
  const sc = res.structuredContent;
  if (!sc || !ajv.validate(schemas.get(name), sc)) fail(`${name}: ${JSON.stringify(ajv.errors)} ${JSON.stringify(sc)}`);
  return sc;
}
const lw = await call("list_workflows", {});
if (lw.workflows.length !== 1 || lw.workflows[0].id !== "local_quickstart") fail(`list_workflows ${JSON.stringify(lw)}`);
if (mode === "run") {
  const key = { idempotency_key: "ci-tutorial-quickstart-0001" };
  let r = await call("run_local_quickstart", key);
  while (r.status === "running") r = await call("get_run_report", { run_id: r.run_id, wait_ms: 25000 });
  const want = { status: "error", success: false, workflow_id: "local_quickstart", execution_outcome: "VERIFIED",
    effect_verified: true, sealed: false, requires_seal: true };
  for (const [k, v] of Object.entries(want)) if (r[k] !== v) fail(`${k}=${JSON.stringify(r[k])} in ${JSON.stringify(r)}`);
  for (const frag of ["Unsigned production success is failure", "tutorial completed", "Nothing needs to be retried"])
    if (!r.message.includes(frag)) fail(`message ${r.message}`);
  const again = await call("run_local_quickstart", key);
  if (!again.replayed || again.run_id !== r.run_id || again.message !== r.message) fail(`replay ${JSON.stringify(again)}`);
  console.log(`ok run_local_quickstart: ${r.status} ${r.execution_outcome} effect_verified=${r.effect_verified} (${r.run_id})`);
}
await client.close();
console.log(`tutorial client (${mode}, ${start} start): ok`);
EOF
tut_fail() { echo "50-real-flow: FAILED: $1" >&2; [ -z "${2:-}" ] || cat "$2" >&2
  tail -n 40 "$tut_runs"/.openadapt-agent/logs/helper-*.log >&2 || true; exit 1; }
for step in "run cold prepared" "list warm reused"; do
  read -r mode phase want <<<"$step"
  echo "50-real-flow: serve --allow-run (tutorial, $phase start, $mode)"
  tut_s=$(date +%s)
  timeout 1500 node "$tut_tmp/npm/quickstart.mjs" "$tut_tmp/bin/openadapt-agent" "$tut_runs" "$rf_flow" "$rf_python" "$tut_tmp/home" "$mode" "$phase" \
    2>"$tut_tmp/serve-$mode.err" || tut_fail "tutorial $phase start ($mode)" "$tut_tmp/serve-$mode.err"
  grep -q "^serve: synthetic tutorial ready ($want) in " "$tut_tmp/serve-$mode.err" ||
    tut_fail "the $phase serve start did not report 'ready ($want)'" "$tut_tmp/serve-$mode.err"
  grep -q 'tutorial enabled' "$tut_tmp/serve-$mode.err" || tut_fail "banner" "$tut_tmp/serve-$mode.err"
  if ! grep -q '; admission: only the prepared tutorial bundle is exempt, bound to its content digest sha256:[0-9a-f]\{64\};' "$tut_tmp/serve-$mode.err" ||
    grep -q 'admission gate off' "$tut_tmp/serve-$mode.err"; then tut_fail "the tutorial banner misstates admission" "$tut_tmp/serve-$mode.err"; fi
  echo "50-real-flow: tutorial $phase start ($mode) ok in $(( $(date +%s) - tut_s ))s: $(grep -o 'synthetic tutorial ready.*' "$tut_tmp/serve-$mode.err")"
done
# The local operator view of that one real run: its record
# is listed, Flow's stderr tail is kept 0600 beside it and shown only with
# --protected.
"$tut_tmp/bin/openadapt-agent" runs list --runs-dir "$tut_runs" --json >"$tut_tmp/runs.json" || {
  echo "50-real-flow: FAILED: runs list" >&2; exit 1; }
grep -q '"count": 1,' "$tut_tmp/runs.json" && grep -q '"workflow_id": "local_quickstart"' "$tut_tmp/runs.json" || {
  echo "50-real-flow: FAILED: runs list does not show the tutorial run" >&2; cat "$tut_tmp/runs.json" >&2; exit 1; }
tut_tail=$(ls "$tut_runs"/.openadapt-agent/runs/run-*.stderr)
[ "$(stat -c %a "$tut_tail")" = 600 ] || { echo "50-real-flow: FAILED: $tut_tail is not 0600" >&2; exit 1; }
tut_id=$(basename "$tut_tail" .stderr)
"$tut_tmp/bin/openadapt-agent" runs show "$tut_id" --runs-dir "$tut_runs" --json >"$tut_tmp/run.json" &&
  ! grep -q stderr_tail "$tut_tmp/run.json" &&
  "$tut_tmp/bin/openadapt-agent" runs show "$tut_id" --runs-dir "$tut_runs" --protected --json 2>/dev/null | grep -q '"stderr_tail": "' || {
  echo "50-real-flow: FAILED: runs show $tut_id" >&2; cat "$tut_tmp/run.json" >&2; exit 1; }
echo "50-real-flow: runs list/show: ok ($tut_id)"
# Nothing left behind: no helper (its program lives under the runs dir),
# MockMed (a thread of the helper) or Flow run (argv names the bundle).
sleep 1
if left=$(pgrep -af -- "$tut_runs"); then
  echo "50-real-flow: FAILED: processes left after shutdown:" >&2; echo "$left" >&2; exit 1
fi
if ls "$tut_runs"/synthetic-tutorial/deployment-*.yaml >/dev/null 2>&1; then
  echo "50-real-flow: FAILED: a deployment file outlived its server" >&2; exit 1
fi

echo "50-real-flow: tutorial prepare (reuses the cold start's preparation)"
HOME="$tut_tmp/home" timeout 900 "$tut_tmp/bin/openadapt-agent" tutorial prepare --runs-dir "$tut_runs" \
  --flow-cli "$rf_flow" --flow-python "$rf_python" >"$tut_tmp/prepare.out" 2>"$tut_tmp/prepare.err" || tut_fail "tutorial prepare" "$tut_tmp/prepare.err"
grep -q '^ready local_quickstart sha256:[0-9a-f]\{64\} ' "$tut_tmp/prepare.out" || tut_fail "tutorial prepare output" "$tut_tmp/prepare.out"
grep -q 'ready (reused)' "$tut_tmp/prepare.err" || tut_fail "tutorial prepare prepared again instead of reusing" "$tut_tmp/prepare.err"
# Exactly one preparation in this CI run: only the cold start recorded.
preps=$(cat "$tut_tmp"/serve-*.err "$tut_tmp/prepare.err" | grep -c 'recording the synthetic demonstration' || true)
[ "$preps" = 1 ] || tut_fail "the tutorial was prepared $preps times in this run (want exactly 1)"
echo "50-real-flow: tutorial: ok (prepared once, reused twice): $(cat "$tut_tmp/prepare.out")"

echo "50-real-flow: helper tutorial test against the shared preparation"
OPENADAPT_REALFLOW_TUTORIAL_DIR="$tut_runs/synthetic-tutorial" timeout 600 go test -count=1 -run 'RealFlowTutorial' ./internal/flow/flowhelper/

# ---------------------------------------------------------------- attended end to end
# The real binary + embedded helper + an MCP client with form elicitation
# (cmd/attended_realflow_test.go) on the shared tutorial bundle: two governed
# runs through the run tool halt on real durable pauses (fault=session) with
# no planted value on the wire; then list, reject, teach, escalate, replays,
# key reuse, a stale digest, Flow's decision journal, and a client without
# elicitation.
export OPENADAPT_REALFLOW_TUTORIAL="$tut_runs/synthetic-tutorial"
echo "50-real-flow: attended end to end (real binary, helper, Flow)"
timeout 900 go test -count=1 -run 'TestRealFlowAttendedE2E' ./cmd/
echo "50-real-flow: attended end to end passed ($(elapsed))"

# Optional, off by default (CI budget): headed Continue under Xvfb
# (cmd/attended_headed_realflow_test.go). A real run halts at step_002
# (drift=typelabel); `serve --allow-attended-actions --config … --headed`
# opens Flow's live session in a headed Chromium; realflow's scripted
# operator completes the step in that window with xdotool; continue_attention
# over MCP with form elicitation must return Flow's completed decision, the
# run must become VERIFIED with one record, and a same-key retry after the
# item closed must replay the same decision.
if [ "${OPENADAPT_CI_HEADED_CONTINUE:-0}" = 1 ] && [ -x "$OPENADAPT_REALFLOW_DIR/bin/with-xvfb" ]; then
  echo "50-real-flow: headed Continue under Xvfb (OPENADAPT_CI_HEADED_CONTINUE=1)"
  OPENADAPT_REALFLOW_HEADED=1 timeout 900 "$OPENADAPT_REALFLOW_DIR/bin/with-xvfb" \
    go test -count=1 -v -run 'TestRealFlowHeadedContinue' ./cmd/ | grep -E '^(---|ok|FAIL|PASS)|headed continue:|\s+attended_'
  echo "50-real-flow: headed Continue passed ($(elapsed))"
else
  echo "50-real-flow: headed Continue not run (set OPENADAPT_CI_HEADED_CONTINUE=1 and provide bin/with-xvfb to run it)"
fi

# ---------------------------------------------------------------- authoring
# Authoring gates itself by Flow's API, not its version (docs/helper.md,
# Version gate). A Flow without openadapt_flow.authoring (1.32) must fail
# closed: serve --authoring exits 2 with the exact dependency message, and
# the Go session refuses the same way (internal/authoring). A Flow with the
# module must pass the probe of the recorded API: serve --authoring then
# gets past it and, with neither --config nor --url, stops at the next
# check (the local window needs a deployment config), so no browser or
# desktop is driven here.
if "$rf_python" -c 'import openadapt_flow.authoring' 2>/dev/null; then
  has_authoring=1
  echo "50-real-flow: openadapt-flow $flow_version has openadapt_flow.authoring: its API must fit"
else
  has_authoring=0
  echo "50-real-flow: openadapt-flow $flow_version has no openadapt_flow.authoring: authoring must fail closed"
fi
timeout 300 go test -count=1 -run 'RealFlow' ./internal/authoring/
go build -o "$tmp/openadapt-agent" ./cmd/openadapt-agent
set +e
timeout 120 "$tmp/openadapt-agent" serve --authoring --flow-python "$rf_python" --runs-dir "$tmp/authoring-runs" \
  </dev/null >"$tmp/authoring.out" 2>"$tmp/authoring.err"
code=$?
set -e
if [ "$has_authoring" = 1 ]; then
  want="serve: authoring the local window needs --config: a deployment config whose backend Flow can build here (kind macos or linux); or pass --url and --headed to author a web application"
else
  want="serve: openadapt_flow.authoring is not available with openadapt-flow $flow_version; --authoring fails closed"
fi
if [ "$code" != 2 ] || [ "$(cat "$tmp/authoring.err")" != "$want" ] || [ -s "$tmp/authoring.out" ]; then
  echo "50-real-flow: FAILED: serve --authoring against real Flow exited $code" >&2
  cat "$tmp/authoring.err" >&2
  exit 1
fi
echo "50-real-flow: serve --authoring exits 2: $want"

# ---------------------------------------------------------------- authoring connect
# `authoring connect` needs a controlling terminal: the Go test gives the real
# binary one (a pseudo-terminal) and a fake mailbox on loopback
# (OPENADAPT_MAILBOX_ORIGIN), with real Flow's helper. It must exit 2 (the
# dependency error without the module; the local-window refusal after a
# passing probe with it) once on stderr and send nothing: no claim, no
# callback, the one-time bind token unspent (docs/authoring.md).
authoring_connect_check() {
  echo "50-real-flow: authoring connect on a terminal against real Flow sends nothing before its gates pass"
  if ! timeout 300 go test -count=1 -v -run '^TestRealFlowAuthoringConnectFailsClosed$' ./cmd/ >"$tmp/connect.out" 2>&1; then
    echo "50-real-flow: FAILED: authoring connect against real Flow" >&2
    tail -n 40 "$tmp/connect.out" >&2
    exit 1
  fi
  if ! grep -q -- '--- PASS: TestRealFlowAuthoringConnectFailsClosed' "$tmp/connect.out"; then
    echo "50-real-flow: FAILED: the authoring connect check did not run" >&2
    tail -n 40 "$tmp/connect.out" >&2
    exit 1
  fi
  echo "50-real-flow: authoring connect exits 2 on a terminal, nothing sent"
}
authoring_connect_check

# doctor's authoring line with --flow-python DIR/bin/flow-python (realflow's
# #!/bin/sh wrapper): not available without openadapt_flow.authoring,
# available when the module fits the recorded API.
authoring_doctor_check() {
  echo "50-real-flow: doctor's authoring line against real Flow"
  if ! timeout 300 go test -count=1 -v -run '^TestRealFlowAuthoringLine$' ./internal/doctor/ >"$tmp/doctor-authoring.out" 2>&1 ||
     ! grep -q -- '--- PASS: TestRealFlowAuthoringLine' "$tmp/doctor-authoring.out"; then
    echo "50-real-flow: FAILED: doctor's authoring line against real Flow" >&2
    tail -n 40 "$tmp/doctor-authoring.out" >&2
    exit 1
  fi
  echo "50-real-flow: doctor's authoring line follows authoring's own gate"
}
authoring_doctor_check

echo "50-real-flow: passed ($(elapsed))"
