#!/usr/bin/env bash
# lb judged by memcached clients' own test suites, next to memcached itself and nutcracker
# (twemproxy), with the same backends, in one run. A user moving a fleet behind lb runs the
# suites of the clients they use; a test that passes against memcached but not through lb is
# a difference they will meet, and nutcracker shows what the proxy they leave already breaks.
#
#   direct      one memcached (mc-0)
#   lb          lb's memcached listener over mc-0 and mc-1 (BACKENDS of them), selector
#               twemproxy (names mc-0, mc-1), `fanout = true` when this lb's --check
#               accepts the key
#   nutcracker  the same servers, ketama over fnv1a_64, names mc-0 and mc-1
# Suites, one run at a time (the machine is shared with builds):
#   pymemcache  pymemcache/test/test_integration.py of pymemcache 4.0.0, unmodified, with
#               pytest (`-m integration --server --port`, its conftest's options); run from
#               the suite's directory, so the client is the suite's own pymemcache, not
#               Debian's python3-pymemcache (3.5.2)
#   memcapable  libmemcached-tools' memcapable (Debian names it memccapable), ASCII (`-a`)
# Every backend is flushed straight before each run, so no run sees another's keys. The
# suites flush through the target themselves (pymemcache's tests start with flush_all),
# which a proxy may refuse: that is a failure the suite reports, as a user would see it.
#
# Prints `suite | direct | lb | nutcracker` and writes into LOG_DIR: each run's whole output
# (pytest -rA: every test's outcome and first line of failure), per-test outcomes side by
# side (pymemcache.tsv), the tests that pass straight and fail through lb with lb's reason
# (pymemcache_lb_failures.txt), memcapable's outcomes (memcapable.tsv), and the configs and
# logs of lb and nutcracker.
#
# Usage: bench/compat_memcached.sh [PYMEMCACHE_DIR]   (default /tmp/compat/pymemcache-4.0.0)
# Get the suite: a pymemcache checkout at tag v4.0.0, e.g.
#   git clone -b v4.0.0 --depth 1 https://github.com/pinterest/pymemcache \
#     /tmp/compat/pymemcache-4.0.0
# Debian packages: memcached nutcracker libmemcached-tools python3-pytest
# python3-pytest-timeout (python3-gevent, when installed, adds a gevent copy of every test:
# leave it out to keep the counts comparable).
# Env: LB (build/lb: the lb binary judged), LOG_DIR (/tmp/compat/logs/memcached-<time>),
#   FANOUT (auto: set `fanout = true` when accepted; 1 always; 0 never), ITEM_SIZE (16m:
#   memcached -I; pymemcache's test_get_set_large[pickle] expects memcached's default 1m
#   to refuse its 5 MB value, and fails straight with more), BACKENDS (2: memcached
#   servers behind each proxy; with 1 no command's keys are split across servers),
#   SUITE_TIMEOUT (600 s a suite run), TEST_TIMEOUT (30 s a test, pytest-timeout), PYTHON
#   (/usr/bin/python3: Debian's, with the packages above; a pyenv python3 has none).
# Loopback only, free ports; every process started here is stopped on exit.
set -euo pipefail
suite=${1:-/tmp/compat/pymemcache-4.0.0}
lb=${LB:-build/lb}
fanout=${FANOUT:-auto}
item_size=${ITEM_SIZE:-16m}
suite_timeout=${SUITE_TIMEOUT:-600}
backends=${BACKENDS:-2}
test_timeout=${TEST_TIMEOUT:-30}
python=${PYTHON:-/usr/bin/python3}
me=compat_memcached.sh
memcapable=$(command -v memccapable || command -v memcapable || true)
for tool in memcached nutcracker timeout "$python"; do
  command -v "$tool" >/dev/null || { echo "$me: $tool missing (apt-get install memcached nutcracker python3-pytest)" >&2; exit 2; }
done
[[ -n $memcapable ]] || { echo "$me: memccapable missing (apt-get install libmemcached-tools)" >&2; exit 2; }
"$python" -c 'import pytest, pytest_timeout' 2>/dev/null ||
  { echo "$me: $python lacks pytest or pytest-timeout (apt-get install python3-pytest python3-pytest-timeout)" >&2; exit 2; }
[[ -x $lb ]] || { echo "$me: $lb not found; run make first, or set LB=path/to/lb" >&2; exit 2; }
if [[ ! -f $suite/pymemcache/test/test_integration.py ]]; then
  echo "$me: no pymemcache suite at $suite; get pymemcache 4.0.0's sources there, e.g." >&2
  echo "  git clone -b v4.0.0 --depth 1 https://github.com/pinterest/pymemcache $suite" >&2
  exit 2
fi
lb=$(realpath "$lb")
suite=$(realpath "$suite")
log=${LOG_DIR:-/tmp/compat/logs/memcached-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$log"
source "$(dirname "$0")/lib.sh"
# lib.sh's trap runs on exit; make Ctrl-C and TERM exit through it too.
trap 'exit 130' INT TERM

# memcached refuses to run as root without -u.
run_as=(); [[ $EUID -ne 0 ]] || run_as=(-u nobody)
mc=()
for _ in $(seq "$backends"); do mc+=("$(free_port)"); done
for i in "${!mc[@]}"; do
  memcached -l 127.0.0.1 -p "${mc[$i]}" -U 0 -I "$item_size" "${run_as[@]}" \
            >"$log/memcached-$i.log" 2>&1 &
  pids+=($!)
done
for p in "${mc[@]}"; do wait_port "$p"; done

nut=$(free_port)
{
  echo "pool:"
  echo "  listen: 127.0.0.1:$nut"
  echo "  hash: fnv1a_64"
  echo "  distribution: ketama"
  echo "  auto_eject_hosts: false"
  echo "  servers:"
  for i in "${!mc[@]}"; do echo "   - 127.0.0.1:${mc[$i]}:1 mc-$i"; done
} >"$log/nutcracker.yml"
nutcracker -c "$log/nutcracker.yml" -o "$log/nutcracker.log" -s "$(free_port)" -a 127.0.0.1 &
pids+=($!)

# The listener key `fanout` is new: ask this lb whether it knows it before using it.
lb_port=$(free_port)
write_lb_config() {   # file with_fanout(0|1)
  {
    echo "[lb]"
    echo "workers = 1"
    echo "log_level = \"warn\""
    echo "[admin]"
    echo "listen = \"127.0.0.1:$(free_port)\""
    echo "[listeners.memcached]"
    echo "listen = \"127.0.0.1:$lb_port\""
    echo "protocol = \"memcached\""
    echo "cluster = \"fleet\""
    [[ $2 == 0 ]] || echo "fanout = true"
    echo "[clusters.fleet]"
    echo "selector = \"twemproxy\""
    echo "backends = ["
    for i in "${!mc[@]}"; do echo "  { name = \"mc-$i\", address = \"127.0.0.1:${mc[$i]}\" },"; done
    echo "]"
  } >"$1"
}
case $fanout in
  auto) write_lb_config "$log/lb.toml" 1
        if timeout 10 "$lb" --check --config "$log/lb.toml" >"$log/lb-check.log" 2>&1; then fanout=1
        else fanout=0; fi ;;
  0|1) ;;
  *) echo "$me: FANOUT must be auto, 0 or 1" >&2; exit 2 ;;
esac
write_lb_config "$log/lb.toml" "$fanout"
timeout 10 "$lb" --check --config "$log/lb.toml" >"$log/lb-check.log" 2>&1 ||
  { echo "$me: $lb --check refuses $log/lb.toml:" >&2; cat "$log/lb-check.log" >&2; exit 2; }
"$lb" --config "$log/lb.toml" >"$log/lb.log" 2>&1 &
pids+=($!)
wait_port "$nut"; wait_port "$lb_port"

declare -A port=([direct]=${mc[0]} [lb]=$lb_port [nutcracker]=$nut)
targets=(direct lb nutcracker)
flush_backends() {   # flush_all on each backend straight, reading its OK
  local p line
  for p in "${mc[@]}"; do
    exec 3<>/dev/tcp/127.0.0.1/"$p"
    printf 'flush_all\r\n' >&3
    read -r -t 5 line <&3 || true
    exec 3>&-
  done
}

echo "$me: lb $lb (fanout $([[ $fanout == 1 ]] && echo on || echo off)), memcached $(memcached -V | cut -d' ' -f2) -I $item_size,"
echo "$(nutcracker -V 2>&1 | head -1), suite $suite; logs in $log"
echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# pytest: -o addopts= drops setup.cfg's (coverage, `-m unit`); -rA lists every test's
# outcome, one line each, its failure's first line within COLUMNS; -p no:cacheprovider
# and PYTHONDONTWRITEBYTECODE leave the suite's tree as it was.
for t in "${targets[@]}"; do
  flush_backends
  (cd "$suite" && COLUMNS=400 PYTHONDONTWRITEBYTECODE=1 timeout "$suite_timeout" \
     "$python" -m pytest -p no:cacheprovider -o addopts= -m integration -rA --tb=native \
     --timeout="$test_timeout" pymemcache/test/test_integration.py \
     --server 127.0.0.1 --port "${port[$t]}") >"$log/pymemcache.$t.log" 2>&1 || true
done
for t in "${targets[@]}"; do
  flush_backends
  timeout "$suite_timeout" "$memcapable" -a -t 5 -h 127.0.0.1 -p "${port[$t]}" \
    >"$log/memcapable.$t.log" 2>&1 || true
done

# Each test's outcome per target, and what fails through lb alone (compat_outcomes.py).
"$python" "$(dirname "$0")/compat_outcomes.py" "$log" pymemcache
# memcapable prints `ascii NAME   [pass]`, but on a failure what it read may come first and
# span lines (`ascii verbosity   [CLIENT_ERROR ...` newline `]` newline `[FAIL]`): a test's
# outcome is the first [pass], [FAIL] or [skip] after its name, the text before it the detail.
for t in "${targets[@]}"; do
  awk -v t="$t" '
    function flush() { if (name != "") print name "\t" t "\t" (res == "" ? "none" : res) "\t" detail; name = "" }
    /^(ascii|binary) / { flush(); name = $0; sub(/  .*/, "", name); line = substr($0, length(name) + 1)
                         res = ""; detail = "" }
    !/^(ascii|binary) / { line = $0 }
    name != "" && res == "" {
      d = line
      if (match(line, /\[(pass|FAIL|skip)\]/)) { res = substr(line, RSTART + 1, RLENGTH - 2); d = substr(line, 1, RSTART - 1) }
      gsub(/^[ \t[]+|[] \t]+$/, "", d)
      if (d != "") detail = detail (detail == "" ? "" : " ") d }
    END { flush() }' "$log/memcapable.$t.log"
done >"$log/memcapable.tsv"

pytest_cell() {   # log: pytest's closing counts, or why there are none
  local last
  last=$(grep -E '^=+ .*(passed|failed|error|skipped|no tests ran).* in [0-9.]+s' "$1" | tail -1 || true)
  if [[ -z $last ]]; then echo "no result (see $(basename "$1"))"; return; fi
  sed -E 's/^=+ //; s/ in [0-9.]+s.*//' <<<"$last"
}
memcapable_cell() {   # target
  awk -F'\t' -v t="$1" '$2 == t { n++; if ($3 == "pass") p++ } END { printf "%d/%d pass\n", p, n }' "$log/memcapable.tsv"
}
echo
echo "| suite | direct | lb | nutcracker |"
echo "|---|---|---|---|"
echo "| pymemcache $(cd "$suite" && "$python" -c 'import pymemcache; print(pymemcache.__version__)') test_integration.py" \
     "| $(pytest_cell "$log/pymemcache.direct.log") | $(pytest_cell "$log/pymemcache.lb.log")" \
     "| $(pytest_cell "$log/pymemcache.nutcracker.log") |"
echo "| memcapable -a | $(memcapable_cell direct) | $(memcapable_cell lb) | $(memcapable_cell nutcracker) |"
echo
echo "pymemcache tests passing straight and failing through lb: $(wc -l <"$log/pymemcache_lb_failures.txt")" \
     "($log/pymemcache_lb_failures.txt)"
echo "memcapable tests passing straight and failing through lb:"
awk -F'\t' '$2 == "direct" && $3 == "pass" { ok[$1] = 1 }
             $2 == "lb" && $3 != "pass" && ok[$1] { print "  " $1 ": " $3 ($4 == "" ? "" : " (" $4 ")") }' "$log/memcapable.tsv"
echo "logs: $log"
