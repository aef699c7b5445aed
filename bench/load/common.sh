# shellcheck shell=bash disable=SC2154 # work, me and bin are set by the script that sources this
# Shared by the load scripts (run.sh, security.sh): ports, CPU time from /proc, medians,
# a throwaway certificate. Sourced, not run; the script sets `work` (its temporary
# directory) and `me` (its name, for messages) first.

# A port nobody listens on (connect refused), from a random start.
free_port() {
  local p
  for _ in $(seq 200); do
    p=$(( (RANDOM * 2 + 20000) % 40000 + 20000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "$me: no free port found" >&2
  exit 1
}

wait_port() {  # port name log
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$me: $2 does not listen on port $1; its log:" >&2
  tail -5 "$3" >&2 2>/dev/null || true
  exit 1
}

# idforge serve in $work/NAME (its data directory; a static worker id), stdout and stderr
# in $work/NAME.out and .err, pid in $work/NAME.pid; returns once it listens. Needs
# `bin` and the `pids` array (killed by the script's cleanup).
start_idforge() {  # name serve-args...
  local name=$1; shift
  "$bin" serve --data-dir "$work/$name" --registry static:0/1 --log-level warn "$@" \
    >"$work/$name.out" 2>"$work/$name.err" &
  pids+=($!)
  echo $! >"$work/$name.pid"
  for _ in $(seq 100); do
    grep -q '^idforge serve: resp ' "$work/$name.out" 2>/dev/null && return
    sleep 0.1
  done
  cat "$work/$name.err" >&2
  exit 1
}
# port_of NAME LISTENER (http, resp, plain_http, plain_resp)
port_of() { sed -n "s#^idforge serve: $2 [a-z]*://127.0.0.1:\\([0-9]*\\)/\\?\$#\\1#p" "$work/$1.out"; }
pid_of() { cat "$work/$1.pid"; }

# CPU time (user + system, in clock ticks) of processes and all their threads.
ticks=$(getconf CLK_TCK)
cpu_of() {  # pid...
  local total=0 p t
  for p in "$@"; do
    t=$(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)
    total=$((total + t))
  done
  echo "$total"
}
# CPU time (ticks) of the ended children of shell PID (pass $BASHPID, read before any
# command substitution, which is a shell of its own), and of what they waited for: a load
# generator run in a command substitution counts once it has ended.
children_cpu() { awk '{ print $16 + $17 }' "/proc/$1/stat"; }
# Microseconds of CPU per request: per_request TICKS REQUESTS.
per_request() { awk -v t="$1" -v n="$2" -v hz="$ticks" 'BEGIN { printf "%.2f", (n > 0 ? t * 1e6 / hz / n : 0) }'; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
# 1234567 -> 1,234,567
commas() { echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/; ta'; }
# The middle line of lines whose first word is a number, by that number.
median() { sort -n | awk '{ r[NR] = $0 } END { print r[int((NR + 1) / 2)] }'; }

# A throwaway CA ($work/ca.pem) and a certificate for 127.0.0.1 it signed
# ($work/server.pem, key $work/server.key).
make_certificates() {
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=bench CA" \
    -keyout "$work/ca.key" -out "$work/ca.pem" >/dev/null 2>&1
  openssl req -new -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$work/server.key" -out "$work/server.csr" >/dev/null 2>&1
  printf 'subjectAltName = IP:127.0.0.1\n' >"$work/server.ext"
  openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
    -CAcreateserial -days 1 -extfile "$work/server.ext" -out "$work/server.pem" >/dev/null 2>&1
}

# wrk's latency with its unit (850.00us, 1.23ms, 1.02s), in ms.
wrk_ms() { awk -v t="$1" 'BEGIN { v = t + 0; if (t ~ /us$/) v /= 1000; else if (t ~ /[0-9]s$/) v *= 1000; printf "%.3f", v }'; }
