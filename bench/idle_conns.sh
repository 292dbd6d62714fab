#!/usr/bin/env bash
# What an idle client connection costs lb, and whether lb holds 10,000 of them.
#
#   one lb-origin backend, lb with 1 worker, and bench/idle_conns.py as the client, twice:
#   - request: N keep-alive connections each complete one request, then sit idle (kIdle)
#   - silent:  N connections that send nothing (kHead, before a first byte)
#   Each variant runs against a fresh lb: VmRSS (/proc/PID/status) before and after the N
#   connections, KiB per connection, then every connection sends one more request and must
#   get a 200. The client warms lb's pools with BATCH requests first, so the figure is the
#   connections' cost, not the pools filling up (idle_conns.py says how).
#   TLS=1: the listener terminates TLS (a self-signed ECDSA P-256 certificate, the
#   client pinned to TLS 1.3, TLS_AES_128_GCM_SHA256 and X25519 through OPENSSL_CONF, as
#   compare.sh MODE=tls pins it); every connection completes its handshake before it is
#   counted, so `silent` is a handshake and then nothing, `request` a handshake and a request.
#
# Usage: bench/idle_conns.sh [BUILD_DIR]        (default build; run `make` first)
# Env: CONNS (10000), BATCH (200 requests in flight at a time), TLS (unset, or 1),
#   PEERS=1: the same two variants against nginx (one process, master_process off) and
#   HAProxy (one process, one thread) in front of the same lb-origin, TLS or not alike,
#   their own timeouts raised as lb's are, for the figure beside lb's.
# Everything listens on 127.0.0.1 at free ports; every process started here is stopped on
# exit; each step is bounded in time (the client gives up after 10-30 s per wait).
set -euo pipefail
build=${1:-build}
conns=${CONNS:-10000}
batch=${BATCH:-200}
here=$(cd "$(dirname "$0")" && pwd)
[[ -x $build/lb && -x $build/lb-origin ]] || {
  echo "idle_conns.sh: $build/lb or $build/lb-origin not found; run make first" >&2; exit 2; }
command -v python3 >/dev/null || { echo "idle_conns.sh: needs python3" >&2; exit 2; }

# lb and the client each hold CONNS descriptors (lb does not raise its own limit).
ulimit -n "$(ulimit -Hn)"
need=$((conns + 200))
(( $(ulimit -n) >= need )) || { echo "idle_conns.sh: ulimit -n $(ulimit -n) < $need" >&2; exit 2; }
source "$here/lib.sh"

tls_line=
tls_args=()
if [[ -n ${TLS:-} ]]; then
  command -v openssl >/dev/null || { echo "idle_conns.sh: TLS=1 needs openssl" >&2; exit 2; }
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=bench.test -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
  write_tls_client_conf "$work/client.cnf" "TLS_AES_128_GCM_SHA256" "X25519"
  tls_line="tls = { certificates = [ { cert = \"$work/cert.pem\", key = \"$work/key.pem\" } ] }"
  tls_args=(--tls)
fi

origin_port=$(free_port)
"$build/lb-origin" --listen "127.0.0.1:$origin_port" --name o1 >"$work/origin.log" 2>&1 &
pids+=($!)
wait_port "$origin_port"

run_variant() {   # mode
  local lb_port lb_pid
  lb_port=$(free_port)
  # Timeouts long enough that no connection is closed while held (silent ones owe a head
  # within timeouts.header); max_connections above CONNS (1 worker: its share is all of it).
  cat >"$work/lb-$1.toml" <<EOF
[lb]
workers = 1
log_level = "warn"
[listeners.web]
listen = "127.0.0.1:$lb_port"
cluster = "origin"
hash = [ { header = "x-key" } ]
timeouts = { header = "5m", idle = "5m" }
limits = { max_connections = $((conns * 2)) }
$tls_line
[clusters.origin]
selector = "ring_hash"
backends = [ { name = "o1", address = "127.0.0.1:$origin_port" } ]
EOF
  "$build/lb" --config "$work/lb-$1.toml" >"$work/lb-$1.log" 2>&1 &
  lb_pid=$!
  pids+=($lb_pid)
  wait_port "$lb_port"
  env ${TLS:+OPENSSL_CONF=$work/client.cnf} python3 "$here/idle_conns.py" "${tls_args[@]}" \
    --port "$lb_port" --pid "$lb_pid" --conns "$conns" --batch "$batch" --mode "$1" ||
    { echo "idle_conns.sh: $1 failed; lb log:" >&2; tail -20 "$work/lb-$1.log" >&2; return 1; }
  kill -TERM "$lb_pid"
  wait "$lb_pid" || { echo "idle_conns.sh: lb did not exit 0" >&2; return 1; }
}

# A peer in front of the same origin, one process, held connections never timed out.
run_peer() {   # name mode
  local port pid n=$conns
  port=$(free_port)
  # HAProxy reserves two descriptors per maxconn (client and server side) and will not start
  # above the hard limit: it holds fewer connections when the limit is short of that.
  if [[ $1 == haproxy ]] && (( 2 * (n + batch) + 100 > $(ulimit -Hn) )); then
    n=$(( ($(ulimit -Hn) - 100) / 2 - batch ))
  fi
  mkdir -p "$work/$1"
  if [[ $1 == nginx ]]; then
    {
      echo "worker_processes 1; daemon off; master_process off; pid $work/nginx/nginx.pid;"
      echo "error_log $work/nginx/error.log; worker_rlimit_nofile $((conns * 2 + 100));"
      echo "events { worker_connections $((conns * 2)); }"
      echo "http { access_log off; keepalive_timeout 5m; client_header_timeout 5m;"
      echo "  upstream origin { server 127.0.0.1:$origin_port; keepalive 64; }"
      if [[ -n ${TLS:-} ]]; then
        echo "  server { listen 127.0.0.1:$port ssl;"
        echo "    ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;"
        echo "    ssl_protocols TLSv1.2 TLSv1.3;"   # 1.22 leaves 1.3 out by default
      else
        echo "  server { listen 127.0.0.1:$port;"
      fi
      echo "    location / { proxy_pass http://origin; proxy_http_version 1.1;"
      echo "      proxy_set_header Connection \"\"; } }"
      echo "}"
    } >"$work/nginx/nginx.conf"
    nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" >"$work/nginx/log" 2>&1 &
  else
    {
      echo "global"
      echo "  nbthread 1"
      echo "  maxconn $((n + batch))"
      echo "defaults"
      echo "  mode http"
      echo "  timeout connect 2s"
      echo "  timeout client 5m"
      echo "  timeout server 30s"
      echo "  timeout http-request 5m"
      echo "  timeout http-keep-alive 5m"
      echo "frontend web"
      if [[ -n ${TLS:-} ]]; then
        cat "$work/cert.pem" "$work/key.pem" >"$work/haproxy/both.pem"
        echo "  bind 127.0.0.1:$port ssl crt $work/haproxy/both.pem"
      else
        echo "  bind 127.0.0.1:$port"
      fi
      echo "  default_backend origin"
      echo "backend origin"
      echo "  server o1 127.0.0.1:$origin_port"
    } >"$work/haproxy/haproxy.cfg"
    haproxy -db -f "$work/haproxy/haproxy.cfg" >"$work/haproxy/log" 2>&1 &
  fi
  pid=$!
  pids+=($pid)
  wait_port "$port"
  echo -n "$1: "
  env ${TLS:+OPENSSL_CONF=$work/client.cnf} python3 "$here/idle_conns.py" "${tls_args[@]}" \
    --port "$port" --pid "$pid" --conns "$n" --batch "$batch" --mode "$2" ||
    { echo "idle_conns.sh: $1 $2 failed; its log:" >&2; tail -20 "$work/$1/log" >&2; return 1; }
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
}

echo "lb: $build/lb, 1 worker; $conns connections$([[ -n ${TLS:-} ]] && echo " over TLS"); $batch requests in flight at a time"
status=0
run_variant request || status=1
run_variant silent || status=1
if [[ -n ${PEERS:-} ]]; then
  for peer in nginx haproxy; do
    run_peer "$peer" request || status=1
    run_peer "$peer" silent || status=1
  done
fi
exit $status
