#!/usr/bin/env bash
# lb's own CPU per Redis GET, for builds and settings side by side, rounds alternating between
# them (each round starting one further on) so that a noisy neighbour hurts each alike: what
# a feature on the cache path costs when it is off, on but idle, and at work.
#
#   Each LABEL gets its own lb (workers = 1, a redis listener, selector ring_hash) in front of
#   its own three redis-servers (so that no label's writes touch another's keys), is filled
#   once with `redis-benchmark -t set -r KEYS` through itself, then measured in turn with
#   `redis-benchmark -t get -c CONNS -P PIPELINE -n REQUESTS -r KEYS`. CPU: utime + stime of
#   the lb process from /proc/PID/stat around each run, over the requests; and the same for
#   its redis-servers together, which serve the same GETs: lb/redis, lb's CPU per GET over
#   theirs in the same round, takes out much of what the machine's other load does to both.
#
# Usage: bench/redis_cpu.sh LABEL=BUILD_DIR[:MODE] [...]
#   MODE  plain    (default) no handover
#         handover `handover = { window = "1h" }`, no change since the start: no window open
#         window   the same, with a fourth redis-server added by a reload before the fill, so
#                  the measured GETs run inside an open window; the fill's SETs put the moved
#                  keys on their new owner, so each GET hits there (the read-through's
#                  cheapest case, and the one that must cost nothing)
#         replicas `replicas = 2` on four redis-servers (two per zone, zones named): each SET
#                  goes to both copies, each GET to the first
#   e.g. bench/redis_cpu.sh before=/work/wt-before/build after=build after_idle=build:handover
#        OP=set bench/redis_cpu.sh one=build two=build:replicas
# Env: ROUNDS (5), REQUESTS (200000), CONNS (32), PIPELINE (1), KEYS (100000),
#      OP (get; set: redis-benchmark's SET test instead, over the same keys),
#      MGET (0: GET; N: an MGET of N random keys instead, its CPU per MGET), FILL (3: the fill
#      sends FILL x KEYS random SETs, which leaves e^-FILL of the keys unset: 5% at 3).
# Loopback only; every process started here is stopped on exit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${ROUNDS:-5}
requests=${REQUESTS:-200000}
conns=${CONNS:-32}
pipeline=${PIPELINE:-1}
keys=${KEYS:-100000}
mget=${MGET:-0}
fill=${FILL:-3}
op=${OP:-get}
[[ $op == get || $op == set ]] || { echo "$0: OP must be get or set" >&2; exit 2; }
# What each request is: redis-benchmark's GET test, or an MGET of `mget` random keys of the
# fill's ("key:__rand_int__", as -t set writes them).
if ((mget > 0)); then
  what="MGET of $mget"
  request=(MGET); for _ in $(seq "$mget"); do request+=("key:__rand_int__"); done
else
  what=${op^^}
  request=(-t "$op")
fi
(($# >= 1)) || { echo "usage: $0 LABEL=BUILD_DIR[:MODE] [...]" >&2; exit 2; }
for tool in redis-server redis-benchmark; do
  command -v "$tool" >/dev/null || { echo "$0: $tool missing (make deps)" >&2; exit 2; }
done
source "$here/lib.sh"

labels=()
declare -A build_of=() mode_of=() lb_pid=() lb_port=() admin_port=() servers_of=() server_pids_of=()
for arg in "$@"; do
  label=${arg%%=*}; rest=${arg#*=}
  dir=${rest%%:*}; mode=plain
  [[ $rest == *:* ]] && mode=${rest#*:}
  [[ $mode == plain || $mode == handover || $mode == window || $mode == replicas ]] ||
    { echo "$0: $label: mode '$mode' is not plain, handover, window or replicas" >&2; exit 2; }
  [[ -x $dir/lb ]] || { echo "$0: $dir/lb not found" >&2; exit 2; }
  labels+=("$label"); build_of[$label]=$(cd "$dir" && pwd); mode_of[$label]=$mode
done

write_config() {   # label server_port...
  local label=$1; shift
  {
    echo "[lb]"
    echo "workers = 1"
    echo "[admin]"
    echo "listen = \"127.0.0.1:${admin_port[$label]}\""
    echo "[listeners.cache]"
    echo "listen = \"127.0.0.1:${lb_port[$label]}\""
    echo "protocol = \"redis\""
    echo "cluster = \"fleet\""
    echo "[clusters.fleet]"
    echo "selector = \"ring_hash\""
    [[ ${mode_of[$label]} == handover || ${mode_of[$label]} == window ]] &&
      echo "handover = { window = \"1h\" }"
    [[ ${mode_of[$label]} == replicas ]] && echo "replicas = 2"
    echo "backends = ["
    local i=0 p
    local zone=""
    for p in "$@"; do
      [[ ${mode_of[$label]} == replicas ]] && zone=", zone = \"z$((i % 2))\""
      echo "  { name = \"r$i\", address = \"127.0.0.1:$p\"$zone },"
      i=$((i + 1))
    done
    echo "]"
  } >"$work/$label.toml"
}

for label in "${labels[@]}"; do
  ports=(); spids=()
  for _ in 1 2 3 4; do
    p=$(free_port); ports+=("$p"); start_redis "$p"; spids+=("${pids[-1]}")
  done
  servers_of[$label]="${ports[*]}"; server_pids_of[$label]="${spids[*]}"
  lb_port[$label]=$(free_port); admin_port[$label]=$(free_port)
  if [[ ${mode_of[$label]} == replicas ]]; then
    write_config "$label" "${ports[@]}"
  else
    write_config "$label" "${ports[@]:0:3}"
  fi
  (cd "$work" && exec "${build_of[$label]}/lb" --config "$work/$label.toml" >"$work/$label.log" 2>&1) &
  lb_pid[$label]=$!; pids+=($!)
  wait_port "${lb_port[$label]}"
  if [[ ${mode_of[$label]} == window ]]; then
    write_config "$label" "${ports[@]}"
    kill -HUP "${lb_pid[$label]}"
    for _ in $(seq 100); do grep -q reloaded "$work/$label.log" && break; sleep 0.05; done
    grep -q reloaded "$work/$label.log" || { echo "$0: $label did not reload" >&2; exit 1; }
  fi
  redis-benchmark -h 127.0.0.1 -p "${lb_port[$label]}" -c "$conns" -n "$((keys * fill))" -r "$keys" \
    -t set -q >/dev/null
done

redis_cpu() {   # label: its redis-servers' ticks, "user sys"
  local u=0 s=0 p t
  for p in ${server_pids_of[$1]}; do
    t=$(cpu_ticks "$p")
    u=$((u + ${t% *})); s=$((s + ${t#* }))
  done
  echo "$u $s"
}

echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "redis-benchmark -c $conns -P $pipeline -n $requests -r $keys ${request[*]}; lb workers = 1, 3 redis-servers each (4 with replicas)"
echo
echo "| round | label | mode | $what/s | lb CPU µs/request | redis CPU µs/request | lb/redis |"
echo "|---|---|---|---|---|---|---|"
declare -A all=() ratio=()
n_labels=${#labels[@]}
for r in $(seq "$rounds"); do
  for k in $(seq 0 $((n_labels - 1))); do
    label=${labels[$(((r - 1 + k) % n_labels))]}
    cpu0=$(cpu_ticks "${lb_pid[$label]}"); s0=$(redis_cpu "$label")
    out=$(redis-benchmark -h 127.0.0.1 -p "${lb_port[$label]}" -c "$conns" -n "$requests" \
            -r "$keys" -P "$pipeline" --csv "${request[@]}" 2>/dev/null)
    cpu1=$(cpu_ticks "${lb_pid[$label]}"); s1=$(redis_cpu "$label")
    rps=$(awk -F'","' '/GET|SET/ { gsub(/"/, ""); split($0, f, ","); print f[2] }' <<<"$out")
    us=$(cpu_us_per_request "$cpu0" "$cpu1" "$requests")
    sus=$(cpu_us_per_request "$s0" "$s1" "$requests")
    rel=$(awk -v a="$us" -v b="$sus" 'BEGIN { if (b + 0 > 0) printf "%.3f", a / b; else print "-" }')
    all[$label]+="$us "; ratio[$label]+="$rel "
    echo "| $r | $label | ${mode_of[$label]} | $rps | $us | $sus | $rel |"
  done
done
echo
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
for label in "${labels[@]}"; do
  # shellcheck disable=SC2086
  echo "$label (${mode_of[$label]}): median $(median ${all[$label]}) µs per $what (rounds: ${all[$label]% }); lb/redis median $(median ${ratio[$label]}) (rounds: ${ratio[$label]% })"
done
