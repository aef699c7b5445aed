# shellcheck shell=bash
# ZooKeeper for scripts/test-services: standalone, or an ensemble. Sourced by the
# script; uses its common helpers.

# ---- ZooKeeper ---------------------------------------------------------------------

kZkClasspath=/usr/share/java/zookeeper.jar # its manifest lists the other Debian jars

# Answers a four-letter word, e.g. `zk_4lw 2181 ruok` prints imok.
zk_4lw() {
  timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf %s "$2" >&3 && cat <&3' \
    zk4lw "$1" "$2" 2>/dev/null
}

zk_start_once() {
  local dir=$1 port=$2 pid i main=org.apache.zookeeper.server.ZooKeeperServerMain heap=-Xmx256m
  [ -f "$kZkClasspath" ] || die "ZooKeeper not found ($kZkClasspath; install zookeeper)"
  if [ -f "$dir/zkdata/myid" ]; then
    # An ensemble member: zk_member_config wrote its zoo.cfg (all its ports) once.
    main=org.apache.zookeeper.server.quorum.QuorumPeerMain
    heap=$kZkMemberHeap
  else
    zk_standalone_config "$dir" "$port"
  fi
  # slf4j-simple sends the server's log to stderr, i.e. zookeeper.log, timed to the ms.
  # The C1 compiler alone: a test server starts sooner and needs no peak speed.
  setsid java -Xms32m "$heap" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Djava.net.preferIPv4Stack=true -Dorg.slf4j.simpleLogger.showDateTime=true \
    -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS \
    -cp "$kZkClasspath:/usr/share/java/slf4j-simple.jar" "$main" "$dir/zoo.cfg" \
    </dev/null >>"$dir/zookeeper.log" 2>&1 &
  pid=$!
  echo "$pid" >"$dir/zookeeper.pid"
  for i in $(seq 1 $((kReadySeconds * 10))); do
    alive "$pid" || return 1
    if listens_as "$port" "$pid" && [ "$(zk_4lw "$port" ruok)" = imok ]; then return 0; fi
    sleep 0.1
  done
  return 1
}

zk_standalone_config() {
  local dir=$1 port=$2
  mkdir -p "$dir/zkdata"
  {
    echo "# idforge test server: standalone, loopback only"
    echo "tickTime=500"
    echo "minSessionTimeout=1000"
    echo "maxSessionTimeout=60000"
    echo "dataDir=$dir/zkdata"
    echo "clientPort=$port"
    echo "clientPortAddress=127.0.0.1"
    echo "maxClientCnxns=0"
    echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=ruok,srvr,stat,mntr"
  } >"$dir/zoo.cfg"
}

# ---- ZooKeeper ensemble ------------------------------------------------------------

kZkMemberHeap=-Xmx128m # three JVMs share the test machine's cores and memory

# Member `id`'s zoo.cfg and myid; `servers` holds the server.N lines of every member.
zk_member_config() {
  local dir=$1 id=$2 port=$3 servers=$4
  mkdir -p "$dir/zkdata"
  echo "$id" >"$dir/zkdata/myid"
  echo zookeeper >"$dir/kind"
  echo "$port" >"$dir/port"
  {
    echo "# idforge test server: ensemble member $id, loopback only"
    echo "tickTime=500"
    # A follower has 5 s to sync with a new leader and drops out after 2 s of silence.
    echo "initLimit=10"
    echo "syncLimit=4"
    echo "minSessionTimeout=1000"
    echo "maxSessionTimeout=60000"
    echo "dataDir=$dir/zkdata"
    echo "clientPort=$port"
    echo "clientPortAddress=127.0.0.1"
    echo "maxClientCnxns=0"
    echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=ruok,srvr,stat,mntr,cons"
    # Transaction log files grow by 4 MB rather than 64 MB: three members, one disk.
    echo "preAllocSize=4096"
    # Even a one-member ensemble runs as a quorum peer (srvr says leader).
    echo "standaloneEnabled=false"
    printf '%s' "$servers"
  } >"$dir/zoo.cfg"
}

# "leader", "follower", or "" while it is not part of a serving quorum.
zk_mode() {
  { zk_4lw "$1" srvr || true; } | sed -n 's/^Mode: //p'
}

zk_ensemble_ports() {
  local dir=$1 k
  for k in $(seq 1 "$(cat "$dir/members")"); do cat "$dir/member-$k/port"; done
}

zk_ensemble_url() {
  local url="" p
  for p in $(zk_ensemble_ports "$1"); do url="$url${url:+,}127.0.0.1:$p"; done
  echo "zookeeper://$url"
}

# Waits until every member serves: one leader, the others followers.
zk_ensemble_wait() {
  local dir=$1 i p mode leaders followers
  for i in $(seq 1 $((kReadySeconds * 10))); do
    leaders=0
    followers=0
    for p in $(zk_ensemble_ports "$dir"); do
      mode=$(zk_mode "$p")
      [ "$mode" = leader ] && leaders=$((leaders + 1))
      [ "$mode" = follower ] && followers=$((followers + 1))
    done
    [ $leaders -eq 1 ] && [ $((leaders + followers)) -eq "$(cat "$dir/members")" ] && return 0
    sleep 0.1
  done
  return 1
}

zk_ensemble_stop() {
  local dir=$1 m pid
  # All at once: a member stopped first would make the others elect again, in vain.
  for m in "$dir"/member-*; do
    [ -f "$m/zookeeper.pid" ] || continue
    pid=$(cat "$m/zookeeper.pid")
    if alive "$pid"; then
      kill -TERM "$pid" 2>/dev/null || true
      kill -CONT "$pid" 2>/dev/null || true
    fi
  done
  for m in "$dir"/member-*; do pidfile_stop "$m/zookeeper.pid"; done
}

# Starts members `n` of `dir` (all when none are given) in parallel; false if one fails.
zk_ensemble_launch() {
  local dir=$1 k pids=() ok=0
  shift
  for k in "$@"; do
    zk_start_once "$dir/member-$k" "$(cat "$dir/member-$k/port")" &
    pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || ok=1; done
  return $ok
}

cmd_start_ensemble() {
  local dir=${1:-} owner="" n=3 attempt k p used ports servers
  [ -n "$dir" ] || die "usage: $prog start zookeeper-ensemble DIR [--members N] [--owner PID]"
  shift
  while [ $# -gt 0 ]; do
    case $1 in
    --members)
      [ $# -ge 2 ] || die "--members needs a number"
      n=$2
      shift 2
      ;;
    --owner)
      owner=${2:-}
      [ -n "$owner" ] || die "--owner needs a PID"
      shift 2
      ;;
    *) die "unknown option $1" ;;
    esac
  done
  [[ "$n" =~ ^[1-9]$ ]] || die "--members needs a number from 1 to 9, got '$n'"
  [ -f "$kZkClasspath" ] || die "ZooKeeper not found ($kZkClasspath; install zookeeper)"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ ! -f "$dir/kind" ] || die "$dir already holds a $(cat "$dir/kind") server"
  echo zookeeper-ensemble >"$dir/kind"
  echo "$n" >"$dir/members"
  if [ -n "$owner" ]; then start_watchdog "$dir" "$owner"; fi
  for attempt in $(seq 1 $kStartAttempts); do
    # Client, quorum and election port of each member, all distinct and free (one
    # listing of the listening ports, not one per port: ss is slow on a busy machine).
    used=" $(ss -Htln 2>/dev/null | awk '{ sub(/.*:/, "", $4); printf "%s ", $4 }') "
    ports=()
    while [ ${#ports[@]} -lt $((3 * n)) ]; do
      p=$((kPortLow + RANDOM % (kPortHigh - kPortLow)))
      if [[ "$used ${ports[*]} " != *" $p "* ]]; then ports+=("$p"); fi
    done
    servers=""
    for k in $(seq 1 "$n"); do
      servers+="server.$k=127.0.0.1:${ports[3 * k - 2]}:${ports[3 * k - 1]}"$'\n'
    done
    for k in $(seq 1 "$n"); do
      rm -rf "$dir/member-$k"
      zk_member_config "$dir/member-$k" "$k" "${ports[3 * k - 3]}" "$servers"
    done
    if zk_ensemble_launch "$dir" $(seq 1 "$n") && zk_ensemble_wait "$dir"; then
      zk_ensemble_url "$dir"
      return 0
    fi
    # A port taken before its member bound it: keep the logs of the failed try.
    zk_ensemble_stop "$dir"
    for k in $(seq 1 "$n"); do
      cat "$dir/member-$k/zookeeper.log" >>"$dir/failed-starts.log" 2>/dev/null || true
    done
  done
  die "the ZooKeeper ensemble did not start after $kStartAttempts attempts; see $dir/failed-starts.log"
}

# Starts the members that are not running, each on its old ports, and waits for a quorum.
cmd_restart_ensemble() {
  local dir=$1 k down=()
  for k in $(seq 1 "$(cat "$dir/members")"); do
    if ! { [ -f "$dir/member-$k/zookeeper.pid" ] && alive "$(cat "$dir/member-$k/zookeeper.pid")"; }; then
      down+=("$k")
    fi
  done
  if [ ${#down[@]} -gt 0 ]; then
    zk_ensemble_launch "$dir" "${down[@]}" || die "members ${down[*]} did not start; see their logs in $dir"
  fi
  zk_ensemble_wait "$dir" || die "the ZooKeeper ensemble in $dir did not form a quorum; see the logs"
  zk_ensemble_url "$dir"
}
