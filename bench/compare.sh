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
#   MEMBERSHIP=etcd  lb's cluster takes the same 8 backends from a real etcd key (fleet
#             membership from etcd) instead of its file: an etcd on free ports, the document
#             put through its JSON gateway, the rounds start once lb's /backends serves that
#             revision. The request path is the same either way; this shows it costs nothing.
#   --strace  after the table, attach `strace -c -f` to lb and to the nginx proxy for one
#             wrk run each and print syscalls (and epoll_ctl) per proxied request.
#   MODE=tls  the three proxies terminate TLS (plain HTTP to the same backends):
#             one self-signed ECDSA P-256 certificate, TLS 1.3 with TLS_AES_128_GCM_SHA256
#             and X25519 only, pinned on HAProxy and nginx and on the client side (wrk and
#             openssl read $work/client.cnf through OPENSSL_CONF), which openssl s_client
#             checks against each proxy before the rounds. Two loads, each interleaved:
#             keep-alive (wrk over https); new connections with resumption (wrk -H
#             'Connection: close': every request a new TCP connection, but wrk keeps each
#             connection's SSL object and so resumes its last session, a TLS 1.3 PSK with
#             (EC)DHE: no certificate signature); and full handshakes (S_TIME_PROCS (4)
#             parallel `openssl s_time -new -www /`, a new session every connection). lb's
#             lb_tls_handshakes_total{resumed} around each run says which it got. The tables
#             add each proxy's CPU per request (per handshake for the new-connection loads)
#             over the better peer's, from each target's median round by CPU (req/s and
#             latency from its median round by req/s, as without MODE). lb's access log is
#             off, as the peers log nothing.
#   MODE=objects  large objects instead of the keyed load: runs
#             bench/compare_objects.sh (one nginx origin with sendfile, HAProxy with `option
#             splice-response`, lb; 1 KiB, 64 KiB and 1 MiB; CPU per request and req/s), which
#             reads SIZES, ROUNDS, DURATION, CONNS and BASE (see its header).
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
mode=${MODE:-http}
if [[ $mode == objects ]]; then
  (( want_strace == 0 )) || { echo "compare.sh: --strace is not for MODE=objects" >&2; exit 2; }
  exec "$here/compare_objects.sh" "$build"
fi
[[ $mode == http || $mode == tls ]] || { echo "compare.sh: MODE is http, tls or objects" >&2; exit 2; }
command -v openssl >/dev/null || missing+=(openssl)
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

# MODE=tls: one certificate for the three, and the client's side of "same cipher, same group".
tls_suite=TLS_AES_128_GCM_SHA256
tls_group=X25519
if [[ $mode == tls ]]; then
  mkdir -p "$work/tls"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=bench.test -addext subjectAltName=DNS:bench.test \
    -keyout "$work/tls/key.pem" -out "$work/tls/cert.pem" 2>/dev/null
  cat "$work/tls/cert.pem" "$work/tls/key.pem" >"$work/tls/both.pem"   # HAProxy's crt
  write_tls_client_conf "$work/client.cnf" "$tls_suite" "$tls_group"
fi
scheme=http; [[ $mode == tls ]] && scheme=https

# --- backends: one nginx, one worker, 8 servers; each logs one line per request --------------
start_nginx_backends

# --- the three proxies ------------------------------------------------------------------------
haproxy_port=$(free_port); nginx_port=$(free_port); lb_port=$(free_port)

mkdir -p "$work/haproxy"
{
  echo "global"
  echo "  nbthread $workers"
  echo "  maxconn 8000"
  if [[ $mode == tls ]]; then
    echo "  ssl-default-bind-ciphersuites $tls_suite"
    echo "  ssl-default-bind-curves $tls_group"
    echo "  ssl-default-bind-options ssl-min-ver TLSv1.3"
  fi
  haproxy_http_defaults
  echo "frontend web"
  if [[ $mode == tls ]]; then
    echo "  bind 127.0.0.1:$haproxy_port ssl crt $work/tls/both.pem"
  else
    echo "  bind 127.0.0.1:$haproxy_port"
  fi
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
  if [[ $mode == tls ]]; then
    echo "  server { listen 127.0.0.1:$nginx_port ssl;"
    echo "    ssl_certificate $work/tls/cert.pem; ssl_certificate_key $work/tls/key.pem;"
    echo "    ssl_protocols TLSv1.3; ssl_ecdh_curve $tls_group;"
    echo "    ssl_conf_command Ciphersuites $tls_suite;"
  else
    echo "  server { listen 127.0.0.1:$nginx_port;"
  fi
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
  # The peers log nothing (no haproxy log, nginx access_log off): with MODE=tls lb does not
  # either, so the CPU figures compare TLS and proxying alone (its access log is on by default).
  if [[ $mode == tls ]]; then echo "access_log = \"\""; fi
  echo "[admin]"
  echo "listen = \"127.0.0.1:$lb_admin\""
  echo "[listeners.web]"
  echo "listen = \"127.0.0.1:$lb_port\""
  echo "cluster = \"caches\""
  echo "hash = [ { header = \"x-key\" } ]"
  if [[ $mode == tls ]]; then
    echo "tls = { certificates = [ { cert = \"$work/tls/cert.pem\", key = \"$work/tls/key.pem\" } ], min_version = \"1.3\" }"
  fi
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

# The loads: keep-alive; with MODE=tls also new connections, each request a full handshake.
loads=(keepalive)
[[ $mode == tls ]] && loads+=(resumed full)
s_time_procs=${S_TIME_PROCS:-4}
client_conf=
[[ $mode == tls ]] && client_conf=$work/client.cnf

lb_handshakes() {   # lb's completed handshakes so far: full resumed
  curl -s "http://127.0.0.1:$lb_admin/metrics" | awk '/^lb_tls_handshakes_total\{/ {
    if ($1 ~ /resumed="true"/) r += $2; else f += $2 } END { print f + 0, r + 0 }'
}

# run TARGET ROUND LOAD -> results/TARGET.LOAD.ROUND: rps p50 p99 errors share cpu cpu_total
mkdir -p "$work/results"
run() {
  local t=$1 r=$2 l=$3 out before after cpu0 cpu1 hs0 hs1
  local extra=()
  [[ $l == resumed ]] && extra=(-H 'Connection: close')
  mapfile -t before < <(backend_counts)
  [[ $t == lb && $mode == tls ]] && hs0=$(lb_handshakes)
  cpu0=$(cpu_ticks "${pid_of[$t]}")
  if [[ $l == full ]]; then   # s_time's lines made into wrk's: requests, Requests/sec
    local i secs=${duration%s} sp=() t0 t1
    t0=$(date +%s.%N)
    for i in $(seq "$s_time_procs"); do
      OPENSSL_CONF=$client_conf timeout $((secs + 10)) openssl s_time -new -time "$secs" \
        -www / -connect "127.0.0.1:${port[$t]}" >"$work/s_time.$i" 2>&1 &
      sp+=($!)
    done
    wait "${sp[@]}"
    t1=$(date +%s.%N)
    out=$(cat "$work"/s_time.* | awk -v w="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" '
            /connections in [0-9]+ real seconds/ { n += $1 }
            END { printf "%d requests in\nRequests/sec: %.2f\n", n, n / w }')
  else
    out=$(env ${client_conf:+OPENSSL_CONF=$client_conf} ZIPF_KEYS=${ZIPF_KEYS:-10000} \
          wrk -t"$threads" -c"$conns" -d"$duration" --latency "${extra[@]}" \
          -s "$here/zipf.lua" "$scheme://127.0.0.1:${port[$t]}/")
  fi
  cpu1=$(cpu_ticks "${pid_of[$t]}")
  [[ $t == lb && $mode == tls ]] && hs1=$(lb_handshakes)
  mapfile -t after < <(backend_counts)
  local rps p50 p99 errors share reqs cpu
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  reqs=$(awk '/requests in/ {print $1}' <<<"$out")
  # The proxy's own CPU per request, user/system in microseconds (clock ticks of 1/HZ s),
  # and the two summed.
  cpu=$(awk -v a="$cpu0" -v b="$cpu1" -v n="$reqs" -v hz="$(getconf CLK_TCK)" 'BEGIN {
    split(a, x, " "); split(b, y, " "); if (n == 0) { print "- -"; exit }
    u = (y[1] - x[1]) * 1e6 / hz / n; s = (y[2] - x[2]) * 1e6 / hz / n
    printf "%.1f/%.1f %.1f", u, s, u + s }')
  p50=$(to_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
  errors=$(awk '/Socket errors/ {gsub(",", ""); e += $4 + $6 + $8 + $10} /Non-2xx/ {e += $5}
                END {print e + 0}' <<<"$out")
  share=$(for i in "${!before[@]}"; do echo $((after[i] - before[i])); done |
          awk '{ s += $1; if ($1 > m) m = $1; n++ } END { if (s) printf "%.2f", m / (s / n); else print "-" }')
  [[ $l != full ]] || { p50=-; p99=-; errors=-; }   # s_time reports neither
  echo "$rps $p50 $p99 $errors $share $cpu" >"$work/results/$t.$l.$r"
  if [[ -n ${hs0:-} ]]; then   # full and resumed handshakes lb completed in this run
    read -r f0 r0 <<<"$hs0"; read -r f1 r1 <<<"$hs1"
    echo "$((f1 - f0)) $((r1 - r0)) $reqs" >"$work/results/handshakes.$l.$r"
  fi
}

echo "bench/compare.sh: wrk -t$threads -c$conns -d$duration, Zipf over ${ZIPF_KEYS:-10000} keys (s=${ZIPF_S:-1.0}),"
echo "8 nginx backends, $workers worker(s)/thread(s) per proxy, $rounds rounds interleaved;"
[[ $membership != etcd ]] || echo "lb's backends from etcd (key $membership_key, revision $membership_rev);"
if [[ $mode == tls ]]; then   # what each proxy negotiates with the pinned client
  echo "TLS at each proxy, loads: ${loads[*]}; openssl s_client -brief against each:"
  for t in "${targets[@]}"; do
    echo "  $t: $(OPENSSL_CONF=$client_conf timeout 5 openssl s_client -brief \
                   -connect "127.0.0.1:${port[$t]}" </dev/null 2>&1 |
                   grep -E '^(Protocol version|Ciphersuite|Peer signature type|Server Temp Key)' |
                   paste -sd, | tr -s ' ')"
  done
fi
echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for l in "${loads[@]}"; do
  for r in $(seq "$rounds"); do
    for t in "${targets[@]}"; do
      run "$t" "$r" "$l"; echo "  $l round $r $t: $(cat "$work/results/$t.$l.$r")" >&2
    done
  done
done

# The median round of each target, by req/s.
for l in "${loads[@]}"; do
  declare -A med=() med_cpu=()
  for t in "${targets[@]}"; do
    med[$t]=$(cat "$work/results/$t.$l".* | sort -n -k1,1 | awk '{ a[NR] = $0 } END { print a[int((NR + 1) / 2)] }')
    # MODE=tls compares CPU: each target's median round by CPU per request (user/sys, total).
    med_cpu[$t]=$(cat "$work/results/$t.$l".* | sort -g -k7,7 | awk '{ a[NR] = $6 " " $7 } END { print a[int((NR + 1) / 2)] }')
  done
  best_peer=$(for t in haproxy nginx; do echo "${med[$t]%% *}"; done | sort -n | tail -1)
  best_p99=$(for t in haproxy nginx; do awk -v r="$best_peer" '$1 == r {print $3}' <<<"${med[$t]}"; done | head -1)
  # The better peer by CPU: the one that spent less per request.
  best_cpu=$(for t in haproxy nginx; do awk '{print $2}' <<<"${med_cpu[$t]}"; done | sort -g | head -1)
  echo
  if [[ $mode == tls ]]; then
    what="handshake"
    case $l in
      keepalive) what="req"; echo "TLS, keep-alive:" ;;
      resumed) echo "TLS, new connections (wrk -H 'Connection: close', one resumed handshake a request):" ;;
      full) echo "TLS, full handshakes ($s_time_procs x openssl s_time -new -www /, one request each):" ;;
    esac
    echo
    echo "| target | req/s | vs better peer | p50 ms | p99 ms | errors | busiest/mean backend | proxy CPU µs/$what user/sys | CPU µs/$what | CPU vs better peer |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
  else
    echo "| target | req/s | vs better peer | p50 ms | p99 ms | p99 vs better peer | errors | busiest/mean backend | proxy CPU µs/req user/sys |"
    echo "|---|---|---|---|---|---|---|---|---|"
  fi
  for t in "${targets[@]}"; do
    read -r rps p50 p99 errors share cpu cpu_total <<<"${med[$t]}"
    [[ $mode != tls ]] || read -r cpu cpu_total <<<"${med_cpu[$t]}"
    awk -v t="$t" -v rps="$rps" -v p50="$p50" -v p99="$p99" -v e="$errors" -v s="$share" \
        -v best="$best_peer" -v bp99="$best_p99" -v cpu="$cpu" -v ct="$cpu_total" \
        -v bc="$best_cpu" -v tls="$([[ $mode == tls ]] && echo 1)" 'BEGIN {
      if (tls) printf "| %s | %.0f | %.2f | %s | %s | %s | %s | %s | %s | %.2f |\n", t, rps, rps / best, p50, p99, e, s, cpu, ct, (bc > 0 ? ct / bc : 0)
      else printf "| %s | %.0f | %.2f | %s | %s | %.2f | %s | %s | %s |\n", t, rps, rps / best, p50, p99, p99 / bp99, e, s, cpu }'
  done
  if [[ $mode == tls ]]; then
    cat "$work/results/handshakes.$l".* | awk -v l="$l" '{ f += $1; r += $2; q += $3 }
      END { printf "\nlb over the %s rounds: %d full handshakes, %d resumed, %d requests\n", l, f, r, q }'
  fi
done

if ((want_strace)); then
  # strace slows the traced process a lot: the figure is syscalls per request, not speed.
  count_syscalls() {   # label pid port
    local trace=$work/strace.$1
    strace -c -f -o "$trace" -p "$2" 2>/dev/null &
    local sp=$!
    sleep 0.5
    local out reqs
    out=$(env ${client_conf:+OPENSSL_CONF=$client_conf} ZIPF_KEYS=${ZIPF_KEYS:-10000} \
          wrk -t"$threads" -c"$conns" -d5s -s "$here/zipf.lua" "$scheme://127.0.0.1:$3/")
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
