#!/usr/bin/env bash
# Start-up side by side (BENCHMARKS.md, area start-up): `openadapt-agent
# version`, `openadapt-agent ledger verify` (the embedded snapshot) and
# bench/hello (a hello-world linking the same dependencies), interleaved,
# RUNS times each (default 31), static builds. Prints medians of wall and CPU
# (user+sys) in ms and the ratios to hello, plus this project's own package
# init from GODEBUG=inittrace=1 (median over the runs).
#
# BASE=<git revision> also builds that revision's binary (from `git archive`,
# same flags) and interleaves its `version` and `ledger verify` with the
# others, so before/after come from one run; and it runs the in-process work
# of `ledger verify` (ledger's BenchmarkVerifyEmbeddedCold, verifier built
# per op) for both revisions, interleaved ROUNDS times (default 5), printing
# the median CPU per op (the test binary's user+sys over OPS ops, default
# 200, minus one op's run) beside ns/op.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-31}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/openadapt-agent" ./cmd/openadapt-agent
CGO_ENABLED=0 go build -o "$tmp/hello" ./bench/hello
if [ -n "${BASE:-}" ]; then
  mkdir "$tmp/base-src"
  git archive "$BASE" | tar -x -C "$tmp/base-src"
  (cd "$tmp/base-src" && CGO_ENABLED=0 go build -o "$tmp/base" ./cmd/openadapt-agent &&
    CGO_ENABLED=0 go test -c -o "$tmp/base-ledger.test" ./ledger)
  CGO_ENABLED=0 go test -c -o "$tmp/ledger.test" ./ledger
fi

# The hello baseline must import what this module imports.
for p in $(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./cmd/openadapt-agent | grep '^github.com/OpenAdaptAI'); do
  go list -f '{{join .Imports "\n"}}' "$p"
done | sort -u | grep -v '^github.com/OpenAdaptAI' | grep -v '/internal/\|/internal$\|^internal/\|^vendor/\|^embed$\|^unsafe$\|^C$' >"$tmp/want"
sed -n 's/^\t_ "\(.*\)"$/\1/p' bench/hello/main.go | { cat; echo os; } | sort -u >"$tmp/have"
if ! diff -q "$tmp/want" "$tmp/have" >/dev/null; then
  echo "warning: bench/hello/main.go's imports differ from the module's:"; diff "$tmp/want" "$tmp/have" || true
fi

cases=(hello version ledger)
[ -n "${BASE:-}" ] && cases+=(version@base ledger@base)
run() {
  case $1 in
    hello) "$tmp/hello" ;;
    version) "$tmp/openadapt-agent" version ;;
    ledger) "$tmp/openadapt-agent" ledger verify --at 2026-11-30T00:00:00Z ;;
    version@base) "$tmp/base" version ;;
    ledger@base) "$tmp/base" ledger verify --at 2026-11-30T00:00:00Z ;;
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
  printf '%-12s wall median %7s ms   cpu median %7s ms\n' "$c" "$w" "$u"
  echo "$w $u" >"$tmp/t.$c.med"
done
read -r hw hu <"$tmp/t.hello.med"
for c in "${cases[@]:1}"; do
  read -r w u <"$tmp/t.$c.med"
  printf '%-12s / hello: %.2fx wall, %.2fx cpu\n' "$c" "$(echo "$w / $hw" | bc -l)" "$(echo "$u / $hu" | bc -l)"
done
printf "this project's package init (inittrace, median): %s ms\n" "$(median <"$tmp/init")"

[ -n "${BASE:-}" ] || exit 0
# In-process work, both revisions interleaved: CPU per op is the test
# binary's user+sys for OPS+1 ops minus that for one op, over OPS.
OPS=${OPS:-200}
ROUNDS=${ROUNDS:-5}
inproc() { # inproc BIN N: prints "cpu_ms ns_per_op"
  local TIMEFORMAT='%U %S' out t
  { t=$( { time "$1" -test.run '^$' -test.bench '^BenchmarkVerifyEmbeddedCold$' -test.benchtime "${2}x" >"$tmp/bench.out"; } 2>&1 ); } || true
  echo "$t" | awk '{printf "%s ", ($1+$2)*1000}'
  awk '/^BenchmarkVerifyEmbeddedCold/ {print $3}' "$tmp/bench.out"
}
for i in $(seq "$ROUNDS"); do
  for b in ledger.test base-ledger.test; do
    read -r c1 _ < <(inproc "$tmp/$b" 1)
    read -r cn ns < <(inproc "$tmp/$b" "$OPS")
    echo "$(echo "($cn - $c1) / $OPS" | bc -l) $ns" >>"$tmp/ip.$b"
  done
done
echo "in-process (BenchmarkVerifyEmbeddedCold, $OPS ops x $ROUNDS rounds, interleaved); load $(cut -d' ' -f1-3 /proc/loadavg)"
for b in ledger.test base-ledger.test; do
  printf '%-17s cpu/op median %6s ms   ns/op median %s\n' "${b%.test}" \
    "$(awk '{print $1}' "$tmp/ip.$b" | median)" "$(awk '{print $2}' "$tmp/ip.$b" | median)"
done
