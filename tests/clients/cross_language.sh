#!/usr/bin/env bash
# The three clients decode Snowflake IDs as `idforge parse --json` does (docs/clients.md,
# "Decoding without a server"): every vector of tests/data/snowflake_vectors.txt, with its
# epoch and again with the layout's own, plus a few edge cases, through
#   C++         CPP_PARSE ID [--layout L] [--epoch MS] [--tick-ms MS]   (tests/clients/cpp_parse.cc)
#   Python      python3 -m idforge_client parse ID ...                    (PYTHONPATH=clients/python)
#   JavaScript  node clients/js/bin/parse.mjs ID ...
# Each output line must equal the CLI's; an input the CLI refuses must fail in every client.
#
# Usage: tests/clients/cross_language.sh IDFORGE_BIN CPP_PARSE SOURCE_DIR
#        (ctest clients.cross_language)
set -uo pipefail
idforge=${1:?usage: cross_language.sh IDFORGE_BIN CPP_PARSE SOURCE_DIR}
cpp_parse=${2:?usage: cross_language.sh IDFORGE_BIN CPP_PARSE SOURCE_DIR}
src=${3:?usage: cross_language.sh IDFORGE_BIN CPP_PARSE SOURCE_DIR}
python=${PYTHON:-/usr/bin/python3}
node=${NODE:-node}
vectors=$src/tests/data/snowflake_vectors.txt

for tool in "$idforge" "$cpp_parse"; do
  [ -x "$tool" ] || { echo "cross_language: $tool is not an executable" >&2; exit 1; }
done
[ -r "$vectors" ] || { echo "cross_language: no $vectors" >&2; exit 1; }
command -v "$python" >/dev/null || { echo "cross_language: no $python" >&2; exit 1; }
command -v "$node" >/dev/null || { echo "cross_language: no $node" >&2; exit 1; }

cases=0
failures=0

# One case: `idforge parse --json ARGS` and each client with the same ARGS.
check() {
  local want got status name
  cases=$((cases + 1))
  want=$("$idforge" parse --json "$@" 2>/dev/null)
  status=$?
  for name in cpp python js; do
    case $name in
      cpp) got=$("$cpp_parse" "$@" 2>/dev/null) ;;
      python) got=$(PYTHONPATH="$src/clients/python" "$python" -B -m idforge_client parse "$@" 2>/dev/null) ;;
      js) got=$("$node" "$src/clients/js/bin/parse.mjs" "$@" 2>/dev/null) ;;
    esac
    local got_status=$?
    if [ "$status" -ne 0 ]; then
      # The CLI refuses the input: so must the client.
      if [ "$got_status" -eq 0 ]; then
        echo "MISMATCH $name parse $*: the CLI refuses it (exit $status), the client printed: $got"
        failures=$((failures + 1))
      fi
    elif [ "$got_status" -ne 0 ] || [ "$got" != "$want" ]; then
      echo "MISMATCH $name parse $* (exit $got_status)"
      echo "  idforge: $want"
      echo "  $name: $got"
      failures=$((failures + 1))
    fi
  done
}

vector_lines=0
while read -r layout epoch id _rest; do
  case $layout in '' | '#'*) continue ;; esac
  vector_lines=$((vector_lines + 1))
  spec=${layout%@*}
  tick=()
  [ "$spec" != "$layout" ] && tick=(--tick-ms "${layout##*@}")
  check "$id" --layout "$spec" --epoch "$epoch" "${tick[@]}"
  check "$id" --layout "$spec" "${tick[@]}"  # the layout's own epoch
done < <(sed 's/#.*//' "$vectors")
[ "$vector_lines" -ge 10 ] || { echo "cross_language: only $vector_lines vectors read" >&2; exit 1; }

# Edge cases: the smallest and largest IDs, a 64-bit layout, upper-case preset names, a
# custom field named like a fixed key, a time past the year 9999, long ticks; and inputs
# every decoder must refuse.
check 0
check 18446744073709551615 --layout discord
check 9223372036854775807 --layout TWITTER
check 175928847299117063 --layout Discord --epoch 0
check 910499571847892992 --layout "time:41,id:10,sequence:12" --epoch 1
check 9223372036854775807 --layout "time:63,sequence:1" --epoch 0
check 123456789012345 --layout "time:30,worker:20,seq:13" --tick-ms 86400000
check 2968681395003392 --layout baidu --tick-ms 1
check 9223372036854775808 --layout twitter
check 1 --layout nosuchlayout
check 1 --layout "time:41,worker:5"
check 1 --tick-ms 0
check x1

echo "cross_language: $cases cases ($vector_lines vectors) x 3 clients, $failures mismatches"
[ "$failures" -eq 0 ]
