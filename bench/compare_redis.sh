#!/usr/bin/env bash
# Redis through lb against nutcracker (twemproxy) and against Redis itself, in one run.
#
#   keyed:  3 redis-servers behind nutcracker (ketama, fnv1a_64) and behind lb
#           (`protocol = "redis"`, selector twemproxy, the same servers and names)
#   bytes:  1 redis-server straight, and behind an lb `tcp` listener (a byte pipe)
# redis-benchmark runs `-t get,set` with `-c 50`, pipelined (`-P 16`) and not, against each
# target, interleaved round by round; the table shows each target's median round per test.
#
# Usage: bench/compare_redis.sh [BUILD_DIR]          (default build; run `make` first)
# Env: ROUNDS (3), REQUESTS (200000), WORKERS (1: lb workers; nutcracker is one thread).
# Loopback only, free ports; every process started here is stopped on exit.
set -euo pipefail
build=${1:-build}
rounds=${ROUNDS:-3}
requests=${REQUESTS:-200000}
workers=${WORKERS:-1}
for tool in redis-server redis-benchmark nutcracker; do
  command -v "$tool" >/dev/null || { echo "compare_redis.sh: $tool missing (make deps)" >&2; exit 2; }
done
[[ -x $build/lb ]] || { echo "compare_redis.sh: $build/lb not found; run make first" >&2; exit 2; }

source "$(dirname "$0")/lib.sh"
servers=("$(free_port)" "$(free_port)" "$(free_port)")
for p in "${servers[@]}"; do start_redis "$p"; done
solo=$(free_port); start_redis "$solo"

nut=$(free_port)
start_nutcracker_redis "$nut" "${servers[@]}"

lb_redis=$(free_port); lb_tcp=$(free_port)
{
  echo "[lb]"
  echo "workers = $workers"
  echo "log_level = \"warn\""
  echo "[admin]"
  echo "listen = \"127.0.0.1:$(free_port)\""
  echo "[listeners.redis]"
  echo "listen = \"127.0.0.1:$lb_redis\""
  echo "protocol = \"redis\""
  echo "cluster = \"fleet\""
  echo "[listeners.pipe]"
  echo "listen = \"127.0.0.1:$lb_tcp\""
  echo "protocol = \"tcp\""
  echo "cluster = \"solo\""
  echo "hash = [ { source_ip = true } ]"
  echo "[clusters.fleet]"
  echo "selector = \"twemproxy\""
  echo "backends = ["
  for i in "${!servers[@]}"; do echo "  { name = \"redis-$i\", address = \"127.0.0.1:${servers[$i]}\" },"; done
  echo "]"
  echo "[clusters.solo]"
  echo "backends = [ { name = \"solo\", address = \"127.0.0.1:$solo\" } ]"
} >"$work/lb.toml"
"$build/lb" --config "$work/lb.toml" >"$work/lb.log" 2>&1 &
pids+=($!)
wait_port "$nut"; wait_port "$lb_redis"; wait_port "$lb_tcp"

declare -A port=([nutcracker]=$nut [lb_redis]=$lb_redis [redis_direct]=$solo [lb_tcp]=$lb_tcp)
targets=(nutcracker lb_redis redis_direct lb_tcp)
mkdir -p "$work/res"
run() {   # target pipeline round
  redis-benchmark -h 127.0.0.1 -p "${port[$1]}" -c 50 -n "$requests" -P "$2" -r 100000 \
                  -t get,set --csv 2>/dev/null |
    awk -F'","' -v t="$1" -v p="$2" '{ gsub(/"/, ""); split($0, f, ","); print t, p, f[1], f[2] }' \
    >>"$work/res/all"
}
echo "bench/compare_redis.sh: redis-benchmark -c 50 -n $requests -r 100000 -t get,set, $rounds rounds,"
echo "lb workers = $workers; $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  for p in 16 1; do
    for t in "${targets[@]}"; do run "$t" "$p" "$r"; done
  done
done
echo
echo "| test | -P | nutcracker | lb redis | lb redis / nutcracker | redis direct | lb tcp | lb tcp / direct |"
echo "|---|---|---|---|---|---|---|---|"
for test in SET GET; do
  for p in 16 1; do
    med() { awk -v t="$1" -v p="$p" -v x="$test" '$1 == t && $2 == p && $3 == x {print $4}' "$work/res/all" |
            sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] + 0 }'; }
    n=$(med nutcracker); l=$(med lb_redis); d=$(med redis_direct); tc=$(med lb_tcp)
    awk -v test="$test" -v p="$p" -v n="$n" -v l="$l" -v d="$d" -v tc="$tc" 'BEGIN {
      printf "| %s | %s | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f |\n", test, p, n, l, l / n, d, tc, tc / d }'
  done
done
