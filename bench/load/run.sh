#!/usr/bin/env bash
# Load figures for docs/benchmarks.md: idforge's server beside a peer on the same load
# generator, in one run on one machine.
#
#   RESP: redis-benchmark against redis-server's INCR, then our INCR and ID.NEXT
#         (pipeline 1 and 16), on defaults and with one event loop (as redis-server)
#   HTTP: wrk (keep-alive) against an nginx location returning a fixed short body, then
#         our GET /v1/snowflake
#
# Usage: bench/load/run.sh [--seconds N] [--clients N] [--rounds N] [--idforge BIN]
# Each pairing runs --rounds times (default 3), peer and idforge alternating, and the
# table shows the medians: on a shared machine one run alone says little.
# Everything runs on 127.0.0.1, random free ports, in a temporary directory that is
# removed at the end. Prints a Markdown table (and ratios to the peer).
set -euo pipefail

seconds=10
clients=50
rounds=3
bin=build/idforge
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --idforge) bin="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for tool in redis-server redis-benchmark nginx wrk; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool is missing; run scripts/install-deps" >&2; exit 1; }
done
[ -x "$bin" ] || { echo "run.sh: $bin is not built; run make build" >&2; exit 1; }
bin=$(realpath "$bin")

work=$(mktemp -d /tmp/idforge-load-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# A port nobody listens on (connect refused), from a random start.
free_port() {
  local p
  for _ in $(seq 200); do
    p=$(( (RANDOM * 2 + 20000) % 40000 + 20000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "run.sh: no free port found" >&2; exit 1
}
wait_port() {  # port name log
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "run.sh: $2 does not listen on port $1; its log:" >&2
  tail -5 "$3" >&2 2>/dev/null || true
  exit 1
}

# --- peers ---
redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
  --dir "$work" --logfile "$work/redis.log" &
pids+=($!)

nginx_port=$(free_port)
mkdir -p "$work/nginx"
cat >"$work/nginx/nginx.conf" <<EOF
worker_processes $(nproc);
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
daemon off;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 10000000;
  client_body_temp_path $work/nginx; proxy_temp_path $work/nginx;
  fastcgi_temp_path $work/nginx; uwsgi_temp_path $work/nginx; scgi_temp_path $work/nginx;
  server {
    listen 127.0.0.1:$nginx_port;
    location /v1/snowflake {
      default_type application/json;
      return 200 '{"kind":"snowflake","ids":["910499571847892992"]}';
    }
  }
}
EOF
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" &
pids+=($!)

# --- idforge ---
# Two servers on one data directory would share its lock; each gets its own. The first
# runs on defaults (one event loop per core); the second with one loop, as redis-server
# runs its commands on one thread: on a machine where redis-benchmark takes a core, that
# is the like-for-like pairing.
start_idforge() {  # name extra-args...
  local name=$1; shift
  "$bin" tag create bench --step 100000 --data-dir "$work/$name" >/dev/null
  "$bin" serve --http 127.0.0.1:0 --resp 127.0.0.1:0 --data-dir "$work/$name" "$@" \
    >"$work/$name.out" 2>"$work/$name.err" &
  pids+=($!)
  for _ in $(seq 100); do
    grep -q '^idforge serve: resp ' "$work/$name.out" 2>/dev/null && break
    sleep 0.1
  done
  grep -q '^idforge serve: resp ' "$work/$name.out" || { cat "$work/$name.err" >&2; exit 1; }
}
url_of() { sed -n 's/^idforge serve: http \(http:[^ ]*\)/\1/p' "$work/$1.out"; }
resp_port_of() { sed -n 's/^idforge serve: resp redis:\/\/.*:\([0-9]*\)$/\1/p' "$work/$1.out"; }
start_idforge default
start_idforge one-loop --io-threads 1
http_url=$(url_of default)
resp_port=$(resp_port_of default)
resp_port_one=$(resp_port_of one-loop)
wait_port "$redis_port" redis-server "$work/redis.log"
wait_port "$nginx_port" nginx "$work/nginx/error.log"

# --- load ---
requests_for() { echo $(( $1 * seconds * 20000 )); }  # enough to last about `seconds`

# redis-benchmark --csv: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
# "p95_latency_ms","p99_latency_ms","max_latency_ms"
resp_run() {  # port pipeline command...
  local port=$1 pipeline=$2; shift 2
  # timeout: redis-benchmark spins forever when its server has gone away.
  timeout $((seconds * 6 + 30)) redis-benchmark -h 127.0.0.1 -p "$port" -c "$clients" -P "$pipeline" \
    -n "$(requests_for "$pipeline")" --csv "$@" 2>/dev/null |
    tail -1 | tr -d '"' | awk -F, '{ printf "%.0f %s\n", $2, $7 }'
}

# wrk --latency: "Requests/sec: N" and "99% 1.23ms"
http_run() {  # url
  local out
  out=$(wrk -t 2 -c "$clients" -d "${seconds}s" --latency "$1")
  local rps p99
  rps=$(echo "$out" | awk '/Requests\/sec/ { printf "%.0f", $2 }')
  p99=$(echo "$out" | awk '$1 == "99%" { print $2 }')
  local errors
  errors=$(echo "$out" | awk '/Non-2xx|Socket errors/ { print }')
  [ -z "$errors" ] || echo "run.sh: $1: $errors" >&2
  echo "$rps $p99"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

# Median of "rate p99" lines, by rate; prints "rate p99".
median() { sort -n | awk '{ r[NR] = $0 } END { print r[int((NR + 1) / 2)] }'; }

# Runs a pairing `rounds` times, alternating; sets peer_rps peer_p99 ours_rps ours_p99.
pair() {  # peer-command ours-command (each a function call string)
  local peer_runs="" ours_runs=""
  for _ in $(seq "$rounds"); do
    peer_runs+="$($1)"$'\n'
    ours_runs+="$($2)"$'\n'
  done
  read -r peer_rps peer_p99 < <(printf '%s' "$peer_runs" | grep . | median)
  read -r ours_rps ours_p99 < <(printf '%s' "$ours_runs" | grep . | median)
}

echo "| load | peer (same generator) | peer rate | idforge | idforge rate | ratio | p99 peer / idforge |"
echo "| --- | --- | ---: | --- | ---: | ---: | --- |"
loops=$(nproc)
for pipeline in 1 16; do
  for command in INCR ID.NEXT; do
    pair "resp_run $redis_port $pipeline INCR bench" "resp_run $resp_port $pipeline $command bench"
    echo "| redis-benchmark -c $clients -P $pipeline | redis-server INCR | $peer_rps/s | $command bench ($loops loops, default) | $ours_rps/s | $(ratio "$ours_rps" "$peer_rps") | ${peer_p99} ms / ${ours_p99} ms |"
  done
  pair "resp_run $redis_port $pipeline INCR bench" "resp_run $resp_port_one $pipeline INCR bench"
  echo "| redis-benchmark -c $clients -P $pipeline | redis-server INCR | $peer_rps/s | INCR bench (1 loop, as redis-server) | $ours_rps/s | $(ratio "$ours_rps" "$peer_rps") | ${peer_p99} ms / ${ours_p99} ms |"
done
pair "http_run http://127.0.0.1:$nginx_port/v1/snowflake" "http_run ${http_url%/}/v1/snowflake"
echo "| wrk -t2 -c $clients keep-alive | nginx fixed body ($loops workers) | $peer_rps/s | GET /v1/snowflake ($loops loops, default) | $ours_rps/s | $(ratio "$ours_rps" "$peer_rps") | $peer_p99 / $ours_p99 |"
echo
echo "$(nproc) cores shared by the load generator and the server; medians of $rounds" \
  "alternating rounds; $seconds s per wrk run; $clients connections;" \
  "$("$bin" --version 2>/dev/null | head -1)."
