#!/usr/bin/env bash
# Whole-process benchmark of `openadapt-agent skill pack DIR -o X.tar.zst`
# against `tar -cf - DIR | zstd -3 -T1` on the same generated skill tree (about
# 200 MB of PNG templates), measured in the same run, interleaved, with the
# page cache warm. Prints every run, the medians, the throughputs, their
# ratio (target >= 1.0), and checks that two packs are byte-identical.
#
# Usage: bench/skill-pack.sh [MB=200] [RUNS=5] [NICE]
#
# NICE (for example -15, needs root) runs both timed commands at that nice
# level, the same for both, to cut the noise of a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-200} runs=${2:-5} nice_level=${3:-}
if ! command -v zstd >/dev/null; then
  echo "installing zstd (apt-get)"
  apt-get install -y zstd >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y zstd >/dev/null; }
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

go build -o "$work/openadapt-agent" ./cmd/openadapt-agent
go run ./bench/genskill -out "$work/pack-bench" -mb "$mb"
bytes=$(du -sb "$work/pack-bench" | cut -f1)
echo "nice level: ${nice_level:-none}"
echo "tree: $bytes bytes, $(find "$work/pack-bench" -type f | wc -l) files; $(nproc) cores; $(zstd --version | head -1)"

ours() { "$work/openadapt-agent" skill pack "$work/pack-bench" -o "$work/ours.tar.zst" >/dev/null 2>&1; }
theirs() { tar -C "$work" -cf - pack-bench | zstd -3 -T1 -q -f -o "$work/theirs.tar.zst"; }
# timed CMD... prints "wall cpu" (cpu = user + sys, children included).
timed() {
  local pre=()
  if [ -n "$nice_level" ]; then pre=(nice -n "$nice_level"); fi
  "${pre[@]}" /usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >/dev/null 2>&1
  awk '{printf "%s %.2f\n", $1, $2 + $3}' "$work/time"
}
export -f ours theirs
export work

# Warm up: page cache and binaries.
ours; theirs
a=() b=() ca=() cb=()
for i in $(seq "$runs"); do
  read -r ta cta < <(timed bash -c ours)
  read -r tb ctb < <(timed bash -c theirs)
  a+=("$ta") b+=("$tb") ca+=("$cta") cb+=("$ctb")
  printf 'run %d: skill pack %.2fs (cpu %.2fs)   tar|zstd -3 -T1 %.2fs (cpu %.2fs)\n' "$i" "$ta" "$cta" "$tb" "$ctb"
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
ma=$(median "${a[@]}") mb_=$(median "${b[@]}")
printf 'median wall: skill pack %.2fs (%.0f MB/s, %s bytes out)   tar|zstd -3 -T1 %.2fs (%.0f MB/s, %s bytes out)\n' \
  "$ma" "$(echo "$bytes / $ma / 1000000" | bc -l)" "$(stat -c %s "$work/ours.tar.zst")" \
  "$mb_" "$(echo "$bytes / $mb_ / 1000000" | bc -l)" "$(stat -c %s "$work/theirs.tar.zst")"
printf 'median cpu:  skill pack %.2fs   tar|zstd -3 -T1 %.2fs\n' "$(median "${ca[@]}")" "$(median "${cb[@]}")"
printf 'throughput ratio (skill pack / tar|zstd, median wall): %.2f (target >= 1.00)\n' "$(echo "$mb_ / $ma" | bc -l)"

cp "$work/ours.tar.zst" "$work/first.tar.zst"
ours
if cmp -s "$work/ours.tar.zst" "$work/first.tar.zst"; then
  echo "byte-identical across two runs: yes ($(sha256sum "$work/ours.tar.zst" | cut -c1-16)…)"
else
  echo "byte-identical across two runs: NO"; exit 1
fi
