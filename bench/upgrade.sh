#!/usr/bin/env bash
# `lb upgrade` under every kind of load at once, counted by the clients and by the kernel:
# UPGRADES upgrades (10) spread over SPAN seconds (60) while
#   - wrk keeps 16 keep-alive connections busy on an HTTP listener,
#   - wrk opens a connection per request (Connection: close) on the same listener,
#   - wrk runs HTTPS keep-alive on a TLS listener,
#   - redis-benchmark -P 16 runs round after round through a redis listener,
#   - a pymemcache client sets and reads back batches through a memcached listener,
#   - a TCP session through a tcp listener stays open the whole time, sending PING every
#     50 ms to the redis-server behind it,
#   - curl downloads 1 GiB at 40 MB/s (about 27 s, over several upgrades) and checks its size.
# Each client reports its own errors. The kernel's counters (nstat, iproute2's companion to
# ss) say how many resets were sent on the machine meanwhile (TcpOutRsts) and how many
# connections were refused (TcpExtListenDrops, TcpExtListenOverflows). Loopback only.
#
# Usage: bench/upgrade.sh [BUILD_DIR]     (default build; make first)
# Env: UPGRADES (10), SPAN (60), MODE (upgrade; restart: each upgrade is replaced by what
#      `systemctl restart` does without a socket unit, SIGTERM, wait for the exit, start again,
#      for comparison in the same conditions). UPGRADES=0 is the control: the same loads and counters with
#      no upgrade (the clients' own closes at the end of their runs reset a few connections).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=$(cd "${1:-build}" && pwd)
upgrades=${UPGRADES:-10}
mode=${MODE:-upgrade}
span=${SPAN:-60}

origin1=$(free_port); origin2=$(free_port); redis=$(free_port); mc=$(free_port)
web=$(free_port); tls=$(free_port); rport=$(free_port); mport=$(free_port); tport=$(free_port)
admin=$(free_port)
"$build/lb-origin" --listen 127.0.0.1:$origin1 --name a >"$work/o1.log" 2>&1 & pids+=($!)
"$build/lb-origin" --listen 127.0.0.1:$origin2 --name b >"$work/o2.log" 2>&1 & pids+=($!)
start_redis "$redis"
memcached -u "$(id -un)" -l 127.0.0.1 -p "$mc" -U 0 >"$work/memcached.log" 2>&1 & pids+=($!)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
  -subj /CN=127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
cat >"$work/lb.toml" <<TOML
[lb]
workers = 2
log_level = "info"
# With upgrades the TCP session outlives every one of them: the first process keeps it to the
# end. A restart cannot wait that long (systemd's stop timeout): 5s, as an operator would set.
drain_timeout = "$([[ $mode == restart ]] && echo 5s || echo 120s)"
[admin]
listen = "127.0.0.1:$admin"
[listeners.web]
listen = "127.0.0.1:$web"
cluster = "origins"
[listeners.webtls]
listen = "127.0.0.1:$tls"
cluster = "origins"
tls = { certificates = [ { cert = "$work/cert.pem", key = "$work/key.pem" } ] }
[listeners.redis]
listen = "127.0.0.1:$rport"
protocol = "redis"
cluster = "redis"
[listeners.mc]
listen = "127.0.0.1:$mport"
protocol = "memcached"
cluster = "mc"
[listeners.tcp]
listen = "127.0.0.1:$tport"
protocol = "tcp"
cluster = "redis_tcp"
hash = [ { source_ip = true } ]
[clusters.origins]
backends = [ { name = "a", address = "127.0.0.1:$origin1" }, { name = "b", address = "127.0.0.1:$origin2" } ]
[clusters.redis]
backends = [ { name = "r", address = "127.0.0.1:$redis" } ]
[clusters.redis_tcp]
backends = [ { name = "r", address = "127.0.0.1:$redis" } ]
[clusters.mc]
backends = [ { name = "m", address = "127.0.0.1:$mc" } ]
TOML
wait_port "$mc"; wait_port "$origin1"; wait_port "$origin2"
"$build/lb" --config "$work/lb.toml" >"$work/lb.log" 2>&1 &
first=$!
pids+=($first)
for p in $web $tls $rport $mport $tport $admin; do wait_port "$p"; done

stop="$work/stop"
duration=$((span + 4))
nstat -n >/dev/null   # resets nstat's history: the next nstat prints what happened since
wrk -t1 -c16 -d${duration}s "http://127.0.0.1:$web/ka" >"$work/wrk_keepalive.txt" 2>&1 & loads=($!)
wrk -t1 -c8 -d${duration}s -H 'Connection: close' "http://127.0.0.1:$web/close" \
  >"$work/wrk_close.txt" 2>&1 & loads+=($!)
wrk -t1 -c8 -d${duration}s "https://127.0.0.1:$tls/tls" >"$work/wrk_tls.txt" 2>&1 & loads+=($!)
( rounds=0 failed=0
  while [[ ! -e $stop ]]; do
    # redis-benchmark waits for ever on a connection that was refused or reset: bounded.
    if timeout 60 redis-benchmark -p "$rport" -P 16 -c 8 -n 100000 -t set,get -q >"$work/rb_round.txt" 2>&1 \
       && grep -q "GET:" "$work/rb_round.txt" && ! grep -qi "error" "$work/rb_round.txt"; then :
    else failed=$((failed + 1)); cat "$work/rb_round.txt"; fi
    rounds=$((rounds + 1))
  done
  echo "redis-benchmark -P 16: $rounds rounds, $failed failed" ) >"$work/redis.txt" 2>&1 & loads+=($!)
curl -sS --limit-rate 40M -o /dev/null -w '%{http_code} %{size_download}' \
  "http://127.0.0.1:$web/bytes?n=1073741824" >"$work/download.txt" 2>&1 & loads+=($!)
/usr/bin/python3 - "$mport" "$stop" >"$work/memcached.txt" 2>&1 <<'PY' & loads+=($!)
import os, sys, time
from pymemcache.client.base import Client
c = Client(('127.0.0.1', int(sys.argv[1])), timeout=10)
ops = errors = wrong = i = 0
while not os.path.exists(sys.argv[2]):
    values = {'k%d' % ((i + j) % 5000): b'v%d' % (i + j) for j in range(16)}
    try:
        failed = c.set_many(values, noreply=False)
        got = c.get_many(list(values))
        if failed or got != values: wrong += 1
        ops += 32
    except Exception as e:
        errors += 1; print('error', repr(e)); c = Client(('127.0.0.1', int(sys.argv[1])), timeout=10)
    i += 16
print('pymemcache: %d commands, %d errors, %d wrong' % (ops, errors, wrong))
PY
/usr/bin/python3 - "$tport" "$stop" >"$work/tcp.txt" 2>&1 <<'PY' & loads+=($!)
import os, socket, sys, time
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
pings = errors = 0
while not os.path.exists(sys.argv[2]):
    try:
        s.sendall(b'PING\r\n')
        if s.recv(64) != b'+PONG\r\n': errors += 1
        pings += 1
    except OSError as e:
        errors += 1; print('error', repr(e)); break
    time.sleep(0.05)
s.close()
print('tcp session: %d pings on one connection, %d errors' % (pings, errors))
PY

sleep 2
serving=$first
# n + 1 gaps: the first upgrade comes one gap into the load, the last one gap before its end.
gap=$(awk -v s="$span" -v n="$upgrades" 'BEGIN { printf "%.2f", s / (n + 1) }')
ok=0
start=$(date +%s.%N)
[[ $upgrades -gt 0 ]] || sleep "$gap"
for i in $(seq "$upgrades"); do
  sleep "$gap"
  if [[ $mode == restart ]]; then
    kill -TERM "$serving"
    while kill -0 "$serving" 2>/dev/null; do sleep 0.01; done
    "$build/lb" --config "$work/lb.toml" >>"$work/lb.log" 2>&1 &
    serving=$!
    pids+=($serving)
    wait_port "$web" && ok=$((ok + 1))
  elif out=$("$build/lb" upgrade --pid "$serving" 2>&1); then
    ok=$((ok + 1)); serving=$(sed -n 's/.*ok: lb pid \([0-9]*\) .*/\1/p' <<<"$out")
  else
    echo "upgrade $i: $out"
  fi
done
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
touch "$stop"
wait "${loads[@]}" || true
kernel=$(nstat 2>/dev/null | awk '$1 ~ /^(TcpOutRsts|TcpExtListenDrops|TcpExtListenOverflows|TcpAttemptFails)$/ { printf "%s=%s ", $1, $2 }')

echo "$mode: $ok of $upgrades succeeded in ${took}s (the last lb is pid $serving)"
for f in wrk_keepalive wrk_close wrk_tls; do
  reqs=$(grep -o '[0-9]* requests in' "$work/$f.txt" | cut -d' ' -f1)
  errs=$(grep 'Socket errors' "$work/$f.txt" || echo "Socket errors: none")
  non2xx=$(grep 'Non-2xx' "$work/$f.txt" || echo "Non-2xx: none")
  echo "$f: ${reqs:-?} requests; $errs; $non2xx"
done
echo "1 GiB download: $(cat "$work/download.txt") (status, bytes; 1073741824 expected)"
cat "$work/redis.txt" "$work/memcached.txt" "$work/tcp.txt"
echo "kernel (nstat, whole machine, during the run): ${kernel:-no counters moved}"
kill "$serving" 2>/dev/null || true
