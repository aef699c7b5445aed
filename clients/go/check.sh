#!/usr/bin/env bash
# Builds the Go client into BUILD_DIR and runs its tests (against two real `idforge
# serve` it starts: IDFORGE_BIN, default <repo>/build/idforge).
#
#   clients/go/check.sh BUILD_DIR               build, vet, test
#   clients/go/check.sh --build-only BUILD_DIR  build only
#
# Everything goes to BUILD_DIR: the Go build cache and GOPATH, bin/idforge-parse,
# bin/idforge-bench, and BUILD_DIR/parse, a wrapper of the parse tool
# (`BUILD_DIR/parse ID [--layout L] [--epoch MS] [--tick-ms MS]`, or `--stdin`).
# Nothing is written into the source folder. IDFORGE_GO_RACE=1 also runs the tests
# under the race detector (slow from a cold cache: it builds the standard library).
set -euo pipefail

usage="usage: check.sh [--build-only] BUILD_DIR"
build_only=0
if [ "${1:-}" = "--build-only" ]; then
  build_only=1
  shift
fi
[ $# -eq 1 ] && [ -n "$1" ] || { echo "$usage" >&2; exit 2; }

src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$src/../.." && pwd)
mkdir -p "$1"
build=$(cd "$1" && pwd)
case "$build/" in
  "$src"/*) echo "check.sh: BUILD_DIR must be outside $src" >&2; exit 2 ;;
esac

go=${GO:-go}
command -v "$go" >/dev/null || { echo "check.sh: no go (Debian: apt-get install golang-go)" >&2; exit 1; }

export GOCACHE=$build/gocache
export GOPATH=$build/gopath
export GOMODCACHE=$build/gopath/pkg/mod
export GOFLAGS=-mod=mod
export GOPROXY=off
export GOSUMDB=off
export GOTOOLCHAIN=local
export GOTELEMETRY=off
export GOTMPDIR=$build/tmp
mkdir -p "$GOCACHE" "$GOPATH" "$GOTMPDIR" "$build/bin"
export IDFORGE_BIN=${IDFORGE_BIN:-$repo/build/idforge}
case $IDFORGE_BIN in /*) ;; *) IDFORGE_BIN=$PWD/$IDFORGE_BIN ;; esac

cd "$src"
start=$SECONDS
"$go" build -o "$build/bin/" ./cmd/...
cat > "$build/parse" <<EOF
#!/bin/sh
# The Go client's parse tool: ID [--layout L] [--epoch MS] [--tick-ms MS], or --stdin.
exec "$build/bin/idforge-parse" "\$@"
EOF
chmod +x "$build/parse"
echo "check.sh: built in $((SECONDS - start)) s ($("$go" version)); parse tool: $build/parse"
[ "$build_only" -eq 1 ] && exit 0

start=$SECONDS
"$go" vet ./...
log=$build/test.log
status=0
"$go" test -vet=off -count=1 -v -timeout 120s ./... >"$log" 2>&1 || status=$? # vet: just above
if [ "$status" -ne 0 ]; then
  grep -v '^=== \(RUN\|PAUSE\|CONT\)' "$log" >&2 || true
  echo "check.sh: FAILED (exit $status; full log: $log)" >&2
  exit 1
fi
grep -E '^(--- |ok |PASS|FAIL)' "$log" | grep -v '^    ' || true
if [ "${IDFORGE_GO_RACE:-0}" = 1 ]; then
  "$go" test -count=1 -race -timeout 300s ./... >"$build/race.log" 2>&1 || {
    cat "$build/race.log" >&2
    echo "check.sh: FAILED under -race (log: $build/race.log)" >&2
    exit 1
  }
  echo "check.sh: -race passed"
fi
echo "check.sh: vet and tests passed in $((SECONDS - start)) s (IDFORGE_BIN=$IDFORGE_BIN)"
