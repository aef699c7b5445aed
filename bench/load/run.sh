#!/usr/bin/env bash
# Load figures for docs/benchmarks.md: idforge's server beside redis-server and nginx on
# the same load generator, in one run on one machine.
#
#   resp     redis-benchmark (one thread, as it comes) against redis-server's INCR, then
#            our INCR (segment) and ID.SNOWFLAKE, pipeline 1 and 16; INCR again on loops
#            that do not poll before sleeping (--io-spin-us 0)
#   threads  the same with redis-benchmark --threads (one per core: the machine
#            saturates), and our INCR on one event loop that does not poll (as
#            redis-server runs commands)
#   http     wrk (keep-alive) against nginx locations returning a fixed short body, then
#            our GET /api/snowflake/get/x (Leaf's route) and GET /v1/snowflake
#   tls      resp and http over TLS: redis-server --tls-port, nginx ssl, ours with
#            tls_cert (TLS 1.3 for all three); INCR again on loops that do not poll
#   tokens   resp and http with a token: redis-server --requirepass (AUTH), nginx
#            checking the Authorization header, ours with a tokens file
#   syscalls system calls per unpipelined INCR and ID.SNOWFLAKE at full speed (perf stat),
#            plain and TLS
#   profile  where each server's CPU goes (perf record): kernel, TLS libraries, its own
#            code and the rest, for unpipelined RESP and HTTP, plain and TLS
#
# Usage: bench/load/run.sh [--seconds N] [--clients N] [--rounds N] [--idforge BIN]
#                          [--only SECTION[,SECTION...]] [--syscalls-only]
# Each pairing runs --rounds times (default 3), peer and idforge alternating, and the
# tables show the medians: on a shared machine one run alone says little. Each run lasts
# about --seconds (default 5). Each row gives requests per second and the server's own
# CPU time per request (user + system of all its processes and threads, from /proc
# before and after): what it spends, whoever limits the rate; and the load generator's
# (redis-benchmark's or wrk's) CPU per request, which shares the cores and, at one
# thread, can be the limit itself. The goal columns are those of docs/benchmarks.md: rate
# at least 1.1x the peer's, CPU at most 0.8x.
# Everything runs on 127.0.0.1, random free ports, in a temporary directory that is
# removed at the end. Prints Markdown tables.
set -euo pipefail

me=run.sh
seconds=5
clients=50
rounds=3
bin=build/idforge
sections=resp,threads,http,tls,tokens,syscalls,profile
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --idforge) bin="$2"; shift 2 ;;
    --only) sections="$2"; shift 2 ;;
    --syscalls-only) sections=syscalls; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
    *) echo "$me: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for s in ${sections//,/ }; do
  case "$s" in
    resp|threads|http|tls|tokens|syscalls|profile) ;;
    *) echo "$me: unknown section '$s' (resp, threads, http, tls, tokens, syscalls, profile)" >&2
       exit 2 ;;
  esac
done
wanted() { [[ ",$sections," == *",$1,"* ]]; }
for tool in redis-server redis-benchmark nginx wrk openssl; do
  command -v "$tool" >/dev/null || { echo "$me: $tool is missing; run scripts/install-deps" >&2; exit 1; }
done
[ -x "$bin" ] || { echo "$me: $bin is not built; run make build" >&2; exit 1; }
bin=$(realpath "$bin")

work=$(mktemp -d /tmp/idforge-load-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=bench/load/common.sh
. "$(dirname "$0")/common.sh"
make_certificates
token=bench-token-0123456789abcdef
echo "$token * name=bench" >"$work/tokens.txt"
snowflake_body='{"kind":"snowflake","ids":["910499571847892992"]}'

# --- peers ---
# One redis-server for plain and TLS (as one idforge below), one with a password.
redis_port=$(free_port)
redis_tls_port=$(free_port)
redis-server --port "$redis_port" --tls-port "$redis_tls_port" --bind 127.0.0.1 \
  --tls-cert-file "$work/server.pem" --tls-key-file "$work/server.key" \
  --tls-ca-cert-file "$work/ca.pem" --tls-auth-clients no \
  --save '' --appendonly no --dir "$work" --logfile "$work/redis.log" &
redis_pid=$!
pids+=("$redis_pid")
redis_auth_port=$(free_port)
redis-server --port "$redis_auth_port" --bind 127.0.0.1 --requirepass "$token" \
  --save '' --appendonly no --dir "$work" --logfile "$work/redis-auth.log" &
redis_auth_pid=$!
pids+=("$redis_auth_pid")

nginx_port=$(free_port)
nginx_tls_port=$(free_port)
nginx_auth_port=$(free_port)
mkdir -p "$work/nginx"
locations="
    location = /v1/snowflake { default_type application/json; return 200 '$snowflake_body'; }
    location = /api/snowflake/get/x { default_type text/plain; return 200 '910499571847892992'; }"
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
  ssl_certificate $work/server.pem;
  ssl_certificate_key $work/server.key;
  ssl_protocols TLSv1.3;
  server { listen 127.0.0.1:$nginx_port; $locations }
  server { listen 127.0.0.1:$nginx_tls_port ssl; $locations }
  server {
    listen 127.0.0.1:$nginx_auth_port;
    if (\$http_authorization != "Bearer $token") { return 401; }
    $locations
  }
}
EOF
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" &
nginx_pid=$!
pids+=("$nginx_pid")
# The peers listen before idforge's servers bind their port 0: one of those could
# otherwise take a port picked above.
wait_port "$redis_port" redis-server "$work/redis.log"
wait_port "$redis_auth_port" redis-server "$work/redis-auth.log"
wait_port "$nginx_port" nginx "$work/nginx/error.log"

# --- idforge ---
# "main": TLS on its listeners and plain ones beside them (plain_http, plain_resp), so
# plain and TLS rows measure one process; "tokens": a tokens file; "one": one event loop
# that sleeps at once when idle, as redis-server does; "nospin": two such loops, plain
# and TLS as "main".
for name in main tokens one nospin; do
  "$bin" tag create bench --step 1000000 --data-dir "$work/$name" >/dev/null
done
listen=(--http 127.0.0.1:0 --resp 127.0.0.1:0)
start_idforge main "${listen[@]}" --plain-http 127.0.0.1:0 --plain-resp 127.0.0.1:0 \
  --tls-cert "$work/server.pem" --tls-key "$work/server.key"
start_idforge tokens "${listen[@]}" --tokens "$work/tokens.txt"
start_idforge one "${listen[@]}" --io-threads 1 --io-spin-us 0
start_idforge nospin "${listen[@]}" --plain-http 127.0.0.1:0 --plain-resp 127.0.0.1:0 \
  --tls-cert "$work/server.pem" --tls-key "$work/server.key" --io-spin-us 0

# --- load ---
nginx_pids() { echo "$nginx_pid" $(pgrep -P "$nginx_pid"); }

# redis-benchmark has no duration, only a request count: sized from a rough rate so a
# run lasts about `seconds`. Runs must not be short: with --threads it reports the
# elapsed time in steps of about 250 ms.
# redis-benchmark --csv: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
# "p95_latency_ms","p99_latency_ms","max_latency_ms". Prints "rate p99 cpu-us-per-request
# generator-cpu-us-per-request".
resp_run() {  # pids rate-per-second pipeline threads redis-benchmark-args... -- command...
  local server_pids=$1 rate=$2 pipeline=$3 threads=$4; shift 4
  local args=() n before after gen_before out self=$BASHPID
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  shift
  n=$(( rate * seconds ))
  [ "$threads" -le 1 ] || args+=(--threads "$threads")
  # shellcheck disable=SC2086 # one pid per word
  before=$(cpu_of $server_pids)
  gen_before=$(children_cpu "$self")
  # timeout: redis-benchmark spins forever when its server has gone away.
  out=$(timeout $((seconds * 8 + 30)) redis-benchmark -h 127.0.0.1 -c "$clients" \
    -P "$pipeline" -n "$n" --csv "${args[@]}" "$@" 2>/dev/null | tail -1 | tr -d '"')
  # shellcheck disable=SC2086
  after=$(cpu_of $server_pids)
  echo "$out" | awk -F, -v cpu="$(per_request $((after - before)) "$n")" \
    -v gen="$(per_request $(($(children_cpu "$self") - gen_before)) "$n")" \
    '{ printf "%.0f %s %s %s\n", $2, $7, cpu, gen }'
}

# wrk --latency: "N requests in 8.00s", "Requests/sec: N" and "99% 1.23ms".
http_run() {  # pids url wrk-args...
  local server_pids=$1 url=$2 out before after gen_before gen_after self=$BASHPID; shift 2
  # shellcheck disable=SC2086
  before=$(cpu_of $server_pids)
  gen_before=$(children_cpu "$self")
  out=$(wrk -t "$(nproc)" -c "$clients" -d "${seconds}s" --latency "$@" "$url")
  # shellcheck disable=SC2086
  after=$(cpu_of $server_pids)
  gen_after=$(children_cpu "$self")
  local rps p99 n errors
  rps=$(echo "$out" | awk '/Requests\/sec/ { printf "%.0f", $2 }')
  p99=$(wrk_ms "$(echo "$out" | awk '$1 == "99%" { print $2 }')")
  n=$(echo "$out" | awk '$2 == "requests" && $3 == "in" { print $1 }')
  errors=$(echo "$out" | awk '/Non-2xx|Socket errors/ { print }')
  [ -z "$errors" ] || echo "$me: $url: $errors" >&2
  echo "$rps $p99 $(per_request $((after - before)) "${n:-0}")" \
    "$(per_request $((gen_after - gen_before)) "${n:-0}")"
}

# Runs a pairing `rounds` times, alternating; sets peer_* and ours_* (rps, p99, cpu, gen),
# each the median round by rate.
pair() {  # peer-command ours-command (each a command line, quoted for eval)
  local peer_runs="" ours_runs=""
  for _ in $(seq "$rounds"); do
    peer_runs+="$(eval "$1")"$'\n'
    ours_runs+="$(eval "$2")"$'\n'
  done
  read -r peer_rps peer_p99 peer_cpu peer_gen < <(printf '%s' "$peer_runs" | grep . | median)
  read -r ours_rps ours_p99 ours_cpu ours_gen < <(printf '%s' "$ours_runs" | grep . | median)
}
header() {
  echo "| request | load | peer | peer req/s | idforge req/s | rate ratio (goal >= 1.1) |" \
    "CPU µs/req peer / idforge | CPU ratio (goal <= 0.8) | p99 ms peer / idforge |" \
    "generator µs/req peer / idforge |"
  echo "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
}
row() {  # request load peer
  local rate cpu
  rate=$(ratio "$ours_rps" "$peer_rps")
  cpu=$(ratio "$ours_cpu" "$peer_cpu")
  awk -v r="$rate" 'BEGIN { exit !(r >= 1.1) }' && rate="**$rate**"
  awk -v c="$cpu" 'BEGIN { exit !(c <= 0.8) }' && cpu="**$cpu**"
  echo "| $1 | $2 | $3 | $(commas "$peer_rps") | $(commas "$ours_rps") | $rate |" \
    "$peer_cpu / $ours_cpu | $cpu | $peer_p99 / $ours_p99 | $peer_gen / $ours_gen |"
}

loops=$(nproc)
main_pid=$(pid_of main)
# rough rates per pipeline, plain and TLS: they only size runs
plain_rate() { [ "$1" -eq 1 ] && echo 100000 || echo 1200000; }
tls_rate() { [ "$1" -eq 1 ] && echo 60000 || echo 500000; }

resp_rows() {  # threads: the RESP rows against redis-server, plain TCP
  local threads=$1 p command load
  for p in 1 16; do
    load="redis-benchmark$([ "$threads" -le 1 ] || echo " --threads $threads") -c $clients -P $p"
    for command in "INCR bench" ID.SNOWFLAKE; do
      # shellcheck disable=SC2086 # the command is words
      pair "resp_run $redis_pid $(plain_rate $p) $p $threads -p $redis_port -- INCR bench" \
        "resp_run $main_pid $(plain_rate $p) $p $threads -p $(port_of main plain_resp) -- $command"
      row "$command" "$load" "redis-server INCR"
    done
    if [ "$threads" -gt 1 ]; then
      pair "resp_run $redis_pid $(plain_rate $p) $p $threads -p $redis_port -- INCR bench" \
        "resp_run $(pid_of one) $(plain_rate $p) $p $threads -p $(port_of one resp) -- INCR bench"
      row "INCR bench, 1 loop, no polling" "$load" "redis-server INCR"
    else
      pair "resp_run $redis_pid $(plain_rate $p) $p $threads -p $redis_port -- INCR bench" \
        "resp_run $(pid_of nospin) $(plain_rate $p) $p $threads -p $(port_of nospin plain_resp) -- INCR bench"
      row "INCR bench, no polling" "$load" "redis-server INCR"
    fi
  done
}

if wanted resp; then
  echo "RESP, plain TCP, redis-benchmark on one thread ($loops loops, default):"
  echo
  header
  resp_rows 1
  echo
fi
if wanted threads; then
  echo "RESP, plain TCP, redis-benchmark --threads $loops ($loops loops, default, and 1 loop):"
  echo
  header
  resp_rows "$loops"
  echo
fi
http_rows() {  # scheme nginx-port idforge-port idforge-pids label [wrk-args, quoted for eval]
  local scheme=$1 nport=$2 iport=$3 ipids=$4 label=$5 extra=${6:-} path
  for path in /api/snowflake/get/x /v1/snowflake; do
    pair "http_run '$(nginx_pids)' $scheme://127.0.0.1:$nport$path $extra" \
      "http_run $ipids $scheme://127.0.0.1:$iport$path $extra"
    row "GET $path$label" "wrk -t $loops -c $clients keep-alive" "nginx fixed body"
  done
}
if wanted http; then
  echo "HTTP, plain TCP ($loops loops; nginx $loops workers):"
  echo
  header
  http_rows http "$nginx_port" "$(port_of main plain_http)" "$main_pid" ""
  echo
fi
if wanted tls; then
  echo "TLS 1.3: RESP against redis-server --tls-port, HTTP against nginx ssl:"
  echo
  header
  for p in 1 16; do
    for command in "INCR bench" ID.SNOWFLAKE; do
      tls_args="--tls --cacert $work/ca.pem"
      # shellcheck disable=SC2086
      pair "resp_run $redis_pid $(tls_rate $p) $p 1 -p $redis_tls_port $tls_args -- INCR bench" \
        "resp_run $main_pid $(tls_rate $p) $p 1 -p $(port_of main resp) $tls_args -- $command"
      row "$command" "redis-benchmark --tls -c $clients -P $p" "redis-server INCR"
    done
    # shellcheck disable=SC2086
    pair "resp_run $redis_pid $(tls_rate $p) $p 1 -p $redis_tls_port $tls_args -- INCR bench" \
      "resp_run $(pid_of nospin) $(tls_rate $p) $p 1 -p $(port_of nospin resp) $tls_args -- INCR bench"
    row "INCR bench, no polling" "redis-benchmark --tls -c $clients -P $p" "redis-server INCR"
  done
  http_rows https "$nginx_tls_port" "$(port_of main http)" "$main_pid" ""
  echo
fi
if wanted tokens; then
  echo "With a token: RESP AUTH (redis-server --requirepass), HTTP Authorization: Bearer"
  echo "(nginx comparing the header; ours with a tokens file):"
  echo
  header
  tokens_pid=$(pid_of tokens)
  for p in 1 16; do
    for command in "INCR bench" ID.SNOWFLAKE; do
      # shellcheck disable=SC2086
      pair "resp_run $redis_auth_pid $(plain_rate $p) $p 1 -p $redis_auth_port -a $token -- INCR bench" \
        "resp_run $tokens_pid $(plain_rate $p) $p 1 -p $(port_of tokens resp) -a $token -- $command"
      row "$command" "redis-benchmark -a -c $clients -P $p" "redis-server INCR"
    done
  done
  http_rows http "$nginx_auth_port" "$(port_of tokens http)" "$tokens_pid" ", token" \
    "-H 'Authorization: Bearer $token'"
  echo
fi

# Runs `perf PERF-ARGS... -- sleep` on a server while GENERATOR runs, and ends perf when
# the generator does: perf ends with its workload, so the sleep is killed (a background
# job ignores SIGINT). Prints the generator's seconds.
perf_during() {  # perf-args... -- generator-command...
  local perf_args=() st start end
  while [ "$1" != "--" ]; do perf_args+=("$1"); shift; done
  shift
  perf "${perf_args[@]}" -- sleep 600 >/dev/null 2>&1 & st=$!
  sleep 0.5
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || true
  end=$(date +%s.%N)
  pkill -P "$st" -x sleep; wait "$st" 2>/dev/null || true
  awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
}

# System calls per request at full speed: perf stat counting the system call tracepoints
# of every thread of the server (a counter per call, so the server runs at nearly its
# usual speed; strace slows it several times over, and a slowed server finds the next
# request already there, which hides empty reads). The idle rate (two seconds with no
# load) times the run's length is taken off: the calls a server makes by the clock.
syscalls_run() {  # name pid port command...
  local name=$1 pid=$2 port=$3 n=300000 out=$work/perf-$2 events secs
  shift 3
  events=raw_syscalls:sys_enter
  for call in read recvfrom write sendto epoll_wait epoll_ctl futex sched_yield; do
    events+=",syscalls:sys_enter_$call"
  done
  perf stat -x, -e "$events" -p "$pid" -o "$out.idle" -- sleep 2 2>/dev/null
  secs=$(perf_during stat -x, -e "$events" -p "$pid" -o "$out.load" -- \
    timeout 300 redis-benchmark -h 127.0.0.1 -p "$port" -c "$clients" -n "$n" -q "$@")
  # perf stat -x,: "count,,event,..." per line.
  awk -F, -v name="$name" -v n="$n" -v secs="$secs" '
    FILENAME ~ /idle$/ && $3 == "raw_syscalls:sys_enter" { idle = $1 / 2 }
    FILENAME ~ /load$/ && $1 ~ /^[0-9]+$/ { split($3, e, "sys_enter_"); c[e[2]] = $1; if ($3 == "raw_syscalls:sys_enter") t = $1 }
    END {
      split("read recvfrom write sendto epoll_wait epoll_ctl futex sched_yield", k, " ")
      line = ""
      for (i = 1; i <= 8; i++) if (c[k[i]] / n >= 0.0005) line = line sprintf("%s %.3f, ", k[i], c[k[i]] / n)
      less = (t - idle * secs) / n
      printf "| %s | %.0f | %.2f | %s%.2f%s | %s |\n", name, n / secs, t / n, (less <= 2.05 ? "**" : ""),
        less, (less <= 2.05 ? "**" : ""), substr(line, 1, length(line) - 2)
    }' "$out.idle" "$out.load"
}
if wanted syscalls; then
  if command -v perf >/dev/null && perf stat -e raw_syscalls:sys_enter -- true >/dev/null 2>&1; then
    echo "System calls per unpipelined request at full speed (redis-benchmark -c $clients -n 300000,"
    echo "perf stat on the system call tracepoints):"
    echo
    echo "| server, request | req/s | per request | less the idle rate (goal <= 2.05) | the request's calls, per request |"
    echo "| --- | ---: | ---: | ---: | --- |"
    syscalls_run "redis-server, INCR" "$redis_pid" "$redis_port" INCR bench
    syscalls_run "idforge ($loops loops), INCR" "$main_pid" "$(port_of main plain_resp)" INCR bench
    syscalls_run "idforge ($loops loops), ID.SNOWFLAKE" "$main_pid" "$(port_of main plain_resp)" ID.SNOWFLAKE
    syscalls_run "idforge ($loops loops, no polling), INCR" "$(pid_of nospin)" "$(port_of nospin plain_resp)" INCR bench
    syscalls_run "idforge (1 loop, no polling), INCR" "$(pid_of one)" "$(port_of one resp)" INCR bench
    syscalls_run "redis-server, TLS, INCR" "$redis_pid" "$redis_tls_port" \
      --tls --cacert "$work/ca.pem" INCR bench
    syscalls_run "idforge ($loops loops), TLS, INCR" "$main_pid" "$(port_of main resp)" \
      --tls --cacert "$work/ca.pem" INCR bench
    echo
  else
    echo "$me: perf (Debian linux-perf) is missing or may not read tracepoints: no system call table" >&2
  fi
fi
# Where a server's CPU goes: perf record (cpu-clock samples, every thread of the server's
# processes) while the generator runs, then the samples' shares by the object they fell
# in. The floor column is the peer's kernel and TLS shares together: the lowest CPU ratio
# a server could reach making the peer's system calls and spending nothing in user space
# but the peer's TLS work.
profile_run() {  # pids generator-command...
  local server_pids=$1 out=$work/perf-record own
  shift
  # The server's own object by the file it runs (Debian's redis-server is a link to
  # redis-check-rdb).
  own=$(basename "$(readlink -f "/proc/${server_pids%% *}/exe")")
  perf_during record -q -e cpu-clock -p "${server_pids// /,}" -o "$out" -- "$@" >/dev/null
  # perf report --sort dso: "  86.01%  [kernel.kallsyms]" per object.
  perf report -i "$out" --sort dso --stdio -q 2>/dev/null | awk -v own="$own" '
    $1 ~ /%$/ {
      v = $1 + 0; d = $2
      if (d ~ /^\[kernel/) k += v
      else if (d ~ /^lib(crypto|ssl)/) t += v
      else if (d == own) o += v
      else { r += v; sub(/\.so.*/, "", d); rest[d] += v }
    }
    END {
      # The rest, with its three largest objects: "9.8 libc:4.1,libstdc++:2.0,[vdso]:1.5".
      top = ""
      for (i = 0; i < 3; i++) {
        best = ""
        for (d in rest) if (best == "" || rest[d] > rest[best]) best = d
        if (best == "" || rest[best] < 0.5) break
        top = top (top == "" ? "" : ",") sprintf("%s:%.1f", best, rest[best])
        delete rest[best]
      }
      printf "%.1f %.1f %.1f %.1f %s\n", k, t, o, r, top
    }'
}
profile_rows() {  # load peer-name peer-pids peer-command -- idforge-command
  local load=$1 peer=$2 ppids=$3 pk pt po pr ptop ik it io ir itop peer_cmd=()
  shift 3
  while [ "$1" != "--" ]; do peer_cmd+=("$1"); shift; done
  shift
  read -r pk pt po pr ptop < <(profile_run "$ppids" "${peer_cmd[@]}")
  read -r ik it io ir itop < <(profile_run "$main_pid" "$@")
  pct() { awk -v v="$1" 'BEGIN { if (v > 0) printf "%.1f%%", v }'; }
  # "libc:4.1,libstdc++:2.0" -> " (libc 4.1%, libstdc++ 2.0%)"
  objects() { [ -z "$1" ] || echo " ($(echo "$1" | sed 's/:\([0-9.]*\)/ \1%/g; s/,/, /g'))"; }
  echo "| $load | $peer | $(pct "$pk") | $(pct "$pt") | $(pct "$po") | $(pct "$pr")$(objects "${ptop:-}") |" \
    "**$(awk -v k="$pk" -v t="$pt" 'BEGIN { printf "%.2f", (k + t) / 100 }')** |"
  echo "| | idforge | $(pct "$ik") | $(pct "$it") | $(pct "$io") | $(pct "$ir")$(objects "${itop:-}") | |"
}
if wanted profile; then
  if command -v perf >/dev/null && perf record -q -e cpu-clock -o /dev/null -- true >/dev/null 2>&1; then
    rb=(timeout 300 redis-benchmark -h 127.0.0.1 -c "$clients" -n 200000 -q)
    tls_opts=(--tls --cacert "$work/ca.pem")
    wrk_args=(wrk -t "$loops" -c "$clients" -d "${seconds}s")
    echo "Where the server's CPU goes (one run each, perf record -e cpu-clock on its processes; unpipelined"
    echo "redis-benchmark -c $clients -n 200000 INCR, and wrk -t $loops -c $clients -d ${seconds}s GET /v1/snowflake):"
    echo
    echo "| load | server | kernel | TLS libraries (libcrypto, libssl) | the server's code |" \
      "libraries and the rest | floor: the peer's kernel and TLS share |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
    profile_rows "RESP, plain" redis-server "$redis_pid" \
      "${rb[@]}" -p "$redis_port" INCR bench -- "${rb[@]}" -p "$(port_of main plain_resp)" INCR bench
    profile_rows "RESP, TLS" redis-server "$redis_pid" \
      "${rb[@]}" -p "$redis_tls_port" "${tls_opts[@]}" INCR bench -- \
      "${rb[@]}" -p "$(port_of main resp)" "${tls_opts[@]}" INCR bench
    profile_rows "HTTP, plain" "nginx ($loops workers)" "$(nginx_pids)" \
      "${wrk_args[@]}" "http://127.0.0.1:$nginx_port/v1/snowflake" -- \
      "${wrk_args[@]}" "http://127.0.0.1:$(port_of main plain_http)/v1/snowflake"
    profile_rows "HTTP, TLS" "nginx ($loops workers)" "$(nginx_pids)" \
      "${wrk_args[@]}" "https://127.0.0.1:$nginx_tls_port/v1/snowflake" -- \
      "${wrk_args[@]}" "https://127.0.0.1:$(port_of main http)/v1/snowflake"
    echo
  else
    echo "$me: perf (Debian linux-perf) is missing or may not record: no profile table" >&2
  fi
fi
echo "$(date -u +%Y-%m-%d), $(nproc) cores shared by the load generator and the servers;" \
  "medians of $rounds alternating rounds of about $seconds s; $clients connections;" \
  "$("$bin" --version 2>/dev/null | head -1); $(redis-server --version | cut -d' ' -f1-3);" \
  "$(nginx -v 2>&1 | sed 's/.*: //')."
