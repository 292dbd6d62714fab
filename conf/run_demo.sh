#!/usr/bin/env bash
# `make run`: four lb-origin backends, two redis-servers, two memcached and lb with
# conf/demo.toml, in the foreground. Prints what to curl, redis-cli and send to memcached;
# Ctrl-C (SIGINT) or SIGTERM stops everything it started, and it waits for them to be gone
# before it exits 0.
#
#   conf/run_demo.sh BUILD_DIR          (the Makefile passes its build dir)
#
# The ports are conf/demo.toml's (8080 http, 8081 tcp, 6400 redis, 11400 memcached, 9901
# admin, 9001-9004 origins, 6401-6402 redis-servers, 6403 a spare redis-server not in the
# config (for the line that adds it), 11401-11402 memcached). To use others
# (a test picks free ones), set any of:
#   LB_DEMO_HTTP_PORT  LB_DEMO_HTTPS_PORT (8443)  LB_DEMO_TCP_PORT  LB_DEMO_ADMIN_PORT  LB_DEMO_BACKEND_PORTS="p1 p2 p3 p4"
#   LB_DEMO_REDIS_PORT  LB_DEMO_REDIS_BACKEND_PORTS="p1 p2"  LB_DEMO_REDIS_SPARE_PORT (6403)
#   LB_DEMO_MEMCACHED_PORT  LB_DEMO_MEMCACHED_BACKEND_PORTS="p1 p2"
# and the script runs lb on a copy of demo.toml with those ports.
set -euo pipefail

build=${1:-build}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lb="$build/lb"
origin="$build/lb-origin"
for bin in "$lb" "$origin"; do
  [ -x "$bin" ] || { echo "run_demo: $bin is missing; run 'make' first" >&2; exit 1; }
done
for bin in redis-server redis-cli memcached; do
  command -v "$bin" >/dev/null || { echo "run_demo: $bin is missing; run 'make deps'" >&2; exit 1; }
done

http_port=${LB_DEMO_HTTP_PORT:-8080}
https_port=${LB_DEMO_HTTPS_PORT:-8443}
tcp_port=${LB_DEMO_TCP_PORT:-8081}
admin_port=${LB_DEMO_ADMIN_PORT:-9901}
read -r -a backend_ports <<<"${LB_DEMO_BACKEND_PORTS:-9001 9002 9003 9004}"
names=(origin-a origin-b origin-c origin-d)
[ "${#backend_ports[@]}" -eq 4 ] || { echo "run_demo: LB_DEMO_BACKEND_PORTS needs 4 ports" >&2; exit 1; }
redis_port=${LB_DEMO_REDIS_PORT:-6400}
memcached_port=${LB_DEMO_MEMCACHED_PORT:-11400}
read -r -a redis_ports <<<"${LB_DEMO_REDIS_BACKEND_PORTS:-6401 6402}"
spare_port=${LB_DEMO_REDIS_SPARE_PORT:-6403}
read -r -a memcached_ports <<<"${LB_DEMO_MEMCACHED_BACKEND_PORTS:-11401 11402}"
[ "${#redis_ports[@]}" -eq 2 ] || { echo "run_demo: LB_DEMO_REDIS_BACKEND_PORTS needs 2 ports" >&2; exit 1; }
[ "${#memcached_ports[@]}" -eq 2 ] || { echo "run_demo: LB_DEMO_MEMCACHED_BACKEND_PORTS needs 2 ports" >&2; exit 1; }

workdir=$(mktemp -d "${TMPDIR:-/tmp}/lb-demo-XXXXXX")
pids=()

stop_all() {
  trap - INT TERM EXIT
  local pid
  # lb first, so it drains while the origins and caches still answer.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
    for _ in $(seq 1 100); do   # up to 10 s each (lb's drain_timeout is 5 s)
      kill -0 "${pids[i]}" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "${pids[i]}" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$workdir"
}
on_signal() {
  echo
  echo "run_demo: stopping"
  stop_all
  exit 0
}
trap on_signal INT TERM
trap stop_all EXIT

# A copy of demo.toml with the chosen ports (identical when none was overridden).
config="$workdir/demo.toml"
sed -e "s/127\.0\.0\.1:8080\"/127.0.0.1:$http_port\"/" \
    -e "s/127\.0\.0\.1:8081\"/127.0.0.1:$tcp_port\"/" \
    -e "s/127\.0\.0\.1:9901\"/127.0.0.1:$admin_port\"/" \
    -e "s/127\.0\.0\.1:9001\"/127.0.0.1:${backend_ports[0]}\"/" \
    -e "s/127\.0\.0\.1:9002\"/127.0.0.1:${backend_ports[1]}\"/" \
    -e "s/127\.0\.0\.1:9003\"/127.0.0.1:${backend_ports[2]}\"/" \
    -e "s/127\.0\.0\.1:9004\"/127.0.0.1:${backend_ports[3]}\"/" \
    -e "s/127\.0\.0\.1:6400\"/127.0.0.1:$redis_port\"/" \
    -e "s/127\.0\.0\.1:6401\"/127.0.0.1:${redis_ports[0]}\"/" \
    -e "s/127\.0\.0\.1:6402\"/127.0.0.1:${redis_ports[1]}\"/" \
    -e "s/127\.0\.0\.1:11400\"/127.0.0.1:$memcached_port\"/" \
    -e "s/127\.0\.0\.1:11401\"/127.0.0.1:${memcached_ports[0]}\"/" \
    -e "s/127\.0\.0\.1:11402\"/127.0.0.1:${memcached_ports[1]}\"/" \
    "$here/demo.toml" >"$config"
# The HTTPS listener's certificate: self-signed for localhost, made fresh for each run.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
  -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
  -keyout "$workdir/demo.key" -out "$workdir/demo.pem" >/dev/null 2>&1 ||
  { echo "run_demo: openssl could not make the demo certificate" >&2; exit 1; }
# An HTTPS listener on the same origins, added to the copy only: demo.toml itself must pass
# `lb --check` where no certificate exists. A relative path is the config file's folder's.
cat >>"$config" <<TOML

[listeners.web_tls]
listen = "127.0.0.1:$https_port"
protocol = "http"
cluster = "origins"
hash = [ { header = "x-cache-key" }, { path = true } ]
timeouts = { connect = "1s", header = "10s", idle = "60s" }
tls = { certificates = [ { cert = "demo.pem", key = "demo.key" } ], min_version = "1.2" }
TOML
"$lb" --check --config "$config" >/dev/null

# Waits up to 10 s for something to accept on 127.0.0.1:$1, while process $2 still runs.
wait_port() {
  for _ in $(seq 1 200); do
    kill -0 "$2" 2>/dev/null || return 1
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

for i in 0 1 2 3; do
  "$origin" --listen "127.0.0.1:${backend_ports[i]}" --name "${names[i]}" \
    >"$workdir/${names[i]}.log" 2>&1 &
  pids+=($!)
done
# The caches: no persistence, loopback only. memcached run as root insists on a user to drop
# to (-u); as anyone else it has nothing to drop.
mc_user=()
[ "$(id -u)" -ne 0 ] || mc_user=(-u nobody)
# The third is the spare: running, empty, in no config until the printed line adds it.
redis_ports+=("$spare_port")
for i in 0 1 2; do
  redis-server --port "${redis_ports[i]}" --bind 127.0.0.1 --save "" --appendonly no \
    --protected-mode no --loglevel warning >"$workdir/redis-$((i + 1)).log" 2>&1 &
  pids+=($!)
  names+=("redis-$((i + 1))")
  backend_ports+=("${redis_ports[i]}")
done
for i in 0 1; do
  memcached -l 127.0.0.1 -p "${memcached_ports[i]}" -U 0 -m 64 -t 1 "${mc_user[@]}" \
    >"$workdir/memcached-$((i + 1)).log" 2>&1 &
  pids+=($!)
  names+=("memcached-$((i + 1))")
  backend_ports+=("${memcached_ports[i]}")
done
for i in "${!pids[@]}"; do
  wait_port "${backend_ports[i]}" "${pids[i]}" || {
    echo "run_demo: ${names[i]} did not start on 127.0.0.1:${backend_ports[i]}:" >&2
    cat "$workdir/${names[i]}.log" >&2
    exit 1
  }
done

# lb's access log goes to this terminal (stdout), its own log lines to stderr.
"$lb" --config "$config" &
lb_pid=$!
pids+=("$lb_pid")
for p in "$http_port" "$https_port" "$tcp_port" "$redis_port" "$memcached_port" "$admin_port"; do
  wait_port "$p" "$lb_pid" || { echo "run_demo: lb did not start (port $p)" >&2; exit 1; }
done

cat <<EOF

lb demo is running: lb on 127.0.0.1:$http_port (http) and :$tcp_port (tcp) in front of
four lb-origin backends (${backend_ports[*]:0:4}), :$redis_port (redis) in front of two
redis-servers (${redis_ports[*]:0:2}; a spare on $spare_port) and :$memcached_port (memcached) in front of two memcached
(${memcached_ports[*]}). Try:

  curl -si http://127.0.0.1:$http_port/hello | grep -i x-backend
      the path is the key: the same path always answers from the same origin
  curl -si -H 'x-cache-key: user42' http://127.0.0.1:$http_port/anything | grep -i x-backend
      a header key wins over the path (the first hash entry that yields a key)
  curl -si --cacert $workdir/demo.pem https://localhost:$https_port/hello | grep -i x-backend
      the same over TLS (self-signed certificate: demo.pem; or curl -k)
  curl -si http://127.0.0.1:$tcp_port/ | grep -i x-backend
      the tcp listener pipes bytes; its key is your source address
  curl -s 'http://127.0.0.1:$admin_port/ring?cluster=origins&key=user42'
  curl -s http://127.0.0.1:$admin_port/metrics | grep ^lb_backend
      Prometheus metrics (lb_backend_active_requests, picks, bytes, ...)

  redis-cli -p $redis_port set user:1 alice
  redis-cli -p $redis_port mset user:2 bob user:3 carol user:4 dave
  redis-cli -p $redis_port mget user:1 user:2 user:3 user:4
      each key goes to its own server; MGET is split by server and merged back in order
  curl -s 'http://127.0.0.1:$admin_port/ring?cluster=redis&key=user:1'
      which redis-server holds user:1 (redis-cli -p ${redis_ports[0]} / ${redis_ports[1]} to look)
  sed -i '/"redis-2"/a\\  { name = "redis-3", address = "127.0.0.1:$spare_port" },' $config && kill -HUP $lb_pid
      adds the spare redis-server to the cluster; user:1 to user:4 now belong to it, empty
  redis-cli -p $redis_port get user:1
      still alice: the handover read the miss through from its old server and copied it
      over (redis-cli -p $spare_port get user:1; /metrics: lb_handover_reads_total)
  bash -c 'exec 3<>/dev/tcp/127.0.0.1/$memcached_port; printf "set k 0 0 1\\r\\nv\\r\\nget k a b\\r\\nquit\\r\\n" >&3; cat <&3'
      memcached's text protocol (with nc: printf 'get k\\r\\n' | nc -q1 127.0.0.1 $memcached_port)

Edit $config and run 'kill -HUP $lb_pid' to reload it. Ctrl-C stops everything.

EOF

# Until lb exits by itself or a signal arrives (wait returns early then; the trap runs).
wait "$lb_pid" || true
echo "run_demo: lb exited" >&2
exit 1
