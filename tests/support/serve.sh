# shellcheck shell=bash
# `idforge serve` in the background for the shell tests (tests/*/check.sh), sourced:
#
#   source tests/support/serve.sh
#   serve_start "$work/server" "$bin" serve --http 127.0.0.1:0 ... || fail "..."
#   curl "$(serve_http_url "$work/server")v1/snowflake"
#   serve_stop        # SIGTERM; its exit status
#
# The server's stdout and stderr go to PREFIX.out and PREFIX.err. The caller's EXIT trap
# calls serve_kill, so a failed check leaves no server behind.

serve_pid=

# Starts COMMAND... (the environment passes through) and waits up to 15 s for the two
# lines `idforge serve` prints once it listens. Returns 1, after printing its stderr, if
# it exits or stays silent.
serve_start() {
  local prefix=$1 i
  shift
  "$@" >"$prefix.out" 2>"$prefix.err" &
  serve_pid=$!
  for i in $(seq 1 300); do
    grep -q '^idforge serve: resp ' "$prefix.out" 2>/dev/null && return 0
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.05
  done
  cat "$prefix.err" >&2
  return 1
}

# "http://127.0.0.1:PORT/" from the server's first line.
serve_http_url() { sed -n 's#^idforge serve: http \(http://[^ ]*/\)$#\1#p' "$1.out"; }

# SIGTERM, then its exit status (0: drained and released its lease).
serve_stop() {
  local status=0
  kill -TERM "$serve_pid" 2>/dev/null || true
  wait "$serve_pid" || status=$?
  serve_pid=
  return "$status"
}

# For the EXIT trap: SIGKILL if still running.
serve_kill() {
  if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
    kill -KILL "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
  fi
  serve_pid=
}
