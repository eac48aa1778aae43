#!/usr/bin/env bash
# Whole-process benchmark of `openadapt-agent bundle verify` (full
# verification) over N synthetic plaintext bundles of T templates of S bytes.
# Prints every run, then the median wall time and the peak RSS.
#
# Usage: bench/bundle-verify.sh [N=1000] [RUNS=5] [T=10] [S=20480]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000} runs=${2:-5} templates=${3:-10} size=${4:-20480}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

go build -o "$work/openadapt-agent" ./cmd/openadapt-agent
go run ./bench/genbundles -out "$work/bundles" -n "$n" -templates "$templates" -size "$size"
echo "bundles: $n x $templates templates x $size bytes = $(du -sh "$work/bundles" | cut -f1) on disk; $(nproc) cores"

# Warm the page cache and check that everything verifies.
"$work/openadapt-agent" bundle verify "$work/bundles" >"$work/out.txt"
test "$(grep -c '^verified ' "$work/out.txt")" -eq "$n"

times=() rss=() cpu=()
for i in $(seq "$runs"); do
  start=$(date +%s.%N)
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f '%M %U %S' -o "$work/rss" "$work/openadapt-agent" bundle verify "$work/bundles" >/dev/null
    read -r m u s <"$work/rss"
    rss+=("$m")
    cpu+=("$(echo "$u + $s" | bc -l)")
  else
    "$work/openadapt-agent" bundle verify "$work/bundles" >/dev/null
  fi
  end=$(date +%s.%N)
  t=$(echo "$end - $start" | bc -l)
  times+=("$t")
  printf 'run %d: %.3f s wall, %s s CPU (user+sys), peak RSS %s KiB\n' "$i" "$t" "${cpu[-1]:-?}" "${rss[-1]:-?}"
done
med() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
median=$(printf '%s\n' "${times[@]}" | med)
cpumed=$(printf '%s\n' "${cpu[@]:-0}" | med)
maxrss=$(printf '%s\n' "${rss[@]:-0}" | sort -n | tail -1)
echo "load average after the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'median CPU (user+sys): %.2f s\n' "$cpumed"
printf 'median wall: %.3f s over %d runs; peak RSS (max over runs): %s KiB (%.1f MiB)\n' "$median" "$runs" "$maxrss" "$(echo "$maxrss / 1024" | bc -l)"
