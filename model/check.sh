#!/usr/bin/env bash
# Model-checks the protocols that keep IDs unique (model/*.pml) with SPIN: every real
# model must hold (0 errors over its whole state space), and every run with a guard
# taken out must find a repeated ID, whose trail is printed as the story of who did
# what. docs/reliability.md, "What is proven", explains the models and their bounds.
#
# Usage: model/check.sh [-j JOBS] [-k] [NAME...]
#   NAME   run only these (see the list below, or -l); default: all
#   -j N   runs at once (default: the number of cores)
#   -k     keep the work directory (printed at the end)
#   -l     list the runs and exit
# Needs spin (Debian package spin; scripts/install-deps) and a C compiler. Writes only in
# a temporary directory ($TMPDIR); the source tree is never touched. ctest: model.spin.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
keep=0
list=0
while getopts "j:kl" opt; do
  case $opt in
    j) jobs=$OPTARG ;;
    k) keep=1 ;;
    l) list=1 ;;
    *) sed -n '2,14p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

# name | model | -D flags | expected: holds (0 errors) or repeats (a repeated ID found)
# A run that must hold searches depth-first over its whole state space, at the model's
# bounds. One that must repeat runs at the smallest bounds where its repeat appears (a
# repeat there is one at the full bounds too) and searches breadth-first, so that its
# trail is the shortest story, except where that costs too much (dfs: a longer story).
# pan.c is compiled at -O1 for a long search, at -O0 where compiling takes longer than
# the search (quick, and every run that stops at its first repeat).
runs='
snowflake.etcd                        | snowflake.pml |                                                | holds
snowflake.etcd.no_reservation         | snowflake.pml | -DNO_RESERVATION -DMAX_FAULTS=2 -DTMAX=5        | repeats
snowflake.etcd.no_acquired_mark       | snowflake.pml | -DNO_ACQUIRED_MARK -DMAX_FAULTS=2 -DTMAX=2      | repeats
snowflake.etcd.no_release_check       | snowflake.pml | -DNO_RELEASE_CHECK -DMAX_FAULTS=2 -DTMAX=5      | repeats
snowflake.etcd.no_layout_floor        | snowflake.pml | -DNO_LAYOUT_FLOOR -DMAX_FAULTS=2 -DTMAX=2       | repeats
snowflake.etcd.no_stop_layout         | snowflake.pml | -DNO_STOP_LAYOUT -DTMAX=2                       | repeats
snowflake.redis                       | snowflake.pml | -DREDIS                                        | holds quick
snowflake.redis.no_fence              | snowflake.pml | -DREDIS -DNO_FENCE                             | repeats dfs
snowflake.redis.no_start_delay        | snowflake.pml | -DREDIS -DNO_START_DELAY -DMAX_FAULTS=0         | repeats
snowflake.redis.no_jump_guard         | snowflake.pml | -DREDIS -DNO_JUMP_GUARD -DMAX_FAULTS=1          | repeats dfs
segments.fleet                        | segments.pml  |                                                | holds
segments.fleet.no_fleet_floor.wipe    | segments.pml  | -DNO_FLEET_FLOOR -DSTORY_WIPE                   | repeats
segments.fleet.no_fleet_floor.restore | segments.pml  | -DNO_FLEET_FLOOR -DSTORY_RESTORE                | repeats
segments.fleet.no_floor_cas           | segments.pml  | -DNO_FLOOR_CAS -DMAX_FAULTS=1                   | repeats
segments.static                       | segments.pml  | -DSTATIC                                       | holds quick
segments.static.no_identity_check     | segments.pml  | -DSTATIC -DNO_IDENTITY_CHECK -DMAX_FAULTS=1     | repeats
segments.self                         | segments.pml  | -DSELF                                         | holds
segments.self.no_served_marks         | segments.pml  | -DSELF -DNO_SERVED_MARKS -DMAX_FAULTS=1         | repeats
striped.fleet                         | striped.pml   |                                                | holds quick
striped.static                        | striped.pml   | -DSTATIC                                       | holds quick
striped.static.no_place_check         | striped.pml   | -DSTATIC -DNO_PLACE_CHECK                      | repeats
striped.static.no_all_places         | striped.pml   | -DSTATIC -DNO_ALL_PLACES                       | repeats
'

if [ "$list" = 1 ]; then
  echo "$runs" | sed '/^$/d'
  exit 0
fi
command -v spin >/dev/null 2>&1 || {
  echo "model check: spin not found: run scripts/install-deps (Debian package spin)" >&2
  exit 1
}
# A C compiler for pan.c; at -O0, clang when there is one (it compiles pan.c in half the
# time gcc takes).
cc=${CC:-cc}
command -v "$cc" >/dev/null 2>&1 || { echo "model check: no C compiler ($cc)" >&2; exit 1; }
quick_cc=$cc
if [ -z "${CC:-}" ] && command -v clang >/dev/null 2>&1; then quick_cc=clang; fi

work=$(mktemp -d "${TMPDIR:-/tmp}/idforge-model.XXXXXX")
cleanup() { if [ "$keep" = 1 ]; then echo "model check: kept $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT

# One run in its own directory: spin -a, compile, pan, and for a repeat the replay
# (spin -t, the model's printf lines: the story). The search and the -O level are chosen
# as the list above says.
one() {
  local name=$1 model=$2 flags=$3 expect=$4 search=$5
  local dir=$work/$name
  mkdir -p "$dir"
  cp "$here"/*.pml "$dir"/
  cd "$dir"
  local start=$SECONDS
  # shellcheck disable=SC2086
  if ! spin $flags -a "$model" >spin.txt 2>&1; then
    echo "FAIL $name: spin -a failed"; cat spin.txt; return 1
  fi
  local copts=(-O1 -DSAFETY -DNOFAIR -DMEMLIM=2048) pargs=(-m20000 -w22)
  if [ "$expect" = holds ] && [ "$search" = quick ]; then
    copts=(-O0 -DSAFETY -DNOFAIR -DMEMLIM=2048)
  elif [ "$expect" = repeats ] && [ "$search" = bfs ]; then
    copts=(-O0 -DSAFETY -DBFS -DMEMLIM=1024); pargs=(-m20000)
  elif [ "$expect" = repeats ]; then
    copts=(-O0 -DSAFETY -DNOFAIR -DMEMLIM=1024); pargs=(-m20000 -w20)
  fi
  local compiler=$cc
  [ "${copts[0]}" = -O0 ] && compiler=$quick_cc
  if ! "$compiler" "${copts[@]}" -w -o pan pan.c >cc.txt 2>&1; then
    echo "FAIL $name: compiling pan.c failed"; cat cc.txt; return 1
  fi
  timeout 600 ./pan "${pargs[@]}" >pan.txt 2>&1 || true
  local errors states
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.txt | tail -1)
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' pan.txt | tail -1)
  local took=$((SECONDS - start))
  local problem=""
  if [ -z "$errors" ]; then
    problem="pan did not finish"
  elif grep -q 'max search depth too small\|out of memory\|Search not completed' pan.txt &&
       [ "$errors" = 0 ]; then
    problem="the search was not complete"
  fi
  local story=""
  if [ -f "$model.trail" ]; then
    # shellcheck disable=SC2086
    story=$(spin $flags -t "$model" 2>&1 </dev/null | sed -n 's/^ *| /  /p')
  fi
  if [ -n "$problem" ]; then
    echo "FAIL $name: $problem"; tail -20 pan.txt; return 1
  fi
  if [ "$expect" = holds ]; then
    if [ "$errors" != 0 ]; then
      echo "FAIL $name: a repeat in the real model ($errors error); the trail:"
      echo "$story"
      grep -m1 '^pan:1:' pan.txt || true
      return 1
    fi
    printf 'ok   %-40s holds: %s states, %ss\n' "$name" "$states" "$took"
  else
    if [ "$errors" = 0 ] || ! grep -q 'REPEAT' <<<"$story"; then
      echo "FAIL $name: the guard was taken out and no repeated ID was found ($errors errors)"
      grep -m1 '^pan:1:' pan.txt || true
      echo "$story"
      return 1
    fi
    printf 'ok   %-40s a repeat found after %s states, %ss:\n' "$name" "$states" "$took"
    echo "$story"
  fi
}

selected=()
while IFS='|' read -r name model flags expect; do
  name=$(echo "$name" | xargs); [ -n "$name" ] || continue
  if [ $# -gt 0 ]; then
    want=0
    for w in "$@"; do [[ $name == "$w"* ]] && want=1; done
    [ "$want" = 1 ] || continue
  fi
  read -r expect search <<<"$expect"
  [ "$expect" = repeats ] && search=${search:-bfs}
  selected+=("$name|$(echo "$model" | xargs)|$(echo "$flags" | xargs)|$expect|${search:-}")
done <<<"$runs"
[ ${#selected[@]} -gt 0 ] || { echo "model check: no run matches $*" >&2; exit 2; }

echo "model check: ${#selected[@]} runs, $jobs at a time ($(spin -V | head -1))"
begin=$SECONDS
running=0
# The long searches first, so that they do not finish last on their own.
ordered=()
for entry in "${selected[@]}"; do [[ $entry == *"|holds|" ]] && ordered+=("$entry"); done
for entry in "${selected[@]}"; do [[ $entry == *"|holds|" ]] || ordered+=("$entry"); done
for entry in "${ordered[@]}"; do
  IFS='|' read -r name model flags expect search <<<"$entry"
  (
    set +e
    one "$name" "$model" "$flags" "$expect" "$search" >"$work/$name.out" 2>&1
    echo $? >"$work/$name.rc"
  ) &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
done
wait || true

failed=0
for entry in "${selected[@]}"; do
  IFS='|' read -r name _ <<<"$entry"
  cat "$work/$name.out"
  [ "$(cat "$work/$name.rc" 2>/dev/null)" = 0 ] || failed=$((failed + 1))
done
echo "model check: ${#selected[@]} runs in $((SECONDS - begin))s, $failed failed"
[ "$failed" = 0 ]
