#!/usr/bin/env bash
# The seven clients' benchmarks one after another (docs/benchmarks.md, "Clients"): each
# starts its own `idforge serve` and prints, in one run, IDs per second from its next()
# with the buffer, a plain in-process counter of its language, and one request per ID
# without the buffer. The Java, Go and C# ones are built first (clients/LANG/check.sh
# --build-only BUILD/clients/LANG). Not a test: a table for a person to read.
#
# Usage: bench/clients/run.sh [--idforge BIN] [--build DIR] [LANG...]
#        LANG: cpp python js java go ruby csharp (default: all seven)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
idforge=$root/build/idforge
build=$root/build
while [ $# -gt 0 ]; do
  case $1 in
    --idforge) idforge=$(realpath "$2"); shift 2 ;;
    --build) build=$(realpath "$2"); shift 2 ;;
    -h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench/clients/run.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
languages=("$@")
[ ${#languages[@]} -gt 0 ] || languages=(cpp python js java go ruby csharp)
[ -x "$idforge" ] || { echo "bench/clients/run.sh: no idforge binary at $idforge (make build)" >&2; exit 1; }
export IDFORGE_BIN=$idforge

for lang in "${languages[@]}"; do
  echo "== $lang ($(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
  case $lang in
    cpp)
      bench=$build/bench/client/idforge_client_bench
      [ -x "$bench" ] || { echo "no $bench: build the release tree with IDFORGE_BUILD_BENCH (make build)" >&2; exit 1; }
      "$bench" --idforge "$idforge" ;;
    python) /usr/bin/python3 -B "$root/clients/python/bench.py" ;;
    js) node "$root/clients/js/bench.mjs" ;;
    java | go | csharp)
      "$root/clients/$lang/check.sh" --build-only "$build/clients/$lang" > /dev/null
      case $lang in
        java) "$build/clients/java/bench" ;;
        go) "$build/clients/go/bin/idforge-bench" ;;
        csharp) mono "$build/clients/csharp/idforge-bench.exe" ;;
      esac ;;
    ruby) ruby "$root/clients/ruby/bench.rb" ;;
    *) echo "bench/clients/run.sh: unknown language $lang (cpp python js java go ruby csharp)" >&2; exit 2 ;;
  esac
done
