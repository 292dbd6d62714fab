#!/usr/bin/env python3
"""A pipelined Zipf load for Redis (RESP) and memcached (text protocol), and the true top-N.

The hot-key acceptance load: keys key:1 .. key:K drawn with P(rank i) proportional to
1 / i^alpha (rank 1 hottest), the shape Twitter's cache traces fit (alpha from 1 to above 2,
Yang et al., OSDI 2020). Requests go out `--pipeline` at a time on each connection and every
reply is read and checked, so the rate is what the server (or lb in front of it) sustained.
At the end it prints one JSON object on stdout: the totals and the true top-N keys, counted
from what was sent, with their request counts, rates and shares. That is what lb's
/hotkeys must find. Standard library only.

  bench/zipf_load.py --proto redis --port 6379 --alpha 1.2 --keys 100000 \\
      --requests 1000000 --pipeline 16 --seed 1 --top 10

Bounded by --requests and by --duration (seconds), whichever comes first; exits by itself.
Exit status 1 when it cannot connect, the server closes a connection, or a reply is an error
(the JSON is still printed, with the first error).
"""

import argparse
import json
import random
import selectors
import socket
import sys
import time


def zipf_cdf(keys, alpha):
    """Cumulative weights of ranks 1..keys under 1/i^alpha (random.choices' cum_weights)."""
    total = 0.0
    cdf = []
    for i in range(1, keys + 1):
        total += 1.0 / (i ** alpha)
        cdf.append(total)
    return cdf


class RespReplies:
    """Counts whole RESP2 replies in a byte stream; remembers the first error."""

    def __init__(self):
        self.buf = b""
        self.first_error = None
        self.errors = 0
        self.misses = 0

    def _one(self, b, i):
        """End index of the reply starting at i, or -1 when it is not all there yet."""
        nl = b.find(b"\r\n", i)
        if nl < 0:
            return -1
        kind = b[i:i + 1]
        if kind in (b"+", b":"):
            return nl + 2
        if kind == b"-":
            self.errors += 1
            if self.first_error is None:
                self.first_error = b[i:nl].decode("latin-1")
            return nl + 2
        if kind == b"$":
            n = int(b[i + 1:nl])
            if n < 0:
                self.misses += 1
                return nl + 2
            end = nl + 2 + n + 2
            return end if len(b) >= end else -1
        if kind == b"*":
            n = int(b[i + 1:nl])
            j = nl + 2
            for _ in range(max(n, 0)):
                j = self._one(b, j)
                if j < 0:
                    return -1
            return j
        raise ValueError("not RESP: %r" % b[i:i + 40])

    def feed(self, data):
        """Whole replies now complete."""
        b = self.buf + data
        i = 0
        done = 0
        while i < len(b):
            j = self._one(b, i)
            if j < 0:
                break
            i = j
            done += 1
        self.buf = b[i:]
        return done


class MemcachedReplies:
    """Counts whole memcached text replies (get: VALUE ... END or END; set: STORED, ...)."""

    def __init__(self):
        self.buf = b""
        self.first_error = None
        self.errors = 0
        self.misses = 0

    def feed(self, data):
        b = self.buf + data
        i = 0
        done = 0
        while True:
            nl = b.find(b"\r\n", i)
            if nl < 0:
                break
            line = b[i:nl]
            if line.startswith(b"VALUE "):
                n = int(line.split()[3])
                # the data block, then END (one key per get here)
                end_data = nl + 2 + n + 2
                if len(b) < end_data + 5:
                    break
                if b[end_data:end_data + 5] != b"END\r\n":
                    raise ValueError("memcached: expected END after the value")
                i = end_data + 5
            else:
                if line == b"END":
                    self.misses += 1
                elif line not in (b"STORED", b"NOT_STORED", b"EXISTS", b"NOT_FOUND",
                                  b"DELETED", b"TOUCHED"):
                    self.errors += 1
                    if self.first_error is None:
                        self.first_error = line.decode("latin-1")
                i = nl + 2
            done += 1
        self.buf = b[i:]
        return done


def redis_get(key):
    return b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(key), key)


def redis_set(key, value):
    return b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(value), value)


def memcached_get(key):
    return b"get %s\r\n" % key


def memcached_set(key, value):
    return b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value)


class Conn:
    def __init__(self, host, port, proto):
        self.sock = socket.create_connection((host, port), timeout=5)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self.replies = RespReplies() if proto == "redis" else MemcachedReplies()
        self.out = b""
        self.waiting = 0   # replies owed for the batch in flight


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--proto", choices=["redis", "memcached"], required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--alpha", type=float, default=1.2, help="Zipf exponent (default 1.2)")
    p.add_argument("--keys", type=int, default=100000, help="key:1 .. key:KEYS")
    p.add_argument("--requests", type=int, default=1000000, help="total requests")
    p.add_argument("--duration", type=float, default=60.0, help="cap in seconds (default 60)")
    p.add_argument("--pipeline", type=int, default=16, help="requests in flight per connection")
    p.add_argument("--connections", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--top", type=int, default=10, help="how many of the true top keys to print")
    p.add_argument("--write-ratio", type=float, default=0.0,
                   help="fraction of requests that are SET / set (default 0)")
    p.add_argument("--value-size", type=int, default=32, help="bytes of each written value")
    p.add_argument("--fill", type=int, default=0,
                   help="first SET key:1 .. key:FILL (not counted), so reads of them hit")
    a = p.parse_args(argv)
    if a.keys < 1 or a.requests < 1 or a.pipeline < 1 or a.connections < 1 or a.top < 0:
        p.error("--keys, --requests, --pipeline and --connections must be at least 1")
    if not 0.0 <= a.write_ratio <= 1.0:
        p.error("--write-ratio must be in [0, 1]")
    if a.alpha <= 0:
        p.error("--alpha must be more than 0")
    if a.duration <= 0:
        p.error("--duration must be more than 0")
    return a


def fill(args, value):
    """SETs the hottest keys before the load, pipelined, on a connection of its own."""
    c = Conn(args.host, args.port, args.proto)
    c.sock.setblocking(True)
    make = redis_set if args.proto == "redis" else memcached_set
    for start in range(1, args.fill + 1, 256):
        batch = range(start, min(start + 256, args.fill + 1))
        c.sock.sendall(b"".join(make(b"key:%d" % i, value) for i in batch))
        owed = len(batch)
        while owed > 0:
            data = c.sock.recv(65536)
            if not data:
                raise ConnectionError("the server closed the connection during --fill")
            owed -= c.replies.feed(data)
    c.sock.close()


def run(args):
    rng = random.Random(args.seed)
    cdf = zipf_cdf(args.keys, args.alpha)
    ranks = range(1, args.keys + 1)
    value = (b"v" * args.value_size)
    get, put = ((redis_get, redis_set) if args.proto == "redis"
                else (memcached_get, memcached_set))
    counts = {}
    names = {}   # rank -> key bytes, built once per key actually drawn
    sent = reads = writes = 0

    def next_batch(n):
        """n requests as one bytes object, counted."""
        nonlocal sent, reads, writes
        drawn = rng.choices(ranks, cum_weights=cdf, k=n)
        parts = []
        for r in drawn:
            counts[r] = counts.get(r, 0) + 1
            k = names.get(r)
            if k is None:
                k = names[r] = b"key:%d" % r
            if args.write_ratio > 0 and rng.random() < args.write_ratio:
                parts.append(put(k, value))
                writes += 1
            else:
                parts.append(get(k))
                reads += 1
        sent += n
        return b"".join(parts)

    try:
        if args.fill:
            fill(args, value)
        conns = [Conn(args.host, args.port, args.proto) for _ in range(args.connections)]
    except OSError as e:
        print("zipf_load: cannot connect to %s:%d: %s" % (args.host, args.port, e),
              file=sys.stderr)
        return 1, None

    sel = selectors.DefaultSelector()
    start = time.monotonic()
    deadline = start + args.duration
    answered = 0
    failure = None
    for c in conns:
        sel.register(c.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, c)

    def refill(c):
        left = args.requests - sent
        if left > 0 and time.monotonic() < deadline:
            n = min(args.pipeline, left)
            c.out = next_batch(n)
            c.waiting = n

    for c in conns:
        refill(c)
    while failure is None and any(c.waiting for c in conns):
        for key, events in sel.select(timeout=1.0):
            c = key.data
            if events & selectors.EVENT_WRITE and c.out:
                try:
                    n = c.sock.send(c.out)
                    c.out = c.out[n:]
                except BlockingIOError:
                    pass
            if events & selectors.EVENT_READ:
                try:
                    data = c.sock.recv(262144)
                except BlockingIOError:
                    continue
                if not data:
                    failure = "the server closed a connection"
                    break
                got = c.replies.feed(data)
                c.waiting -= got
                answered += got
                if c.waiting == 0 and not c.out:
                    refill(c)
            sel.modify(c.sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if c.out else 0), c)
        if time.monotonic() > deadline + 10:
            failure = "replies did not come within 10 s of --duration"
    elapsed = max(time.monotonic() - start, 1e-9)
    for c in conns:
        c.sock.close()

    errors = sum(c.replies.errors for c in conns)
    misses = sum(c.replies.misses for c in conns)
    first_error = next((c.replies.first_error for c in conns if c.replies.first_error), None)
    total = sum(counts.values())
    expected_norm = cdf[-1]
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:args.top]
    report = {
        "proto": args.proto,
        "alpha": args.alpha,
        "keys": args.keys,
        "seed": args.seed,
        "pipeline": args.pipeline,
        "connections": args.connections,
        "requests": total,
        "answered": answered,
        "reads": reads,
        "writes": writes,
        "misses": misses,
        "errors": errors,
        "first_error": first_error,
        "duration_s": round(elapsed, 3),
        "rps": round(answered / elapsed, 1),
        "top": [{
            "rank": i + 1,
            "key": "key:%d" % r,
            "requests": n,
            "rps": round(n / elapsed, 1),
            "share": round(n / total, 6),
            "expected_share": round((1.0 / r ** args.alpha) / expected_norm, 6),
        } for i, (r, n) in enumerate(top)],
    }
    if failure is None and errors:
        failure = "%d error replies, the first: %s" % (errors, first_error)
    if failure is not None:
        print("zipf_load: " + failure, file=sys.stderr)
        return 1, report
    return 0, report


def main(argv):
    args = parse_args(argv)
    code, report = run(args)
    if report is not None:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
