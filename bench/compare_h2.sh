#!/usr/bin/env bash
# lb against HAProxy and nginx on keyed HTTP/2 load: h2c (cleartext, prior knowledge) at the
# proxy, HTTP/1.1 keep-alive behind it, in one run.
#
#   8 backends (one nginx process, one worker, 8 ports, a 2-byte 200 each) behind
#   - HAProxy  `bind ... proto h2`, `balance uri` + `hash-type consistent`, nbthread = workers
#   - nginx    `listen ... http2`, `hash $request_uri consistent`, worker_processes = workers,
#              upstream keepalive
#   - lb       ring_hash over `hash = [ { path = true } ]`, an `h2 = { ... }` table on its plain
#              http listener (lb tells h2c prior knowledge by the connection preface), workers
# h2load (-c CONNS -m STREAMS -D DURATION) cannot vary a header per request, so the key is the
# path: h2load -i reads a list of KEYS URIs /k/<n> (shuffled once, the same list for every
# target) and each client walks it in order. Targets are interleaved round by round so a noisy
# neighbour hurts all of them alike. The table shows, per target: req/s of its median round by
# req/s; the proxy's own CPU per request, user + system µs (from /proc/PID/stat around each
# h2load run, threads and nginx's workers included), of its median round by CPU; that CPU over
# the better peer's (the lower of HAProxy and nginx); how evenly the backends were used
# (busiest backend's requests / mean, from the backends' access logs, median round); and the
# failed requests of all rounds summed (h2load's "failed": non-2xx/3xx, errored, timed out).
# Below the table, each round's lb CPU over that round's better peer, and their median: the
# figure that holds on a noisy host (the medians of the table come from different rounds).
# Before the rounds each target must answer `curl --http2-prior-knowledge` with a 200 over
# HTTP/2, or the script stops. lb's access log is off, as the peers log nothing.
#
# Usage: bench/compare_h2.sh [BUILD_DIR]      (default build; run `make` first)
# Env: ROUNDS (3), DURATION (10s), WORKERS (1), CONNS (16), STREAMS (10, h2load -m),
#      THREADS (1, h2load -t), KEYS (1000), TARGETS ("haproxy nginx lb": any of them, in the
#      order given; without lb no lb binary is needed).
# Everything listens on 127.0.0.1 at free ports; every process started here is stopped on
# exit; each h2load run is bounded by DURATION. Installs haproxy, nginx and h2load if missing.
set -euo pipefail
build=${1:-build}
rounds=${ROUNDS:-3}
duration=${DURATION:-10s}
workers=${WORKERS:-1}
conns=${CONNS:-16}
streams=${STREAMS:-10}
threads=${THREADS:-1}
keys=${KEYS:-1000}
source "$(dirname "$0")/lib.sh"
read_targets compare_h2.sh "haproxy nginx lb"
install_missing compare_h2.sh haproxy nginx h2load:nghttp2-client curl
if ((want_lb)); then
  [[ -x $build/lb ]] || { echo "compare_h2.sh: $build/lb not found; run make first" >&2; exit 2; }
fi
ulimit -n 65536 2>/dev/null || true

# --- backends: one nginx, one worker, 8 servers; each logs one line per request --------------
start_nginx_backends

# --- the proxies: h2c in front, HTTP/1.1 keep-alive behind --------------------------------------
declare -A port=() pid_of=()
for t in "${targets[@]}"; do port[$t]=$(free_port); done

start_haproxy() {
  mkdir -p "$work/haproxy"
  {
    echo "global"
    echo "  nbthread $workers"
    echo "  maxconn 8000"
    haproxy_http_defaults
    echo "frontend web"
    echo "  bind 127.0.0.1:${port[haproxy]} proto h2"
    echo "  default_backend caches"
    echo "backend caches"
    echo "  balance uri"
    echo "  hash-type consistent"
    for i in "${!backend_ports[@]}"; do echo "  server b$i 127.0.0.1:${backend_ports[$i]}"; done
  } >"$work/haproxy/haproxy.cfg"
  haproxy -db -f "$work/haproxy/haproxy.cfg" >"$work/haproxy/log" 2>&1 &
  pid_of[haproxy]=$!; pids+=($!)
}

start_nginx() {
  mkdir -p "$work/nginx"
  {
    echo "worker_processes $workers; daemon off; master_process off; pid $work/nginx/nginx.pid;"
    echo "error_log $work/nginx/error.log;"
    echo "events { worker_connections 20000; }"
    # keepalive_requests also bounds the requests of one HTTP/2 connection (1000 by default);
    # h2load does not reconnect after the GOAWAY, so it is lifted as for HTTP/1.1.
    echo "http { access_log off; keepalive_requests 1000000;"
    echo "  upstream caches { hash \$request_uri consistent; keepalive 128;"
    for p in "${backend_ports[@]}"; do echo "    server 127.0.0.1:$p;"; done
    echo "  }"
    echo "  server { listen 127.0.0.1:${port[nginx]} http2;"
    echo "    location / { proxy_pass http://caches; proxy_http_version 1.1;"
    echo "      proxy_set_header Connection \"\"; } }"
    echo "}"
  } >"$work/nginx/nginx.conf"
  # master_process off keeps one process when workers = 1; with more, nginx needs its master.
  if ((workers > 1)); then sed -i 's/ master_process off;//' "$work/nginx/nginx.conf"; fi
  nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" &
  pid_of[nginx]=$!; pids+=($!)
}

start_lb() {
  write_h2_lb_config "$work/lb.toml" "${port[lb]}" "$workers"
  "$build/lb" --config "$work/lb.toml" >"$work/lb.log" 2>&1 &
  pid_of[lb]=$!; pids+=($!)
}

log_of() {   # target -> its log file
  case $1 in haproxy) echo "$work/haproxy/log" ;; nginx) echo "$work/nginx/error.log" ;; lb) echo "$work/lb.log" ;; esac
}

for t in "${targets[@]}"; do "start_$t"; done
for t in "${targets[@]}"; do
  wait_port "${port[$t]}" || { echo "compare_h2.sh: $t did not start; its log:" >&2; cat "$(log_of "$t")" >&2; exit 1; }
  # h2c with prior knowledge, end to end through the proxy to a backend.
  got=$(curl -s -o /dev/null -m 5 --http2-prior-knowledge -w '%{http_code} %{http_version}' \
          "http://127.0.0.1:${port[$t]}/k/0" || true)
  [[ $got == "200 2" ]] || {
    echo "compare_h2.sh: $t does not answer h2c with a 200 (got '$got'); its log:" >&2
    cat "$(log_of "$t")" >&2; exit 1; }
done

# The URI list: KEYS paths in one shuffled order. h2load takes scheme, host and port from the
# first line only, so each target gets its own copy with its port in front.
seq 0 $((keys - 1)) | shuf --random-source=<(yes) >"$work/keys"
for t in "${targets[@]}"; do
  sed "s|^|http://127.0.0.1:${port[$t]}/k/|" "$work/keys" >"$work/uris.$t"
done

backend_counts() {   # one number per backend: lines logged so far
  sleep 1.2   # the access logs flush every second (flush=1s above)
  for i in "${!backend_ports[@]}"; do
    if [[ -f $work/backends/b$i.log ]]; then wc -l <"$work/backends/b$i.log"; else echo 0; fi
  done
}

# run TARGET ROUND -> results/TARGET.ROUND: rps cpu_user/sys cpu_total failed share
mkdir -p "$work/results" "$work/h2load"   # h2load/TARGET.ROUND: its whole output
run() {
  local t=$1 r=$2 out before after cpu0 cpu1
  mapfile -t before < <(backend_counts)
  cpu0=$(cpu_ticks "${pid_of[$t]}")
  out=$(h2load -t "$threads" -c "$conns" -m "$streams" -D "$duration" -i "$work/uris.$t" 2>&1) || true
  cpu1=$(cpu_ticks "${pid_of[$t]}")
  mapfile -t after < <(backend_counts)
  echo "$out" >"$work/h2load/$t.$r"
  local rps n_done failed cpu share
  # finished in 10.00s, 51234.50 req/s, 1.23MB/s
  rps=$(awk '/^finished in/ { sub(",", "", $4); print $4 }' <<<"$out")
  # requests: N total, N started, N done, N succeeded, N failed, N errored, N timeout
  n_done=$(awk '/^requests:/ { print $6 }' <<<"$out")
  failed=$(awk '/^requests:/ { print $10 }' <<<"$out")
  [[ -n $rps && -n $n_done ]] && grep -q '^Application protocol: h2c' <<<"$out" ||
    { echo "compare_h2.sh: h2load against $t (no h2c, or no summary) said:" >&2; echo "$out" >&2; exit 1; }
  cpu=$(awk -v a="$cpu0" -v b="$cpu1" -v n="$n_done" -v hz="$(getconf CLK_TCK)" 'BEGIN {
    split(a, x, " "); split(b, y, " "); if (n == 0) { print "- -"; exit }
    u = (y[1] - x[1]) * 1e6 / hz / n; s = (y[2] - x[2]) * 1e6 / hz / n
    printf "%.1f/%.1f %.1f", u, s, u + s }')
  share=$(for i in "${!before[@]}"; do echo $((after[i] - before[i])); done |
          awk '{ s += $1; if ($1 > m) m = $1; n++ } END { if (s) printf "%.2f", m / (s / n); else print "-" }')
  echo "$rps $cpu $failed $share" >"$work/results/$t.$r"
}

echo "bench/compare_h2.sh: h2load -t$threads -c$conns -m$streams -D $duration over $keys paths (h2c, prior knowledge),"
echo "8 nginx backends (HTTP/1.1), $workers worker(s)/thread(s) per proxy, $rounds rounds interleaved;"
echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  for t in "${targets[@]}"; do
    run "$t" "$r"; echo "  round $r $t: $(cat "$work/results/$t.$r")" >&2
  done
done

# Each target's median round by req/s (req/s, backend spread) and by CPU per request.
declare -A med=() med_cpu=() failed_sum=()
for t in "${targets[@]}"; do
  med[$t]=$(cat "$work/results/$t".* | sort -g -k1,1 | awk '{ a[NR] = $0 } END { print a[int((NR + 1) / 2)] }')
  med_cpu[$t]=$(cat "$work/results/$t".* | sort -g -k3,3 | awk '{ a[NR] = $2 " " $3 } END { print a[int((NR + 1) / 2)] }')
  failed_sum[$t]=$(cat "$work/results/$t".* | awk '{ f += $4 } END { print f + 0 }')
done
# (A loop's last test decides its status: `if`, so that a target left out of TARGETS does not
# fail the pipeline under pipefail.)
best_cpu=$(for t in haproxy nginx; do
             if [[ -n ${med_cpu[$t]:-} ]]; then awk '$2 != "-" { print $2 }' <<<"${med_cpu[$t]}"; fi
           done | sort -g | head -1)
echo
echo "| target | req/s | proxy CPU µs/req user/sys | CPU µs/req | CPU vs better peer | failed | busiest/mean backend |"
echo "|---|---|---|---|---|---|---|"
for t in "${targets[@]}"; do
  read -r rps _ _ _ share <<<"${med[$t]}"
  read -r cpu cpu_total <<<"${med_cpu[$t]}"
  awk -v t="$t" -v rps="$rps" -v cpu="$cpu" -v ct="$cpu_total" -v bc="${best_cpu:-}" \
      -v f="${failed_sum[$t]}" -v s="$share" 'BEGIN {
    ratio = (bc != "" && bc > 0 && ct != "-") ? sprintf("%.2f", ct / bc) : "-"
    printf "| %s | %.0f | %s | %s | %s | %s | %s |\n", t, rps, cpu, ct, ratio, f, s }'
done

# The host's noise moves every target's CPU by a fifth from one minute to the next; the two
# runs of one round are seconds apart and see the same host. So the figure to compare is each
# round's own ratio, lb over the better peer of that round, and the median of those.
if [[ -n ${med_cpu[lb]:-} && -n ${best_cpu:-} ]]; then
  ratios=$(for r in $(seq "$rounds"); do
    lbc=$(awk '{ print $3 }' "$work/results/lb.$r")
    peer=$(for t in haproxy nginx; do
             if [[ -f $work/results/$t.$r ]]; then awk '$3 != "-" { print $3 }' "$work/results/$t.$r"; fi
           done | sort -g | head -1)
    if [[ $lbc != "-" && -n $peer ]]; then
      awk -v a="$lbc" -v b="$peer" 'BEGIN { printf "%.2f\n", a / b }'
    fi
  done)
  echo
  echo "lb over the better peer, round by round: $(tr '\n' ' ' <<<"$ratios")-> median $(
    sort -g <<<"$ratios" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')"
fi
