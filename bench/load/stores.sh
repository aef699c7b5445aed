#!/usr/bin/env bash
# Segment IDs through the server on each SQL store, in one run on one machine
# (docs/benchmarks.md, "Segment stores through the server"): PostgreSQL and MariaDB (and
# Leaf's leaf_alloc on MariaDB) started by scripts/test-services, one `idforge serve` on
# each, and redis-benchmark sending INCR TAG (one segment ID per command, pipelined 16)
# to each in turn. The step is small and pinned (--max-step = --step), so the store is
# asked for a range every STEP IDs: the rows show what each store sustains, beside the
# ranges per second the server fetched (from /metrics).
#
# Usage: bench/load/stores.sh [--seconds N] [--step N] [--rounds N] [--idforge BIN]
# Each store runs --rounds times (default 3), the stores alternating; the table shows
# the medians. Everything is on 127.0.0.1 in a temporary directory removed at the end.
set -euo pipefail

seconds=6
step=100
rounds=3
bin=build/idforge
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --step) step="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --idforge) bin="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "stores.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
command -v redis-benchmark >/dev/null || { echo "stores.sh: redis-benchmark is missing; run scripts/install-deps" >&2; exit 1; }
[ -x "$bin" ] || { echo "stores.sh: $bin is not built; run make build" >&2; exit 1; }
bin=$(realpath "$bin")
services=$(realpath "$(dirname "$0")/../../scripts/test-services")

work=$(mktemp -d /tmp/idforge-stores-XXXXXX)
chmod 0755 "$work"  # PostgreSQL runs as its own user when started by root
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for d in "$work"/pg "$work"/my; do [ -d "$d" ] && "$services" stop "$d" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

pg_url=$("$services" start postgres "$work/pg")
my_url=$("$services" start mariadb "$work/my")
"$services" client "$work/my" -e "CREATE TABLE leaf_alloc (biz_tag varchar(128) NOT NULL PRIMARY KEY,
  max_id bigint NOT NULL DEFAULT 1, step int NOT NULL, description varchar(256),
  update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP)"

# name -> store URL
declare -A store=(
  [postgres]="$pg_url"
  [mariadb]="$my_url"
  [mariadb-leaf]="$my_url?table=leaf_alloc"
)
names=(postgres mariadb mariadb-leaf)

start_server() {  # name
  local name=$1 dir="$work/$1"
  "$bin" tag create bench --step "$step" --store "${store[$name]}" --data-dir "$dir" >/dev/null
  "$bin" serve --http 127.0.0.1:0 --resp 127.0.0.1:0 --data-dir "$dir" --store "${store[$name]}" \
    --max-step "$step" >"$dir.out" 2>"$dir.err" &
  pids+=($!)
  for _ in $(seq 100); do
    grep -q '^idforge serve: resp ' "$dir.out" 2>/dev/null && return 0
    sleep 0.1
  done
  cat "$dir.err" >&2
  exit 1
}
resp_port() { sed -n 's/^idforge serve: resp redis:\/\/.*:\([0-9]*\)$/\1/p' "$work/$1.out"; }
http_url() { sed -n 's/^idforge serve: http \(http:[^ ]*[^/]\)\/*$/\1/p' "$work/$1.out"; }
fetches() {  # name: ranges fetched so far
  curl -s "$(http_url "$1")/metrics" |
    awk 'index($0, "idforge_segment_fetches_total{tag=\"bench\"} ") == 1 {n = $2} END {print n + 0}'
}
for n in "${names[@]}"; do start_server "$n"; done

# IDs per second of one run; ranges per second from the server's counter.
declare -A ids_runs ranges_runs
for r in $(seq 1 "$rounds"); do
  for n in "${names[@]}"; do
    before=$(fetches "$n")
    start=$(date +%s.%N)
    out=$(redis-benchmark -p "$(resp_port "$n")" -c 20 -P 16 -n $((seconds * 60000)) -q \
      INCR bench 2>/dev/null | tr '\r' '\n' | grep -Eo '[0-9.]+ requests per second' | tail -1)
    end=$(date +%s.%N)
    after=$(fetches "$n")
    ids=${out%% *}
    ranges=$(awk -v a="$after" -v b="$before" -v s="$start" -v e="$end" \
      'BEGIN { printf "%.0f", (a - b) / (e - s) }')
    ids_runs[$n]+="$ids "
    ranges_runs[$n]+="$ranges "
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo
echo "| store | segment IDs/s through the server (INCR, pipeline 16) | ranges/s fetched (step $step) |"
echo "| --- | --- | --- |"
for n in "${names[@]}"; do
  printf '| %s | %.0f | %s |\n' "$n" "$(echo "${ids_runs[$n]}" | median)" \
    "$(echo "${ranges_runs[$n]}" | median)"
done
echo
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%F)"
