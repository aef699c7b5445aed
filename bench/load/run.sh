#!/usr/bin/env bash
# Load figures for docs/benchmarks.md: idforge's server beside a peer on the same load
# generator, in one run on one machine.
#
#   RESP: redis-benchmark against redis-server's INCR, then our INCR and ID.NEXT
#         (pipeline 1 and 16), on defaults and with one event loop (as redis-server);
#         once with redis-benchmark's single thread, once with --threads (one per core)
#   HTTP: wrk (keep-alive) against an nginx location returning a fixed short body, then
#         our GET /v1/snowflake
#
# Usage: bench/load/run.sh [--seconds N] [--clients N] [--rounds N] [--idforge BIN]
#                          [--syscalls-only]
# Each pairing runs --rounds times (default 3), peer and idforge alternating, and the
# table shows the medians: on a shared machine one run alone says little. Each run lasts
# about --seconds (default 8). Besides rate and p99, each row gives the server's own CPU
# time per request (user + system, from /proc): what it spends, whoever limits the rate.
# Last, system calls per unpipelined INCR under strace, for each server (when strace is
# installed).
# Everything runs on 127.0.0.1, random free ports, in a temporary directory that is
# removed at the end. Prints Markdown tables (and ratios to the peer).
set -euo pipefail

seconds=8
syscalls_only=0
clients=50
rounds=3
bin=build/idforge
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --idforge) bin="$2"; shift 2 ;;
    --syscalls-only) syscalls_only=1; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
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
redis_pid=$!
pids+=("$redis_pid")

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
nginx_pid=$!
pids+=("$nginx_pid")

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
  echo $! >"$work/$name.pid"
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
default_pid=$(cat "$work/default.pid")
one_pid=$(cat "$work/one-loop.pid")
wait_port "$redis_port" redis-server "$work/redis.log"
wait_port "$nginx_port" nginx "$work/nginx/error.log"

# --- load ---
# redis-benchmark has no duration, only a request count: about 100,000 requests per
# second per pipelined command lasts about `seconds` on this kind of machine. Runs must
# not be short: with --threads it reports the elapsed time in steps of about 250 ms.
requests_for() { echo $(( $1 * seconds * 100000 )); }

# CPU time (user + system, in clock ticks) of processes and their threads; nginx's
# workers are children of its master, so they are added by hand.
ticks=$(getconf CLK_TCK)
cpu_of() {  # pid...
  local total=0 p t
  for p in "$@"; do
    t=$(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)
    total=$((total + t))
  done
  echo "$total"
}
nginx_pids() { echo "$nginx_pid" $(pgrep -P "$nginx_pid"); }
# Microseconds of server CPU per request.
per_request() { awk -v t="$1" -v n="$2" -v hz="$ticks" 'BEGIN { printf "%.2f", (n > 0 ? t * 1e6 / hz / n : 0) }'; }

# redis-benchmark --csv: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
# "p95_latency_ms","p99_latency_ms","max_latency_ms". Prints "rate p99 cpu-us-per-request".
resp_run() {  # pid port pipeline generator-threads command...
  local pid=$1 port=$2 pipeline=$3 threads=$4; shift 4
  local n before after out
  n=$(requests_for "$pipeline")
  local thread_args=()
  [ "$threads" -le 1 ] || thread_args=(--threads "$threads")
  before=$(cpu_of "$pid")
  # timeout: redis-benchmark spins forever when its server has gone away.
  out=$(timeout $((seconds * 6 + 30)) redis-benchmark -h 127.0.0.1 -p "$port" -c "$clients" \
    -P "$pipeline" "${thread_args[@]}" -n "$n" --csv "$@" 2>/dev/null | tail -1 | tr -d '"')
  after=$(cpu_of "$pid")
  echo "$out" | awk -F, -v cpu="$(per_request $((after - before)) "$n")" \
    '{ printf "%.0f %s %s\n", $2, $7, cpu }'
}

# wrk --latency: "N requests in 8.00s", "Requests/sec: N" and "99% 1.23ms"
http_run() {  # pids-function url
  local pids_of=$1 url=$2 out before after
  # shellcheck disable=SC2046 # one pid per word
  before=$(cpu_of $($pids_of))
  out=$(wrk -t "$(nproc)" -c "$clients" -d "${seconds}s" --latency "$url")
  # shellcheck disable=SC2046
  after=$(cpu_of $($pids_of))
  local rps p99 n errors
  rps=$(echo "$out" | awk '/Requests\/sec/ { printf "%.0f", $2 }')
  # wrk picks the unit (850.00us, 1.23ms, 1.02s); the table is in ms.
  p99=$(echo "$out" | awk '$1 == "99%" {
    v = $2 + 0
    if ($2 ~ /us$/) v /= 1000; else if ($2 ~ /[0-9]s$/) v *= 1000
    printf "%.3f", v }')
  n=$(echo "$out" | awk '$2 == "requests" && $3 == "in" { print $1 }')
  errors=$(echo "$out" | awk '/Non-2xx|Socket errors/ { print }')
  [ -z "$errors" ] || echo "run.sh: $url: $errors" >&2
  echo "$rps $p99 $(per_request $((after - before)) "${n:-0}")"
}
idforge_pids() { echo "$default_pid"; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
# 1234567 -> 1,234,567
commas() { echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/; ta'; }

# Median of "rate p99 cpu" lines, by rate.
median() { sort -n | awk '{ r[NR] = $0 } END { print r[int((NR + 1) / 2)] }'; }

# Runs a pairing `rounds` times, alternating; sets peer_* and ours_* (rps, p99, cpu).
pair() {  # peer-command ours-command (each a function call string)
  local peer_runs="" ours_runs=""
  for _ in $(seq "$rounds"); do
    peer_runs+="$($1)"$'\n'
    ours_runs+="$($2)"$'\n'
  done
  read -r peer_rps peer_p99 peer_cpu < <(printf '%s' "$peer_runs" | grep . | median)
  read -r ours_rps ours_p99 ours_cpu < <(printf '%s' "$ours_runs" | grep . | median)
}
row() {  # load peer ours
  echo "| $1 | $2 | $(commas "$peer_rps")/s | $3 | $(commas "$ours_rps")/s |" \
    "$(ratio "$ours_rps" "$peer_rps") | $peer_p99 / $ours_p99 | $peer_cpu / $ours_cpu |"
}
header() {
  echo "| load | peer (same generator) | peer rate | idforge | idforge rate | ratio |" \
    "p99 ms peer / idforge | CPU µs per request peer / idforge |"
  echo "| --- | --- | ---: | --- | ---: | ---: | --- | --- |"
}

loops=$(nproc)
[ "$syscalls_only" -eq 1 ] || {
for threads in 1 "$loops"; do
  if [ "$threads" -le 1 ]; then
    echo "RESP, redis-benchmark on one thread (the generator saturates first):"
    generator="redis-benchmark"
  else
    echo "RESP, redis-benchmark --threads $threads (the machine saturates):"
    generator="redis-benchmark --threads $threads"
  fi
  echo
  header
  for pipeline in 1 16; do
    load="$generator -c $clients -P $pipeline"
    peer="resp_run $redis_pid $redis_port $pipeline $threads INCR bench"
    for command in INCR ID.NEXT; do
      pair "$peer" "resp_run $default_pid $resp_port $pipeline $threads $command bench"
      row "$load" "redis-server INCR" "$command bench ($loops loops, default)"
    done
    pair "$peer" "resp_run $one_pid $resp_port_one $pipeline $threads INCR bench"
    row "$load" "redis-server INCR" "INCR bench (1 loop, as redis-server)"
  done
  echo
done
echo "HTTP:"
echo
header
pair "http_run nginx_pids http://127.0.0.1:$nginx_port/v1/snowflake" \
  "http_run idforge_pids ${http_url%/}/v1/snowflake"
row "wrk -t $loops -c $clients keep-alive" "nginx fixed body ($loops workers)" \
  "GET /v1/snowflake ($loops loops, default)"
echo
}

# System calls per request (strace -c -f on the server's every thread) for unpipelined
# INCR, on a separate run: strace slows the server several times over, so what its
# threads do by the clock (idforge's millisecond clock thread, redis-server's cron)
# counts several times more per request than without strace. The idle rate (a second
# with no load) times the run's length is that share: the table gives the count with and
# without it, and the calls that make it up.
syscalls_run() {  # name pid port
  local name=$1 pid=$2 port=$3 n=100000 out=$work/strace-$1 idle start end
  command -v strace >/dev/null || return 0
  strace -c -f -p "$pid" -o "$out.idle" 2>/dev/null & local st=$!
  sleep 2; kill -INT "$st"; wait "$st" 2>/dev/null || true
  idle=$(awk 'NR > 2 && $1 ~ /^[0-9]/ && $NF != "total" { t += $4 } END { print t / 2 }' "$out.idle")
  strace -c -f -p "$pid" -o "$out.load" 2>/dev/null & st=$!
  sleep 0.5
  start=$(date +%s.%N)
  timeout 300 redis-benchmark -h 127.0.0.1 -p "$port" -c "$clients" -n "$n" -q INCR bench \
    >/dev/null 2>&1 || true
  end=$(date +%s.%N)
  kill -INT "$st"; wait "$st" 2>/dev/null || true
  awk -v name="$name" -v n="$n" -v idle="$idle" -v secs="$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" '
    NR > 2 && $1 ~ /^[0-9]/ && $NF != "total" { c[$NF] = $4; t += $4 }
    END {
      split("read recvfrom write sendto epoll_wait futex", k, " ")
      line = ""
      for (i = 1; i <= 6; i++) if (c[k[i]] / n >= 0.0005) line = line sprintf("%s %.3f, ", k[i], c[k[i]] / n)
      printf "| %s | %.2f | %.2f | %s |\n", name, t / n, (t - idle * secs) / n, substr(line, 1, length(line) - 2)
    }' "$out.load"
}
if command -v strace >/dev/null; then
  echo "System calls per unpipelined INCR (redis-benchmark -c $clients -n 100000, strace -c -f):"
  echo
  echo "| server | per request | less the idle rate | the request's calls, per request |"
  echo "| --- | ---: | ---: | --- |"
  syscalls_run "redis-server" "$redis_pid" "$redis_port"
  syscalls_run "idforge ($loops loops, default)" "$default_pid" "$resp_port"
  syscalls_run "idforge (1 loop)" "$one_pid" "$resp_port_one"
  echo
fi
echo "$(nproc) cores shared by the load generator and the servers; medians of $rounds" \
  "alternating rounds of about $seconds s; $clients connections;" \
  "$("$bin" --version 2>/dev/null | head -1)."
