#!/usr/bin/env bash
# Builds the gRPC-Go test client (test/grpc-go, a test harness: the product is TypeScript) into
# .grpc-go/grpcgo-client with the Go toolchain of the machine, its modules from the Go module proxy.
# Quick when nothing changed since the last build.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"
out=.grpc-go/grpcgo-client
if [ -x "$out" ] && [ -z "$(find test/grpc-go -type f -newer "$out")" ]; then exit 0; fi
command -v go >/dev/null || { echo "Go is not installed: the gRPC-Go tests need it" >&2; exit 1; }
mkdir -p .grpc-go
(cd test/grpc-go && go build -o "../../$out" .)
