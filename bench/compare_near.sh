#!/usr/bin/env bash
# A hot-key read load through lb's near cache against nutcracker (twemproxy) and against one
# redis-server straight, in one run (the near cache's goal).
#
#   8 redis-servers behind nutcracker (ketama, fnv1a_64) and behind lb twice: `lb_near` with
#   hot_keys.near_cache on, `lb_plain` without (the same cluster otherwise: selector
#   twemproxy, the same names), and 1 redis-server straight (`redis_direct`).
# The load: redis-benchmark GET of KEYS keys (-r KEYS, `hot:__rand_int__`, set beforehand),
# -c 50, pipelined (-P 64, -P 16) and not, so every key is far above the hot threshold: the case a
# near cache is for (Fan et al., SoCC 2011: the few hottest items). lb first sees the load
# for WARMUP seconds so the keys are hot and cached before a round is timed. Rounds are
# interleaved across targets; the table shows each target's median round, and the ratios to
# nutcracker and to redis straight. After the rounds it prints lb_near's near-cache hits
# and misses, so a reader can see the cache answered.
#
# Usage: bench/compare_near.sh [BUILD_DIR]          (default build; run `make` first)
# Env: ROUNDS (3), REQUESTS (400000), KEYS (10), WORKERS (1: lb workers), WARMUP (3),
# PIPELINES (the -P depths, "64 16 1"),
# BASE (another build dir: its lb, near cache on, joins the rounds as `lb_base`, so that a
# change's effect is measured in the same run as the peers; a last table compares the two),
# PIN (1, the default: redis-benchmark on CPU 0 and the process under test, all its threads,
# on CPU 1, so that every target is measured placed alike, client and server on a core each;
# left to the scheduler, placement differs from round to round; PIN=0 leaves it so).
# At -P 64 redis-benchmark's own cost per request falls below the servers', so req/s there
# is the server's limit; at -P 16 and -P 1 the client's core is, and CPU per request is the
# figure that tells the servers apart.
# Loopback only, free ports; every process started here is stopped on exit.
set -euo pipefail
build=${1:-build}
rounds=${ROUNDS:-3}
requests=${REQUESTS:-400000}
keys=${KEYS:-10}
workers=${WORKERS:-1}
warmup=${WARMUP:-3}
pin=${PIN:-1}
pipelines=${PIPELINES:-64 16 1}
(( $(nproc) >= 2 )) || pin=0
for tool in redis-server redis-benchmark redis-cli nutcracker curl; do
  command -v "$tool" >/dev/null || { echo "compare_near.sh: $tool missing (make deps)" >&2; exit 2; }
done
[[ -x $build/lb ]] || { echo "compare_near.sh: $build/lb not found; run make first" >&2; exit 2; }

source "$(dirname "$0")/lib.sh"
servers=()
for _ in 1 2 3 4 5 6 7 8; do servers+=("$(free_port)"); done
for p in "${servers[@]}"; do start_redis "$p"; done
solo=$(free_port); start_redis "$solo"; solo_pid=${pids[-1]}

nut=$(free_port)
start_nutcracker_redis "$nut" "${servers[@]}"

lb_config() {   # file port admin near(0|1)
  {
    echo "[lb]"
    echo "workers = $workers"
    echo "log_level = \"warn\""
    echo "access_log = \"\""
    echo "[admin]"
    echo "listen = \"127.0.0.1:$3\""
    echo "[listeners.redis]"
    echo "listen = \"127.0.0.1:$2\""
    echo "protocol = \"redis\""
    echo "cluster = \"fleet\""
    echo "[clusters.fleet]"
    echo "selector = \"twemproxy\""
    if [[ $4 == 1 ]]; then
      echo "hot_keys = { threshold = 0.02, near_cache = { items = 1024, bytes = \"64MiB\", ttl = \"1s\" } }"
    fi
    echo "backends = ["
    for i in "${!servers[@]}"; do echo "  { name = \"redis-$i\", address = \"127.0.0.1:${servers[$i]}\" },"; done
    echo "]"
  } >"$1"
}
lb_near=$(free_port); near_admin=$(free_port)
lb_plain=$(free_port); plain_admin=$(free_port)
lb_config "$work/near.toml" "$lb_near" "$near_admin" 1
lb_config "$work/plain.toml" "$lb_plain" "$plain_admin" 0
"$build/lb" --config "$work/near.toml" >"$work/lb_near.log" 2>&1 &
near_pid=$!; pids+=($!)
"$build/lb" --config "$work/plain.toml" >"$work/lb_plain.log" 2>&1 &
plain_pid=$!; pids+=($!)
wait_port "$nut"; wait_port "$lb_near"; wait_port "$lb_plain"
base=${BASE:-}
if [[ -n $base ]]; then
  [[ -x $base/lb ]] || { echo "compare_near.sh: $base/lb not found" >&2; exit 2; }
  lb_base=$(free_port); base_admin=$(free_port)
  lb_config "$work/base.toml" "$lb_base" "$base_admin" 1
  "$base/lb" --config "$work/base.toml" >"$work/lb_base.log" 2>&1 &
  base_pid=$!; pids+=($!)
  wait_port "$lb_base"
fi

# The keys, with 100-byte values, on whichever server owns each (through lb) and on solo.
value=$(head -c 100 /dev/zero | tr '\0' v)
for k in $(seq 0 $((keys - 1))); do
  key=$(printf 'hot:%012d' "$k")
  redis-cli -p "$lb_plain" SET "$key" "$value" >/dev/null
  redis-cli -p "$solo" SET "$key" "$value" >/dev/null
done

declare -A port=([nutcracker]=$nut [lb_near]=$lb_near [lb_plain]=$lb_plain [redis_direct]=$solo)
declare -A pid_of=([nutcracker]=$nut_pid [lb_near]=$near_pid [lb_plain]=$plain_pid [redis_direct]=$solo_pid)
targets=(nutcracker lb_near lb_plain redis_direct)
if [[ -n $base ]]; then
  port[lb_base]=$lb_base; pid_of[lb_base]=$base_pid; targets+=(lb_base)
fi
if [[ $pin == 1 ]]; then
  for t in "${targets[@]}"; do taskset -a -p -c 1 "${pid_of[$t]}" >/dev/null; done
  client=(taskset -c 0)
else
  client=()
fi
bench() {   # port pipeline requests
  "${client[@]}" redis-benchmark -h 127.0.0.1 -p "$1" -c 50 -n "$3" -P "$2" -r "$keys" --csv \
                  GET 'hot:__rand_int__' 2>/dev/null | tail -1 |
    awk -F'","' '{ gsub(/"/, ""); split($0, f, ","); print f[2] }'
}
# Warm-up: the near cache's keys become hot (a window or two) and fill.
end=$((SECONDS + warmup))
while (( SECONDS < end )); do
  bench "$lb_near" 16 100000 >/dev/null
  if [[ -n $base ]]; then bench "$lb_base" 16 100000 >/dev/null; fi
done

mkdir -p "$work/res"
echo "bench/compare_near.sh: redis-benchmark -c 50 -n $requests -r $keys GET hot:__rand_int__,"
echo "$rounds rounds, lb workers = $workers, pinned = $pin; $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  for p in $pipelines; do
    for t in "${targets[@]}"; do
      cpu0=$(cpu_ticks "${pid_of[$t]}")
      rps=$(bench "${port[$t]}" "$p" "$requests")
      cpu1=$(cpu_ticks "${pid_of[$t]}")
      echo "$t $p $rps $(cpu_us_per_request "$cpu0" "$cpu1" "$requests")" >>"$work/res/all"
    done
  done
done
echo
echo "req/s (median round), and the CPU of the process the client talks to, µs per request"
echo "(user + system, /proc/PID/stat: on 2 shared cores the figure that holds; nutcracker's"
echo "backends' CPU is not in its figure):"
echo
echo "| -P | nutcracker | lb near cache | lb, no near cache | redis direct | lb near / nutcracker | lb near / redis direct |"
echo "|---|---|---|---|---|---|---|"
med() {   # target pipeline column
  awk -v t="$1" -v p="$2" -v c="$3" '$1 == t && $2 == p {print $c}' "$work/res/all" |
    sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] + 0 }'
}
for p in $pipelines; do
  for c in 3 4; do
    n=$(med nutcracker "$p" "$c"); l=$(med lb_near "$p" "$c"); q=$(med lb_plain "$p" "$c"); d=$(med redis_direct "$p" "$c")
    # For req/s higher is faster; for CPU per request lower is, so its ratios are inverted
    # (peer / lb): above 1 means lb is faster either way.
    awk -v p="$p" -v c="$c" -v n="$n" -v l="$l" -v q="$q" -v d="$d" 'BEGIN {
      if (c == 3) printf "| %s, req/s | %.0f | %.0f | %.0f | %.0f | %.2f | %.2f |\n", p, n, l, q, d, l / n, l / d
      else printf "| %s, CPU µs/req | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", p, n, l, q, d, n / l, d / l }'
  done
done
if [[ -n $base ]]; then
  echo
  echo "This build against BASE ($base), both with the near cache, in the same rounds:"
  echo
  echo "| -P | lb near, BASE | lb near, this build | this / BASE |"
  echo "|---|---|---|---|"
  for p in $pipelines; do
    for c in 3 4; do
      b0=$(med lb_base "$p" "$c"); l=$(med lb_near "$p" "$c")
      awk -v p="$p" -v c="$c" -v b="$b0" -v l="$l" 'BEGIN {
        if (c == 3) printf "| %s, req/s | %.0f | %.0f | %.2f |\n", p, b, l, l / b
        else printf "| %s, CPU µs/req | %.2f | %.2f | %.2f |\n", p, b, l, l / b }'
    done
  done
fi
echo
echo "lb_near, lb_hotkey_requests_total by path:"
curl -s "http://127.0.0.1:$near_admin/metrics" | grep '^lb_hotkey_requests_total' || echo "(none)"
