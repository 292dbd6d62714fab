#!/usr/bin/env bash
# Instructions per HTTP/2 request, by library, under callgrind: compare_h2.sh's setup and load
# (8 nginx backends, one lb worker, h2c keyed by path; h2load -c16 -m10 over 1,000 shuffled
# paths) with lb under `valgrind --tool=callgrind`. Counts are exact and do not depend on what
# else the machine runs, so two builds can be compared where CPU time on a shared machine
# cannot resolve a few percent; they see neither the kernel (two thirds of lb's CPU on this
# load) nor cache misses.
#
# Usage: bench/h2_callgrind.sh BUILD_DIR OUT_FILE
#   counters zeroed after a warm-up of 2,000 requests, dumped after REQUESTS more; prints the
#   instructions per request in all and for lb, libnghttp2, libc and libuv. callgrind_annotate
#   OUT_FILE shows them by function.
# Env: REQUESTS (20000).
set -euo pipefail
(($# == 2)) || { echo "usage: $0 BUILD_DIR OUT_FILE" >&2; exit 2; }
build=$(cd "$1" && pwd)
out_file=$(realpath -m "$2")
requests=${REQUESTS:-20000}
source "$(dirname "$0")/lib.sh"
install_missing h2_callgrind.sh valgrind nginx h2load:nghttp2-client
[[ -x $build/lb ]] || { echo "h2_callgrind.sh: $build/lb not found; run make first" >&2; exit 2; }

start_nginx_backends
port=$(free_port)
write_h2_lb_config "$work/lb.toml" "$port" 1
valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" \
  "$build/lb" --config "$work/lb.toml" >"$work/lb.log" 2>"$work/valgrind.log" &
vp=$!; pids+=($vp)
wait_port "$port" 60   # lb under valgrind starts slowly
seq 0 999 | shuf --random-source=<(yes) | sed "s|^|http://127.0.0.1:$port/k/|" >"$work/uris"
load() { h2load -c 16 -m 10 -n "$1" -i "$work/uris"; }
load 2000 >/dev/null   # backends' connections pooled, pools and nghttp2's free lists filled
callgrind_control -z "$vp" >/dev/null 2>&1
done_n=$(load "$requests" | awk '/^requests:/ { print $8 }')
callgrind_control -d "$vp" >/dev/null 2>&1
mv "$(ls "$work"/cg.*.1)" "$out_file"
echo "h2_callgrind.sh: $done_n requests succeeded -> $out_file"
# By object, from the functions' own counts; the frames that were on the stack when the
# counters were zeroed (uv_run down to clone) show the whole run as their own, and are left out.
callgrind_annotate --auto=no --threshold=100 "$out_file" 2>/dev/null | awk -v n="$done_n" '
  /PROGRAM TOTALS/ { t = $1; gsub(",", "", t); t += 0 }
  match($0, /\[[^]]*\]$/) {
    c = $1; gsub(",", "", c); c += 0; if (c > t / 2) next
    o = substr($0, RSTART + 1, RLENGTH - 2); sub(/.*\//, "", o); sub(/\.so.*/, "", o)
    by[o] += c }
  END {
    printf "instructions per request: %.0f", t / n
    split("lb libnghttp2 libc libuv", names, " ")
    for (i = 1; i <= 4; i++) printf ", %s %.0f", names[i], by[names[i]] / n
    printf "\n" }'
