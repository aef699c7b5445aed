#!/usr/bin/env bash
# Installs a built tree into a temporary prefix and uses it as a library user would:
# every public header compiles on its own against the installed tree (none reaches into
# src/), examples/ builds with find_package(idforge) and again with pkg-config, and both
# programs issue distinct Snowflake IDs that decode to the node they were given; then
# examples/client (idforge::client) builds both ways and takes IDs from the installed
# binary's server over HTTP and the Redis protocol.
#
# Usage: tests/install/check.sh BUILD_DIR SOURCE_DIR   (ctest: install.example)
set -euo pipefail
build=$1
src=$2
cxx=${CXX:-c++}
work=$(mktemp -d "${TMPDIR:-/tmp}/idforge-install.XXXXXX")
# shellcheck source=tests/support/serve.sh
source "$src/tests/support/serve.sh"
trap 'serve_kill; rm -rf "$work"' EXIT
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
  check_text_ids "$out" "$how"
}
# A UUIDv7 line and a ULID line.
check_text_ids() {
  local out=$1 how=$2
  grep -Eq '^uuid7 [0-9a-f]{8}-[0-9a-f]{4}-7' "$out" || fail "$how: no UUIDv7: $(cat "$out")"
  grep -Eq '^ulid [0-9A-HJKMNP-TV-Z]{26}$' "$out" || fail "$how: no ULID: $(cat "$out")"
}
# DIR (examples/...) built with find_package(idforge) into $work/NAME.
build_with_find_package() {
  local dir=$1 name=$2
  cmake -S "$src/$dir" -B "$work/$name" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_CXX_COMPILER="$cxx" >/dev/null || fail "find_package(idforge) failed for $dir"
  cmake --build "$work/$name" >/dev/null || fail "$dir did not build with find_package"
}

build_with_find_package examples example
"$work/example/ids" >"$work/cmake.out"
check_output "$work/cmake.out" "find_package build"

export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
# shellcheck disable=SC2046  # pkg-config prints several flags
"$cxx" "$src/examples/ids.cc" $(pkg-config --cflags --libs idforge) -o "$work/ids-pc" ||
  fail "examples/ids.cc did not build with pkg-config"
"$work/ids-pc" >"$work/pc.out"
check_output "$work/pc.out" "pkg-config build"

# The client example against a server of the installed binary, with a tag from 5000.
"$prefix/bin/idforge" tag create order --data-dir "$work/data" --start 5000 >/dev/null ||
  fail "idforge tag create failed"
serve_start "$work/server" "$prefix/bin/idforge" serve --data-dir "$work/data" \
    --http 127.0.0.1:0 --resp 127.0.0.1:0 --log-level warn ||
  fail "the installed idforge serve did not start"
http_url=$(serve_http_url "$work/server")
resp_url=$(sed -n 's#^idforge serve: resp \(redis://[^ ]*\)$#\1#p' "$work/server.out")
check_client() {  # output how: one line of each kind, the segment ID from the tag
  local out=$1 how=$2
  grep -Eq '^snowflake [0-9]+ \{.*"worker":' "$out" || fail "$how: no decoded Snowflake ID: $(cat "$out")"
  grep -Eq '^segment order [0-9]+$' "$out" || fail "$how: no segment ID: $(cat "$out")"
  [ "$(awk '/^segment order/ {print $3}' "$out")" -ge 5000 ] || fail "$how: segment ID below the tag's start"
  check_text_ids "$out" "$how"
}
build_with_find_package examples/client client
"$work/client/client_ids" --tag order "$http_url" >"$work/client-http.out" ||
  fail "client_ids over HTTP failed: $(cat "$work/client-http.out")"
check_client "$work/client-http.out" "client over HTTP"
# shellcheck disable=SC2046  # pkg-config prints several flags
"$cxx" -std=c++20 "$src/examples/client/client_ids.cc" $(pkg-config --cflags --libs idforge) \
    -o "$work/client-pc" || fail "examples/client did not build with pkg-config"
"$work/client-pc" --tag order "$resp_url" >"$work/client-resp.out" ||
  fail "client_ids over RESP failed: $(cat "$work/client-resp.out")"
check_client "$work/client-resp.out" "client over RESP"
[ "$(awk '/^segment/ {print $3}' "$work/client-http.out")" != \
  "$(awk '/^segment/ {print $3}' "$work/client-resp.out")" ] || fail "two clients got one segment ID"
serve_stop || fail "the server did not stop cleanly: $(cat "$work/server.err")"

echo "install check: headers, find_package and pkg-config builds of both examples OK ($prefix)"
