# shellcheck shell=bash
# etcd for scripts/test-services: one member, or a cluster of members. Sourced by the
# script; uses its common helpers.

# ---- etcd --------------------------------------------------------------------------

etcd_start_once() {
  local dir=$1 port=$2 restarting=$3 peer pid i host
  host=$(host_of "$dir")
  if [ -n "$restarting" ]; then
    peer=$(cat "$dir/peer_port")
  else
    peer=$(pick_port)
    while [ "$peer" = "$port" ]; do peer=$(pick_port); done
  fi
  mkdir -p "$dir/etcd-data"
  chmod 0700 "$dir/etcd-data"
  # setsid + closed stdio, as for the watchdog: nothing holds the caller's pipe, and the
  # server outlives the caller's process group (the watchdog ends it).
  setsid etcd --name idforge --data-dir "$dir/etcd-data" \
    --listen-client-urls "http://$host:$port" --advertise-client-urls "http://$host:$port" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "idforge=http://127.0.0.1:$peer" --initial-cluster-state new \
    --initial-cluster-token "idforge-$$-$RANDOM" --logger zap --log-outputs stderr \
    </dev/null >>"$dir/etcd.log" 2>&1 &
  pid=$!
  echo "$pid" >"$dir/etcd.pid"
  for i in $(seq 1 $((kReadySeconds * 10))); do
    alive "$pid" || return 1
    if listens_as "$port" "$pid" &&
      etcdctl --endpoints "http://$host:$port" --dial-timeout 1s --command-timeout 2s \
        endpoint health >/dev/null 2>&1; then
      echo "$peer" >"$dir/peer_port"
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# ---- etcd cluster ------------------------------------------------------------------

kEtcdMaxMembers=7 # etcd advises 3, 5 or 7; more only slows every write

# Starts the member in `dir` without waiting for it. Its name, ports, token and the
# cluster's member list are files there, written by etcd_cluster_start.
etcd_member_launch() {
  local dir=$1 port peer
  port=$(cat "$dir/port")
  peer=$(cat "$dir/peer_port")
  mkdir -p "$dir/etcd-data"
  chmod 0700 "$dir/etcd-data"
  # The --initial-cluster flags count on the first start only: a restarted member reads
  # the membership from its data. setsid and closed stdio as for a single etcd.
  setsid etcd --name "$(cat "$dir/name")" --data-dir "$dir/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "$(cat "$dir/initial_cluster")" --initial-cluster-state new \
    --initial-cluster-token "$(cat "$dir/token")" \
    --heartbeat-interval 100 --election-timeout 1000 --logger zap --log-outputs stderr \
    </dev/null >>"$dir/etcd.log" 2>&1 &
  echo $! >"$dir/etcd.pid"
}

# Waits until the member in `dir` listens and answers a quorum read (endpoint health
# reads a key linearizably, so it needs a leader).
etcd_member_wait() {
  local dir=$1 port pid i
  port=$(cat "$dir/port")
  pid=$(cat "$dir/etcd.pid")
  for i in $(seq 1 $((kReadySeconds * 10))); do
    alive "$pid" || return 1
    if listens_as "$port" "$pid" &&
      etcdctl --endpoints "http://127.0.0.1:$port" --dial-timeout 1s --command-timeout 2s \
        endpoint health >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# start_server's way to restart one member: on its own ports only.
etcd_member_start_once() {
  local dir=$1 port=$2
  [ "$port" = "$(cat "$dir/port")" ] || return 1
  etcd_member_launch "$dir"
  etcd_member_wait "$dir"
}

etcd_member_running() {
  [ -f "$1/etcd.pid" ] && alive "$(cat "$1/etcd.pid")"
}

etcd_cluster_member_dirs() {
  local k
  for k in $(seq 1 "$(cat "$1/members")"); do echo "$1/member-$k"; done
}

# Stops every member of the cluster in `dir` (and the watchdogs their restarts began):
# all are asked at once, then awaited, so a cluster losing its quorum on the way does
# not slow the others down.
etcd_cluster_stop() {
  local dir=$1 m
  for m in $(etcd_cluster_member_dirs "$dir"); do
    [ -f "$m/kind" ] || continue
    stop_watchdog "$m"
    if etcd_member_running "$m"; then
      kill -TERM "$(cat "$m/etcd.pid")" 2>/dev/null || true
      kill -CONT "$(cat "$m/etcd.pid")" 2>/dev/null || true # a paused member handles it once it runs
    fi
  done
  for m in $(etcd_cluster_member_dirs "$dir"); do
    if [ -f "$m/etcd.pid" ]; then
      wait_gone "$(cat "$m/etcd.pid")"
      rm -f "$m/etcd.pid"
    fi
  done
}

# N members on fresh random client and peer ports, all launched before any is awaited
# (a member alone has no quorum). A port taken meanwhile fails a member: start over.
etcd_cluster_start() {
  local dir=$1 n=$2 k m p f used initial token
  for _ in $(seq 1 $kStartAttempts); do
    used=" "
    initial=""
    token="idforge-$$-$RANDOM"
    for k in $(seq 1 "$n"); do
      m="$dir/member-$k"
      rm -rf "$m"
      mkdir -p "$m"
      echo etcd-member >"$m/kind"
      echo "member-$k" >"$m/name"
      echo "$token" >"$m/token"
      for f in port peer_port; do
        p=$(pick_port)
        while [[ "$used" == *" $p "* ]]; do p=$(pick_port); done
        used="$used$p "
        echo "$p" >"$m/$f"
      done
      initial="${initial:+$initial,}member-$k=http://127.0.0.1:$(cat "$m/peer_port")"
    done
    for m in $(etcd_cluster_member_dirs "$dir"); do
      echo "$initial" >"$m/initial_cluster"
      etcd_member_launch "$m"
    done
    local ok=1
    for m in $(etcd_cluster_member_dirs "$dir"); do
      etcd_member_wait "$m" || {
        ok=0
        break
      }
    done
    [ $ok -eq 0 ] || return 0
    etcd_cluster_stop "$dir"
  done
  die "the etcd cluster did not start after $kStartAttempts attempts; see the logs in $dir/member-*"
}

# Starts the stopped members again, all at once, and waits for every member.
etcd_cluster_restart() {
  local dir=$1 m
  for m in $(etcd_cluster_member_dirs "$dir"); do
    etcd_member_running "$m" || etcd_member_launch "$m"
  done
  for m in $(etcd_cluster_member_dirs "$dir"); do
    etcd_member_wait "$m" || die "etcd member $m did not come back; see $m/etcd.log"
  done
}

# http://127.0.0.1:P1,http://127.0.0.1:P2,... for etcdctl --endpoints.
etcd_cluster_endpoints() {
  local m out=""
  for m in $(etcd_cluster_member_dirs "$1"); do
    out="${out:+$out,}http://127.0.0.1:$(cat "$m/port")"
  done
  echo "$out"
}

etcd_cluster_url() {
  local m out=""
  for m in $(etcd_cluster_member_dirs "$1"); do out="${out:+$out,}127.0.0.1:$(cat "$m/port")"; done
  echo "etcd://$out"
}

cmd_start_etcd_cluster() {
  local dir=${1:-} members=3 owner=""
  [ -n "$dir" ] || die "usage: $prog start etcd-cluster DIR [--members N] [--owner PID]"
  shift
  while [ $# -gt 0 ]; do
    case $1 in
    --members)
      members=${2:-}
      [[ "$members" =~ ^[1-9][0-9]?$ ]] && [ "$members" -le $kEtcdMaxMembers ] ||
        die "--members takes a number from 1 to $kEtcdMaxMembers, got '$members'"
      shift 2
      ;;
    --owner)
      owner=${2:-}
      [ -n "$owner" ] || die "--owner needs a PID"
      shift 2
      ;;
    *) die "unknown option $1 (start etcd-cluster DIR [--members N] [--owner PID])" ;;
    esac
  done
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ ! -f "$dir/kind" ] || die "$dir already holds a $(cat "$dir/kind") server"
  echo etcd-cluster >"$dir/kind"
  echo "$members" >"$dir/members"
  if [ -n "$owner" ]; then start_watchdog "$dir" "$owner"; fi
  etcd_cluster_start "$dir" "$members"
  url_of "$dir"
}
