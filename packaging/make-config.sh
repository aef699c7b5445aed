#!/usr/bin/env bash
# Writes the Debian package's /etc/idforge/idforge.toml (cmake/packaging.cmake): every
# setting commented out at its default, from `idforge serve --describe-settings toml`,
# with one exception: data_dir is the unit's StateDirectory, /var/lib/idforge. Checks
# that `idforge serve --config FILE --print-config` accepts the result.
#
# Usage: packaging/make-config.sh IDFORGE OUT
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 IDFORGE OUT" >&2; exit 2; }
bin=$1 out=$2
fail() { echo "make-config.sh: $*" >&2; exit 1; }

"$bin" serve --describe-settings toml >"$out.tmp" ||
  fail "'$bin serve --describe-settings toml' failed"
grep -q '^# data_dir = ' "$out.tmp" ||
  fail "'$bin serve --describe-settings toml' has no '# data_dir = ...' line"
sed -i 's|^# data_dir = .*$|# The Debian package: the unit'"'"'s StateDirectory.\ndata_dir = "/var/lib/idforge"|' \
  "$out.tmp"

"$bin" serve --config "$out.tmp" --print-config >"$out.check" ||
  fail "'$bin serve --config $out --print-config' refuses the file"
grep -q '^data_dir = "/var/lib/idforge"' "$out.check" ||
  fail "'$bin serve --config $out --print-config' does not show data_dir = \"/var/lib/idforge\""
rm -f "$out.check"
mv "$out.tmp" "$out"
