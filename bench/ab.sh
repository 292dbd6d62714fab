#!/usr/bin/env bash
# Two lb builds side by side on the same load, to see what a change costs in throughput:
# one lb-origin behind both, 1 worker each, `wrk -t1 -c64` with one X-Key against each in
# turn, ROUNDS rounds, then each build's median. Interleaving puts a noisy neighbour on both.
#
# Usage: bench/ab.sh LB_A LB_B [ORIGIN] [ROUNDS]   (ORIGIN default build/lb-origin, ROUNDS 7)
# Env: DURATION (5s). Everything on 127.0.0.1 at free ports, stopped on exit.
#
# MODE=tcp: a tcp listener in front of one redis-server instead, redis-benchmark -t set,get
# with VALUE-byte values (1048576) and -n REQUESTS (400) -c 16 against each build in turn;
# each round prints the build's CPU (utime+stime from /proc) per MiB moved and req/s, then the
# medians and B/A of the CPU figure.
set -euo pipefail
a=$1; b=$2; origin=${3:-build/lb-origin}; rounds=${4:-7}; duration=${DURATION:-5s}
if [[ ${MODE:-http} == tcp ]]; then
  source "$(dirname "$0")/lib.sh"
  value=${VALUE:-1048576}; requests=${REQUESTS:-400}
  redis_port=$(free_port)
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
    --proto-max-bulk-len 64mb >/dev/null 2>&1 &
  pids+=($!)
  wait_port "$redis_port"
  declare -A lbpid
  for t in A B; do
    bin=$a; [[ $t == B ]] && bin=$b
    port=$(free_port); eval "port_$t=$port"
    cat >"$work/$t.toml" <<TOML
[lb]
workers = 1
log_level = "warn"
access_log = ""
[listeners.pipe]
listen = "127.0.0.1:$port"
protocol = "tcp"
cluster = "c"
on_missing_key = "round_robin"
[clusters.c]
backends = [ { name = "r", address = "127.0.0.1:$redis_port" } ]
TOML
    "$bin" --config "$work/$t.toml" >"$work/$t.log" 2>&1 &
    pids+=($!); lbpid[$t]=$!
    wait_port "$port"
  done
  cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
  hz=$(getconf CLK_TCK)
  echo "bench/ab.sh MODE=tcp: A=$a B=$b, redis-benchmark -t set,get -d $value -n $requests -c 16, $rounds rounds; $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
  for r in $(seq "$rounds"); do
    for t in A B; do
      port=port_$t; port=${!port}
      c0=$(cpu_ticks "${lbpid[$t]}"); t0=$(date +%s.%N)
      redis-benchmark -h 127.0.0.1 -p "$port" -t set,get -d "$value" -n "$requests" -c 16 -q >/dev/null
      t1=$(date +%s.%N); c1=$(cpu_ticks "${lbpid[$t]}")
      # Both tests move each value once through lb: 2 x requests x value bytes in all.
      awk -v t="$t" -v c="$((c1 - c0))" -v hz="$hz" -v n="$requests" -v v="$value" -v s="$t0" -v e="$t1" \
        'BEGIN { mib = 2 * n * v / 1048576; printf "%s %.1f %.0f\n", t, c / hz * 1e6 / mib, 2 * n / (e - s) }' \
        | tee -a "$work/rounds"
    done
  done
  median() { awk -v t="$1" -v f="$2" '$1 == t {print $f}' "$work/rounds" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
  awk -v a="$(median A 2)" -v b="$(median B 2)" -v ra="$(median A 3)" -v rb="$(median B 3)" \
    'BEGIN { printf "median CPU us/MiB A %.1f, B %.1f, B/A %.3f; req/s A %.0f, B %.0f\n", a, b, b / a, ra, rb }'
  exit 0
fi
for bin in "$a" "$b" "$origin"; do [[ -x $bin ]] || { echo "ab.sh: $bin not found" >&2; exit 2; }; done
source "$(dirname "$0")/lib.sh"

origin_port=$(free_port)
"$origin" --listen "127.0.0.1:$origin_port" --name a >/dev/null 2>&1 &
pids+=($!)
wait_port "$origin_port"

start_lb() {   # binary port
  write_one_backend_config "$work/$2.toml" 1 "$2" "$origin_port"
  "$1" --config "$work/$2.toml" >"$work/$2.log" 2>&1 &
  pids+=($!)
  wait_port "$2"
}
port_a=$(free_port); port_b=$(free_port)
start_lb "$a" "$port_a"; start_lb "$b" "$port_b"

echo "bench/ab.sh: A=$a B=$b, wrk -t1 -c64 -d$duration, $rounds rounds; $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  for t in A B; do
    port=$port_a; [[ $t == B ]] && port=$port_b
    rps=$(wrk -t1 -c64 -d"$duration" -H 'x-key: k1' "http://127.0.0.1:$port/" | awk '/Requests\/sec/ {print $2}')
    echo "$t $rps" | tee -a "$work/rounds"
  done
done
median() { awk -v t="$1" '$1 == t {print $2}' "$work/rounds" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
ma=$(median A); mb=$(median B)
awk -v a="$ma" -v b="$mb" 'BEGIN { printf "median A %.0f, B %.0f, B/A %.3f\n", a, b, b / a }'
