#!/usr/bin/env bash
# Whole-process timings for the first-run experience: how long `version`
# (process start-up) and `doctor` take on this machine. Prints medians in ms.
#
#   bash bench/dist-startup.sh [RUNS]
#
# doctor runs against testdata/flow/plain (6 plaintext bundles, full
# verification) with the fake-free PATH of this shell, so the Flow probe is
# whatever `openadapt-flow` resolves to here (usually: not found).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-21}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$tmp/openadapt-agent" ./cmd/openadapt-agent

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_ms() { # command... -> elapsed ms of one run
  local s e
  s=$(date +%s%N)
  "$@" >/dev/null 2>&1 || true
  e=$(date +%s%N)
  echo $(((e - s) / 1000000))
}

echo "binary: $(stat -c %s "$tmp/openadapt-agent") bytes (linux/amd64, -trimpath -s -w)"
for _ in $(seq "$runs"); do time_ms "$tmp/openadapt-agent" version; done | median | sed 's/^/version: median ms /'
for _ in $(seq "$runs"); do time_ms "$tmp/openadapt-agent" doctor --bundles testdata/flow/plain --runs-dir "$tmp/runs"; done | median | sed 's/^/doctor --bundles testdata\/flow\/plain: median ms /'
for _ in $(seq "$runs"); do time_ms "$tmp/openadapt-agent" doctor --json; done | median | sed 's/^/doctor --json (no bundles): median ms /'
