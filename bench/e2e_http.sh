#!/usr/bin/env bash
# End-to-end HTTP throughput and tail latency, in one run with one wrk command:
#   1. straight to one lb-origin (the baseline),
#   2. through lb with 1 worker to that origin,
#   3. through lb with 2 workers to that origin.
# Usage: bench/e2e_http.sh [BUILD_DIR] (default build). Loopback only; every process it starts
# is stopped on exit. Prints one markdown table row per setup.
#
# Env: DURATION (default 10s), CONNS (64), THREADS (1).
set -euo pipefail
build=${1:-build}
duration=${DURATION:-10s}
conns=${CONNS:-64}
threads=${THREADS:-1}
source "$(dirname "$0")/lib.sh"

origin_port=$(free_port)
"$build/lb-origin" --listen "127.0.0.1:$origin_port" --name a >"$work/origin.log" 2>&1 &
pids+=($!)
wait_port "$origin_port"

run_wrk() {   # label url
  local out
  out=$(wrk -t"$threads" -c"$conns" -d"$duration" --latency -H "x-key: bench" "$2")
  local rps p99 errors
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  errors=$(grep -E "Socket errors|Non-2xx" <<<"$out" | tr '\n' ' ' || true)
  printf '| %s | %s | %s | %s |\n' "$1" "$rps" "$p99" "${errors:-none}"
}

start_lb() {   # workers -> sets lb_port, lb_pid
  lb_port=$(free_port)
  write_one_backend_config "$work/lb.toml" "$1" "$lb_port" "$origin_port"
  "$build/lb" --config "$work/lb.toml" >"$work/lb.log" 2>&1 &
  lb_pid=$!
  pids+=($lb_pid)
  wait_port "$lb_port"
}

echo "wrk -t$threads -c$conns -d$duration --latency -H 'x-key: bench' URL   ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores)"
echo
echo "| setup | requests/s | p99 | errors |"
echo "|---|---|---|---|"
run_wrk "lb-origin direct" "http://127.0.0.1:$origin_port/"
start_lb 1
run_wrk "lb, 1 worker" "http://127.0.0.1:$lb_port/"
kill "$lb_pid"; wait "$lb_pid" 2>/dev/null || true
start_lb 2
run_wrk "lb, 2 workers" "http://127.0.0.1:$lb_port/"
