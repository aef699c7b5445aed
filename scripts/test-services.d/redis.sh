# shellcheck shell=bash
# Redis for scripts/test-services: a server (optionally without persistence), a replica
# and a set of Sentinels. Sourced by the script; uses its common helpers.

# ---- Redis -------------------------------------------------------------------------

redis_start_once() {
  local dir=$1 port=$2 host protect=yes
  host=$(host_of "$dir")
  # Protected mode answers only loopback clients (there is no password); a --host server
  # listens inside a test's own network namespaces, for clients of other namespaces.
  if [ -f "$dir/host" ]; then protect=no; fi
  rm -f "$dir/redis.pid"
  # appendonly + appendfsync always: the durable setting docs/stores.md recommends,
  # so the tests and the figures run against it.
  # --no-persistence (a no_persistence file): no files, a restart comes back empty. A
  # replica (a replica_of file naming its primary's DIR) follows that Redis.
  local persist=(--appendonly yes --appendfsync always) replica=()
  if [ -f "$dir/no_persistence" ]; then persist=(--appendonly no); fi
  if [ -f "$dir/replica_of" ]; then
    replica=(--replicaof 127.0.0.1 "$(cat "$(cat "$dir/replica_of")/port")")
  fi
  redis-server --bind "$host" --port "$port" --dir "$dir" --daemonize yes \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --save '' \
    "${persist[@]}" --protected-mode "$protect" --repl-diskless-sync-delay 0 \
    ${replica[@]+"${replica[@]}"} </dev/null >>"$dir/redis-start.log" 2>&1 || return 1
  local i
  for i in $(seq 1 $((kReadySeconds * 10))); do
    if redis-cli -h "$host" -p "$port" ping 2>/dev/null | grep -q PONG; then return 0; fi
    # Exited already (port taken): give up on this port at once.
    if [ -f "$dir/redis.pid" ] && ! alive "$(cat "$dir/redis.pid")"; then return 1; fi
    if [ "$i" -gt 10 ] && [ ! -f "$dir/redis.pid" ]; then return 1; fi
    sleep 0.1
  done
  return 1
}

redis_stop() {
  local dir=$1 pid
  [ -f "$dir/redis.pid" ] || return 0
  pid=$(cat "$dir/redis.pid")
  if alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    kill -CONT "$pid" 2>/dev/null || true # a paused server handles TERM once it runs
    wait_gone "$pid"
  fi
  rm -f "$dir/redis.pid"
}

# ---- Redis replica and Sentinels ---------------------------------------------------

kSentinelDownAfterMs=1000      # a primary that does not answer for this long is down
kSentinelFailoverTimeoutMs=3000 # a failover that stalls is tried again after this
kSentinelMaxCount=7

# Waits until the Redis in `dir` (a replica) has synced with its primary, as both see
# it: the replica's link is up and the primary lists it as online. Between the two, a
# WAIT on the primary does not count the replica yet (Redis 7 puts a replica online at
# its first REPLCONF ACK after the transfer).
redis_wait_synced() {
  local port primary_port i
  port=$(cat "$1/port")
  primary_port=$(cat "$(cat "$1/replica_of")/port")
  for i in $(seq 1 $((kReadySeconds * 10))); do
    if redis-cli -h 127.0.0.1 -p "$port" info replication 2>/dev/null |
      grep -q '^master_link_status:up' &&
      redis-cli -h 127.0.0.1 -p "$primary_port" info replication 2>/dev/null |
      grep -q "^slave[0-9]*:.*,port=$port,state=online"; then
      return 0
    fi
    sleep 0.1
  done
  return 1
}

cmd_start_redis_replica() {
  local dir=${1:-} primary="" owner="" no_persistence=""
  [ -n "$dir" ] || die "usage: $prog start redis-replica DIR --primary PDIR [--no-persistence] [--owner PID]"
  shift
  while [ $# -gt 0 ]; do
    case $1 in
    --primary)
      primary=${2:-}
      shift 2
      ;;
    --owner)
      owner=${2:-}
      [ -n "$owner" ] || die "--owner needs a PID"
      shift 2
      ;;
    --no-persistence)
      no_persistence=1
      shift
      ;;
    *) die "unknown option $1 (start redis-replica DIR --primary PDIR [--no-persistence] [--owner PID])" ;;
    esac
  done
  [ -n "$primary" ] && [ "$(cat "$primary/kind" 2>/dev/null)" = redis ] ||
    die "--primary needs the DIR of a Redis server that start made"
  primary=$(cd "$primary" && pwd)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ ! -f "$dir/kind" ] || die "$dir already holds a $(cat "$dir/kind") server"
  echo redis >"$dir/kind"
  echo "$primary" >"$dir/replica_of"
  if [ -n "$no_persistence" ]; then touch "$dir/no_persistence"; fi
  if [ -n "$owner" ]; then start_watchdog "$dir" "$owner"; fi
  start_server "$dir" redis
  redis_wait_synced "$dir" ||
    die "the replica in $dir did not sync with $primary within ${kReadySeconds}s; see $dir/redis.log"
  url_of "$dir"
}

# The Sentinel in `dir` on `port`. A restart keeps the config the Sentinel rewrote (its
# id, the primary it follows now, the Sentinels and replicas it has met).
sentinel_start_once() {
  local dir=$1 port=$2 restarting=$3 name pid i
  name=$(cat "$dir/name")
  if [ -z "$restarting" ]; then
    {
      echo "# idforge test Sentinel: loopback only"
      echo "port $port"
      echo "bind 127.0.0.1"
      echo "daemonize yes"
      echo "pidfile $dir/sentinel.pid"
      echo "logfile $dir/sentinel.log"
      echo "dir $dir"
      echo "sentinel monitor $name 127.0.0.1 $(cat "$dir/primary_port") $(cat "$dir/quorum")"
      echo "sentinel down-after-milliseconds $name $kSentinelDownAfterMs"
      echo "sentinel failover-timeout $name $kSentinelFailoverTimeoutMs"
      echo "sentinel parallel-syncs $name 1"
    } >"$dir/sentinel.conf"
  fi
  rm -f "$dir/sentinel.pid"
  redis-server "$dir/sentinel.conf" --sentinel </dev/null >>"$dir/sentinel-start.log" 2>&1 || return 1
  for i in $(seq 1 $((kReadySeconds * 10))); do
    if [ -f "$dir/sentinel.pid" ]; then
      pid=$(cat "$dir/sentinel.pid")
      alive "$pid" || return 1 # the port was taken
      if listens_as "$port" "$pid" && redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then
        return 0
      fi
    elif [ "$i" -gt 10 ]; then
      return 1
    fi
    sleep 0.1
  done
  return 1
}

sentinel_member_dirs() {
  local k
  for k in $(seq 1 "$(cat "$1/members")"); do echo "$1/sentinel-$k"; done
}

sentinels_url() {
  local m out=""
  for m in $(sentinel_member_dirs "$1"); do out="${out:+$out,}127.0.0.1:$(cat "$m/port")"; done
  echo "redis-sentinel://$out/$(cat "$1/name")"
}

# One field of `SENTINEL master NAME` as the Sentinel on `port` answers it.
sentinel_field() {
  redis-cli -h 127.0.0.1 -p "$1" sentinel master "$2" 2>/dev/null |
    awk -v want="$3" 'prev == want { print; exit } { prev = $0 }'
}

# Waits until every Sentinel knows all the others and as many replicas as the primary
# has: before that, a failover could fail for want of votes or of a replica.
sentinels_wait_ready() {
  local dir=$1 name count primary_port replicas m ready i
  name=$(cat "$dir/name")
  count=$(cat "$dir/members")
  primary_port=$(cat "$dir/sentinel-1/primary_port")
  replicas=$(redis-cli -h 127.0.0.1 -p "$primary_port" info replication 2>/dev/null |
    sed -n 's/^connected_slaves:\([0-9]*\).*/\1/p')
  for i in $(seq 1 $((kReadySeconds * 10))); do
    ready=1
    for m in $(sentinel_member_dirs "$dir"); do
      [ "$(sentinel_field "$(cat "$m/port")" "$name" num-other-sentinels)" = $((count - 1)) ] &&
        [ "$(sentinel_field "$(cat "$m/port")" "$name" num-slaves)" -ge "${replicas:-0}" ] 2>/dev/null ||
        ready=0
    done
    [ $ready -eq 0 ] || return 0
    sleep 0.2
  done
  return 1
}

sentinels_stop() {
  local m
  for m in $(sentinel_member_dirs "$1"); do
    stop_watchdog "$m"
    pidfile_stop "$m/sentinel.pid"
  done
}

# Starts the stopped Sentinels again, each on its port.
sentinels_restart() {
  local m
  for m in $(sentinel_member_dirs "$1"); do
    if ! { [ -f "$m/sentinel.pid" ] && alive "$(cat "$m/sentinel.pid")"; }; then
      start_server "$m" sentinel "$(cat "$m/port")"
    fi
  done
}

cmd_start_sentinels() {
  local dir=${1:-} primary="" name="" count=3 owner="" wait="" k m
  local usage="start redis-sentinel DIR --primary PDIR --name NAME [--count N] [--wait] [--owner PID]"
  [ -n "$dir" ] || die "usage: $prog $usage"
  shift
  while [ $# -gt 0 ]; do
    case $1 in
    --primary)
      primary=${2:-}
      shift 2
      ;;
    --name)
      name=${2:-}
      shift 2
      ;;
    --count)
      count=${2:-}
      shift 2
      ;;
    --wait)
      wait=1
      shift
      ;;
    --owner)
      owner=${2:-}
      [ -n "$owner" ] || die "--owner needs a PID"
      shift 2
      ;;
    *) die "unknown option $1 ($usage)" ;;
    esac
  done
  [ -n "$primary" ] && [ "$(cat "$primary/kind" 2>/dev/null)" = redis ] ||
    die "--primary needs the DIR of a Redis server that start made"
  [[ "$name" =~ ^[A-Za-z0-9._-]+$ ]] || die "--name needs a master name of A-Z a-z 0-9 . _ -, got '$name'"
  [[ "$count" =~ ^[1-9]$ ]] && [ "$count" -le $kSentinelMaxCount ] ||
    die "--count takes a number from 1 to $kSentinelMaxCount, got '$count'"
  primary=$(cd "$primary" && pwd)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ ! -f "$dir/kind" ] || die "$dir already holds a $(cat "$dir/kind") server"
  echo redis-sentinel >"$dir/kind"
  echo "$count" >"$dir/members"
  echo "$name" >"$dir/name"
  if [ -n "$owner" ]; then start_watchdog "$dir" "$owner"; fi
  for k in $(seq 1 "$count"); do
    m="$dir/sentinel-$k"
    mkdir -p "$m"
    echo sentinel >"$m/kind"
    echo "$name" >"$m/name"
    cat "$primary/port" >"$m/primary_port"
    echo $((count / 2 + 1)) >"$m/quorum"
    start_server "$m" sentinel
  done
  # For `client DIR`: the first Sentinel.
  cp "$dir/sentinel-1/port" "$dir/port"
  if [ -n "$wait" ]; then
    sentinels_wait_ready "$dir" ||
      die "the Sentinels in $dir did not meet each other and the replicas within ${kReadySeconds}s; see $dir/sentinel-*/sentinel.log"
  fi
  url_of "$dir"
}
