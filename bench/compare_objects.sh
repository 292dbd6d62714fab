#!/usr/bin/env bash
# lb against HAProxy (`option splice-response`) on large objects, in one run:
# one nginx origin (one worker, sendfile on) serving one object per size, each proxy with one
# worker/thread in front of it, `wrk -t1 -c16` on the same URL, rounds interleaved. Prints,
# per size and proxy, the median round's req/s and the proxy's own CPU per request (utime +
# stime from /proc/PID/stat around the run), and lb/HAProxy of the CPU figure twice: the
# ratio of the medians, and the median of the ratios within each round (each round runs
# every target once, back to back, so a round's ratio sees one load; the order turns from
# round to round so that no target always runs first).
#
# Usage: bench/compare_objects.sh [BUILD_DIR]   (default build)
# Env: SIZES ("1024 65536 1048576"), ROUNDS (3), DURATION (5s), CONNS (16),
# BASE (another build dir: its lb joins the rounds as `lb_base`, so that a change is measured
# against the build before it and against HAProxy in the same run).
# Everything on 127.0.0.1 at free ports, stopped on exit; each wrk run bounded by DURATION.
set -euo pipefail
build=${1:-build}
sizes=${SIZES:-1024 65536 1048576}; rounds=${ROUNDS:-3}; duration=${DURATION:-5s}; conns=${CONNS:-16}
for c in haproxy nginx wrk; do command -v $c >/dev/null || { echo "compare_objects.sh: needs $c" >&2; exit 2; }; done
source "$(dirname "$0")/lib.sh"

mkdir -p "$work/www" "$work/origin" "$work/haproxy"
for s in $sizes; do head -c "$s" /dev/urandom >"$work/www/o$s"; done
origin_port=$(free_port); haproxy_port=$(free_port); lb_port=$(free_port)
cat >"$work/origin/nginx.conf" <<CONF
worker_processes 1; daemon off; master_process off; pid $work/origin/nginx.pid;
error_log $work/origin/error.log;
events { worker_connections 4096; }
http { access_log off; sendfile on; tcp_nopush on; keepalive_requests 1000000;
  server { listen 127.0.0.1:$origin_port; root $work/www; } }
CONF
nginx -p "$work/origin" -c "$work/origin/nginx.conf" 2>"$work/origin/stderr" &
pids+=($!)
cat >"$work/haproxy/haproxy.cfg" <<CONF
global
  nbthread 1
  maxconn 4000
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  option http-keep-alive
  option splice-response
  http-reuse always
frontend web
  bind 127.0.0.1:$haproxy_port
  default_backend origin
backend origin
  server o 127.0.0.1:$origin_port
CONF
haproxy -db -f "$work/haproxy/haproxy.cfg" >"$work/haproxy/log" 2>&1 &
haproxy_pid=$!; pids+=($haproxy_pid)
cat >"$work/lb.toml" <<CONF
[lb]
workers = 1
log_level = "warn"
access_log = ""
[listeners.web]
listen = "127.0.0.1:$lb_port"
cluster = "c"
on_missing_key = "round_robin"
[clusters.c]
backends = [ { name = "o", address = "127.0.0.1:$origin_port" } ]
CONF
"$build/lb" --config "$work/lb.toml" >"$work/lb.log" 2>&1 &
lb_pid=$!; pids+=($lb_pid)
wait_port "$origin_port"; wait_port "$haproxy_port"; wait_port "$lb_port"

declare -A port=([haproxy]=$haproxy_port [lb]=$lb_port) pid_of=([haproxy]=$haproxy_pid [lb]=$lb_pid)
targets=(haproxy lb)
if [[ -n ${BASE:-} ]]; then
  [[ -x $BASE/lb ]] || { echo "compare_objects.sh: $BASE/lb not found" >&2; exit 2; }
  base_port=$(free_port)
  sed "s/127.0.0.1:$lb_port/127.0.0.1:$base_port/" "$work/lb.toml" >"$work/lb_base.toml"
  "$BASE/lb" --config "$work/lb_base.toml" >"$work/lb_base.log" 2>&1 &
  port[lb_base]=$base_port; pid_of[lb_base]=$!; pids+=($!); targets+=(lb_base)
  wait_port "$base_port"
fi
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
echo "bench/compare_objects.sh: nginx origin (sendfile), HAProxy $(haproxy -v | head -1 | awk '{print $3}') splice-response, lb $build${BASE:+, lb_base $BASE}; wrk -t1 -c$conns -d$duration, $rounds rounds; $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
for s in $sizes; do
  for r in $(seq "$rounds"); do
    k=$(( (r - 1) % ${#targets[@]} ))
    for t in "${targets[@]:k}" "${targets[@]:0:k}"; do
      c0=$(ticks "${pid_of[$t]}")
      out=$(wrk -t1 -c"$conns" -d"$duration" "http://127.0.0.1:${port[$t]}/o$s")
      c1=$(ticks "${pid_of[$t]}")
      n=$(awk '/requests in/ {print $1}' <<<"$out"); rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
      awk -v s="$s" -v t="$t" -v c="$((c1 - c0))" -v hz="$hz" -v n="$n" -v rps="$rps" \
        -v r="$r" 'BEGIN { printf "%s %s %.1f %.0f %d\n", s, t, c / hz * 1e6 / n, rps, r }' | tee -a "$work/rounds"
    done
  done
done
echo "size proxy: median CPU us/request, req/s"
for s in $sizes; do
  for t in "${targets[@]}"; do
    awk -v s="$s" -v t="$t" '$1 == s && $2 == t {print $3, $4}' "$work/rounds" | sort -n |
      awk -v s="$s" -v t="$t" '{v[NR] = $0} END {split(v[int((NR + 1) / 2)], f, " "); printf "%s %s %.1f %.0f\n", s, t, f[1], f[2]}'
  done | tee -a "$work/med"
  awk -v s="$s" '$1 == s {c[$2] = $3} END {
    printf "%s lb/haproxy CPU per request %.2f", s, c["lb"] / c["haproxy"]
    if ("lb_base" in c) printf ", lb_base/haproxy %.2f, lb/lb_base %.2f", c["lb_base"] / c["haproxy"], c["lb"] / c["lb_base"]
    printf "\n" }' "$work/med"
  for pair in lb/haproxy lb_base/haproxy lb/lb_base; do
    a=${pair%/*}; b=${pair#*/}
    [[ -n ${port[$a]:-} && -n ${port[$b]:-} ]] || continue
    awk -v s="$s" -v a="$a" -v b="$b" '$1 == s && $2 == a {x[$5] = $3} $1 == s && $2 == b {y[$5] = $3}
      END {for (r in x) if (r in y) print x[r] / y[r]}' "$work/rounds" | sort -n |
      awk -v s="$s" -v p="$pair" '{v[NR] = $1} END {printf "%s %s CPU per request, median of the rounds: %.2f (%.2f-%.2f)\n", s, p, v[int((NR + 1) / 2)], v[1], v[NR]}'
  done
done
