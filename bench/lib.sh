# Shared by the bench scripts (sourced): a scratch directory and the processes started into
# `pids`, both removed on exit (KEEP_WORK=1 keeps them for a look); loopback port helpers.
work=$(mktemp -d)
pids=()
bench_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
[[ -n ${KEEP_WORK:-} ]] || trap bench_cleanup EXIT

# lb with one http listener on 127.0.0.1:PORT keyed by x-key and one backend, the origin at
# 127.0.0.1:ORIGIN_PORT: the setup ab.sh and e2e_http.sh measure. Writes the config to FILE.
write_one_backend_config() {   # file workers port origin_port
  cat >"$1" <<TOML
[lb]
workers = $2
log_level = "warn"
[admin]
listen = "127.0.0.1:$(free_port)"
[listeners.web]
listen = "127.0.0.1:$3"
cluster = "c"
hash = [ { header = "x-key" } ]
[clusters.c]
backends = [ { name = "a", address = "127.0.0.1:$4" } ]
TOML
}

# The keyed benchmarks' backends (compare.sh, compare_h2.sh): one nginx process, one worker,
# 8 servers on free ports (backend_ports), each answering a 2-byte 200 and logging one line per
# request to $work/backends/bN.log, so that the busiest backend's share can be counted.
start_nginx_backends() {
  backend_ports=()
  local i
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
  local p
  for p in "${backend_ports[@]}"; do wait_port "$p"; done
}

# The proxies a comparison runs: TARGETS, else DEFAULT, each one of haproxy, nginx and lb, in
# the order given. Sets `targets` and `want_lb` (1 when lb is among them: its binary is
# needed), or stops with a usage error that names SCRIPT.
read_targets() {   # script default
  read -r -a targets <<<"${TARGETS:-$2}"
  ((${#targets[@]})) || { echo "$1: TARGETS is empty" >&2; exit 2; }
  want_lb=0
  local t
  for t in "${targets[@]}"; do
    case $t in
      haproxy | nginx) ;;
      lb) want_lb=1 ;;
      *) echo "$1: unknown target $t (haproxy, nginx, lb)" >&2; exit 2 ;;
    esac
  done
}

# Installs from Debian what is missing: each argument a command, or COMMAND:PACKAGE where the
# package is named otherwise.
install_missing() {   # script command[:package]...
  local script=$1 spec
  local -a missing=()
  shift
  for spec in "$@"; do command -v "${spec%%:*}" >/dev/null || missing+=("${spec#*:}"); done
  ((${#missing[@]})) || return 0
  echo "$script: installing ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
}

# HAProxy's `defaults` for the HTTP comparisons: keep-alive on both sides, and idle server
# connections shared by every request (lb's and nginx's upstream pools do the same).
haproxy_http_defaults() {
  echo "defaults"
  echo "  mode http"
  echo "  timeout connect 2s"
  echo "  timeout client 30s"
  echo "  timeout server 30s"
  echo "  option http-keep-alive"
  echo "  http-reuse always"
}

# lb as compare_h2.sh runs it: WORKERS workers, one plain http listener on 127.0.0.1:PORT
# (h2c by the preface) keyed by path, ring_hash over the nginx backends of
# start_nginx_backends, no access log (the peers log nothing). Writes the config to FILE.
write_h2_lb_config() {   # file port workers
  {
    echo "[lb]"
    echo "workers = $3"
    echo "log_level = \"warn\""
    echo "access_log = \"\""
    echo "[admin]"
    echo "listen = \"127.0.0.1:$(free_port)\""
    echo "[listeners.web]"
    echo "protocol = \"http\""
    echo "listen = \"127.0.0.1:$2\""
    echo "cluster = \"web\""
    echo "hash = [ { path = true } ]"
    echo "h2 = { max_concurrent_streams = 100, initial_window = \"1MiB\", max_header_list = \"64KiB\" }"
    echo "[clusters.web]"
    echo "selector = \"ring_hash\""
    echo "backends = ["
    local i
    for i in "${!backend_ports[@]}"; do
      echo "  { name = \"b$i\", address = \"127.0.0.1:${backend_ports[$i]}\" },"
    done
    echo "]"
  } >"$1"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {   # port [seconds]: waits up to SECONDS (10) for something to accept on 127.0.0.1:port
  for _ in $(seq $((${2:-10} * 20))); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.05
  done
  echo "$(basename "$0"): nothing listens on $1" >&2; return 1
}

# A redis-server on 127.0.0.1:PORT, no persistence, logging into the scratch directory.
start_redis() {   # port
  redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
               --dir "$work" >"$work/redis.$1.log" 2>&1 &
  pids+=($!)
  wait_port "$1"
}

# nutcracker (twemproxy) with one redis pool on 127.0.0.1:PORT over the given server ports,
# ketama over fnv1a_64 and no ejection: how lb's `twemproxy` selector is compared with it.
# The servers are named redis-0, redis-1, ... as the lb configs beside it name them.
# Sets nut_pid.
start_nutcracker_redis() {   # port server_port...
  local listen=$1 i=0 p; shift
  {
    echo "pool:"
    echo "  listen: 127.0.0.1:$listen"
    echo "  hash: fnv1a_64"
    echo "  distribution: ketama"
    echo "  redis: true"
    echo "  auto_eject_hosts: false"
    echo "  servers:"
    for p in "$@"; do echo "   - 127.0.0.1:$p:1 redis-$i"; i=$((i + 1)); done
  } >"$work/nutcracker.yml"
  nutcracker -c "$work/nutcracker.yml" -o "$work/nutcracker.log" -s "$(free_port)" -a 127.0.0.1 &
  nut_pid=$!
  pids+=($nut_pid)
}

# CPU ticks (user, system) of a process with all its threads and its child processes
# (nginx forks workers): utime and stime, the 14th and 15th fields of /proc/PID/stat.
cpu_ticks() {   # pid
  local p u=0 s=0 f
  for p in "$1" $(pgrep -P "$1" 2>/dev/null); do
    read -r -a f <"/proc/$p/stat" 2>/dev/null || continue
    u=$((u + f[13])); s=$((s + f[14]))
  done
  echo "$u $s"
}

# Microseconds of CPU (user + system) per request between two cpu_ticks readings.
cpu_us_per_request() {   # "u s" before, "u s" after, requests
  awk -v a="$1" -v b="$2" -v n="$3" -v hz="$(getconf CLK_TCK)" 'BEGIN {
    split(a, x, " "); split(b, y, " "); if (n == 0) { print "-"; exit }
    printf "%.2f", ((y[1] - x[1]) + (y[2] - x[2])) * 1e6 / hz / n }'
}

# An OPENSSL_CONF for the clients (wrk, openssl s_time/s_client) that pins TLS 1.3 to one
# suite and one group, so every proxy is measured on the same handshake.
write_tls_client_conf() {   # file suite group
  cat >"$1" <<EOF
openssl_conf = conf
[conf]
ssl_conf = ssl
[ssl]
system_default = client
[client]
MinProtocol = TLSv1.3
Ciphersuites = $2
Groups = $3
EOF
}
