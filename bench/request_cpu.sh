#!/usr/bin/env bash
# lb's own CPU per small keyed HTTP request, for two or more builds side by side, rounds
# alternating between them (each round starting one build further on) so that a noisy
# neighbour hurts each alike; optionally a perf profile of each build under the same load.
#
#   2 lb-origin backends, one lb per build (workers = 1, ring_hash over `hash = [ { header =
#   "x-key" } ]`, its access log on by default, as bench/compare.sh configures lb), each
#   driven in turn by `wrk -t1 -c32 -d6s -s bench/zipf.lua` (X-Key from a Zipf distribution
#   over 10,000 keys, compare.sh's load). CPU: utime + stime of the lb process from
#   /proc/PID/stat around each run, over wrk's request count; and the same for the two
#   origins together, which serve the same requests whichever lb is measured: lb/origins,
#   lb's CPU per request over theirs in the same round, takes out much of what the machine's
#   other load does to both (as compare.sh's lb/HAProxy ratio does).
#
# Usage: bench/request_cpu.sh LABEL=BUILD_DIR [LABEL=BUILD_DIR ...]
#   e.g. bench/request_cpu.sh old=/work/wt-old/build new=build
# Env: ROUNDS (3), DURATION (6s), CONNS (32), THREADS (1), ZIPF_KEYS (10000),
#   SYSCALLS=1  each round also counts lb's syscalls with `perf stat` on the syscalls:
#             tracepoints (read, write, writev, epoll_wait) and adds them per request: a loop
#             that drains its events sooner sleeps in epoll_wait more often, which costs system
#             time without a change in what each request asks of the kernel.
#   PERF_DIR  when set, after the rounds PERF_ROUNDS (3) more alternating wrk runs per build,
#             each under `perf record -F PERF_FREQ (4000) -g -p <lb pid>`, write
#             PERF_DIR/LABEL.ROUND.data and .requests; bench/perf_per_request.py PERF_DIR
#             LABEL... turns them into CPU per request by symbol.
# Loopback only; every process started here is stopped on exit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${ROUNDS:-3}
duration=${DURATION:-6s}
conns=${CONNS:-32}
threads=${THREADS:-1}
perf_dir=${PERF_DIR:-}
(($# >= 1)) || { echo "usage: $0 LABEL=BUILD_DIR [LABEL=BUILD_DIR ...]" >&2; exit 2; }
source "$here/lib.sh"
ulimit -n 65536 2>/dev/null || true

labels=()
declare -A build_of=() lb_pid=() lb_port=()
for arg in "$@"; do
  label=${arg%%=*}; dir=${arg#*=}
  [[ -x $dir/lb ]] || { echo "$0: $dir/lb not found" >&2; exit 2; }
  labels+=("$label"); build_of[$label]=$(cd "$dir" && pwd)
done

# The origins: the first build's lb-origin (the same two backends for every lb).
origin_ports=(); origin_pids=()
for name in a b; do
  p=$(free_port); origin_ports+=("$p")
  "${build_of[${labels[0]}]}/lb-origin" --listen "127.0.0.1:$p" --name "$name" \
    >"$work/origin.$name.log" 2>&1 &
  pids+=($!); origin_pids+=($!)
done
origins_cpu() {   # both origins' ticks, "user sys"
  local a b
  a=$(cpu_ticks "${origin_pids[0]}"); b=$(cpu_ticks "${origin_pids[1]}")
  awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " "); print x[1] + y[1], x[2] + y[2] }'
}
for p in "${origin_ports[@]}"; do wait_port "$p"; done

for label in "${labels[@]}"; do
  port=$(free_port)
  cat >"$work/$label.toml" <<TOML
[lb]
workers = 1
log_level = "warn"
[admin]
listen = "127.0.0.1:$(free_port)"
[listeners.web]
listen = "127.0.0.1:$port"
cluster = "caches"
hash = [ { header = "x-key" } ]
[clusters.caches]
selector = "ring_hash"
backends = [
  { name = "a", address = "127.0.0.1:${origin_ports[0]}" },
  { name = "b", address = "127.0.0.1:${origin_ports[1]}" },
]
TOML
  (cd "$work" && exec "${build_of[$label]}/lb" --config "$work/$label.toml" >"$work/$label.log" 2>&1) &
  lb_pid[$label]=$!; lb_port[$label]=$port; pids+=($!)
done
for label in "${labels[@]}"; do wait_port "${lb_port[$label]}"; done

syscalls=${SYSCALLS:-}
sc_events=syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_epoll_wait
load() {   # label -> wrk's output
  ZIPF_KEYS=${ZIPF_KEYS:-10000} wrk -t"$threads" -c"$conns" -d"$duration" \
    -s "$here/zipf.lua" "http://127.0.0.1:${lb_port[$1]}/"
}

echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "wrk -t$threads -c$conns -d$duration -s bench/zipf.lua; lb workers = 1, 2 lb-origin backends"
echo
if [[ -n $syscalls ]]; then
  echo "| round | build | requests | req/s | errors | lb CPU µs/req user/sys | lb CPU µs/req | origins' CPU µs/req | lb/origins | syscalls/req | epoll_wait/req |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
else
  echo "| round | build | requests | req/s | errors | lb CPU µs/req user/sys | lb CPU µs/req | origins' CPU µs/req | lb/origins |"
  echo "|---|---|---|---|---|---|---|---|---|"
fi
declare -A all=() ratio=()
n_labels=${#labels[@]}
for r in $(seq "$rounds"); do
  # Each round starts one build further on (a b c, b c a, ...): none always runs first.
  for k in $(seq 0 $((n_labels - 1))); do
    label=${labels[$(((r - 1 + k) % n_labels))]}
    if [[ -n $syscalls ]]; then
      perf stat -x, -e "$sc_events" -p "${lb_pid[$label]}" -o "$work/stat.$label" &
      sp=$!
      sleep 0.2
    fi
    cpu0=$(cpu_ticks "${lb_pid[$label]}"); o0=$(origins_cpu)
    out=$(load "$label")
    cpu1=$(cpu_ticks "${lb_pid[$label]}"); o1=$(origins_cpu)
    sc=""
    if [[ -n $syscalls ]]; then
      kill -INT "$sp"; wait "$sp" 2>/dev/null || true
      sc=$(awk -F, -v n="$(awk '/requests in/ {print $1}' <<<"$out")" '
        $3 ~ /sys_enter/ { t += $1; if ($3 ~ /epoll_wait/) e += $1 }
        END { printf " %.3f | %.3f |", t / n, e / n }' "$work/stat.$label")
    fi
    reqs=$(awk '/requests in/ {print $1}' <<<"$out")
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    errors=$(grep -E "Socket errors|Non-2xx" <<<"$out" | tr -s ' ' | paste -sd';' || true)
    us=$(cpu_us_per_request "$cpu0" "$cpu1" "$reqs")
    split=$(awk -v a="$cpu0" -v b="$cpu1" -v n="$reqs" -v hz="$(getconf CLK_TCK)" 'BEGIN {
      split(a, x, " "); split(b, y, " "); if (n == 0) { print "-"; exit }
      printf "%.1f/%.1f", (y[1] - x[1]) * 1e6 / hz / n, (y[2] - x[2]) * 1e6 / hz / n }')
    ous=$(cpu_us_per_request "$o0" "$o1" "$reqs")
    rel=$(awk -v a="$us" -v b="$ous" 'BEGIN { if (b + 0 > 0) printf "%.3f", a / b; else print "-" }')
    all[$label]+="$us "; ratio[$label]+="$rel "
    echo "| $r | $label | $reqs | $rps | ${errors:-0} | $split | $us | $ous | $rel |$sc"
  done
done
echo
for label in "${labels[@]}"; do
  # shellcheck disable=SC2086
  median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
  echo "$label: median $(median ${all[$label]}) µs/req (rounds: ${all[$label]% }); lb/origins median $(median ${ratio[$label]}) (rounds: ${ratio[$label]% })"
done

if [[ -n $perf_dir ]]; then
  # Rounds of their own, alternating as above: perf's sampling costs the process CPU, so these
  # runs are not in the table. bench/perf_per_request.py sums them per build.
  mkdir -p "$perf_dir"
  for r in $(seq "${PERF_ROUNDS:-3}"); do
    for label in "${labels[@]}"; do
      perf record -q -F "${PERF_FREQ:-4000}" -g -p "${lb_pid[$label]}" -o "$perf_dir/$label.$r.data" \
        2>"$perf_dir/$label.$r.log" &
      pp=$!
      sleep 0.3
      out=$(load "$label")
      kill -INT "$pp"; wait "$pp" 2>/dev/null || true
      awk '/requests in/ {print $1}' <<<"$out" >"$perf_dir/$label.$r.requests"
      echo "perf round $r $label: $(cat "$perf_dir/$label.$r.requests") requests -> $perf_dir/$label.$r.data"
    done
  done
fi
