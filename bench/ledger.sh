#!/usr/bin/env bash
# Whole-process timings of `openadapt-agent ledger verify` (BENCHMARKS.md,
# area ledger): the embedded snapshot, and generated evidence roots whose
# registries hold 2,500 / 5,000 / 10,000 entries. Prints the median of RUNS
# runs (default 21) per case, in milliseconds. No hyperfine: a plain loop.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-21}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/openadapt-agent" ./cmd/openadapt-agent
go build -o "$tmp/ledgerroot" ./bench/ledgerroot

median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f", m}'; }

# time_case NAME ARGS...: run the binary RUNS times; print the median wall
# time and the median CPU time (user+sys) in ms. On a shared, loaded
# machine the CPU time is the steadier figure.
time_case() {
	local name=$1; shift
	"$tmp/openadapt-agent" "$@" >/dev/null 2>&1 || true # warm the page cache
	local TIMEFORMAT='%R %U %S'
	for _ in $(seq "$RUNS"); do
		{ time "$tmp/openadapt-agent" "$@" >/dev/null 2>&1 || true; } 2>&1
	done >"$tmp/times"
	local wall cpu
	wall=$(awk '{print $1*1000}' "$tmp/times" | median)
	cpu=$(awk '{print ($2+$3)*1000}' "$tmp/times" | median)
	printf "%-34s wall median %7s ms   cpu median %7s ms   (%s runs)\n" "$name" "$wall" "$cpu" "$RUNS"
}

time_case "embedded snapshot" ledger verify --at 2026-11-30T00:00:00Z
for n in 2500 5000 10000; do
	pin=$("$tmp/ledgerroot" -entries "$n" -out "$tmp/root$n")
	size=$(wc -c <"$tmp/root$n/evidence-registry.json")
	time_case "registry $n entries (${size}B)" ledger verify --signer-registry-identity "$pin" --at 2026-06-01T00:00:00Z "$tmp/root$n"
done
