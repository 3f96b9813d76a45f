#!/usr/bin/env bash
# Lines stay readable: at most 120 columns in product and benchmark code (the formatter wraps code;
# this catches comments and strings it leaves alone). Tests are not checked: their titles and expected
# messages read best whole.
set -euo pipefail
cd "$(dirname "$0")/.."
long=$(git ls-files 'src/*.ts' 'bench/*.ts' | xargs awk 'length > 120 { print FILENAME ":" FNR ": " length " columns" }')
if [ -n "$long" ]; then
  echo "lines over 120 columns:"
  echo "$long"
  exit 1
fi
