#!/usr/bin/env bash
# lb's cost of HTTP/2 attacks: its CPU and memory while a steady light load runs alone, and
# while an attacker runs beside it at the attacker's top speed, reconnecting as soon as lb
# ends its connection.
#
#   2 lb-origins behind lb (WORKERS workers, default h2 settings, plain listener: h2c by the
#   preface). The load: tests/support/h2_probe.py `paced RATE DURATION`, one HTTP/2
#   connection, RATE requests a second, each its own key. The attacks (h2_probe.py `attack
#   KIND DURATION`, one Python client, each scenario on a new connection after the last
#   ended): rapid_reset (HEADERS + RST_STREAM pairs, CVE-2023-44487), continuation
#   (CVE-2024-27316), settings, ping, empty_data (empty DATA frames), hpack_bomb (a 4000-byte
#   field named 2000 times per header block).
#
# Per row: lb's CPU over the window (% of one core, user + system, all threads, from
# /proc/PID/stat), that over the load-alone row's, the attacker's connections and the GOAWAY
# codes it got (11 = ENHANCE_YOUR_CALM, 1 = PROTOCOL_ERROR), the load's answers (200s / all
# sent) and lb's RSS growth over the window.
#
# Usage: bench/h2_hostile.sh [BUILD_DIR]      (default build; run `make` first)
# Env: DURATION (10, seconds per row), RATE (200, the load's requests a second), WORKERS (1),
#      ATTACKS ("rapid_reset continuation settings ping empty_data hpack_bomb").
# Everything listens on 127.0.0.1 at free ports; every process started here is stopped on
# exit; every run is bounded by DURATION.
set -euo pipefail
build=${1:-build}
duration=${DURATION:-10}
rate=${RATE:-200}
workers=${WORKERS:-1}
read -r -a attacks <<<"${ATTACKS:-rapid_reset continuation settings ping empty_data hpack_bomb}"
here=$(cd "$(dirname "$0")" && pwd)
probe=("/usr/bin/python3" "$here/../tests/support/h2_probe.py")
[[ -x $build/lb && -x $build/lb-origin ]] || { echo "h2_hostile.sh: $build/lb not found; run make first" >&2; exit 2; }
/usr/bin/python3 -c 'import h2' 2>/dev/null || { echo "h2_hostile.sh: needs python3-h2 (make deps)" >&2; exit 2; }
source "$here/lib.sh"

o1=$(free_port); o2=$(free_port); port=$(free_port)
"$build/lb-origin" --listen "127.0.0.1:$o1" --name origin-1 >"$work/o1.log" 2>&1 & pids+=($!)
"$build/lb-origin" --listen "127.0.0.1:$o2" --name origin-2 >"$work/o2.log" 2>&1 & pids+=($!)
cat >"$work/lb.toml" <<TOML
[lb]
workers = $workers
log_level = "warn"
[admin]
listen = "127.0.0.1:$(free_port)"
[listeners.web]
protocol = "http"
listen = "127.0.0.1:$port"
cluster = "web"
hash = [ { header = "x-key" } ]
[clusters.web]
backends = [ { name = "o1", address = "127.0.0.1:$o1" }, { name = "o2", address = "127.0.0.1:$o2" } ]
TOML
"$build/lb" --config "$work/lb.toml" >"$work/lb.log" 2>&1 & lb_pid=$!; pids+=($lb_pid)
wait_port "$o1"; wait_port "$o2"; wait_port "$port"

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
hz=$(getconf CLK_TCK)
base_pct=""
printf "%-14s %8s %9s %6s %-18s %-12s %10s\n" attack "lb_cpu%" "x_alone" conns goaway_codes "load_ok/sent" "rss_+KiB"
for a in none "${attacks[@]}"; do
  rss0=$(rss_kib "$lb_pid"); t0=$(cpu_ticks "$lb_pid"); s0=$(date +%s.%N)
  "${probe[@]}" "$port" paced "$rate" "$duration" >"$work/load.json" &
  load=$!
  if [[ $a != none ]]; then
    "${probe[@]}" "$port" attack "$a" "$duration" >"$work/attack.json" || echo '{}' >"$work/attack.json"
  else
    echo '{"connections": 0, "goaway_codes": {}}' >"$work/attack.json"
  fi
  wait "$load" || true
  t1=$(cpu_ticks "$lb_pid"); s1=$(date +%s.%N); rss1=$(rss_kib "$lb_pid")
  pct=$(awk -v a="$t0" -v b="$t1" -v s0="$s0" -v s1="$s1" -v hz="$hz" 'BEGIN {
    split(a, x, " "); split(b, y, " ");
    printf "%.1f", ((y[1] - x[1]) + (y[2] - x[2])) / hz / (s1 - s0) * 100 }')
  [[ -n $base_pct ]] || base_pct=$pct
  ratio=$(awk -v p="$pct" -v b="$base_pct" 'BEGIN { if (b == 0) print "-"; else printf "%.2f", p / b }')
  read -r conns codes < <(/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1]));
print(j.get("connections", "-"), ",".join("%s:%s" % kv for kv in sorted(j.get("goaway_codes", {}).items())) or "-")' "$work/attack.json")
  read -r ok sent < <(/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["ok"], j["sent"])' "$work/load.json")
  printf "%-14s %8s %9s %6s %-18s %-12s %10s\n" "$a" "$pct" "$ratio" "$conns" "$codes" "$ok/$sent" "$((rss1 - rss0))"
done
