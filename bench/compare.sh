#!/usr/bin/env bash
# lb against the proxies our users run today, on the same keyed HTTP load, in one run.
#
#   8 backends (one nginx process, one worker, 8 ports, a 2-byte 200 each) behind
#   - HAProxy  `balance hdr(X-Key)` + `hash-type consistent`, nbthread = workers
#   - nginx    `hash $http_x_key consistent`, worker_processes = workers, upstream keepalive
#   - lb       ring_hash over `hash = [ { header = "x-key" } ]`, workers = workers
# wrk sends X-Key drawn from a Zipf distribution over 10,000 keys (bench/zipf.lua). Targets
# are interleaved round by round so a noisy neighbour hurts all of them alike; the table shows
# the median round of each: req/s, ratio to the better peer, p50/p99, errors, how evenly
# the backends were used (busiest backend's requests / mean, from the backends' access logs),
# and the proxy's own CPU per request, user and system (from /proc/PID/stat around each run).
#
# Usage: bench/compare.sh [--strace] [BUILD_DIR]      (default build; run `make` first)
# Env: ROUNDS (3), DURATION (10s), CONNS (64), THREADS (1), WORKERS (1), ZIPF_KEYS, ZIPF_S.
#   MEMBERSHIP=etcd  lb's cluster takes the same 8 backends from a real etcd key (issue 20)
#             instead of its file: an etcd on free ports, the document put through its JSON
#             gateway, the rounds start once lb's /backends serves that revision. The
#             request path is the same either way; this shows it costs nothing.
#   --strace  after the table, attach `strace -c -f` to lb and to the nginx proxy for one
#             wrk run each and print syscalls (and epoll_ctl) per proxied request.
# Everything listens on 127.0.0.1 at free ports; every process started here is stopped on
# exit; each wrk run is bounded by DURATION. Installs haproxy and nginx from Debian if missing.
set -euo pipefail
want_strace=0
if [[ ${1:-} == --strace ]]; then want_strace=1; shift; fi
build=${1:-build}
rounds=${ROUNDS:-3}
duration=${DURATION:-10s}
conns=${CONNS:-64}
threads=${THREADS:-1}
workers=${WORKERS:-1}
here=$(cd "$(dirname "$0")" && pwd)

missing=()
command -v haproxy >/dev/null || missing+=(haproxy)
command -v nginx >/dev/null || missing+=(nginx)
command -v wrk >/dev/null || missing+=(wrk)
command -v strace >/dev/null || missing+=(strace)
membership=${MEMBERSHIP:-}
[[ -z $membership || $membership == etcd ]] || { echo "compare.sh: MEMBERSHIP is etcd or unset" >&2; exit 2; }
if [[ $membership == etcd ]]; then
  command -v etcd >/dev/null || missing+=(etcd-server)
fi
if ((${#missing[@]})); then
  echo "compare.sh: installing ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
fi
[[ -x $build/lb ]] || { echo "compare.sh: $build/lb not found; run make first" >&2; exit 2; }

ulimit -n 65536 2>/dev/null || true
source "$(dirname "$0")/lib.sh"

# --- backends: one nginx, one worker, 8 servers; each logs one line per request --------------
backend_ports=()
for i in 0 1 2 3 4 5 6 7; do backend_ports+=("$(free_port)"); done
mkdir -p "$work/backends"
{
  echo "worker_processes 1; daemon off; pid $work/backends/nginx.pid; error_log $work/backends/error.log;"
  echo "events { worker_connections 4096; }"
  echo "http { access_log off; keepalive_requests 1000000; log_format bare '.';"
  for i in "${!backend_ports[@]}"; do
    echo "  server { listen 127.0.0.1:${backend_ports[$i]} reuseport;"
    echo "    access_log $work/backends/b$i.log bare buffer=64k flush=1s;"
    echo "    location / { return 200 'ok'; } }"
  done
  echo "}"
} >"$work/backends/nginx.conf"
nginx -p "$work/backends" -c "$work/backends/nginx.conf" &
pids+=($!)
for p in "${backend_ports[@]}"; do wait_port "$p"; done

# --- the three proxies ------------------------------------------------------------------------
haproxy_port=$(free_port); nginx_port=$(free_port); lb_port=$(free_port)

mkdir -p "$work/haproxy"
{
  echo "global"
  echo "  nbthread $workers"
  echo "  maxconn 8000"
  echo "defaults"
  echo "  mode http"
  echo "  timeout connect 2s"
  echo "  timeout client 30s"
  echo "  timeout server 30s"
  echo "  option http-keep-alive"
  echo "  http-reuse always"
  echo "frontend web"
  echo "  bind 127.0.0.1:$haproxy_port"
  echo "  default_backend caches"
  echo "backend caches"
  echo "  balance hdr(X-Key)"
  echo "  hash-type consistent"
  for i in "${!backend_ports[@]}"; do echo "  server b$i 127.0.0.1:${backend_ports[$i]}"; done
} >"$work/haproxy/haproxy.cfg"
haproxy -db -f "$work/haproxy/haproxy.cfg" >"$work/haproxy/log" 2>&1 &
haproxy_pid=$!; pids+=($haproxy_pid)

mkdir -p "$work/nginx"
{
  echo "worker_processes $workers; daemon off; master_process off; pid $work/nginx/nginx.pid;"
  echo "error_log $work/nginx/error.log;"
  echo "events { worker_connections 20000; }"
  echo "http { access_log off; keepalive_requests 1000000;"
  echo "  upstream caches { hash \$http_x_key consistent; keepalive 128;"
  for p in "${backend_ports[@]}"; do echo "    server 127.0.0.1:$p;"; done
  echo "  }"
  echo "  server { listen 127.0.0.1:$nginx_port;"
  echo "    location / { proxy_pass http://caches; proxy_http_version 1.1;"
  echo "      proxy_set_header Connection \"\"; } }"
  echo "}"
} >"$work/nginx/nginx.conf"
# master_process off keeps one process when workers = 1; with more, nginx needs its master.
if ((workers > 1)); then sed -i 's/ master_process off;//' "$work/nginx/nginx.conf"; fi
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" &
nginx_pid=$!; pids+=($nginx_pid)

# MEMBERSHIP=etcd: one etcd member of our own (never 2379/2380, where a packaged one may run),
# the backend list as one document under one key.
membership_key=/bench/clusters/caches
if [[ $membership == etcd ]]; then
  etcd_port=$(free_port); etcd_peer=$(free_port)
  etcd --name bench --data-dir "$work/etcd" --log-level error \
       --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
       --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
       --initial-cluster "bench=http://127.0.0.1:$etcd_peer" >"$work/etcd.log" 2>&1 &
  pids+=($!)
  wait_port "$etcd_port"
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$etcd_port/health" | grep -q '"health":"true"' && break; sleep 0.1
  done
  doc=$(for i in "${!backend_ports[@]}"; do
          echo "{\"name\":\"b$i\",\"address\":\"127.0.0.1:${backend_ports[$i]}\"}"; done | paste -sd,)
  put=$(curl -sf -X POST "http://127.0.0.1:$etcd_port/v3/kv/put" \
          -d "{\"key\":\"$(printf %s "$membership_key" | base64 -w0)\",\"value\":\"$(printf '{"backends":[%s]}' "$doc" | base64 -w0)\"}")
  membership_rev=$(sed -n 's/.*"revision":"\([0-9]*\)".*/\1/p' <<<"$put")
  [[ -n $membership_rev ]] || { echo "compare.sh: etcd put failed: $put" >&2; exit 1; }
fi

lb_admin=$(free_port)
{
  echo "[lb]"
  echo "workers = $workers"
  echo "log_level = \"warn\""
  echo "[admin]"
  echo "listen = \"127.0.0.1:$lb_admin\""
  echo "[listeners.web]"
  echo "listen = \"127.0.0.1:$lb_port\""
  echo "cluster = \"caches\""
  echo "hash = [ { header = \"x-key\" } ]"
  echo "[clusters.caches]"
  echo "selector = \"ring_hash\""
  if [[ $membership == etcd ]]; then
    echo "membership = { etcd = [\"http://127.0.0.1:$etcd_port\"], key = \"$membership_key\" }"
  else
    echo "backends = ["
    for i in "${!backend_ports[@]}"; do
      echo "  { name = \"b$i\", address = \"127.0.0.1:${backend_ports[$i]}\" },"
    done
    echo "]"
  fi
} >"$work/lb.toml"
"$build/lb" --config "$work/lb.toml" >"$work/lb.log" 2>&1 &
lb_pid=$!; pids+=($lb_pid)

wait_port "$haproxy_port"; wait_port "$nginx_port"; wait_port "$lb_port"
if [[ $membership == etcd ]]; then   # lb serves the etcd membership before the first round
  for _ in $(seq 100); do
    curl -s "http://127.0.0.1:$lb_admin/backends" | grep -q "\"revision\":$membership_rev[,}]" && break
    sleep 0.1
  done
  curl -s "http://127.0.0.1:$lb_admin/backends" | grep -q "\"revision\":$membership_rev[,}]" ||
    { echo "compare.sh: lb does not serve etcd revision $membership_rev; its log:" >&2; cat "$work/lb.log" >&2; exit 1; }
fi

declare -A port=([haproxy]=$haproxy_port [nginx]=$nginx_port [lb]=$lb_port)
declare -A pid_of=([haproxy]=$haproxy_pid [nginx]=$nginx_pid [lb]=$lb_pid)

# cpu_ticks (bench/lib.sh): the proxy with all its threads and nginx's worker processes.
targets=(haproxy nginx lb)

to_ms() {   # wrk latency (12.3us / 1.2ms / 1.1s) -> milliseconds
  awk -v v="$1" 'BEGIN { n = v + 0; u = v; sub(/^[0-9.]+/, "", u);
    if (u == "us") n /= 1000; else if (u == "s") n *= 1000; printf "%.3f", n }'
}

backend_counts() {   # one number per backend: lines logged so far
  sleep 1.2   # the access logs flush every second (flush=1s above)
  for i in "${!backend_ports[@]}"; do
    if [[ -f $work/backends/b$i.log ]]; then wc -l <"$work/backends/b$i.log"; else echo 0; fi
  done
}

# run TARGET ROUND -> results/TARGET.ROUND: rps p50 p99 errors share
mkdir -p "$work/results"
run() {
  local t=$1 r=$2 out before after cpu0 cpu1
  mapfile -t before < <(backend_counts)
  cpu0=$(cpu_ticks "${pid_of[$t]}")
  out=$(ZIPF_KEYS=${ZIPF_KEYS:-10000} wrk -t"$threads" -c"$conns" -d"$duration" --latency \
        -s "$here/zipf.lua" "http://127.0.0.1:${port[$t]}/")
  cpu1=$(cpu_ticks "${pid_of[$t]}")
  mapfile -t after < <(backend_counts)
  local rps p50 p99 errors share reqs cpu
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  reqs=$(awk '/requests in/ {print $1}' <<<"$out")
  # The proxy's own CPU per request, user/system in microseconds (clock ticks of 1/HZ s).
  cpu=$(awk -v a="$cpu0" -v b="$cpu1" -v n="$reqs" -v hz="$(getconf CLK_TCK)" 'BEGIN {
    split(a, x, " "); split(b, y, " "); if (n == 0) { print "-"; exit }
    printf "%.1f/%.1f", (y[1] - x[1]) * 1e6 / hz / n, (y[2] - x[2]) * 1e6 / hz / n }')
  p50=$(to_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
  errors=$(awk '/Socket errors/ {gsub(",", ""); e += $4 + $6 + $8 + $10} /Non-2xx/ {e += $5}
                END {print e + 0}' <<<"$out")
  share=$(for i in "${!before[@]}"; do echo $((after[i] - before[i])); done |
          awk '{ s += $1; if ($1 > m) m = $1; n++ } END { if (s) printf "%.2f", m / (s / n); else print "-" }')
  echo "$rps $p50 $p99 $errors $share $cpu" >"$work/results/$t.$r"
}

echo "bench/compare.sh: wrk -t$threads -c$conns -d$duration, Zipf over ${ZIPF_KEYS:-10000} keys (s=${ZIPF_S:-1.0}),"
echo "8 nginx backends, $workers worker(s)/thread(s) per proxy, $rounds rounds interleaved;"
[[ $membership != etcd ]] || echo "lb's backends from etcd (key $membership_key, revision $membership_rev);"
echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  for t in "${targets[@]}"; do run "$t" "$r"; echo "  round $r $t: $(cat "$work/results/$t.$r")" >&2; done
done

# The median round of each target, by req/s.
declare -A med
for t in "${targets[@]}"; do
  med[$t]=$(cat "$work/results/$t".* | sort -n -k1,1 | awk '{ a[NR] = $0 } END { print a[int((NR + 1) / 2)] }')
done
best_peer=$(for t in haproxy nginx; do echo "${med[$t]%% *}"; done | sort -n | tail -1)
best_p99=$(for t in haproxy nginx; do awk -v r="$best_peer" '$1 == r {print $3}' <<<"${med[$t]}"; done | head -1)
echo
echo "| target | req/s | vs better peer | p50 ms | p99 ms | p99 vs better peer | errors | busiest/mean backend | proxy CPU µs/req user/sys |"
echo "|---|---|---|---|---|---|---|---|---|"
for t in "${targets[@]}"; do
  read -r rps p50 p99 errors share cpu <<<"${med[$t]}"
  awk -v t="$t" -v rps="$rps" -v p50="$p50" -v p99="$p99" -v e="$errors" -v s="$share" \
      -v best="$best_peer" -v bp99="$best_p99" -v cpu="$cpu" \
      'BEGIN { printf "| %s | %.0f | %.2f | %s | %s | %.2f | %s | %s | %s |\n", t, rps, rps / best, p50, p99, p99 / bp99, e, s, cpu }'
done

if ((want_strace)); then
  # strace slows the traced process a lot: the figure is syscalls per request, not speed.
  count_syscalls() {   # label pid port
    local trace=$work/strace.$1
    strace -c -f -o "$trace" -p "$2" 2>/dev/null &
    local sp=$!
    sleep 0.5
    local out reqs
    out=$(ZIPF_KEYS=${ZIPF_KEYS:-10000} wrk -t"$threads" -c"$conns" -d5s -s "$here/zipf.lua" "http://127.0.0.1:$3/")
    reqs=$(awk '/requests in/ {print $1}' <<<"$out")
    kill -INT "$sp"; wait "$sp" 2>/dev/null || true
    awk -v reqs="$reqs" -v l="$1" '
      $NF == "total" { total = $4 }
      $NF == "epoll_ctl" { ctl = $4 }
      $NF ~ /^(write|writev|sendmsg|sendto)$/ { w += $4 }
      $NF ~ /^(read|readv|recvfrom|recvmsg)$/ { rd += $4 }
      END { printf "| %s | %d | %.2f | %.3f | %.2f | %.2f |\n", l, reqs, total / reqs, ctl / reqs, w / reqs, rd / reqs }' "$trace"
  }
  echo
  echo "| strace -c -f, wrk 5 s | requests | syscalls/req | epoll_ctl/req | writes/req | reads/req |"
  echo "|---|---|---|---|---|---|"
  count_syscalls lb "$lb_pid" "$lb_port"
  count_syscalls nginx "$nginx_pid" "$nginx_port"
fi
