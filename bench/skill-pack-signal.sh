#!/usr/bin/env bash
# Shutdown latency of `openadapt-agent skill pack` (every command starts
# shutting down within 1 s of SIGINT/SIGTERM): packs
# the generated skill tree (bench/genskill, about MB megabytes of PNG-like
# templates) to .skill and .tar.zst, sends SIGTERM once the temporary archive
# holds at least 8 MiB (so the pack is mid-compression), and measures the time
# from the signal to the process's exit. Checks every run exits 1 and leaves
# no file in the output folder. Prints every run and the medians per format.
#
# Usage: bench/skill-pack-signal.sh [MB=200] [RUNS=7]
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-200} runs=${2:-7}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/openadapt-agent" ./cmd/openadapt-agent
go run ./bench/genskill -out "$work/pack-bench" -mb "$mb"
echo "tree: $(du -sb "$work/pack-bench" | cut -f1) bytes; $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
for fmt in skill tar.zst; do
  : >"$work/lat-$fmt"
  for i in $(seq "$runs"); do
    out="$work/out"; rm -rf "$out"; mkdir "$out"
    "$work/openadapt-agent" skill pack "$work/pack-bench" -o "$out/x.$fmt" >/dev/null 2>"$work/err" &
    pid=$!
    # Wait (polling; this is a benchmark, not a test) for 8 MiB in the temporary file.
    while :; do
      tmpf=$(compgen -G "$out/.x.$fmt.tmp-*" || true)
      if [ -n "$tmpf" ] && [ "$(stat -c %s "$tmpf" 2>/dev/null || echo 0)" -ge $((8 << 20)) ]; then break; fi
      kill -0 "$pid" 2>/dev/null || { echo "pack ended before the signal" >&2; exit 1; }
    done
    t0=$(date +%s%N)
    kill -TERM "$pid"
    rc=0; wait "$pid" || rc=$?
    t1=$(date +%s%N)
    [ "$rc" -eq 1 ] || { echo "exit $rc, want 1" >&2; cat "$work/err" >&2; exit 1; }
    [ -z "$(ls -A "$out")" ] || { echo "left: $(ls -A "$out")" >&2; exit 1; }
    ms=$(( (t1 - t0) / 1000000 ))
    echo "$fmt run $i: SIGTERM to exit ${ms} ms"
    echo "$ms" >>"$work/lat-$fmt"
  done
  echo "$fmt: median $(median <"$work/lat-$fmt") ms over $runs runs"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
