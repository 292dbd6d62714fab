#!/usr/bin/env bash
# Two lb builds side by side on the same load, to see what a change costs in throughput:
# one lb-origin behind both, 1 worker each, `wrk -t1 -c64` with one X-Key against each in
# turn, ROUNDS rounds, then each build's median. Interleaving puts a noisy neighbour on both.
#
# Usage: bench/ab.sh LB_A LB_B [ORIGIN] [ROUNDS]   (ORIGIN default build/lb-origin, ROUNDS 7)
# Env: DURATION (5s). Everything on 127.0.0.1 at free ports, stopped on exit.
set -euo pipefail
a=$1; b=$2; origin=${3:-build/lb-origin}; rounds=${4:-7}; duration=${DURATION:-5s}
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
