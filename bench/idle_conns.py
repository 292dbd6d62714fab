#!/usr/bin/env python3
"""Holds N client connections open to lb and reports what they cost lb in RSS.

Used by bench/idle_conns.sh (see there). Steps, each bounded in time:
  1. warm-up: BATCH connections each send one request and close, so lb's pools (buffer
     blocks, exchanges) already hold their peak for BATCH requests in flight before the
     baseline; the figure is then what an idle connection costs, not the pools' fill;
  2. VmRSS of lb (/proc/PID/status) as the baseline;
  3. N connections: with --mode request each completes one keep-alive request (BATCH in
     flight at a time), so lb holds them between requests; with --mode silent they send
     nothing. The script waits until lb has accepted all of them (its open descriptors);
  4. VmRSS again, and (after - baseline) / N;
  5. every connection sends one more request and must get a 200 on the same socket.
With --tls every connection is a TLS client (no certificate check: the bench's own
self-signed one) that finishes its handshake in connect(), before it counts as held.
Prints one line: mode=... conns=... rss_before_kib=... rss_after_kib=... kib_per_conn=...
served=... (served = connections answered 200 in step 5). Exit 1 when not all were served.
Only 127.0.0.1.
"""
import argparse
import os
import resource
import socket
import ssl
import sys
import time


def vm_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def request(i):
    return (f"GET /k{i} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Key: k{i}\r\n\r\n").encode()


def read_response(s):
    """Reads one response with a Content-Length body; returns its status."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError("closed before a response head")
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError("closed mid-body")
        body += chunk
    return status


TLS = None   # the client context with --tls


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if TLS is not None:
        s = TLS.wrap_socket(s)   # the handshake, done before this returns
    return s


def exchange_batch(socks, first):
    """One request on each socket (all sent, then all read); returns how many got 200."""
    for k, s in enumerate(socks):
        s.sendall(request(first + k))
    ok = 0
    for s in socks:
        try:
            if read_response(s) == 200:
                ok += 1
        except (OSError, ValueError, IndexError):
            pass
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--conns", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--mode", choices=["request", "silent"], default="request")
    ap.add_argument("--tls", action="store_true", help="TLS clients (see the docstring)")
    ap.add_argument("--settle", type=float, default=1.0, help="seconds before each RSS read")
    a = ap.parse_args()
    global TLS
    if a.tls:
        TLS = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        TLS.check_hostname = False
        TLS.verify_mode = ssl.CERT_NONE
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < a.conns + 100:
        sys.exit(f"idle_conns.py: RLIMIT_NOFILE {hard} is below {a.conns + 100}")

    warm = [connect(a.port) for _ in range(a.batch)]
    exchange_batch(warm, 0)
    for s in warm:
        s.close()
    deadline = time.monotonic() + 10
    fds_idle = open_fds(a.pid)
    while time.monotonic() < deadline:   # lb has closed the warm-up connections
        time.sleep(0.2)
        now = open_fds(a.pid)
        if now == fds_idle:
            break
        fds_idle = now
    time.sleep(a.settle)
    before = vm_rss_kib(a.pid)

    socks = []
    for first in range(0, a.conns, a.batch):
        batch = [connect(a.port) for _ in range(min(a.batch, a.conns - first))]
        if a.mode == "request" and exchange_batch(batch, first) != len(batch):
            sys.exit(f"idle_conns.py: a first request failed in the batch at {first}")
        socks += batch
    deadline = time.monotonic() + 30
    while open_fds(a.pid) < fds_idle + a.conns and time.monotonic() < deadline:
        time.sleep(0.1)
    held = open_fds(a.pid) - fds_idle
    time.sleep(a.settle)
    after = vm_rss_kib(a.pid)

    served = 0
    for first in range(0, len(socks), a.batch):
        served += exchange_batch(socks[first:first + a.batch], first)
    for s in socks:
        s.close()
    print(f"mode={a.mode}{' tls' if a.tls else ''} conns={a.conns} held={held} rss_before_kib={before} "
          f"rss_after_kib={after} kib_per_conn={(after - before) / a.conns:.2f} served={served}")
    return 0 if served == a.conns else 1


if __name__ == "__main__":
    sys.exit(main())
