#!/usr/bin/env bash
# The MCP Apps cards in a real browser (docs/mcp.md "MCP Apps"): headless
# Chromium renders each card through a host page (test/apps/cards.mjs)
# bridged to a real `openadapt-agent serve` over stdio: with the fake Flow
# (internal/testing/fakeflow) and the fake Flow helper
# (internal/testing/fakehelper), and as the sandbox (serve with no flags,
# every simulated case). It checks each card state's fields, that
# planted secrets (bundle data, tool arguments, Flow output) never reach the
# DOM, that no request leaves the page and the CSP blocks nothing the card
# needs, and that a click on Escalate makes exactly one call of the app-only
# tool, one confirmation form and the decision, and a retry with the same
# key a replay. Installs what it needs: Debian's chromium when missing, and
# test/apps's npm packages from its package-lock.json.
# APPS_SCREENSHOTS=DIR keeps the screenshots there (the README's come from
# APPS_SCREENSHOTS=docs/images).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

chromium=$(command -v chromium || true)
if [ -z "$chromium" ]; then
  echo "installing Debian's chromium"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  chromium=$(command -v chromium)
fi
"$chromium" --version

echo "build: openadapt-agent, the fake openadapt-flow and the fake Flow helper"
mkdir -p "$tmp/bin" "$tmp/helper"
go build -o "$tmp/bin/openadapt-agent" ./cmd/openadapt-agent
go build -o "$tmp/bin/openadapt-flow" ./internal/testing/fakeflow/cmd/fakeflow
CGO_ENABLED=0 go build -o "$tmp/helper/python3" ./internal/testing/fakehelper/cmd/fakehelper

echo "npm ci: test/apps"
npm ci --silent --no-audit --no-fund --prefix test/apps >/dev/null

# The attended fixture: a run paused by Flow with a signed capability.
mkdir -p "$tmp/att/runs" "$tmp/att/record" "$tmp/att/bundles"
cp -a testdata/flow/attended/runs/run-0001 "$tmp/att/runs/run-0001"
chmod 600 "$tmp/att/runs/run-0001/.attended_capability.key"
chmod 700 "$tmp/att/runs"
cp -a testdata/flow/plain/mockmed-triage-v3 "$tmp/att/bundles/mockmed-triage-v3"

shots=${APPS_SCREENSHOTS:-$tmp/shots}
case $shots in /*) ;; *) shots=$repo/$shots ;; esac

python3 - "$tmp" "$repo" "$chromium" "$shots" >"$tmp/config.json" <<'PY'
import json, sys
tmp, repo, chromium, shots = sys.argv[1:]
wf = json.load(open(f"{repo}/testdata/flow/plain/mockmed-triage-v3/workflow.json"))
# Bundle data: recorded values, step intents and the operator notes.
bundle = [v for v in wf["params"].values() if isinstance(v, str)]
bundle += [s["intent"] for s in wf["steps"] if isinstance(s.get("intent"), str) and len(s["intent"]) > 8]
bundle += [l.strip() for l in open(f"{repo}/testdata/flow/plain/mockmed-triage-v3/operator-notes.txt") if len(l.strip()) > 8]
arg_secret = "CANARY-TOOL-ARGUMENT-4f1d"
flow_secret = "CANARY-FLOW-OUTPUT-9a2e"
env = {"PATH": f"{tmp}/bin:/usr/bin:/bin", "HOME": f"{tmp}/home", "XDG_STATE_HOME": f"{tmp}/state", "XDG_CACHE_HOME": f"{tmp}/cache",
       "OPENADAPT_FAKE_FLOW_REPORTS_DIR": f"{repo}/testdata/flow/reports",
       "OPENADAPT_FAKE_FLOW_STDOUT": flow_secret, "OPENADAPT_FAKE_FLOW_STDERR": flow_secret}
def run(name, extra_args=(), shot=None, final=None, view=None, **knobs):
    args = ["--bundles", f"{repo}/testdata/flow/plain", "--allow-run", "--runs-dir", f"{tmp}/runs-{name}", "--audit-log", "off", *extra_args]
    return {"name": name, "args": args, "env": {f"OPENADAPT_FAKE_FLOW_{k.upper()}": v for k, v in knobs.items()},
            "shot": shot, "final": final, "view": view or {}}
cfg = {
    "bin": f"{tmp}/bin/openadapt-agent", "chromium": chromium, "shots": shots, "env": env,
    "runTool": "run_workflow_70323b828fe8286e021894bf",  # plain/mockmed-triage-v3
    "argSecret": arg_secret, "secrets": bundle + [arg_secret, flow_secret],
    "runStates": [
        run("success", shot="apps-run-success.png", report="legacy-success"),
        run("verified unsigned", report="standard-verified"),
        run("halt", shot="apps-run-halt.png", report="standard-halted"),
        run("halt dark 320px", shot="apps-run-halt-dark.png", report="standard-halted", view={"scheme": "dark", "width": 320}),
        run("governed refusal", shot="apps-run-refused.png", refuse="certification"),
        run("failed", report="standard-failed", exit="1"),
        run("timeout", extra_args=["--timeout", "1"], mode="hang"),
        run("running then done", extra_args=["--run-wait", "1"], final="success", report="legacy-success", sleep="3s"),
    ],
    # serve with no flags: the simulated sandbox, one workflow per case.
    "sandbox": {"args": ["--audit-log", "off"], "env": {}, "cases": [
        {"name": "success", "args": {}},
        {"name": "halt", "args": {}, "shot": "apps-sandbox-halt.png"},
        {"name": "refused", "args": {}},
        {"name": "invalid_inputs", "args": {"visit_date": "2026-02-30", "priority": "routine", "note": arg_secret}},
        {"name": "timeout", "args": {}},
        {"name": "interrupted", "args": {}},
        {"name": "long_run", "args": {}, "final": "success"},
        {"name": "unsigned_production_success", "args": {}},
    ]},
    "attention": {
        "args": ["--bundles", f"{tmp}/att/bundles", "--allow-attended-actions", "--runs-dir", f"{tmp}/att/runs",
                 "--flow-python", f"{tmp}/helper/python3", "--audit-log", "off"],
        "env": {"OPENADAPT_FAKE_HELPER_RECORD": f"{tmp}/att/record", "OPENADAPT_FAKE_FLOW_VERSION": "1.32.0"},
        # Flow's own halt reason and the text it observed on screen.
        "secrets": ["Please verify you are human", "Verify you are human"] + bundle,
    },
}
json.dump(cfg, sys.stdout)
PY

node test/apps/cards.mjs "$tmp/config.json"
