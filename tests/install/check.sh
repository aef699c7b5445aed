#!/usr/bin/env bash
# Installs a built tree into a temporary prefix and uses it as a library user would:
# every public header compiles on its own against the installed tree (none reaches into
# src/), examples/ builds with find_package(idforge) and again with pkg-config, and both
# programs issue distinct Snowflake IDs that decode to the node they were given.
#
# Usage: tests/install/check.sh BUILD_DIR SOURCE_DIR   (ctest: install.example)
set -euo pipefail
build=$1
src=$2
cxx=${CXX:-c++}
work=$(mktemp -d "${TMPDIR:-/tmp}/idforge-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

fail() { echo "install check: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(cd "$prefix" && ls -d lib*/ | head -1)
libdir=${libdir%/}
for f in bin/idforge "$libdir/libidforge_core.a" "$libdir/cmake/idforge/idforgeConfig.cmake" \
         "$libdir/cmake/idforge/idforgeConfigVersion.cmake" "$libdir/pkgconfig/idforge.pc"; do
  [ -e "$prefix/$f" ] || fail "missing $f in the installed tree"
done

headers=("$prefix"/include/idforge/*.h)
[ ${#headers[@]} -ge 5 ] || fail "only ${#headers[@]} headers installed"
for h in "${headers[@]}"; do
  name=idforge/$(basename "$h")
  echo "#include <$name>" | "$cxx" -std=c++20 -fsyntax-only -Wall -Werror \
      -I"$prefix/include" -x c++ - 2>"$work/header.err" ||
    fail "$name does not compile on its own against the installed headers: $(head -3 "$work/header.err")"
done

# Three IDs for datacenter 1, worker 7: distinct, and decoded to that node.
check_output() {
  local out=$1 how=$2
  [ "$(grep -c '^snowflake ' "$out")" = 3 ] || fail "$how: expected 3 snowflake lines: $(cat "$out")"
  [ "$(grep '^snowflake ' "$out" | awk '{print $2}' | sort -u | wc -l)" = 3 ] ||
    fail "$how: repeated IDs: $(cat "$out")"
  [ "$(grep -c 'datacenter=1 worker=7 ' "$out")" = 3 ] || fail "$how: wrong node: $(cat "$out")"
  grep -Eq '^uuid7 [0-9a-f]{8}-[0-9a-f]{4}-7' "$out" || fail "$how: no UUIDv7: $(cat "$out")"
  grep -Eq '^ulid [0-9A-HJKMNP-TV-Z]{26}$' "$out" || fail "$how: no ULID: $(cat "$out")"
}

cmake -S "$src/examples" -B "$work/example" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_CXX_COMPILER="$cxx" >/dev/null ||
  fail "find_package(idforge) failed"
cmake --build "$work/example" >/dev/null || fail "examples/ did not build with find_package"
"$work/example/ids" >"$work/cmake.out"
check_output "$work/cmake.out" "find_package build"

export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
# shellcheck disable=SC2046  # pkg-config prints several flags
"$cxx" "$src/examples/ids.cc" $(pkg-config --cflags --libs idforge) -o "$work/ids-pc" ||
  fail "examples/ids.cc did not build with pkg-config"
"$work/ids-pc" >"$work/pc.out"
check_output "$work/pc.out" "pkg-config build"

echo "install check: headers, find_package and pkg-config builds OK ($prefix)"
