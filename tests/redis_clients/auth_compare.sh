#!/usr/bin/env bash
# idforge's RESP answers about authentication beside a real redis-server 7's: the same
# command sequences go to both through redis-cli, one connection per sequence, and the
# answers must be the same (integers are compared as integers only: the two count
# differently). src/server/resp/resp_auth.cc says which answers are Redis's words.
#
#   1. no tokens / no password: AUTH SECRET, AUTH USER SECRET, HELLO 3 AUTH, wrong arity
#   2. a tokens file / requirepass and an ACL user: NOAUTH before AUTH (HELLO's own
#      NOAUTH, EXECABORT for EXEC), WRONGPASS, OK, NOPERM for a key and for a command,
#      MULTI with a forbidden command (EXECABORT), a failed AUTH that keeps the user
#
# The Redis is started by scripts/test-services on a free port; idforge serve with
# `--tokens FILE` and the token `order-only-secret-0002 segment:order`, Redis with
# `requirepass` and `ACL SETUSER order-app ... ~order +incr +incrby +ping +multi +exec
# +discard`. Redis has no ID.SNOWFLAKE, so its NOPERM for a command is compared with
# Redis's for INFO, the command's name put in.
#
# Usage: tests/redis_clients/auth_compare.sh IDFORGE_BIN
set -euo pipefail

bin=${1:?usage: tests/redis_clients/auth_compare.sh IDFORGE_BIN}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

fail() { echo "auth_compare: $*" >&2; exit 1; }

[ -x "$bin" ] || fail "$bin is not an executable idforge binary"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  fail "redis-server and redis-cli not found: run scripts/install-deps (Debian package redis-server)"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/idforge-auth-compare.XXXXXX")
# shellcheck source=tests/support/serve.sh
source "$root/tests/support/serve.sh"
cleanup() {
  serve_kill
  "$root/scripts/test-services" stop "$work/redis" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

readonly all_secret=all-scopes-secret-0001
readonly order_secret=order-only-secret-0002
readonly wrong_secret=wrong-secret-0123456789

redis_url=$("$root/scripts/test-services" start redis "$work/redis" --no-persistence --owner $$) ||
  fail "could not start a Redis"
redis_port=${redis_url##*:}
redis_cli() { redis-cli -h 127.0.0.1 -p "$redis_port" "$@"; }

"$bin" tag create order --data-dir "$work/data" >/dev/null
printf '# auth_compare.sh\n%s * name=all\n%s segment:order name=order-app\n' \
  "$all_secret" "$order_secret" >"$work/tokens"

# Starts idforge serve as NAME (its output in $work/NAME.out; a fresh file, so the
# previous server's lines cannot be taken for this one's) with the extra flags given;
# sets idforge_port.
start_idforge() {
  local name=$1
  shift
  serve_start "$work/$name" "$bin" serve --http 127.0.0.1:0 --resp 127.0.0.1:0 \
    --data-dir "$work/data" --registry static:0/1 "$@" || fail "idforge serve did not start"
  idforge_port=$(sed -n 's#^idforge serve: resp redis://[^ ]*:\([0-9]*\)$#\1#p' "$work/$name.out")
  [ -n "$idforge_port" ] || fail "no resp address in: $(cat "$work/$name.out")"
}

# The answers to COMMANDS (one a line) on one connection to PORT; integers as <int>.
answers() {
  local port=$1
  shift
  printf '%s\n' "$@" | redis-cli -h 127.0.0.1 -p "$port" 2>&1 | sed -E 's/^-?[0-9]+$/<int>/'
}

failures=0
# report NAME WANT GOT
report() {
  if [ "$2" == "$3" ]; then
    echo "ok   $1"
  else
    echo "FAIL $1 (< redis-server, > idforge)"
    diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") | sed 's/^/     /' || true
    failures=$((failures + 1))
  fi
}
# compare NAME COMMAND...: the same commands to both.
compare() {
  local name=$1
  shift
  report "$name" "$(answers "$redis_port" "$@")" "$(answers "$idforge_port" "$@")"
}

echo "auth_compare: $(redis-server --version | cut -d' ' -f1-3) on port $redis_port"

# --- 1. No tokens; Redis with no password -------------------------------------------
start_idforge no-tokens
compare "AUTH without a password configured" \
  "AUTH $wrong_secret" "AUTH someone $wrong_secret" "HELLO 3 AUTH someone $wrong_secret" \
  "AUTH" "AUTH a b c" "PING" "INCR order"
serve_stop || fail "idforge serve did not stop cleanly"

# --- 2. Tokens; Redis with requirepass and an ACL user ------------------------------
redis_cli ACL SETUSER order-app on ">$order_secret" resetkeys '~order' -@all \
  +incr +incrby +ping +multi +exec +discard >/dev/null
redis_cli CONFIG SET requirepass "$all_secret" >/dev/null
start_idforge tokens --tokens "$work/tokens"

compare "NOAUTH before AUTH" \
  "PING" "INCR order" "INFO" "MULTI" "EXEC" "HELLO" "HELLO 3" "HELLO 3 SETNAME app" "HELLO 4" \
  "NOSUCH a" "ECHO"
compare "WRONGPASS and wrong arity" \
  "AUTH $wrong_secret" "AUTH someone $wrong_secret" "HELLO 3 AUTH default $wrong_secret" \
  "PING" "AUTH" "AUTH a b c" "HELLO 3 AUTH default"
compare "AUTH SECRET" "AUTH $all_secret" "PING" "INCR order"
compare "AUTH USER SECRET, then NOPERM for a key and for a command" \
  "AUTH order-app $order_secret" "INCR order" "INCR other" "INCRBY other 2" "INFO" "PING" \
  "AUTH order-app $wrong_secret" "INCR order"
compare "MULTI with forbidden commands" \
  "AUTH order-app $order_secret" "MULTI" "INCR order" "INCR other" "INFO" "EXEC" "INCR order"
report "NOPERM for a command Redis does not have (ID.SNOWFLAKE, as Redis words INFO)" \
  "$(answers "$redis_port" "AUTH order-app $order_secret" "INFO" | sed "s/'info'/'id.snowflake'/")" \
  "$(answers "$idforge_port" "AUTH order-app $order_secret" "ID.SNOWFLAKE")"
serve_stop || fail "idforge serve did not stop cleanly"

if [ "$failures" -gt 0 ]; then
  fail "$failures sequence(s) answered differently"
fi
echo "auth_compare: every sequence answered as redis-server does"
