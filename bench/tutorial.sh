#!/usr/bin/env bash
# Tutorial benchmarks against real Flow: cold preparation
# (`tutorial prepare --rebuild`), warm preparation (reuse), and
# run_local_quickstart through the official TypeScript SDK client, each N
# times, whole process, wall clock. Usage:
#   bench/tutorial.sh BIN REALFLOW_DIR NPM_PREFIX_WITH_@modelcontextprotocol/sdk [N]
set -euo pipefail
bin=$1; rf=$2; npmdir=$3; n=${4:-3}
w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
export HOME=$w/home; mkdir -p "$HOME"
F=$rf/bin/openadapt-flow; P=$rf/bin/flow-python
t() { local s=$(date +%s.%N); "$@" >/dev/null 2>&1; echo "$(date +%s.%N) - $s" | bc; }
echo "load: $(uptime)"
for i in $(seq $n); do echo "cold $(t "$bin" tutorial prepare --runs-dir "$w/runs" --flow-cli "$F" --flow-python "$P" --rebuild)"; done
for i in $(seq $n); do echo "warm $(t "$bin" tutorial prepare --runs-dir "$w/runs" --flow-cli "$F" --flow-python "$P")"; done
cat >"$npmdir/bench.mjs" <<'JS'
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
const [bin, runs, flow, python, home, n] = process.argv.slice(2);
const c = new Client({ name: "bench", version: "1" });
await c.connect(new StdioClientTransport({ command: bin, args: ["serve", "--allow-run", "--runs-dir", runs, "--flow-cli", flow, "--flow-python", python, "--run-wait", "600"], env: { PATH: process.env.PATH, HOME: home }, stderr: "ignore" }));
for (let i = 0; i < Number(n); i++) {
  const s = Date.now();
  const r = await c.callTool({ name: "run_local_quickstart", arguments: { idempotency_key: `bench-quickstart-${Date.now()}-${i}` } }, undefined, { timeout: 900000 });
  console.log(`quickstart ${(Date.now() - s) / 1000} ${r.structuredContent.execution_outcome}`);
}
await c.close();
JS
node "$npmdir/bench.mjs" "$bin" "$w/runs" "$F" "$P" "$HOME" "$n"
echo "load: $(uptime)"
