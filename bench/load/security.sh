#!/usr/bin/env bash
# Security figures for docs/benchmarks.md, in one run on one machine:
#
#   TLS vs plain: one server with TLS on its listeners and plain ones beside them
#     (plain_http, plain_resp), so both are measured on the same process: RESP
#     ID.SNOWFLAKE with redis-benchmark (--tls for TLS) and GET /v1/snowflake with wrk
#     (https:// for TLS), both on keep-alive connections; and the same with a token
#     (AUTH / Authorization: Bearer) against none.
#   Fairness: the p50 and p99 latency of single-ID requests (redis-benchmark, one
#     connection) alone, then while other connections pull maximum batches
#     (ID.SNOWFLAKE 10000, then ID.NEXT bench 10000), with batches made in slices
#     (batch_slice 1024, the default, and 256) and in one go (batch_slice 0). The server
#     runs one event loop, so both clients share it: the case slices are for.
#
# Usage: bench/load/security.sh [--seconds N] [--rounds N] [--idforge BIN]
# Each figure is the median of --rounds runs (default 3), plain and TLS alternating.
# Everything runs on 127.0.0.1 in a temporary directory, removed at the end. Prints
# Markdown tables with ratios.
set -euo pipefail

seconds=5
rounds=3
clients=50
bin=build/idforge
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --idforge) bin="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "security.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for tool in redis-benchmark wrk openssl; do
  command -v "$tool" >/dev/null || { echo "security.sh: $tool is missing; run scripts/install-deps" >&2; exit 1; }
done
[ -x "$bin" ] || { echo "security.sh: $bin is not built; run make build" >&2; exit 1; }
bin=$(realpath "$bin")

work=$(mktemp -d /tmp/idforge-security-bench-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

me=security.sh
# shellcheck source=bench/load/common.sh
. "$(dirname "$0")/common.sh"
make_certificates
token=bench-token-0123456789abcdef
echo "$token * name=bench" >"$work/tokens.txt"

tls_flags=(--tls-cert "$work/server.pem" --tls-key "$work/server.key")
listen=(--http 127.0.0.1:0 --resp 127.0.0.1:0 --plain-http 127.0.0.1:0 --plain-resp 127.0.0.1:0)
start_idforge open "${listen[@]}" "${tls_flags[@]}"
start_idforge tokens "${listen[@]}" "${tls_flags[@]}" --tokens "$work/tokens.txt"


# redis-benchmark --csv: "test","rps","avg","min","p50","p95","p99","max". Prints "rps p99".
resp_rate() {  # port extra-args...
  local port=$1; shift
  timeout $((seconds * 8 + 30)) redis-benchmark -h 127.0.0.1 -p "$port" -c "$clients" \
    -n $((seconds * 60000)) --csv "$@" ID.SNOWFLAKE 2>/dev/null | tail -1 | tr -d '"' |
    awk -F, '{ printf "%.0f %s\n", $2, $7 }'
}
# wrk --latency: "Requests/sec: N" and "99% 1.23ms". Prints "rps p99-ms".
http_rate() {  # url extra-wrk-args...
  local url=$1; shift
  local out
  out=$(wrk -t "$(nproc)" -c "$clients" -d "${seconds}s" --latency "$@" "$url")
  echo "$(echo "$out" | awk '/Requests\/sec/ { printf "%.0f", $2 }')" \
    "$(wrk_ms "$(echo "$out" | awk '$1 == "99%" { print $2 }')")"
}

row() {  # label plain-function tls-function
  local plain_runs="" tls_runs="" i
  for i in $(seq "$rounds"); do
    plain_runs+="$($2)"$'\n'
    tls_runs+="$($3)"$'\n'
  done
  local p t
  p=$(printf '%s' "$plain_runs" | median)
  t=$(printf '%s' "$tls_runs" | median)
  # shellcheck disable=SC2086 # "rps p99" into two words
  set -- "$1" $p $t
  echo "| $1 | $2 | $4 | $(ratio "$4" "$2") | $3 | $5 |"
}

auth_header=(-H "Authorization: Bearer $token")
open_resp_plain() { resp_rate "$(port_of open plain_resp)"; }
open_resp_tls() { resp_rate "$(port_of open resp)" --tls --cacert "$work/ca.pem"; }
open_http_plain() { http_rate "http://127.0.0.1:$(port_of open plain_http)/v1/snowflake"; }
open_http_tls() { http_rate "https://127.0.0.1:$(port_of open http)/v1/snowflake"; }
tok_resp_plain() { resp_rate "$(port_of tokens plain_resp)" -a "$token"; }
tok_resp_tls() { resp_rate "$(port_of tokens resp)" -a "$token" --tls --cacert "$work/ca.pem"; }
tok_http_plain() { http_rate "http://127.0.0.1:$(port_of tokens plain_http)/v1/snowflake" "${auth_header[@]}"; }
tok_http_tls() { http_rate "https://127.0.0.1:$(port_of tokens http)/v1/snowflake" "${auth_header[@]}"; }

echo "## TLS against plain TCP ($clients keep-alive connections, median of $rounds runs of ${seconds} s)"
echo
echo "| request | plain req/s | TLS req/s | TLS / plain | plain p99 ms | TLS p99 ms |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
row "RESP ID.SNOWFLAKE" open_resp_plain open_resp_tls
row "HTTP GET /v1/snowflake" open_http_plain open_http_tls
row "RESP ID.SNOWFLAKE, token" tok_resp_plain tok_resp_tls
row "HTTP GET /v1/snowflake, token" tok_http_plain tok_http_tls
echo

# --- fairness ---
# A segment tag with a large step, so batches come from the buffer (refilled behind).
for name in sliced whole; do
  "$bin" tag create bench --data-dir "$work/$name" --step 1000000 >/dev/null
done
start_idforge sliced --http 127.0.0.1:0 --resp 127.0.0.1:0 --io-threads 1
start_idforge small --http 127.0.0.1:0 --resp 127.0.0.1:0 --io-threads 1 --batch-slice 256
start_idforge whole --http 127.0.0.1:0 --resp 127.0.0.1:0 --io-threads 1 --batch-slice 0
small_latency() {  # port: "p50 p99" of single-ID requests on one connection
  # A fixed count: beside unsliced batches a request takes milliseconds.
  timeout $((seconds * 30 + 60)) redis-benchmark -h 127.0.0.1 -p "$1" -c 1 \
    -n $((seconds * 1000)) --csv ID.SNOWFLAKE 2>/dev/null | tail -1 | tr -d '"' |
    awk -F, '{ printf "%s %s\n", $5, $7 }'
}
with_batches() {  # port command...: small_latency while 2 connections send the command
  local port=$1
  shift
  redis-benchmark -h 127.0.0.1 -p "$port" -c 2 -n 100000000 "$@" >/dev/null 2>&1 &
  local puller=$!
  sleep 0.5
  small_latency "$port"
  kill "$puller" 2>/dev/null || true
  wait "$puller" 2>/dev/null || true
}
fair_row() {  # label port [the batch pullers' command...]
  local label=$1 port=$2 runs="" i
  shift 2
  for i in $(seq "$rounds"); do
    if [ $# -gt 0 ]; then runs+="$(with_batches "$port" "$@")"$'\n'; else runs+="$(small_latency "$port")"$'\n'; fi
  done
  local m
  m=$(printf '%s' "$runs" | sort -n -k2 | awk '{ r[NR] = $0 } END { print r[int((NR + 1) / 2)] }')
  # shellcheck disable=SC2086
  set -- "$label" $m
  echo "| $1 | $2 | $3 |"
}
sliced=$(port_of sliced resp)
whole=$(port_of whole resp)
echo "## Single-ID requests while other connections pull 10,000-ID batches (one event loop)"
echo
echo "| case | p50 ms | p99 ms |"
echo "| --- | ---: | ---: |"
fair_row "alone" "$sliced"
fair_row "beside batches, batch_slice 1024 (default)" "$sliced" ID.SNOWFLAKE 10000
fair_row "beside batches, batch_slice 256" "$(port_of small resp)" ID.SNOWFLAKE 10000
fair_row "beside batches, batch_slice 0 (one go)" "$whole" ID.SNOWFLAKE 10000
fair_row "beside segment batches (ID.NEXT), batch_slice 1024" "$sliced" ID.NEXT bench 10000
fair_row "beside segment batches (ID.NEXT), batch_slice 0" "$whole" ID.NEXT bench 10000
