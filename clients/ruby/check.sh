#!/usr/bin/env bash
# Builds the Ruby client into BUILD_DIR and runs its tests.
#
#   clients/ruby/check.sh BUILD_DIR               build, then run every test
#   clients/ruby/check.sh --build-only BUILD_DIR  build only
#
# "Building" writes only into BUILD_DIR (nothing into the source folder):
#   BUILD_DIR/parse                     the parse tool: parse ID [--layout L] [--epoch MS] [--tick-ms MS]
#                                       or parse --stdin (one case a line)
#   BUILD_DIR/idforge-client-VER.gem    `gem build` of idforge-client.gemspec (offline)
#   BUILD_DIR/gems/                     that gem installed (--local), to check it loads
# The tests start their own `idforge serve` processes: IDFORGE_BIN (default
# /work/main/build/idforge, i.e. build/idforge of this repository). RUBY picks the
# interpreter (default: ruby). Exit status non-zero on any failure.
set -euo pipefail

usage="usage: check.sh [--build-only] BUILD_DIR"
build_only=0
if [ "${1:-}" = "--build-only" ]; then
  build_only=1
  shift
fi
[ $# -eq 1 ] || { echo "$usage" >&2; exit 2; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
ruby=${RUBY:-ruby}
command -v "$ruby" >/dev/null || { echo "check.sh: no $ruby (Debian: apt-get install ruby)" >&2; exit 1; }
mkdir -p "$1"
build=$(cd "$1" && pwd)
export IDFORGE_BIN=${IDFORGE_BIN:-$repo/build/idforge}
# Whatever RubyGems would cache goes under BUILD_DIR, not into the tree or $HOME.
export GEM_HOME="$build/gems" GEM_SPEC_CACHE="$build/gem-spec-cache" HOME="$build/home"
mkdir -p "$HOME"

start=$(date +%s.%N)
echo "== ruby client: build into $build ($("$ruby" -e 'print RUBY_DESCRIPTION'))"

# Syntax (and warnings) of every file.
"$ruby" -wc "$here"/lib/idforge/*.rb "$here"/bin/idforge-parse "$here"/test/*.rb "$here"/bench.rb "$here"/idforge-client.gemspec >/dev/null

# The parse tool the cross-language test calls as BUILD_DIR/parse.
cat >"$build/parse.tmp" <<EOF
#!/bin/sh
# The Ruby client's parse tool (clients/ruby/bin/idforge-parse), written by check.sh.
exec "$(command -v "$ruby")" --disable-gems -I "$here/lib" "$here/bin/idforge-parse" "\$@"
EOF
chmod +x "$build/parse.tmp"
mv "$build/parse.tmp" "$build/parse"

# The gem, built and installed offline.
version=$("$ruby" -I "$here/lib" -r idforge/version -e 'print Idforge::VERSION')
gem=$build/idforge-client-$version.gem
(gem build --silent -C "$here" idforge-client.gemspec --output "$gem" 2>"$build/gem-build.log") || {
  cat "$build/gem-build.log" >&2
  exit 1
}
gem install --silent --local --no-document --install-dir "$build/gems" "$gem" >"$build/gem-install.log" 2>&1 || {
  cat "$build/gem-install.log" >&2
  exit 1
}
GEM_PATH="$build/gems" "$ruby" -e 'gem "idforge-client"; require "idforge/client"; Idforge::Client' >/dev/null
echo "parse tool: $build/parse"
echo "gem: $gem"
[ "$build_only" -eq 1 ] && exit 0

# The tests: test/run.rb runs every test/test_*.rb (minitest, Debian's ruby-minitest).
echo "== ruby client: tests (IDFORGE_BIN=$IDFORGE_BIN)"
status=0
"$ruby" -w -I "$here/lib" "$here/test/run.rb" -v || status=$?
end=$(date +%s.%N)
awk -v a="$start" -v b="$end" -v r="$([ $status -eq 0 ] && echo passed || echo FAILED)" \
  'BEGIN { printf "== ruby client: %s in %.1f s\n", r, b - a }'
exit $status
