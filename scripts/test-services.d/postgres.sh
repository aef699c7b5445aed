# shellcheck shell=bash
# PostgreSQL for scripts/test-services: a primary, its asynchronous streaming replica,
# promotion and rebuilding a replica. Sourced by the script; uses its common helpers.

pg_bin() {
  if [ -n "${IDFORGE_PG_BIN:-}" ]; then
    echo "$IDFORGE_PG_BIN"
    return
  fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] || d=$(dirname "$(command -v pg_ctl 2>/dev/null || echo /nonexistent/x)")
  [ -x "$d/pg_ctl" ] || die "PostgreSQL server binaries not found (install postgresql, or set IDFORGE_PG_BIN)"
  echo "$d"
}

# Runs a command as the PostgreSQL owner: `postgres` when we are root, else ourselves.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# ---- PostgreSQL --------------------------------------------------------------------

pg_init() {
  local dir=$1 bin
  bin=$(pg_bin)
  mkdir -p "$dir/pgdata"
  # The server user must reach its data dir through DIR (mkdtemp makes it 0700).
  chmod 0755 "$dir"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$dir/pgdata"
    as_pg test -x "$dir/pgdata" ||
      die "user postgres cannot reach $dir (make its parent directories world-searchable, e.g. chmod 0755)"
  fi
  chmod 0700 "$dir/pgdata"
  # --no-sync skips initdb's own flushes only; the server keeps fsync on.
  as_pg "$bin/initdb" -D "$dir/pgdata" -U postgres -A trust --no-sync -E UTF8 --locale=C \
    >"$dir/initdb.log" 2>&1 || die "initdb failed; see $dir/initdb.log"
  {
    echo "# idforge test server: loopback TCP only, no Unix socket"
    echo "listen_addresses = '127.0.0.1'"
    echo "unix_socket_directories = ''"
    echo "max_connections = 200"
    echo "shared_buffers = 32MB"
    echo "include_if_exists = 'idforge_port.conf'"
  } >>"$dir/pgdata/postgresql.conf"
  {
    echo "host all all 127.0.0.1/32 trust"
    # For `start postgres-replica`: pg_basebackup and the replica's WAL receiver.
    echo "host replication all 127.0.0.1/32 trust"
  } >"$dir/pgdata/pg_hba.conf"
}

# A streaming replica of the primary in `primary_dir`: a base backup with -R (standby.signal
# and primary_conninfo), its own port file. Asynchronous: the primary never waits for it.
pg_init_replica() {
  local dir=$1 primary_dir=$2 bin
  bin=$(pg_bin)
  [ -f "$primary_dir/port" ] || die "no PostgreSQL server in $primary_dir"
  chmod 0755 "$dir"
  mkdir -p "$dir/pgdata"
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir/pgdata"; fi
  chmod 0700 "$dir/pgdata"
  as_pg "$bin/pg_basebackup" -h 127.0.0.1 -p "$(cat "$primary_dir/port")" -U postgres \
    -D "$dir/pgdata" -R -X stream --no-sync --checkpoint=fast \
    >"$dir/basebackup.log" 2>&1 || die "pg_basebackup failed; see $dir/basebackup.log"
  # The replica starts as a standby, answers read-only queries, and keeps asking the
  # primary for WAL every second when it is gone.
  echo "wal_retrieve_retry_interval = 1s" >>"$dir/pgdata/postgresql.conf"
}

pg_promote() {
  local dir=$1 bin
  bin=$(pg_bin)
  as_pg "$bin/pg_ctl" -D "$dir/pgdata" -w -t "$kReadySeconds" promote \
    </dev/null >>"$dir/pg_ctl.log" 2>&1 || die "promote failed; see $dir/pg_ctl.log"
}

# The postmaster and its children (backends, WAL writer, ...), for pause/resume/kill.
pg_pids() {
  local pid
  [ -f "$1/pgdata/postmaster.pid" ] || return 0
  pid=$(head -n 1 "$1/pgdata/postmaster.pid")
  alive "$pid" || return 0
  echo "$pid"
  pgrep -P "$pid" || true
}

pg_start_once() {
  local dir=$1 port=$2 bin
  bin=$(pg_bin)
  echo "port = $port" >"$dir/pgdata/idforge_port.conf"
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir/pgdata/idforge_port.conf"; fi
  # The log goes to a file the server user can write; pg_ctl detaches the server
  # with its output there, so nothing holds the caller's stdout open.
  touch "$dir/postgres.log"
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir/postgres.log"; fi
  as_pg "$bin/pg_ctl" -D "$dir/pgdata" -l "$dir/postgres.log" -w -t "$kReadySeconds" start \
    </dev/null >>"$dir/pg_ctl.log" 2>&1
}

pg_create_db() {
  local dir=$1 port=$2 bin
  bin=$(pg_bin)
  "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAt \
    -c "CREATE ROLE idforge LOGIN" -c "CREATE DATABASE idforge OWNER idforge" \
    </dev/null >>"$dir/pg_ctl.log" 2>&1 || die "creating role and database idforge failed; see $dir/pg_ctl.log"
}

pg_stop() {
  local dir=$1 bin pid=""
  [ -f "$dir/pgdata/postmaster.pid" ] || return 0
  pid=$(head -n 1 "$dir/pgdata/postmaster.pid")
  bin=$(pg_bin)
  # fast: end sessions and shut down cleanly, in well under a second.
  as_pg "$bin/pg_ctl" -D "$dir/pgdata" -m fast -w -t "$kStopSeconds" stop \
    </dev/null >>"$dir/pg_ctl.log" 2>&1 || true
  [ -n "$pid" ] && wait_gone "$pid"
}

cmd_rebuild_replica() {
  local dir=${1:-} primary=""
  [ -n "$dir" ] && [ -f "$dir/kind" ] || die "usage: $prog rebuild-replica DIR --primary PDIR"
  [ "${2:-}" = --primary ] && [ -f "${3:-}/kind" ] || die "usage: $prog rebuild-replica DIR --primary PDIR"
  dir=$(cd "$dir" && pwd)
  primary=$(cd "$3" && pwd)
  pg_stop "$dir"
  rm -rf "$dir/pgdata"
  pg_init_replica "$dir" "$primary"
  start_server "$dir" postgres "$(cat "$dir/port")"
  url_of "$dir"
}

cmd_start_replica() {
  local dir=${1:-} primary="" owner=""
  [ -n "$dir" ] || die "usage: $prog start postgres-replica DIR --primary PDIR [--owner PID]"
  shift
  while [ $# -gt 0 ]; do
    case $1 in
    --primary)
      primary=${2:-}
      shift 2
      ;;
    --owner)
      owner=${2:-}
      shift 2
      ;;
    *) die "unknown option $1" ;;
    esac
  done
  [ -n "$primary" ] && [ -f "$primary/kind" ] || die "--primary needs the DIR of a running PostgreSQL server"
  primary=$(cd "$primary" && pwd)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ ! -f "$dir/kind" ] || die "$dir already holds a $(cat "$dir/kind") server"
  echo postgres >"$dir/kind"
  if [ -n "$owner" ]; then start_watchdog "$dir" "$owner"; fi
  pg_init_replica "$dir" "$primary"
  start_server "$dir" postgres
  url_of "$dir"
}
