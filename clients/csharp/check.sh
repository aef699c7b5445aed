#!/usr/bin/env bash
# The C# client of idforge: builds it with Mono's mcs into BUILD_DIR (nothing is written
# into this folder), then runs its NUnit tests against two real `idforge serve` processes
# the tests start (IDFORGE_BIN, default build/idforge of this repository).
#
#   clients/csharp/check.sh BUILD_DIR               build, then test
#   clients/csharp/check.sh --build-only BUILD_DIR  build only
#
# BUILD_DIR gets Idforge.Client.dll, idforge-parse.exe and `parse` (a wrapper:
# BUILD_DIR/parse ID [--layout L] [--epoch MS] [--tick-ms MS], or --stdin),
# Idforge.Client.Tests.dll, idforge-bench.exe (the benchmark) and TestResult.xml.
# Needs Debian's mono-mcs, mono-devel and nunit-console.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build_only=0
if [ "${1:-}" = --build-only ]; then
  build_only=1
  shift
fi
if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: check.sh [--build-only] BUILD_DIR" >&2
  exit 2
fi
mkdir -p "$1"
build=$(cd "$1" && pwd)
case "$build/" in
  "$here"/*) echo "check.sh: BUILD_DIR must be outside $here" >&2; exit 2 ;;
esac

# What is compiled; the project files must name the same files.
lib_sources=(src/AssemblyInfo.cs src/Buffers.cs src/Client.cs src/ClientOptions.cs src/Errors.cs src/Json.cs src/Snowflake.cs src/Connection.cs src/Kinds.cs src/RequestFailures.cs src/Server.cs src/ServerUrl.cs src/States.cs)
tool_sources=(tools/ParseTool.cs)
test_sources=(tests/ClientOpenTests.cs tests/ParseTests.cs tests/ServerTests.cs tests/Support.cs)
bench_sources=(bench/Bench.cs tests/Support.cs)

# check_project PROJECT SOURCE...: the project's <Compile Include="..."/> items (relative
# to the project's folder) are exactly these sources (relative to this folder).
check_project() {
  local project=$1 dir want got
  shift
  dir=$(dirname "$project")
  want=$(printf '%s\n' "$@" | sort)
  got=$(grep -o '<Compile Include="[^"]*"' "$here/$project" | sed 's/^<Compile Include="//; s/"$//; s#\\#/#g' |
    while read -r f; do realpath -m --relative-to="$here" "$here/$dir/$f"; done | sort)
  if [ "$want" != "$got" ]; then
    echo "check.sh: $project does not name the sources check.sh compiles" >&2
    diff <(echo "$want") <(echo "$got") >&2 || true
    exit 1
  fi
}
check_project Idforge.Client.csproj "${lib_sources[@]}"
check_project tools/idforge-parse.csproj "${tool_sources[@]}"
check_project tests/Idforge.Client.Tests.csproj "${test_sources[@]}"
check_project bench/idforge-bench.csproj "${bench_sources[@]}"
# And no source file is left out of both.
all_listed=$(printf '%s\n' "${lib_sources[@]}" "${tool_sources[@]}" "${test_sources[@]}" "${bench_sources[@]}" | sort -u)
all_files=$(cd "$here" && find src tools tests bench -name '*.cs' | sort)
if [ "$all_listed" != "$all_files" ]; then
  echo "check.sh: the .cs files and check.sh's lists differ" >&2
  diff <(echo "$all_listed") <(echo "$all_files") >&2 || true
  exit 1
fi

for tool in mcs mono nunit-console; do
  command -v "$tool" >/dev/null || { echo "check.sh: no $tool (Debian: mono-mcs mono-devel nunit-console)" >&2; exit 1; }
done
nunit_framework=
for f in /usr/lib/cli/nunit.framework-2.6*/nunit.framework.dll /usr/lib/mono/gac/nunit.framework/2.6*/nunit.framework.dll; do
  if [ -f "$f" ]; then nunit_framework=$f; break; fi
done
[ -n "$nunit_framework" ] || { echo "check.sh: no nunit.framework.dll (Debian: nunit-console)" >&2; exit 1; }

compile() { # compile OUT TARGET [mcs options...] -- SOURCES...
  local out=$1 target=$2
  shift 2
  local opts=()
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  (cd "$here" && mcs -langversion:7.2 -target:"$target" -debug -optimize+ -nologo -warn:4 \
    -out:"$build/$out" -r:System.dll -r:System.Core.dll "${opts[@]}" "$@")
}

t0=$(date +%s%N)
compile Idforge.Client.dll library -doc:"$build/Idforge.Client.xml" -- "${lib_sources[@]}"
compile idforge-parse.exe exe -r:"$build/Idforge.Client.dll" -- "${tool_sources[@]}"
compile Idforge.Client.Tests.dll library -r:"$build/Idforge.Client.dll" -r:"$nunit_framework" -- "${test_sources[@]}"
compile idforge-bench.exe exe -r:"$build/Idforge.Client.dll" -- "${bench_sources[@]}"
printf '#!/bin/sh\nexec mono %q "$@"\n' "$build/idforge-parse.exe" >"$build/parse"
chmod +x "$build/parse"
echo "check.sh: built in $((($(date +%s%N) - t0) / 1000000)) ms into $build"
echo "check.sh: parse tool: $build/parse (mono $build/idforge-parse.exe)"
[ "$build_only" -eq 1 ] && exit 0

export IDFORGE_BIN=${IDFORGE_BIN:-$repo/build/idforge}
export IDFORGE_SOURCE_DIR=$repo
[ -x "$IDFORGE_BIN" ] || { echo "check.sh: no idforge binary at $IDFORGE_BIN (set IDFORGE_BIN)" >&2; exit 1; }
log=$build/test.log
rm -f "$build/TestResult.xml"
status=0
(cd "$build" && timeout --kill-after=10 300 nunit-console "$build/Idforge.Client.Tests.dll" -nologo -labels \
  -xml="$build/TestResult.xml") >"$log" 2>&1 || status=$?

# Each test, its result and time (seconds), from NUnit's XML.
if [ -f "$build/TestResult.xml" ]; then
  grep -o '<test-case name="[^"]*" executed="[^"]*" result="[^"]*"[^>]*time="[^"]*"' "$build/TestResult.xml" |
    sed 's/<test-case name="IdforgeClientTests\.\([^"]*\)".* result="\([^"]*\)".*time="\([^"]*\)"/  \3 s  \2  \1/'
fi
grep -E '^Tests run:' "$log" || true
if [ "$status" -ne 0 ]; then
  echo "check.sh: the tests failed (exit $status); their output ($log):" >&2
  sed -n '/^Errors and Failures:/,$p' "$log" >&2
  grep -q '^Errors and Failures:' "$log" || tail -n 50 "$log" >&2
  exit 1
fi
echo "check.sh: all tests passed"
