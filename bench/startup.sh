#!/usr/bin/env bash
# Start-up side by side (BENCHMARKS.md, area start-up): `openadapt-agent
# version`, `openadapt-agent ledger verify` (the embedded snapshot) and
# bench/hello (a hello-world linking the same dependencies), interleaved,
# RUNS times each (default 31), static builds. Prints medians of wall and CPU
# (user+sys) in ms and the ratios to hello, plus this project's own package
# init from GODEBUG=inittrace=1 (median over the runs).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-31}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/openadapt-agent" ./cmd/openadapt-agent
CGO_ENABLED=0 go build -o "$tmp/hello" ./bench/hello

# The hello baseline must import what this module imports.
for p in $(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./cmd/openadapt-agent | grep '^github.com/OpenAdaptAI'); do
  go list -f '{{join .Imports "\n"}}' "$p"
done | sort -u | grep -v '^github.com/OpenAdaptAI' | grep -v '/internal/\|/internal$\|^internal/\|^vendor/\|^embed$\|^unsafe$\|^C$' >"$tmp/want"
sed -n 's/^\t_ "\(.*\)"$/\1/p' bench/hello/main.go | { cat; echo os; } | sort -u >"$tmp/have"
if ! diff -q "$tmp/want" "$tmp/have" >/dev/null; then
  echo "warning: bench/hello/main.go's imports differ from the module's:"; diff "$tmp/want" "$tmp/have" || true
fi

cases=(hello version ledger)
run() {
  case $1 in
    hello) "$tmp/hello" ;;
    version) "$tmp/openadapt-agent" version ;;
    ledger) "$tmp/openadapt-agent" ledger verify --at 2026-11-30T00:00:00Z ;;
  esac
}
for c in "${cases[@]}"; do run "$c" >/dev/null 2>&1 || true; done # warm the page cache
TIMEFORMAT='%R %U %S'
for i in $(seq "$RUNS"); do
  for c in "${cases[@]}"; do
    { time run "$c" >/dev/null 2>&1 || true; } 2>>"$tmp/t.$c"
  done
  GODEBUG=inittrace=1 "$tmp/openadapt-agent" version 2>&1 >/dev/null |
    awk '/OpenAdaptAI\/openadapt-agent/ {s += $5} END {print s}' >>"$tmp/init"
done
median() { sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.2f", m}'; }
echo "load average after the runs: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $RUNS runs each, interleaved"
for c in "${cases[@]}"; do
  w=$(awk '{print $1*1000}' "$tmp/t.$c" | median)
  u=$(awk '{print ($2+$3)*1000}' "$tmp/t.$c" | median)
  printf '%-8s wall median %7s ms   cpu median %7s ms\n' "$c" "$w" "$u"
  echo "$w $u" >"$tmp/t.$c.med"
done
read -r hw hu <"$tmp/t.hello.med"
for c in version ledger; do
  read -r w u <"$tmp/t.$c.med"
  printf '%-8s / hello: %.2fx wall, %.2fx cpu\n' "$c" "$(echo "$w / $hw" | bc -l)" "$(echo "$u / $hu" | bc -l)"
done
printf "this project's package init (inittrace, median): %s ms\n" "$(median <"$tmp/init")"
