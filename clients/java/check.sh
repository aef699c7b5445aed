#!/usr/bin/env bash
# Builds the Java client of idforge into BUILD_DIR and runs its tests.
#
#   clients/java/check.sh BUILD_DIR               build, then run the tests (JUnit 5)
#   clients/java/check.sh --build-only BUILD_DIR  build only
#
# Needs Debian 12's openjdk-17-jdk-headless and junit5 (its console launcher in
# /usr/share/java). Nothing is written into the source folder: classes, the jar
# (BUILD_DIR/idforge-client-VERSION.jar), the test reports and the wrappers BUILD_DIR/parse
# (the parse tool) and BUILD_DIR/bench (the benchmark) all go to BUILD_DIR. The tests start
# two `idforge serve`: IDFORGE_BIN, default /work/main/build/idforge (the repository's
# build/idforge). Exits non-zero on any failure, with the failing tests' output.
#
# Maven (pom.xml) cannot build offline here: Debian 12 installs no maven-compiler-plugin,
# maven-resources-plugin or surefire with `maven`. So this script builds with javac and jar
# and checks that pom.xml's version and source directories are what it built.
set -euo pipefail

build_only=0
if [ "${1:-}" = "--build-only" ]; then
  build_only=1
  shift
fi
[ $# -eq 1 ] || { echo "usage: $0 [--build-only] BUILD_DIR" >&2; exit 2; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
mkdir -p "$1"
build=$(cd "$1" && pwd)
case "$build/" in
  "$here/"*) echo "check.sh: BUILD_DIR must be outside $here (nothing is written into the sources)" >&2; exit 2 ;;
esac

java_bin=${JAVA:-java}
javac_bin=${JAVAC:-javac}
jar_bin=${JAR:-jar}
for tool in "$java_bin" "$javac_bin" "$jar_bin"; do
  command -v "$tool" >/dev/null || { echo "check.sh: no $tool (apt-get install openjdk-17-jdk-headless)" >&2; exit 1; }
done
junit=""
for candidate in /usr/share/java/junit-platform-console-standalone.jar /usr/share/java/junit-platform-console-standalone-*.jar; do
  if [ -f "$candidate" ]; then junit=$candidate; break; fi
done

# -- pom.xml: the version and the source directories this script builds ------------------
pom=$here/pom.xml
pom_value() {  # the first <TAG> of the project itself (not of a dependency or plugin)
  sed -n '/<dependencies>/,$d; s:.*<'"$1"'>\([^<]*\)</'"$1"'>.*:\1:p' "$pom" | head -1
}
version=$(pom_value version)
group=$(pom_value groupId)
artifact=$(pom_value artifactId)
[ -n "$version" ] && [ "$artifact" = idforge-client ] && [ "$group" = dev.idforge ] ||
  { echo "check.sh: pom.xml: expected dev.idforge:idforge-client:VERSION, got $group:$artifact:$version" >&2; exit 1; }
main_src=$(sed -n 's:.*<sourceDirectory>\([^<]*\)</sourceDirectory>.*:\1:p' "$pom")
test_src=$(sed -n 's:.*<testSourceDirectory>\([^<]*\)</testSourceDirectory>.*:\1:p' "$pom")
release=$(sed -n 's:.*<maven.compiler.release>\([^<]*\)</maven.compiler.release>.*:\1:p' "$pom")
[ "${main_src:-src/main/java}" = src/main/java ] && [ "${test_src:-src/test/java}" = src/test/java ] &&
  [ "$release" = 17 ] ||
  { echo "check.sh: pom.xml builds ${main_src} and ${test_src} for Java $release; this script builds src/main/java and src/test/java for 17" >&2; exit 1; }

# -- build ---------------------------------------------------------------------------------
started=$(date +%s.%N)
rm -rf "$build/classes" "$build/test-classes" "$build/bench-classes" "$build/test-reports"
mkdir -p "$build/classes" "$build/test-classes" "$build/bench-classes"
cd "$here"
mapfile -t main_sources < <(find src/main/java -name '*.java' | sort)
mapfile -t test_sources < <(find src/test/java -name '*.java' | sort)
mapfile -t bench_sources < <(find src/bench/java -name '*.java' | sort)

javac_flags=(-J-XX:TieredStopAtLevel=1 -J-XX:+UseSerialGC --release 17 -encoding UTF-8 -Xlint:all -Werror -implicit:none)
"$javac_bin" "${javac_flags[@]}" -d "$build/classes" "${main_sources[@]}"
# Every source became its class: the jar is what pom.xml's source directory holds.
for f in "${main_sources[@]}"; do
  class=${f#src/main/java/}
  [ -f "$build/classes/${class%.java}.class" ] || { echo "check.sh: $f was not compiled" >&2; exit 1; }
done
cat > "$build/MANIFEST.MF" <<MANIFEST
Implementation-Title: $artifact
Implementation-Version: $version
Implementation-Vendor-Id: $group
MANIFEST
jar_file=$build/$artifact-$version.jar
rm -f "$build"/"$artifact"-*.jar
"$jar_bin" -J-XX:TieredStopAtLevel=1 -J-XX:+UseSerialGC --create --file "$jar_file" --manifest "$build/MANIFEST.MF" \
  --main-class dev.idforge.client.ParseTool -C "$build/classes" .
ln -sf "$(basename "$jar_file")" "$build/$artifact.jar"
# The jar's manifest carries the pom's version.
rm -rf "$build/manifest-check" && mkdir "$build/manifest-check"
(cd "$build/manifest-check" && "$jar_bin" --extract --file "$jar_file" META-INF/MANIFEST.MF)
grep -q "^Implementation-Version: $version" "$build/manifest-check/META-INF/MANIFEST.MF" ||
  { echo "check.sh: the jar's manifest does not say version $version" >&2; exit 1; }

"$javac_bin" "${javac_flags[@]}" -cp "$jar_file" -d "$build/bench-classes" "${bench_sources[@]}"

# The parse tool and the benchmark, as files to run. A short-lived JVM starts faster
# with the client compiler only.
cat > "$build/parse" <<WRAPPER
#!/bin/sh
# The Java client's parse tool: parse ID [--layout L] [--epoch MS] [--tick-ms MS], or parse --stdin.
exec "$(command -v "$java_bin")" -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$jar_file" dev.idforge.client.ParseTool "\$@"
WRAPPER
cat > "$build/bench" <<WRAPPER
#!/bin/sh
# The Java client's benchmark: bench [--url URL] [--seconds S] (IDFORGE_BIN starts a server without --url).
exec "$(command -v "$java_bin")" -cp "$jar_file:$build/bench-classes" dev.idforge.client.bench.Bench "\$@"
WRAPPER
chmod +x "$build/parse" "$build/bench"

if [ -n "$junit" ]; then
  "$javac_bin" "${javac_flags[@]}" -cp "$jar_file:$junit" -d "$build/test-classes" "${test_sources[@]}"
elif [ "$build_only" -eq 0 ]; then
  echo "check.sh: no junit-platform-console-standalone jar in /usr/share/java (apt-get install junit5)" >&2
  exit 1
fi
built=$(date +%s.%N)
awk -v a="$started" -v b="$built" -v j="$jar_file" 'BEGIN { printf "check.sh: built %s in %.1f s\n", j, b - a }'
echo "check.sh: parse tool: $build/parse"
[ "$build_only" -eq 1 ] && exit 0

# -- test ------------------------------------------------------------------------------------
export IDFORGE_BIN=${IDFORGE_BIN:-$repo/build/idforge}
[ -x "$IDFORGE_BIN" ] || { echo "check.sh: no idforge binary at $IDFORGE_BIN (set IDFORGE_BIN)" >&2; exit 1; }
log=$build/test-output.txt
status=0
timeout 600 "$java_bin" -Didforge.repo="$repo" -Didforge.parse="$build/parse" \
  -jar "$junit" --disable-banner --details=tree --details-theme=ascii --disable-ansi-colors --include-engine=junit-jupiter \
  --class-path "$build/test-classes:$jar_file" --select-package dev.idforge.client \
  --reports-dir "$build/test-reports" >"$log" 2>&1 || status=$?
finished=$(date +%s.%N)

# Each test and its time, from the JUnit XML report.
report=$build/test-reports/TEST-junit-jupiter.xml
if [ -f "$report" ]; then
  grep -o '<testcase name="[^"]*" classname="[^"]*" time="[^"]*"' "$report" |
    sed 's/<testcase name="\([^"]*\)" classname="dev\.idforge\.client\.\([^"]*\)" time="\([^"]*\)"/\3 \2.\1/' |
    awk '{ printf "  %7.2f s  %s\n", $1, $2 }'
fi
if [ "$status" -ne 0 ]; then
  cat "$log"
  echo "check.sh: FAILED (tests exit status $status); the output is also in $log" >&2
  exit 1
fi
grep -E '^\[ +[0-9]+ tests (successful|failed|found) +\]' "$log" | sed 's/^/check.sh: /'
awk -v a="$built" -v b="$finished" 'BEGIN { printf "check.sh: tests passed in %.1f s\n", b - a }'
