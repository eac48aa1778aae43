#!/usr/bin/env bash
# serve at 1,000 and 10,000 copies of one bundle (BENCHMARKS.md, area serve
# at scale): for every mode (read-only, --allow-run per-workflow, --allow-run
# catalog) and both counts, bench/servebench times warm starts to the first
# tools/list reply (each beside `bench/lowerbound -stat` over the same
# bundles), cold starts with full verification, peak RSS and list_workflows
# with default arguments; then prints the slopes per bundle between the two
# counts and their ratios to the targets.
#
# Usage: bench/serve-scale.sh [BUNDLE=testdata/flow/plain/floats-linear] [STARTS=5] [COLD=3] [LISTS=50]
# BIN=path uses that openadapt-agent binary instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
vector=${1:-testdata/flow/plain/floats-linear} starts=${2:-5} colds=${3:-3} lists=${4:-50}
work=${WORK:-$(mktemp -d)}
mkdir -p "$work/bin"
if [ -z "${BIN:-}" ]; then
  CGO_ENABLED=0 go build -o "$work/bin/openadapt-agent" ./cmd/openadapt-agent
  BIN=$work/bin/openadapt-agent
fi
go build -o "$work/bin/openadapt-flow" ./internal/testing/fakeflow/cmd/fakeflow
CGO_ENABLED=0 go build -o "$work/bin/lowerbound" ./bench/lowerbound
go build -o "$work/bin/servebench" ./bench/servebench
for n in 1000 10000; do
  [ -d "$work/b$n" ] || go run ./bench/genbundles -out "$work/b$n" -n "$n" -copy "$vector"
done
echo "bundle: $vector ($(find "$vector" | wc -l) entries); $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in read-only per-workflow catalog; do
  for n in 1000 10000; do
    "$work/bin/servebench" -mode "$mode" -bin "$BIN" -flow "$work/bin/openadapt-flow" -bundles "$work/b$n" \
      -starts "$starts" -cold "$colds" -reads 0 -runs 0 -lists "$lists" -lowerbound "$work/bin/lowerbound" |
      tee "$work/out.$mode.$n" | sed "s/^/[$mode $n] /"
  done
  awk -v mode="$mode" '
    /^RESULT/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[FILENAME, kv[1]] = kv[2] } }
    END {
      a = ARGV[1]; b = ARGV[2]
      s = (v[b, "warm_ms"] - v[a, "warm_ms"]) / 9; l = (v[b, "lb_ms"] - v[a, "lb_ms"]) / 9
      sc = (v[b, "warm_cpu_ms"] - v[a, "warm_cpu_ms"]) / 9; lc = (v[b, "lb_cpu_ms"] - v[a, "lb_cpu_ms"]) / 9
      printf "%s: warm slope %.1f us/bundle wall (lower bound %.1f: %.2fx, target <= 1.3x), %.1f us CPU (lower bound %.1f: %.2fx); warm at 10,000 %.0f ms (target <= 500)\n", mode, s, l, (l > 0 ? s / l : 0), sc, lc, (lc > 0 ? sc / lc : 0), v[b, "warm_ms"]
      printf "%s: cold slope %.1f us/bundle wall (target <= 150), %.1f us CPU; cold at 10,000 %.0f ms (target <= 1500)\n", mode, (v[b, "cold_ms"] - v[a, "cold_ms"]) / 9, (v[b, "cold_cpu_ms"] - v[a, "cold_cpu_ms"]) / 9, v[b, "cold_ms"]
      printf "%s: peak RSS slope %.2f KiB/bundle (target <= 8 KB), 10,000: %.1f MiB (target <= 128 MB)\n", mode, ((v[b, "cold_rss_kib"] > v[b, "warm_rss_kib"] ? v[b, "cold_rss_kib"] : v[b, "warm_rss_kib"]) - (v[a, "cold_rss_kib"] > v[a, "warm_rss_kib"] ? v[a, "cold_rss_kib"] : v[a, "warm_rss_kib"])) / 9000, (v[b, "cold_rss_kib"] > v[b, "warm_rss_kib"] ? v[b, "cold_rss_kib"] : v[b, "warm_rss_kib"]) / 1024
      printf "%s: list_workflows p50 %.3f ms at 1,000, %.3f ms at 10,000 (%.2fx, target <= 1.5x)\n", mode, v[a, "list_p50_ms"], v[b, "list_p50_ms"], (v[a, "list_p50_ms"] > 0 ? v[b, "list_p50_ms"] / v[a, "list_p50_ms"] : 0)
    }' "$work/out.$mode.1000" "$work/out.$mode.10000"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
