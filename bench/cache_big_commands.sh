#!/usr/bin/env bash
# The CPU one huge multi-key command costs lb against nutcracker (twemproxy), for the same
# bytes, in one run: an MGET of 10,000 40-byte keys (470 KB, over three redis-servers) and a
# memcached get of the same keys (over two memcached), each sent ROUNDS times on one
# connection, one at a time, with half the keys present. The CPU is each proxy's own
# (utime + stime from /proc/PID/stat, before and after), so the client and the servers'
# share of the two cores does not count. Also the same MGET sent in 1 KiB pieces, the case
# that was quadratic when the input buffer grew only to what the parser asked for.
#
# Usage: bench/cache_big_commands.sh [BUILD_DIR]       (default build; run `make` first)
# Env: ROUNDS (20), KEYS (10000). Loopback only; every process started here stops on exit.
set -euo pipefail
build=${1:-build}
rounds=${ROUNDS:-20}
keys=${KEYS:-10000}
for tool in redis-server memcached nutcracker python3; do
  command -v "$tool" >/dev/null || { echo "cache_big_commands.sh: $tool missing (make deps)" >&2; exit 2; }
done
[[ -x $build/lb ]] || { echo "cache_big_commands.sh: $build/lb not found; run make first" >&2; exit 2; }
source "$(dirname "$0")/lib.sh"

redis_ports=("$(free_port)" "$(free_port)" "$(free_port)")
for p in "${redis_ports[@]}"; do
  redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
               --dir "$work" >"$work/redis.$p.log" 2>&1 &
  pids+=($!)
done
mc_ports=("$(free_port)" "$(free_port)")
for p in "${mc_ports[@]}"; do
  memcached -l 127.0.0.1 -p "$p" -U 0 -m 256 -u nobody >"$work/memcached.$p.log" 2>&1 &
  pids+=($!)
done

nut_redis=$(free_port); nut_mc=$(free_port)
{
  for pool in redis mc; do
    echo "$pool:"
    if [[ $pool == redis ]]; then echo "  listen: 127.0.0.1:$nut_redis"; echo "  redis: true"
    else echo "  listen: 127.0.0.1:$nut_mc"; fi
    echo "  hash: fnv1a_64"
    echo "  distribution: ketama"
    echo "  auto_eject_hosts: false"
    echo "  servers:"
    if [[ $pool == redis ]]; then
      for i in "${!redis_ports[@]}"; do echo "   - 127.0.0.1:${redis_ports[$i]}:1 s$i"; done
    else
      for i in "${!mc_ports[@]}"; do echo "   - 127.0.0.1:${mc_ports[$i]}:1 s$i"; done
    fi
  done
} >"$work/nutcracker.yml"
nutcracker -c "$work/nutcracker.yml" -o "$work/nutcracker.log" -s "$(free_port)" -a 127.0.0.1 &
nut_pid=$!
pids+=($nut_pid)

lb_redis=$(free_port); lb_mc=$(free_port)
{
  echo "[lb]"
  echo "workers = 1"
  echo "log_level = \"warn\""
  echo "[admin]"
  echo "listen = \"127.0.0.1:$(free_port)\""
  for l in redis memcached; do
    echo "[listeners.$l]"
    [[ $l == redis ]] && echo "listen = \"127.0.0.1:$lb_redis\"" || echo "listen = \"127.0.0.1:$lb_mc\""
    echo "protocol = \"$l\""
    echo "cluster = \"$l\""
    echo "limits = { max_arguments = 100000 }"
    echo "[clusters.$l]"
    echo "selector = \"twemproxy\""
    echo "backends = ["
    if [[ $l == redis ]]; then
      for i in "${!redis_ports[@]}"; do echo "  { name = \"s$i\", address = \"127.0.0.1:${redis_ports[$i]}\" },"; done
    else
      for i in "${!mc_ports[@]}"; do echo "  { name = \"s$i\", address = \"127.0.0.1:${mc_ports[$i]}\" },"; done
    fi
    echo "]"
  done
} >"$work/lb.toml"
"$build/lb" --config "$work/lb.toml" >"$work/lb.log" 2>&1 &
lb_pid=$!
pids+=($lb_pid)
for p in "${redis_ports[@]}" "${mc_ports[@]}" "$nut_redis" "$nut_mc" "$lb_redis" "$lb_mc"; do wait_port "$p"; done

cat >"$work/client.py" <<'PY'
# client.py PROTO PORT PID KEYS ROUNDS PIECE: fills half the keys, then sends the big command
# ROUNDS times (in PIECE-byte writes when PIECE > 0), reads each whole reply, checks it, and
# prints the CPU seconds the process PID used meanwhile and the command's size in bytes.
import os, socket, sys
proto, port, pid, nkeys, rounds, piece = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
keys = [("big-command-key:%d" % i).ljust(40, "x") for i in range(nkeys)]
s = socket.create_connection(("127.0.0.1", port))
buf = b""
def need(n):
    global buf
    while len(buf) < n:
        d = s.recv(1 << 20)
        if not d: raise SystemExit("connection closed")
        buf += d
def line():
    global buf
    while b"\r\n" not in buf:
        d = s.recv(1 << 20)
        if not d: raise SystemExit("connection closed")
        buf += d
    i = buf.index(b"\r\n"); l = buf[:i]; buf = buf[i + 2:]; return l
def resp(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)
def send(data):
    if piece <= 0: s.sendall(data); return
    for i in range(0, len(data), piece): s.sendall(data[i:i + piece])
if proto == "redis":
    mset = ["MSET"]
    for i in range(0, nkeys, 2): mset += [keys[i], "v%d" % i]
    s.sendall(resp(mset)); assert line() == b"+OK"
    request = resp(["MGET"] + keys)
else:
    s.sendall(b"".join(b"set %s 0 0 %d\r\nv%d\r\n" % (keys[i].encode(), len(b"v%d" % i), i) for i in range(0, nkeys, 2)))
    for i in range(0, nkeys, 2): assert line() == b"STORED"
    request = ("get " + " ".join(keys) + "\r\n").encode()
def cpu():
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
before = cpu()
for _ in range(rounds):
    send(request)
    if proto == "redis":
        assert line() == b"*%d" % nkeys
        for i in range(nkeys):
            l = line()
            if i % 2 == 0:
                n = int(l[1:]); need(n + 2); assert buf[:n] == b"v%d" % i; buf = buf[n + 2:]
            else:
                assert l == b"$-1", l
    else:
        got = set()   # nutcracker answers in its fragments' order, not the keys'
        while True:
            l = line()
            if l == b"END": break
            f = l.split(); assert f[0] == b"VALUE", l
            got.add(f[1].decode()); n = int(f[3]); need(n + 2); buf = buf[n + 2:]
        assert got == set(keys[0::2]), len(got)
print("%.2f %d" % (cpu() - before, len(request)))
PY

echo "bench/cache_big_commands.sh: $keys keys of 40 bytes per command, $rounds commands per cell,"
echo "lb workers = 1, nutcracker one thread; $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| command | writes | request bytes | nutcracker CPU s | lb CPU s | lb / nutcracker |"
echo "|---|---|---|---|---|---|"
for cell in "redis 0" "redis 1024" "memcached 0" "memcached 1024"; do
  set -- $cell
  if [[ $1 == redis ]]; then np=$nut_redis; lp=$lb_redis; what="MGET"; else np=$nut_mc; lp=$lb_mc; what="get"; fi
  read -r n bytes < <(python3 "$work/client.py" "$1" "$np" "$nut_pid" "$keys" "$rounds" "$2")
  read -r l _ < <(python3 "$work/client.py" "$1" "$lp" "$lb_pid" "$keys" "$rounds" "$2")
  writes=$([[ $2 == 0 ]] && echo "one" || echo "$2 B each")
  awk -v w="$what" -v wr="$writes" -v n="$n" -v l="$l" -v b="$bytes" 'BEGIN {
    printf "| %s | %s | %d | %.2f | %.2f | %s |\n", w, wr, b, n, l, (n > 0 ? sprintf("%.2f", l / n) : "n/a") }'
done
