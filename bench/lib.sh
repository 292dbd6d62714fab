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

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {   # port: waits up to 10 s for something to accept on 127.0.0.1:port
  for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.05; done
  echo "$(basename "$0"): nothing listens on $1" >&2; return 1
}
