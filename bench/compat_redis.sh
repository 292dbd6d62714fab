#!/usr/bin/env bash
# lb judged by redis-py's own command tests, next to Redis itself and nutcracker (twemproxy),
# with the same backends, in one run. A user moving a fleet behind lb runs the suite of the
# client they use; a test that passes against Redis and through nutcracker but not through
# lb is a difference they will meet and did not meet before.
#
#   direct      one redis-server (redis-0)
#   lb          lb's redis listener over redis-0 and redis-1 (BACKENDS of them), selector
#               twemproxy (names redis-0, redis-1), `fanout = true` when this lb's --check
#               accepts the key
#   nutcracker  the same servers, ketama over fnv1a_64, names redis-0 and redis-1
# The suite: tests/test_commands.py of redis-py 4.3.4 (Debian 12's python3-redis), unmodified,
# with pytest, `--redis-url redis://127.0.0.1:PORT/0` (its conftest's option; database 0,
# since neither proxy selects another), run from the suite's directory so the client is the
# suite's own redis package. A small plugin of ours (written into the scratch directory,
# loaded with -p) changes two things of the harness, not of any test:
#   - the conftest asks the server under test for INFO at session start (version, arch_bits,
#     cluster_enabled, to pick its skips); both proxies refuse INFO, and the session would
#     end before any test, so the plugin takes INFO from redis-0 instead, the same server;
#   - each test's teardown flushes the database through the target (FLUSHDB), which both
#     proxies refuse, so keys would leak from test to test and fail later ones for no fault
#     of their own: the plugin flushes every backend straight before each test. The
#     teardown's refused FLUSHDB still shows, as an error at teardown; pytest counts a test
#     whose call passed as passed all the same, and so does this table.
# Every backend is also flushed before each run. Runs go one at a time (the machine is
# shared with builds).
#
# Prints `suite | direct | lb | nutcracker` and writes into LOG_DIR: each run's whole output
# (pytest -rA: every test's outcome and first line of failure), per-test outcomes side by
# side (redis.tsv), the tests that pass straight but fail through lb, with lb's reason
# (redis_lb_failures.txt), those of them that pass through nutcracker too
# (redis_lb_only_failures.txt), and the configs and logs of lb and nutcracker.
#
# Usage: bench/compat_redis.sh [REDIS_PY_DIR]        (default /tmp/compat/redis-py-4.3.4)
# Get the suite: a redis-py checkout at tag v4.3.4, e.g.
#   git clone -b v4.3.4 --depth 1 https://github.com/redis/redis-py /tmp/compat/redis-py-4.3.4
# Debian packages: redis-server redis-tools nutcracker python3-pytest python3-pytest-timeout
# python3-redis (for its dependencies, python3-packaging and others; the client tested is the
# suite's own).
# Env: LB (build/lb: the lb binary judged), LOG_DIR (/tmp/compat/logs/redis-<time>),
#   FANOUT (auto: set `fanout = true` when accepted; 1 always; 0 never), BACKENDS (2:
#   redis-servers behind each proxy; with 1 no command's keys are split across servers,
#   so CROSSSLOT and SORT ... GET of keys elsewhere drop out), SUITE_TIMEOUT (900 s a suite
#   run), TEST_TIMEOUT (30 s a test, pytest-timeout), PYTHON (/usr/bin/python3: Debian's,
#   with the packages above; a pyenv python3 has none).
# Loopback only, free ports; every process started here is stopped on exit.
set -euo pipefail
suite=${1:-/tmp/compat/redis-py-4.3.4}
lb=${LB:-build/lb}
fanout=${FANOUT:-auto}
suite_timeout=${SUITE_TIMEOUT:-900}
backends=${BACKENDS:-2}
test_timeout=${TEST_TIMEOUT:-30}
python=${PYTHON:-/usr/bin/python3}
me=compat_redis.sh
for tool in redis-server redis-cli nutcracker timeout "$python"; do
  command -v "$tool" >/dev/null || { echo "$me: $tool missing (apt-get install redis-server redis-tools nutcracker)" >&2; exit 2; }
done
"$python" -c 'import pytest, pytest_timeout, packaging' 2>/dev/null ||
  { echo "$me: $python lacks pytest, pytest-timeout or packaging (apt-get install python3-pytest python3-pytest-timeout python3-redis)" >&2; exit 2; }
[[ -x $lb ]] || { echo "$me: $lb not found; run make first, or set LB=path/to/lb" >&2; exit 2; }
if [[ ! -f $suite/tests/test_commands.py || ! -f $suite/tests/conftest.py ]]; then
  echo "$me: no redis-py suite at $suite; get redis-py 4.3.4's sources there, e.g." >&2
  echo "  git clone -b v4.3.4 --depth 1 https://github.com/redis/redis-py $suite" >&2
  exit 2
fi
lb=$(realpath "$lb")
suite=$(realpath "$suite")
log=${LOG_DIR:-/tmp/compat/logs/redis-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$log"
source "$(dirname "$0")/lib.sh"
# lib.sh's trap runs on exit; make Ctrl-C and TERM exit through it too.
trap 'exit 130' INT TERM

servers=()
for _ in $(seq "$backends"); do servers+=("$(free_port)"); done
for p in "${servers[@]}"; do start_redis "$p"; done

nut=$(free_port)
{
  echo "pool:"
  echo "  listen: 127.0.0.1:$nut"
  echo "  hash: fnv1a_64"
  echo "  distribution: ketama"
  echo "  redis: true"
  echo "  auto_eject_hosts: false"
  echo "  servers:"
  for i in "${!servers[@]}"; do echo "   - 127.0.0.1:${servers[$i]}:1 redis-$i"; done
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
    echo "[listeners.redis]"
    echo "listen = \"127.0.0.1:$lb_port\""
    echo "protocol = \"redis\""
    echo "cluster = \"fleet\""
    [[ $2 == 0 ]] || echo "fanout = true"
    echo "[clusters.fleet]"
    echo "selector = \"twemproxy\""
    echo "backends = ["
    for i in "${!servers[@]}"; do echo "  { name = \"redis-$i\", address = \"127.0.0.1:${servers[$i]}\" },"; done
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

# The harness plugin described above; it uses only the suite's own redis package.
mkdir -p "$work/plugin"
cat >"$work/plugin/compat_redis_harness.py" <<'PY'
import os
import sys

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    # Runs before the conftest's own pytest_sessionstart, which calls its _get_info(url).
    target, info_url = os.environ["COMPAT_TARGET_URL"], os.environ["COMPAT_INFO_URL"]
    for mod in list(sys.modules.values()):
        get_info = getattr(mod, "_get_info", None)
        if get_info is not None and hasattr(mod, "REDIS_INFO"):
            mod._get_info = lambda url, f=get_info: f(info_url if url == target else url)


@pytest.fixture(autouse=True)
def _compat_flush_backends():
    import redis
    for url in os.environ["COMPAT_FLUSH_URLS"].split():
        client = redis.Redis.from_url(url)
        client.flushall()
        client.connection_pool.disconnect()
    yield
PY

declare -A port=([direct]=${servers[0]} [lb]=$lb_port [nutcracker]=$nut)
targets=(direct lb nutcracker)
flush_urls=""
for p in "${servers[@]}"; do flush_urls+="redis://127.0.0.1:$p/0 "; done

echo "$me: lb $lb (fanout $([[ $fanout == 1 ]] && echo on || echo off)), $(redis-server --version | cut -d' ' -f1-3),"
echo "$(nutcracker -V 2>&1 | head -1), suite $suite; logs in $log"
echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# pytest: -o addopts= drops tox.ini's (-s); -rA lists every test's outcome, one line each,
# its failure's first line within COLUMNS; -p no:cacheprovider and PYTHONDONTWRITEBYTECODE
# leave the suite's tree as it was.
for t in "${targets[@]}"; do
  for p in "${servers[@]}"; do timeout 10 redis-cli -p "$p" flushall >/dev/null; done
  url="redis://127.0.0.1:${port[$t]}/0"
  (cd "$suite" && COLUMNS=400 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$work/plugin" \
     COMPAT_TARGET_URL="$url" COMPAT_INFO_URL="redis://127.0.0.1:${servers[0]}/0" \
     COMPAT_FLUSH_URLS="$flush_urls" timeout "$suite_timeout" \
     "$python" -m pytest -p compat_redis_harness -p no:cacheprovider -o addopts= -rA --tb=native \
     --durations=15 --timeout="$test_timeout" tests/test_commands.py --redis-url "$url") \
    >"$log/redis.$t.log" 2>&1 || true
done

# Each test's outcome per target, and what fails through lb alone (compat_outcomes.py).
"$python" "$(dirname "$0")/compat_outcomes.py" "$log" redis

pytest_cell() {   # log: pytest's closing counts, or why there are none
  local last
  last=$(grep -E '^=+ .*(passed|failed|error|skipped|no tests ran).* in [0-9.]+s' "$1" | tail -1 || true)
  if [[ -z $last ]]; then echo "no result (see $(basename "$1"))"; return; fi
  sed -E 's/^=+ //; s/ in [0-9.]+s.*//' <<<"$last"
}
version=$(cd "$suite" && "$python" -c 'import redis; print(redis.__version__)')
echo
echo "| suite | direct | lb | nutcracker |"
echo "|---|---|---|---|"
echo "| redis-py $version tests/test_commands.py | $(pytest_cell "$log/redis.direct.log")" \
     "| $(pytest_cell "$log/redis.lb.log") | $(pytest_cell "$log/redis.nutcracker.log") |"
echo
echo "tests passing straight, failing through lb: $(wc -l <"$log/redis_lb_failures.txt")" \
     "($log/redis_lb_failures.txt); of them passing through nutcracker:" \
     "$(wc -l <"$log/redis_lb_only_failures.txt") ($log/redis_lb_only_failures.txt)"
echo "logs: $log"
