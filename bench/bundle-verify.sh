#!/usr/bin/env bash
# Whole-process benchmark of `openadapt-agent bundle verify` (full
# verification), side by side in one interleaved run with
#   - the lower bound (bench/lowerbound: read + SHA-256 of every file + one
#     validating JSON pass, same worker count), and
#   - Flow's own Workflow.load over the same folders, when a Python that can
#     import openadapt_flow is given (FLOW_PYTHON, or
#     $OPENADAPT_REALFLOW_DIR/bin/flow-python); skipped with a message otherwise.
# Every binary is built static (CGO_ENABLED=0), as the release is.
#
# Usage:
#   bench/bundle-verify.sh [N=1000] [RUNS=5] [T=10] [S=20480]
#       N synthetic bundles of T templates of S bytes (bench/genbundles)
#   VECTOR=testdata/flow/plain/mockmed-triage-v3 bench/bundle-verify.sh [N=300] [RUNS=5]
#       N copies of one real Flow bundle
# Prints every run (A B C order, rotated each run), then medians and the
# per-run ratios' medians: verify/lowerbound and flow/verify, wall and CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000} runs=${2:-5} templates=${3:-10} size=${4:-20480}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

CGO_ENABLED=0 go build -o "$work/openadapt-agent" ./cmd/openadapt-agent
CGO_ENABLED=0 go build -o "$work/lowerbound" ./bench/lowerbound
if [ -n "${VECTOR:-}" ]; then
  mkdir -p "$work/bundles"
  for i in $(seq -w 1 "$n"); do cp -r "$VECTOR" "$work/bundles/b$i"; done
  what="$n copies of $VECTOR"
else
  CGO_ENABLED=0 go run ./bench/genbundles -out "$work/bundles" -n "$n" -templates "$templates" -size "$size"
  what="$n synthetic bundles x $templates templates x $size bytes"
fi
echo "bundles: $what = $(du -sh "$work/bundles" | cut -f1), $(find "$work/bundles" -type f | wc -l) files on disk; $(nproc) cores"

flowpy=${FLOW_PYTHON:-}
if [ -z "$flowpy" ] && [ -n "${OPENADAPT_REALFLOW_DIR:-}" ]; then flowpy=$OPENADAPT_REALFLOW_DIR/bin/flow-python; fi
if [ -n "$flowpy" ] && ! "$flowpy" -c 'import openadapt_flow.ir' 2>/dev/null; then
  echo "FLOW_PYTHON=$flowpy cannot import openadapt_flow: no Flow anchor"; flowpy=
fi
[ -n "$flowpy" ] || echo "no Flow anchor (set FLOW_PYTHON or OPENADAPT_REALFLOW_DIR to compare with Flow's Workflow.load)"

verify=("$work/openadapt-agent" bundle verify "$work/bundles")
lower=("$work/lowerbound" "$work/bundles")
flow=("$flowpy" bench/flow_load.py "$work/bundles")

# Warm the page cache and check that everything verifies (and that Flow loads all).
"${verify[@]}" >"$work/out.txt"
test "$(grep -c '^verified ' "$work/out.txt")" -eq "$n"
"${lower[@]}" >/dev/null
if [ -n "$flowpy" ]; then "${flow[@]}" | grep -q "flow: $n bundles"; fi

# measure NAME CMD...: one run; appends "wall cpu rss" to $work/NAME.
measure() {
  local name=$1; shift
  /usr/bin/time -f '%e %U %S %M' -o "$work/t" "$@" >/dev/null
  read -r w u s m <"$work/t"
  echo "$w $(echo "$u + $s" | bc -l) $m" >>"$work/$name"
  printf '  %-10s %6.3f s wall  %6.3f s CPU  %7s KiB peak RSS\n' "$name" "$w" "$(echo "$u + $s" | bc -l)" "$m"
}
names=(verify lower)
[ -n "$flowpy" ] && names+=(flow)
for i in $(seq "$runs"); do
  echo "run $i (load $(cut -d' ' -f1 /proc/loadavg)):"
  # Rotate the order so no command always runs first.
  for k in $(seq 0 $((${#names[@]} - 1))); do
    nm=${names[$(((k + i) % ${#names[@]}))]}
    case $nm in
      verify) measure verify "${verify[@]}" ;;
      lower) measure lower "${lower[@]}" ;;
      flow) measure flow "${flow[@]}" ;;
    esac
  done
done
med() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
col() { awk -v c="$2" '{print $c}' "$work/$1"; }
# ratio A B COL: median over runs of A/B, pairing run i with run i.
ratio() { paste <(col "$1" "$3") <(col "$2" "$3") | awk '{printf "%.4f\n", $1/$2}' | med; }
echo "load average after the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
for nm in "${names[@]}"; do
  printf 'median %-10s %6.3f s wall  %6.3f s CPU  max RSS %s KiB\n' "$nm" "$(col "$nm" 1 | med)" "$(col "$nm" 2 | med)" "$(col "$nm" 3 | sort -n | tail -1)"
done
printf 'verify / lower bound: %.2fx wall, %.2fx CPU (target <= 1.1x)\n' "$(ratio verify lower 1)" "$(ratio verify lower 2)"
if [ -n "$flowpy" ]; then
  printf 'Flow / verify:        %.1fx wall, %.1fx CPU (target >= 12x)\n' "$(ratio flow verify 1)" "$(ratio flow verify 2)"
fi
