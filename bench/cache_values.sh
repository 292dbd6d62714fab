#!/usr/bin/env bash
# What a large value costs lb's cache listeners against nutcracker (twemproxy) and against the
# server itself, in one run: a value of each size in SIZES (1 MiB and 10 MiB), SET then GET
# (Redis) and set then get (memcached), on one connection per target, through
#   lb          a redis and a memcached listener (workers = 1), one backend each
#   nutcracker  a redis pool and a memcache pool (0.5.0, one thread), the same servers
#   direct      the redis-server and the memcached themselves
# The targets are interleaved round by round (each round starts at the next target), so the
# machine's noise falls on all three alike. Two untimed warm-up rounds per target first: with
# one, lb's first measured redis round cost 3-5x its later ones (probably fresh pages for its
# first large buffers; the servers' first SET was slow too), a one-off that a long-lived
# proxy does not pay per value.
#
# The figure that holds on 2 shared cores is each proxy's own CPU per byte moved: utime +
# stime of its process from /proc/PID/stat, read before and after each round; a round moves
# the value twice (in with the SET, out with the GET). /proc/PID/stat counts in clock ticks
# (10 ms), so the CPU column is the sum over all rounds divided by all MiB moved; the column
# beside it is the median over rounds of the same CPU read from /proc/PID/task/*/schedstat
# (nanoseconds), a check on the first. Wall time is the median over rounds per operation,
# for the direct target too. Every GET is checked byte for byte against what its round set
# (each round stamps its value, so a stale value fails).
#
# Usage: bench/cache_values.sh [BUILD_DIR]       (default build; run `make` first)
# Env: ROUNDS (20), SIZES ("1048576 10485760", bytes), VERBOSE (1: every round's figures on
# stderr). Loopback only, free ports; every process started here stops on exit; each client
# run is bounded by `timeout`, each socket wait by 30 s.
set -euo pipefail
build=${1:-build}
rounds=${ROUNDS:-20}
sizes=${SIZES:-"1048576 10485760"}
py=/usr/bin/python3   # Debian's, as the tests use, not a pyenv shim on PATH
for tool in redis-server memcached nutcracker python3 timeout; do
  command -v "$tool" >/dev/null || { echo "cache_values.sh: $tool missing (make deps)" >&2; exit 2; }
done
[[ -x $py ]] || { echo "cache_values.sh: $py missing" >&2; exit 2; }
[[ -x $build/lb ]] || { echo "cache_values.sh: $build/lb not found; run make first" >&2; exit 2; }
for s in $sizes; do
  [[ $s =~ ^[0-9]+$ && $s -ge 1 && $s -le 16777216 ]] ||
    { echo "cache_values.sh: size $s not in 1..16777216 (memcached -I 16m)" >&2; exit 2; }
done
source "$(dirname "$0")/lib.sh"

redis_port=$(free_port)
start_redis "$redis_port"   # default proto-max-bulk-len, 512 MB
mc_port=$(free_port)
memcached -l 127.0.0.1 -p "$mc_port" -U 0 -m 256 -I 16m -u nobody >"$work/memcached.log" 2>&1 &
pids+=($!)

# One nutcracker, two pools over the same servers. lib.sh's start_nutcracker_redis has no
# pool timeout, so the config is written here; mbuf size stays nutcracker's default (16 KiB,
# no -m), and `timeout: 10000` gives a 10 MiB value as long as lb's `response = "10s"`.
nut_redis=$(free_port); nut_mc=$(free_port)
cat >"$work/nutcracker.yml" <<YML
redis:
  listen: 127.0.0.1:$nut_redis
  redis: true
  hash: fnv1a_64
  distribution: ketama
  auto_eject_hosts: false
  timeout: 10000
  servers:
   - 127.0.0.1:$redis_port:1 s0
mc:
  listen: 127.0.0.1:$nut_mc
  hash: fnv1a_64
  distribution: ketama
  auto_eject_hosts: false
  timeout: 10000
  servers:
   - 127.0.0.1:$mc_port:1 s0
YML
nutcracker -c "$work/nutcracker.yml" -o "$work/nutcracker.log" -s "$(free_port)" -a 127.0.0.1 &
nut_pid=$!
pids+=($nut_pid)

lb_redis=$(free_port); lb_mc=$(free_port)
cat >"$work/lb.toml" <<TOML
[lb]
workers = 1
log_level = "warn"
[admin]
listen = "127.0.0.1:$(free_port)"
[listeners.redis]
listen = "127.0.0.1:$lb_redis"
protocol = "redis"
cluster = "redis"
timeouts = { response = "10s" }
limits = { max_request_bytes = 33554432 }
[listeners.memcached]
listen = "127.0.0.1:$lb_mc"
protocol = "memcached"
cluster = "memcached"
timeouts = { response = "10s" }
limits = { max_request_bytes = 33554432 }
[clusters.redis]
selector = "twemproxy"
backends = [ { name = "s0", address = "127.0.0.1:$redis_port" } ]
[clusters.memcached]
selector = "twemproxy"
backends = [ { name = "s0", address = "127.0.0.1:$mc_port" } ]
TOML
"$build/lb" --config "$work/lb.toml" >"$work/lb.log" 2>&1 &
lb_pid=$!
pids+=($lb_pid)
for p in "$redis_port" "$mc_port" "$nut_redis" "$nut_mc" "$lb_redis" "$lb_mc"; do wait_port "$p"; done

cat >"$work/client.py" <<'PY'
# client.py PROTO SIZE ROUNDS NAME:PORT:PID...: for each target one connection; two warm-up
# rounds, then ROUNDS rounds of SET (set) and GET (get) of a SIZE-byte value, the targets
# interleaved, each round starting at the next one. PID 0 = no CPU to read (the server
# itself). Prints per target: name, CPU seconds summed over rounds from /proc/PID/stat,
# MiB moved, median CPU µs per MiB from schedstat, median SET ms, median GET ms.
import os, socket, statistics, sys, time
proto, size, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
targets = []
for t in sys.argv[4:]:
    name, port, pid = t.split(":")
    targets.append((name, int(port), int(pid)))
hz = os.sysconf("SC_CLK_TCK")

def stat_s(pid):    # utime + stime of the whole process, seconds (clock ticks)
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / hz
def sched_s(pid):   # on-CPU time of every thread, seconds (nanoseconds)
    total = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try: total += int(open("/proc/%d/task/%s/schedstat" % (pid, t)).read().split()[0])
        except (FileNotFoundError, ProcessLookupError): pass
    return total / 1e9

class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
    def line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                l = bytes(self.buf[:i]); del self.buf[:i + 2]; return l
            d = self.s.recv(65536)
            if not d: raise SystemExit("connection closed")
            self.buf += d
    def block(self, out):   # fills the bytearray `out` exactly, then expects \r\n
        n = min(len(self.buf), len(out))
        out[:n] = self.buf[:n]; del self.buf[:n]
        mv = memoryview(out)
        while n < len(out):
            k = self.s.recv_into(mv[n:])
            if k == 0: raise SystemExit("connection closed")
            n += k
        while len(self.buf) < 2:
            d = self.s.recv(65536)
            if not d: raise SystemExit("connection closed")
            self.buf += d
        assert self.buf[:2] == b"\r\n", bytes(self.buf[:2]); del self.buf[:2]
    def send(self, *parts):
        for p in parts: self.s.sendall(p)

value = bytearray(os.urandom(size))
got = bytearray(size)
def one(conn, key, stamp):
    value[:min(16, size)] = (b"%016d" % stamp)[:min(16, size)]
    got[:min(16, size)] = bytes(min(16, size))
    if proto == "redis":
        conn.send(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n" % (len(key), key, size), value, b"\r\n")
        r = conn.line(); assert r == b"+OK", r
    else:
        conn.send(b"set %s 0 0 %d\r\n" % (key, size), value, b"\r\n")
        r = conn.line(); assert r == b"STORED", r
    t_set = time.perf_counter()
    if proto == "redis":
        conn.send(b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(key), key))
        r = conn.line(); assert r == b"$%d" % size, r[:80]
        conn.block(got)
    else:
        conn.send(b"get %s\r\n" % key)
        r = conn.line(); assert r == b"VALUE %s 0 %d" % (key, size), r[:80]
        conn.block(got)
        r = conn.line(); assert r == b"END", r[:80]
    return t_set

conns = [Conn(port) for _, port, _ in targets]
keys = [b"cache-values:%s:%d" % (name.encode(), size) for name, _, _ in targets]
stamp = 0
failed = {}
results = {name: {"ticks": 0.0, "sched": [], "set": [], "get": []} for name, _, _ in targets}
for r in range(-2, rounds):   # rounds -2 and -1 warm up
    for j in range(len(targets)):
        i = (r + j) % len(targets)
        name, _, pid = targets[i]
        stamp += 1
        if name in failed: continue
        a = stat_s(pid) if pid else 0; b = sched_s(pid) if pid else 0
        try:
            t0 = time.perf_counter()
            t1 = one(conns[i], keys[i], stamp)
            t2 = time.perf_counter()
            if got != value: raise ValueError("GET returned other bytes than SET stored")
        except (Exception, SystemExit) as e:   # one target failing does not stop the others
            failed[name] = ("%s: %s" % (type(e).__name__, e)).replace("\n", " ")[:200]
            continue
        a2 = stat_s(pid) if pid else 0; b2 = sched_s(pid) if pid else 0
        if r < 0: continue
        res = results[name]
        res["ticks"] += a2 - a
        res["sched"].append((b2 - b) * 1e6 / (2 * size / 1048576))
        res["set"].append((t1 - t0) * 1e3); res["get"].append((t2 - t1) * 1e3)
for name, _, pid in targets:
    res = results[name]
    if name in failed:
        print(name, "failed", failed[name]); continue
    print(name, "%.2f" % res["ticks"], "%.3f" % (2 * size * rounds / 1048576),
          "%.0f" % statistics.median(res["sched"]) if pid else "-",
          "%.2f" % statistics.median(res["set"]), "%.2f" % statistics.median(res["get"]))
    print(name, "per round: CPU us/MiB (schedstat)",
          " ".join("%.0f" % x for x in res["sched"]) if pid else "-",
          "| SET ms", " ".join("%.2f" % x for x in res["set"]),
          "| GET ms", " ".join("%.2f" % x for x in res["get"]), file=sys.stderr)
PY

echo "bench/cache_values.sh: $rounds rounds per cell (+2 warm-up), one connection per target;"
echo "lb $(git -C "$(dirname "$0")" log -1 --format=%h 2>/dev/null || echo '?') workers = 1, nutcracker $(nutcracker --version 2>&1 | sed -n 's/.*nutcracker-//p') one thread (mbuf 16 KiB, timeout 10000),"
echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), memcached $(memcached -V | cut -d' ' -f2) -I 16m -m 256;"
echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| protocol | value | lb CPU µs/MiB | nutcracker CPU µs/MiB | lb / nutcracker | schedstat median µs/MiB: lb / nutcracker = ratio | SET ms lb / nutcracker / direct | GET ms lb / nutcracker / direct |"
echo "|---|---|---|---|---|---|---|---|"
for proto in redis memcached; do
  for size in $sizes; do
    if [[ $proto == redis ]]; then
      set -- "lb:$lb_redis:$lb_pid" "nutcracker:$nut_redis:$nut_pid" "direct:$redis_port:0"
    else
      set -- "lb:$lb_mc:$lb_pid" "nutcracker:$nut_mc:$nut_pid" "direct:$mc_port:0"
    fi
    if ! out=$(timeout 900 "$py" "$work/client.py" "$proto" "$size" "$rounds" "$@" 2>"$work/client.err"); then
      echo "| $proto | $size | failed: $(tail -n 1 "$work/client.err") | | | | | |"
      continue
    fi
    awk -v p="$proto" -v sz="$size" '
      $2 == "failed" { bad[$1] = 1; $1 = $2 = ""; why = why (why ? "; " : "") $0; next }
      { cpu[$1] = $2; mib[$1] = $3; sch[$1] = $4; set[$1] = $5; get[$1] = $6 }
      function per(t) { return (t in bad) ? "failed" : sprintf("%.0f", cpu[t] * 1e6 / mib[t]) }
      function f(a, t) { return (t in bad) ? "failed" : a[t] }
      END {
        l = per("lb"); n = per("nutcracker")
        v = (sz % 1048576 == 0) ? sprintf("%d MiB", sz / 1048576) : sprintf("%d B", sz)
        ls = f(sch, "lb"); ns = f(sch, "nutcracker")
        printf "| %s | %s | %s | %s | %s | %s / %s = %s | %s / %s / %s | %s / %s / %s |\n", p, v, l, n,
          (l != "failed" && n != "failed" && n > 0 ? sprintf("%.2f", l / n) : "n/a"),
          ls, ns, (ls != "failed" && ns != "failed" && ns > 0 ? sprintf("%.2f", ls / ns) : "n/a"),
          f(set, "lb"), f(set, "nutcracker"), f(set, "direct"),
          f(get, "lb"), f(get, "nutcracker"), f(get, "direct")
        if (why != "") printf "failed in this cell:%s\n", why > "/dev/stderr" }' <<<"$out"
    if [[ -n ${VERBOSE:-} ]]; then sed "s/^/  $proto $size /" "$work/client.err" >&2; fi
  done
done
