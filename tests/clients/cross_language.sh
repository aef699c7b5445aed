#!/usr/bin/env bash
# The seven clients decode Snowflake IDs as `idforge parse --json` does (docs/clients.md,
# "Decoding without a server"): every vector of tests/data/snowflake_vectors.txt, with its
# epoch and again with the layout's own, plus a few edge cases, through
#   C++         CPP_PARSE ID [--layout L] [--epoch MS] [--tick-ms MS]   (tests/clients/cpp_parse.cc)
#   Python      python3 -m idforge_client parse ID ...                    (PYTHONPATH=clients/python)
#   JavaScript  node clients/js/bin/parse.mjs ID ...
#   Java, Go, Ruby, C#: each LANG=PARSE argument, PARSE --stdin given every case at once,
#               one per line (a JVM or Mono start per case would take a minute);
#               clients/LANG/check.sh --build-only DIR makes DIR/parse
# Each output line must equal the CLI's; an input the CLI refuses must fail in every client
# (a non-zero exit, or a line `error: ...` from PARSE --stdin).
#
# Usage: tests/clients/cross_language.sh IDFORGE_BIN CPP_PARSE SOURCE_DIR [LANG=PARSE...]
#        (ctest clients.cross_language)
set -uo pipefail
usage="usage: cross_language.sh IDFORGE_BIN CPP_PARSE SOURCE_DIR [LANG=PARSE...]"
idforge=${1:?$usage}
cpp_parse=${2:?$usage}
src=${3:?$usage}
shift 3
python=${PYTHON:-/usr/bin/python3}
node=${NODE:-node}
vectors=$src/tests/data/snowflake_vectors.txt

batch_names=()
batch_tools=()
for arg in "$@"; do
  [[ $arg == ?*=?* ]] || { echo "cross_language: '$arg' is not LANG=PARSE" >&2; exit 2; }
  batch_names+=("${arg%%=*}")
  batch_tools+=("${arg#*=}")
done
for tool in "$idforge" "$cpp_parse" "${batch_tools[@]}"; do
  [ -x "$tool" ] || { echo "cross_language: $tool is not an executable" >&2; exit 1; }
done
[ -r "$vectors" ] || { echo "cross_language: no $vectors" >&2; exit 1; }
command -v "$python" >/dev/null || { echo "cross_language: no $python" >&2; exit 1; }
command -v "$node" >/dev/null || { echo "cross_language: no $node" >&2; exit 1; }

# Every case, its arguments separated by single spaces (no argument holds one).
cases=()
vector_lines=0
while read -r layout epoch id _rest; do
  case $layout in '' | '#'*) continue ;; esac
  vector_lines=$((vector_lines + 1))
  spec=${layout%@*}
  tick=""
  [ "$spec" != "$layout" ] && tick=" --tick-ms ${layout##*@}"
  cases+=("$id --layout $spec --epoch $epoch$tick")
  cases+=("$id --layout $spec$tick")  # the layout's own epoch
done < <(sed 's/#.*//' "$vectors")
[ "$vector_lines" -ge 10 ] || { echo "cross_language: only $vector_lines vectors read" >&2; exit 1; }

# Edge cases: the smallest and largest IDs, a 64-bit layout, upper-case preset names, a
# custom field named like a fixed key, a time past the year 9999, long ticks; and inputs
# every decoder must refuse.
cases+=(
  "0"
  "18446744073709551615 --layout discord"
  "9223372036854775807 --layout TWITTER"
  "175928847299117063 --layout Discord --epoch 0"
  "910499571847892992 --layout time:41,id:10,sequence:12 --epoch 1"
  "9223372036854775807 --layout time:63,sequence:1 --epoch 0"
  "123456789012345 --layout time:30,worker:20,seq:13 --tick-ms 86400000"
  "2968681395003392 --layout baidu --tick-ms 1"
  "9223372036854775808 --layout twitter"
  "18446744073709551616 --layout discord"
  "1 --layout nosuchlayout"
  "1 --layout time:41,worker:5"
  "1 --tick-ms 0"
  "x1"
  "-1"
)

failures=0
mismatch() {  # NAME CASE WANT GOT
  echo "MISMATCH $1 parse $2"
  echo "  idforge: $3"
  echo "  $1: $4"
  failures=$((failures + 1))
}

# The CLI's answers: the line, or "error: ..." where it refuses.
wants=()
for c in "${cases[@]}"; do
  read -ra args <<< "$c"
  if want=$("$idforge" parse --json "${args[@]}" 2>/dev/null); then
    wants+=("$want")
  else
    wants+=("error: (refused)")
  fi
done

# A client run once per case.
for name in cpp python js; do
  for i in "${!cases[@]}"; do
    read -ra args <<< "${cases[$i]}"
    case $name in
      cpp) got=$("$cpp_parse" "${args[@]}" 2>/dev/null) ;;
      python) got=$(PYTHONPATH="$src/clients/python" "$python" -B -m idforge_client parse "${args[@]}" 2>/dev/null) ;;
      js) got=$("$node" "$src/clients/js/bin/parse.mjs" "${args[@]}" 2>/dev/null) ;;
    esac
    status=$?
    if [[ ${wants[$i]} == error:* ]]; then
      [ "$status" -ne 0 ] || mismatch "$name" "${cases[$i]}" "${wants[$i]}" "$got"
    elif [ "$status" -ne 0 ] || [ "$got" != "${wants[$i]}" ]; then
      mismatch "$name" "${cases[$i]}" "${wants[$i]}" "$got (exit $status)"
    fi
  done
done

# A client given every case at once: one line out per line in.
for j in "${!batch_names[@]}"; do
  name=${batch_names[$j]}
  mapfile -t gots < <(printf '%s\n' "${cases[@]}" | "${batch_tools[$j]}" --stdin 2>/dev/null)
  if [ "${#gots[@]}" -ne "${#cases[@]}" ]; then
    echo "MISMATCH $name: ${#gots[@]} lines for ${#cases[@]} cases"
    failures=$((failures + 1))
    continue
  fi
  for i in "${!cases[@]}"; do
    if [[ ${wants[$i]} == error:* ]]; then
      [[ ${gots[$i]} == error:* ]] || mismatch "$name" "${cases[$i]}" "${wants[$i]}" "${gots[$i]}"
    elif [ "${gots[$i]}" != "${wants[$i]}" ]; then
      mismatch "$name" "${cases[$i]}" "${wants[$i]}" "${gots[$i]}"
    fi
  done
done

clients=$((3 + ${#batch_names[@]}))
echo "cross_language: ${#cases[@]} cases ($vector_lines vectors) x $clients clients" \
  "(cpp python js${batch_names[*]:+ ${batch_names[*]}}), $failures mismatches"
[ "$failures" -eq 0 ]
