#!/usr/bin/env bash
# Release stage: build the whole release of this commit the way a tagged
# release is built (GoReleaser v2.15.1 from internal/goreleaser.mod, snapshot
# mode, offline), sign it with a key made for this run, then check what was
# built (docs/release.md, "What CI checks"):
#   1. file lists of every archive and MCP bundle, notices, SBOMs, versions,
#      no repository-only material (go run ./internal/release check);
#   2. the linux/amd64 binary from its archive runs version, ledger verify
#      and release verify (which must refuse changed files);
#   3. one-byte changes everywhere are refused (go run ./internal/release flip);
#   4. a second build of the same commit, from another folder with an empty
#      build cache, is byte-identical.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
start=$(date +%s)
phase() { printf -- '-- %s (%s, %ds into the stage, load %s)\n' "$*" "$(date -u +%T)" $(($(date +%s) - start)) "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?)"; }

tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
commit=$(git rev-parse HEAD)

phase "tools (go tool with their own modfiles)"
mkdir -p "$tmp/bin"
cp "$(go tool -n -modfile=internal/goreleaser.mod goreleaser)" "$tmp/bin/goreleaser"
"$tmp/bin/goreleaser" --version | grep -E '^GitVersion:'
go tool -modfile=internal/cyclonedx.mod cyclonedx-gomod version | grep -E '^Version:'

# build DIR KEY [env…]: clone this commit into DIR (GoReleaser reads the
# commit and its date from git, and needs a remote) and build the release
# there, offline, signing with a fresh key whose public half goes to KEY.
build() {
  local dir=$1 key=$2
  shift 2
  git clone -q --no-hardlinks "$repo" "$dir"
  git -C "$dir" checkout -q --detach "$commit"
  (cd "$dir" && env "$@" GOPROXY=off OPENADAPT_RELEASE_PUBLIC_KEY="$key" \
    "$tmp/bin/goreleaser" release --snapshot --clean >"$dir.log" 2>&1) || {
    tail -50 "$dir.log"
    echo "goreleaser failed in $dir (log above)" >&2
    return 1
  }
  grep -E 'release succeeded' "$dir.log"
}

phase "build A (this machine's build cache)"
build "$tmp/a" "$tmp/a.pub"
dist=$tmp/a/dist
version=$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' "$dist/metadata.json")
test -n "$version"
echo "snapshot version $version"

phase "check the release set"
(cd "$tmp/a" && GOPROXY=off go run ./internal/release check -dist "$dist" -version "$version")

phase "the linux/amd64 binary from its archive"
mkdir "$tmp/x"
tar -xzf "$dist/openadapt-agent_${version}_linux_amd64.tar.gz" -C "$tmp/x"
bin=$tmp/x/openadapt-agent_${version}_linux_amd64/openadapt-agent
got=$("$bin" version)
test "$got" = "openadapt-agent $version" || { echo "version printed \"$got\", want \"openadapt-agent $version\"" >&2; exit 1; }
echo "$got"
"$bin" version --json | grep -q "\"version\": \"$version\""
"$bin" ledger verify >"$tmp/ledger.out" || { cat "$tmp/ledger.out"; exit 1; }
echo "ledger verify: exit 0"
# The shipped verifier accepts the set with the out-of-band key...
verify() { "$bin" release verify "$dist/checksums.txt" --bundle "$dist/checksums.txt.sigstore.json" --key "$tmp/a.pub" --insecure-ignore-tlog "$@"; }
verify >"$tmp/verify.out"
grep -c '^ok sha256:' "$tmp/verify.out" | grep -qx 18
verify --json | grep -q '"verified": true'
echo "release verify: 18 artifacts ok"
# ...and refuses one changed byte in an artifact, the checksums file and the
# bundle's digest (the flip step below changes every byte of the last two).
flip() { # FILE OFFSET: xor one byte with 0x01, run the verifier, restore.
  cp "$1" "$tmp/orig"
  local b
  b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  printf "$(printf '\\%03o' $((b ^ 1)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
  if verify >/dev/null 2>&1; then echo "release verify accepted $(basename "$1") with byte $2 changed" >&2; exit 1; fi
  cp "$tmp/orig" "$1"
}
flip "$dist/openadapt-agent_${version}_linux_amd64.tar.gz" 1000
flip "$dist/checksums.txt" 10
digest_at=$(grep -bo '"digest": *"' "$dist/checksums.txt.sigstore.json" | head -1 | cut -d: -f1)
flip "$dist/checksums.txt.sigstore.json" $((digest_at + 12))
verify >/dev/null
echo "release verify: refuses a changed artifact, checksums file and bundle digest"

phase "one-byte changes everywhere"
(cd "$tmp/a" && GOPROXY=off go run ./internal/release flip -dist "$dist" -key "$tmp/a.pub")

phase "build B (another folder, empty build cache)"
mkdir "$tmp/gocache-b"
build "$tmp/b" "$tmp/b.pub" GOCACHE="$tmp/gocache-b"
n=0
while read -r _ name; do
  cmp "$dist/$name" "$tmp/b/dist/$name" || { echo "not reproducible: $name differs between the two builds" >&2; exit 1; }
  n=$((n + 1))
done <"$dist/checksums.txt"
cmp "$dist/checksums.txt" "$tmp/b/dist/checksums.txt"
echo "reproducible: checksums.txt and its $n artifacts are byte-identical (only the signatures differ: each run has its own key)"

phase "done"
