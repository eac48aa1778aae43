#!/usr/bin/env bash
# Distribution manifests: validate the MCPB manifest.json with the official
# validator (pinned, from npm), then run the offline Go checks of server.json
# against the vendored MCP registry schema and of the shared version.
set -euo pipefail
cd "$(dirname "$0")/../.."

MCPB_VERSION=2.1.2 # npm view @anthropic-ai/mcpb versions (2.1.2 is the newest, 2026-11-30)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

npm install --prefix "$tmp" --no-audit --no-fund --loglevel=error "@anthropic-ai/mcpb@${MCPB_VERSION}" >/dev/null
"$tmp/node_modules/.bin/mcpb" --version
"$tmp/node_modules/.bin/mcpb" validate manifest.json

# A manifest that must fail proves the validator is really checking.
sed 's/"type": "binary"/"type": "go"/' manifest.json >"$tmp/bad-manifest.json"
if "$tmp/node_modules/.bin/mcpb" validate "$tmp/bad-manifest.json" >/dev/null 2>&1; then
  echo "mcpb validate accepted server.type \"go\"; the validator is not checking" >&2
  exit 1
fi

go test -count=1 -run '^TestDist' ./cmd
