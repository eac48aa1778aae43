#!/usr/bin/env bash
# Real Flow 1.32.0 end to end (flow-helper.md §9.3, §12.20; owner a13).
#
# Builds a fresh real Flow runtime with ../shared/realflow/setup (Flow's own
# code, a real Chromium, MockMed), exports OPENADAPT_REALFLOW_DIR and runs,
# each under `timeout`:
#   1. the real-Flow contract tests of the embedded helper (internal/flowhelper);
#   2. the attended end-to-end checks through the real binary (serve + helper);
#   3. [t14] the tutorial checks, sharing one tutorial preparation;
#   4. [u15] the authoring check.
# Skipped with a loud message only when ../shared/realflow is absent; red when
# it exists and setup fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
# OPENADAPT_REALFLOW_SRC overrides the location (a worktree whose parent has
# no shared/ folder); CI uses the default.
realflow_src=${OPENADAPT_REALFLOW_SRC:-$(cd "$repo/.." && pwd)/shared/realflow}

if [ ! -x "$realflow_src/setup" ]; then
  cat >&2 <<MSG
########################################################################
# 50-real-flow: SKIPPED -- $realflow_src is absent.
# The real-Flow checks (attended actions through the embedded helper,
# the tutorial, authoring) did NOT run.
########################################################################
MSG
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
elapsed() { echo "$(( $(date +%s) - start ))s"; }

echo "50-real-flow: setup into a fresh directory ($tmp/realflow)"
if ! timeout 1500 "$realflow_src/setup" "$tmp/realflow" >"$tmp/setup.out" 2>"$tmp/setup.err"; then
  echo "50-real-flow: FAILED: ../shared/realflow/setup failed" >&2
  tail -n 30 "$tmp/setup.err" >&2 || true
  exit 1
fi
tail -n 1 "$tmp/setup.out"
export OPENADAPT_REALFLOW_DIR="$tmp/realflow"
echo "50-real-flow: realflow ready ($(elapsed))"

echo "50-real-flow: helper contract tests against real Flow"
timeout 600 go test -count=1 -run 'RealFlow' ./internal/flowhelper/

# ---------------------------------------------------------------- shared tutorial preparation
# One real tutorial bundle (Flow's record + compile + certify against MockMed)
# for every check below (decision §12.20). Its own HOME: the runs that use it
# bring their own authority database.
echo "50-real-flow: preparing Flow's tutorial bundle once"
mkdir -p "$tmp/tut-home"
if ! HOME="$tmp/tut-home" timeout 900 "$OPENADAPT_REALFLOW_DIR/bin/openadapt-flow" tutorial --out "$tmp/tutorial" \
    >"$tmp/tutorial.out" 2>&1 || [ ! -f "$tmp/tutorial/bundle/workflow.json" ]; then
  echo "50-real-flow: FAILED: openadapt-flow tutorial did not produce a bundle" >&2
  tail -n 30 "$tmp/tutorial.out" >&2 || true
  exit 1
fi
export OPENADAPT_REALFLOW_TUTORIAL="$tmp/tutorial"
echo "50-real-flow: tutorial bundle ready ($(elapsed))"

# ---------------------------------------------------------------- attended e2e (a13)
# The real binary + embedded helper + an MCP client with form elicitation
# (cmd/attended_realflow_test.go): two governed runs through the run tool
# halt on real durable pauses (fault=session) with no planted value on the
# wire; then list, reject, teach, escalate, replays, key reuse, a stale
# digest, Flow's decision journal, and a client without elicitation.
echo "50-real-flow: attended end to end (real binary, helper, Flow)"
timeout 900 go test -count=1 -run 'TestRealFlowAttendedE2E' ./cmd/
echo "50-real-flow: attended end to end passed ($(elapsed))"

# ---------------------------------------------------------------- tutorial (t14)
# t14: the tutorial checks go here; share one tutorial preparation with the
# attended checks (decision §12.20).

# ---------------------------------------------------------------- authoring (u15)
# Flow 1.32.0 has no openadapt_flow.authoring: serve --authoring must fail
# closed, exit 2, with the exact dependency message (flow-helper.md §12.1),
# and the Go session must refuse the same way (internal/authoring).
echo "50-real-flow: authoring fails closed against real Flow"
timeout 300 go test -count=1 -run 'RealFlow' ./internal/authoring/
flow_python=$(sed -n 's/^ *"flow_python": *"\(.*\)",*$/\1/p' "$OPENADAPT_REALFLOW_DIR/realflow.json")
flow_version=$(sed -n 's/^ *"flow_version": *"\(.*\)",*$/\1/p' "$OPENADAPT_REALFLOW_DIR/realflow.json")
go build -o "$tmp/openadapt-agent" ./cmd/openadapt-agent
set +e
timeout 120 "$tmp/openadapt-agent" serve --authoring --flow-python "$flow_python" --runs-dir "$tmp/authoring-runs" \
  </dev/null >"$tmp/authoring.out" 2>"$tmp/authoring.err"
code=$?
set -e
want="serve: openadapt_flow.authoring is not available with openadapt-flow $flow_version; --authoring fails closed"
if [ "$code" != 2 ] || [ "$(cat "$tmp/authoring.err")" != "$want" ] || [ -s "$tmp/authoring.out" ]; then
  echo "50-real-flow: FAILED: serve --authoring against real Flow exited $code" >&2
  cat "$tmp/authoring.err" >&2
  exit 1
fi
echo "50-real-flow: serve --authoring exits 2: $want"

echo "50-real-flow: passed ($(elapsed))"
