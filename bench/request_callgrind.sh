#!/usr/bin/env bash
# Instructions per small keyed HTTP request, by function, under callgrind: the setup and load
# of bench/request_cpu.sh (one worker, 2 lb-origin backends, wrk -t1 -c32 -s bench/zipf.lua)
# with lb under `valgrind --tool=callgrind`. Counts are exact and do not depend on what else
# the machine runs, so two builds can be compared function by function where CPU time on a
# shared machine cannot resolve a few percent; they do not see the kernel, cache misses or
# mispredicted branches. lb runs ~50x slower under valgrind, so what lb does once a second
# (the hot-key hand-over and merge) weighs ~6x more per request than at full speed.
#
# Usage: bench/request_callgrind.sh LABEL BUILD_DIR OUT_DIR
#   writes OUT_DIR/LABEL.callgrind (counters zeroed after a 2 s warm-up, dumped after the
#   measured run) and OUT_DIR/LABEL.requests; then
#   bench/callgrind_per_request.py OUT_DIR/A.callgrind OUT_DIR/B.callgrind  compares two.
# Env: DURATION (6s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
(($# == 3)) || { echo "usage: $0 LABEL BUILD_DIR OUT_DIR" >&2; exit 2; }
label=$1; build=$(cd "$2" && pwd); mkdir -p "$3"; out=$(cd "$3" && pwd)
command -v valgrind >/dev/null || { echo "$0: valgrind is not installed" >&2; exit 2; }
source "$here/lib.sh"

origin_ports=()
for name in a b; do
  p=$(free_port); origin_ports+=("$p")
  "$build/lb-origin" --listen "127.0.0.1:$p" --name "$name" >/dev/null 2>&1 &
  pids+=($!)
done
for p in "${origin_ports[@]}"; do wait_port "$p"; done
port=$(free_port)
cat >"$work/lb.toml" <<TOML
[lb]
workers = 1
log_level = "warn"
[admin]
listen = "127.0.0.1:$(free_port)"
[listeners.web]
listen = "127.0.0.1:$port"
cluster = "caches"
hash = [ { header = "x-key" } ]
[clusters.caches]
selector = "ring_hash"
backends = [
  { name = "a", address = "127.0.0.1:${origin_ports[0]}" },
  { name = "b", address = "127.0.0.1:${origin_ports[1]}" },
]
TOML
cd "$work"
valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" \
  "$build/lb" --config "$work/lb.toml" >"$work/lb.log" 2>"$work/valgrind.log" &
vp=$!; pids+=($vp)
wait_port "$port" 60   # lb under valgrind starts slowly
load() { ZIPF_KEYS=10000 wrk -t1 -c32 -d"$1" -s "$here/zipf.lua" "http://127.0.0.1:$port/"; }
load 2s >/dev/null   # backends' connections pooled, buffers and exchanges made
callgrind_control -z "$vp" >/dev/null 2>&1
res=$(load "${DURATION:-6s}")
callgrind_control -d "$vp" >/dev/null 2>&1
awk '/requests in/ {print $1}' <<<"$res" >"$out/$label.requests"
mv "$(ls "$work"/cg.*.1)" "$out/$label.callgrind"
echo "$label: $(cat "$out/$label.requests") requests -> $out/$label.callgrind"
