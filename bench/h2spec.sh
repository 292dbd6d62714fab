#!/usr/bin/env bash
# h2spec (HTTP/2 conformance, RFC 7540/7541 test cases) against lb, nginx and HAProxy, each
# terminating HTTP/2 two ways in front of the same origin:
#
#   origin   one lb-origin (BUILD_DIR/lb-origin --listen 127.0.0.1:PORT --name origin1), HTTP/1.1
#   lb       one http listener with `h2 = { cleartext = "only", ... }` (h2c: prior knowledge on
#            every connection, as the peers' h2c binds), one with `tls = { ..., alpn = ["h2",
#            "http/1.1"] }`, and (mode h2c-detect, lb only) its default plain listener, which
#            tells h2c from HTTP/1.1 by the preface: there h2spec's "invalid connection
#            preface" case is an HTTP/1.1 request line lb answers 400, not a GOAWAY.
#   nginx    `listen PORT http2` and `listen PORT ssl http2`, proxy_pass with keepalive
#   HAProxy  `bind PORT proto h2` and `bind PORT ssl crt ... alpn h2,http/1.1`
#
# One self-signed ECDSA P-256 certificate (CN and subjectAltName localhost) for the three;
# h2spec checks TLS with -t -k (ALPN h2, the certificate not verified). Each target and mode is
# one h2spec run, `h2spec -h 127.0.0.1 -p PORT -o TIMEOUT [-t -k]`; the output is one line per
# run:   target mode passed failed skipped   (mode h2c or tls; "- - -" when it could not run:
# the target did not start or h2spec printed no summary, the reason on stderr).
# h2spec's case 6.9.2/2 (a SETTINGS frame that makes the window negative) is skipped when the
# response body is under 5 bytes: lb-origin answers GET / with its name and a newline, so the
# name is origin1 (8 bytes; "o1" would skip the case).
#
# Usage: bench/h2spec.sh [BUILD_DIR]      (default build; run `make` first)
# Env: H2SPEC (else h2spec on PATH; Debian has no package: build it from source with
#      golang-go and Debian's Go libraries, GO111MODULE=off GOPATH=DIR:/usr/share/gocode
#      go build ./cmd/h2spec, as bench/RESULTS.md says), TARGETS ("lb nginx haproxy": any
#      of them, in that order), TIMEOUT (2: h2spec -o, seconds per case), OUT (unset: a folder
#      to keep each run's whole h2spec report in, as TARGET.MODE.txt, failed cases and all).
# Exits 1 when a run could not be made, else 0 (failed cases do not change the exit status).
# Everything listens on 127.0.0.1 at free ports; every process started here is stopped on
# exit. Installs haproxy and nginx from Debian if missing.
set -euo pipefail
build=${1:-build}
timeout_s=${TIMEOUT:-2}
out_dir=${OUT:-}
h2spec=${H2SPEC:-$(command -v h2spec || true)}
[[ -n $h2spec && -x $h2spec ]] || {
  echo "h2spec.sh: no h2spec (set H2SPEC; build it from github.com/summerwind/h2spec)" >&2; exit 2; }
source "$(dirname "$0")/lib.sh"
read_targets h2spec.sh "lb nginx haproxy"
install_missing h2spec.sh haproxy nginx openssl
[[ -x $build/lb-origin ]] || { echo "h2spec.sh: $build/lb-origin not found; run make first" >&2; exit 2; }
if ((want_lb)); then
  [[ -x $build/lb ]] || { echo "h2spec.sh: $build/lb not found; run make first" >&2; exit 2; }
fi
[[ -z $out_dir ]] || mkdir -p "$out_dir"

mkdir -p "$work/tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=localhost -addext subjectAltName=DNS:localhost \
  -keyout "$work/tls/key.pem" -out "$work/tls/cert.pem" 2>/dev/null
cat "$work/tls/cert.pem" "$work/tls/key.pem" >"$work/tls/both.pem"   # HAProxy's crt

origin_port=$(free_port)
"$build/lb-origin" --listen "127.0.0.1:$origin_port" --name origin1 >"$work/origin.log" 2>&1 &
pids+=($!)
wait_port "$origin_port"

declare -A port=()   # port[TARGET.MODE]
for t in "${targets[@]}"; do port[$t.h2c]=$(free_port); port[$t.tls]=$(free_port); done
port[lb.h2c-detect]=$(free_port)

start_lb() {
  local tls="tls = { certificates = [ { cert = \"$work/tls/cert.pem\", key = \"$work/tls/key.pem\" } ], alpn = [\"h2\", \"http/1.1\"] }"
  local h2='h2 = { max_concurrent_streams = 100, initial_window = "1MiB", max_header_list = "64KiB" }'
  cat >"$work/lb.toml" <<TOML
[lb]
workers = 1
log_level = "warn"
access_log = ""
[admin]
listen = "127.0.0.1:$(free_port)"
[listeners.h2c]
protocol = "http"
listen = "127.0.0.1:${port[lb.h2c]}"
cluster = "origin"
h2 = { cleartext = "only", max_concurrent_streams = 100, initial_window = "1MiB", max_header_list = "64KiB" }
[listeners.detect]
protocol = "http"
listen = "127.0.0.1:${port[lb.h2c-detect]}"
cluster = "origin"
$h2
[listeners.tls]
protocol = "http"
listen = "127.0.0.1:${port[lb.tls]}"
cluster = "origin"
$h2
$tls
[clusters.origin]
backends = [ { name = "origin1", address = "127.0.0.1:$origin_port" } ]
TOML
  "$build/lb" --config "$work/lb.toml" >"$work/lb.log" 2>&1 &
  pids+=($!)
}

start_nginx() {
  mkdir -p "$work/nginx"
  cat >"$work/nginx/nginx.conf" <<EOF
worker_processes 1; daemon off; master_process off; pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 1024; }
http { access_log off;
  upstream origin { server 127.0.0.1:$origin_port; keepalive 16; }
  server { listen 127.0.0.1:${port[nginx.h2c]} http2;
    location / { proxy_pass http://origin; proxy_http_version 1.1; proxy_set_header Connection ""; } }
  server { listen 127.0.0.1:${port[nginx.tls]} ssl http2;
    ssl_certificate $work/tls/cert.pem; ssl_certificate_key $work/tls/key.pem;
    location / { proxy_pass http://origin; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}
EOF
  nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" &
  pids+=($!)
}

start_haproxy() {
  mkdir -p "$work/haproxy"
  cat >"$work/haproxy/haproxy.cfg" <<EOF
global
  nbthread 1
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  option http-keep-alive
frontend h2c
  bind 127.0.0.1:${port[haproxy.h2c]} proto h2
  default_backend origin
frontend tls
  bind 127.0.0.1:${port[haproxy.tls]} ssl crt $work/tls/both.pem alpn h2,http/1.1
  default_backend origin
backend origin
  server o1 127.0.0.1:$origin_port
EOF
  haproxy -db -f "$work/haproxy/haproxy.cfg" >"$work/haproxy/log" 2>&1 &
  pids+=($!)
}

log_of() {   # target -> its log file
  case $1 in haproxy) echo "$work/haproxy/log" ;; nginx) echo "$work/nginx/error.log" ;; lb) echo "$work/lb.log" ;; esac
}

for t in "${targets[@]}"; do "start_$t"; done

status=0
echo "target mode passed failed skipped"
for t in "${targets[@]}"; do
  modes=(h2c tls)
  [[ $t == lb ]] && modes+=(h2c-detect)
  for m in "${modes[@]}"; do
    p=${port[$t.$m]}
    if ! wait_port "$p" 2>/dev/null; then
      echo "h2spec.sh: $t ($m) does not listen on $p; its log:" >&2
      cat "$(log_of "$t")" >&2 || true
      echo "$t $m - - -"; status=1; continue
    fi
    args=(-h 127.0.0.1 -p "$p" -o "$timeout_s")
    [[ $m == tls ]] && args+=(-t -k)
    report=$work/$t.$m.txt
    # h2spec exits 1 when a case fails; 146 cases at most TIMEOUT s each bound the run.
    timeout $((146 * timeout_s + 60)) "$h2spec" "${args[@]}" >"$report" 2>&1 || true
    [[ -z $out_dir ]] || cp "$report" "$out_dir/$t.$m.txt"
    # 146 tests, 145 passed, 1 skipped, 0 failed
    line=$(grep -E '^[0-9]+ tests, [0-9]+ passed, [0-9]+ skipped, [0-9]+ failed' "$report" | tail -1 || true)
    if [[ -z $line ]]; then
      echo "h2spec.sh: h2spec against $t ($m) printed no summary; its last lines:" >&2
      tail -5 "$report" >&2
      echo "$t $m - - -"; status=1; continue
    fi
    awk -v t="$t" -v m="$m" '{ print t, m, $3, $7, $5 }' <<<"$line"
  done
done
exit "$status"
