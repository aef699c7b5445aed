#!/usr/bin/env bash
# Writes one gzip'd man page with help2man from the binary's own --help, for the Debian
# package (cmake/packaging.cmake). The help text up to FOOTER (the first line starting
# with it) becomes help2man's usual sections (SYNOPSIS, DESCRIPTION, OPTIONS and one
# subsection per option group); the rest, whose examples and layout help2man would run
# together into one paragraph, goes verbatim into SECTION (a FOOTER ending in ':' is a
# heading, which SECTION replaces); INCLUDE adds FILES, SEE ALSO.
#
# Usage: make-man.sh IDFORGE OUT.1.gz PAGE DESCRIPTION FOOTER SECTION INCLUDE [SUBCOMMAND]
#   e.g. make-man.sh build/idforge idforge-serve.1.gz idforge-serve "run the ID server" \
#          "Every setting is" NOTES packaging/idforge-serve.h2m serve
set -euo pipefail

[ $# -ge 7 ] || {
  echo "usage: $0 IDFORGE OUT.1.gz PAGE DESCRIPTION FOOTER SECTION INCLUDE [SUBCOMMAND]" >&2
  exit 2
}
bin=$1 out=$2 page=$3 description=$4 footer=$5 section=$6 include=$7
shift 7
fail() { echo "make-man.sh: $page: $*" >&2; exit 1; }
command -v help2man >/dev/null 2>&1 || fail "help2man not found: run scripts/install-deps"

work=$(mktemp -d "${TMPDIR:-/tmp}/idforge-man.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$bin" "$@" --help >"$work/help" || fail "$bin $* --help failed"
version=$("$bin" --version) || fail "$bin --version failed"  # "idforge 0.1.0"
at=$(grep -n -m1 -F -- "$footer" "$work/help" | cut -d: -f1 || true)
[ -n "$at" ] && [ "$(sed -n "${at}p" "$work/help" | cut -c1-${#footer})" = "$footer" ] ||
  fail "no line of '$bin $* --help' starts with '$footer'"
head -n $((at - 1)) "$work/help" >"$work/body"
case $footer in
  *:) tail -n +$((at + 1)) "$work/help" >"$work/footer" ;;
  *) tail -n +"$at" "$work/help" >"$work/footer" ;;
esac

# The footer as preformatted roff: backslashes and minus signs escaped, and a line
# starting with . or ' kept from being read as a request.
{
  echo "[$section]"
  echo ".nf"
  sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/" "$work/footer"
  echo ".fi"
  echo
  cat "$include"
} >"$work/include.h2m"

# help2man runs PROGRAM --help; this one prints the body only.
printf '#!/bin/sh\nexec cat "%s"\n' "$work/body" >"$work/$page"
chmod +x "$work/$page"
help2man --no-info --section=1 --name="$description" --version-string="$page ${version#* }" \
  --include="$work/include.h2m" --output="$work/$page.1" "$work/$page" ||
  fail "help2man failed"

# A page groff cannot format cleanly is a bug here, not something to ship.
warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$work/$page.1" 2>&1 >/dev/null || true)
[ -z "$warnings" ] || fail "groff warnings: $warnings"
gzip -9n -c "$work/$page.1" >"$out"
