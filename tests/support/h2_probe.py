#!/usr/bin/python3
"""An HTTP/2 client for lb's tests, in two voices.

Well-behaved, through Debian's python3-h2 (the library applications use): `keys` opens one
connection and puts N requests with N different keys on it at once; `trailers BODY
[NAME=VALUE...]` sends a POST whose body ends in trailers and reports the response's; `drain`
holds a slow stream open while lb drains.

Hostile, frame by frame on a raw socket (hpack encodes, nothing validates): malformed
requests, rapid reset, CONTINUATION, SETTINGS, PING and empty-DATA floods, an HPACK bomb,
and streams past SETTINGS_MAX_CONCURRENT_STREAMS.

  h2_probe.py PORT SCENARIO [ARG...]

bench/h2_hostile.sh drives two more: `paced RATE SECONDS`, a steady light load, and `attack
KIND SECONDS`, one hostile scenario after another on new connections.

Prints one JSON object on stdout: what came back (statuses, RST_STREAM codes, the GOAWAY's
code and last stream id). Every loop is bounded in frames and in seconds.
"""
import json
import os
import select
import signal
import socket
import struct
import sys
import time

import h2.config
import h2.connection
import h2.events
import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# How long a hostile scenario waits for lb's last frames after its own (attack loops wait less).
SETTLE = 1.0
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, \
    CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4


def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", sid & 0x7FFFFFFF) + payload


class Raw:
    """A raw HTTP/2 client connection: sends what it is told, reads frames as they come."""

    def __init__(self, port):
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.enc = hpack.Encoder()
        self.dec = hpack.Decoder()
        self.buf = b""
        self.closed = False
        self.goaway = None          # (code, last_stream_id) of the latest GOAWAY
        self.goaways = []           # every GOAWAY, [code, last_stream_id]
        self.rst = {}               # stream id -> code
        self.status = {}            # stream id -> :status
        self.ended = set()          # streams whose response ended
        self.sock.sendall(PREFACE + frame(SETTINGS, 0, 0))

    def request(self, sid, extra=(), end_stream=True, method="GET", path="/",
                pseudo_after=False, raw_headers=None):
        hdrs = raw_headers if raw_headers is not None else \
            [(":method", method), (":scheme", "http"), (":path", path),
             (":authority", "127.0.0.1:%d" % self.port)]
        hdrs = list(extra) + hdrs if pseudo_after else hdrs + list(extra)
        flags = END_HEADERS | (END_STREAM if end_stream else 0)
        return frame(HEADERS, flags, sid, self.enc.encode(hdrs))

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            self.closed = True
            return False

    def pump(self, timeout):
        """Reads and parses whatever arrives within `timeout` seconds (0: what is there)."""
        end = time.monotonic() + timeout
        while not self.closed:
            left = max(0.0, end - time.monotonic())
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                return
            try:
                chunk = self.sock.recv(1 << 20)
            except (ConnectionResetError, socket.timeout):
                chunk = b""
            if not chunk:
                self.closed = True
                return
            self.buf += chunk
            self._parse()

    def pump_until_done(self, sid, timeout, settle=0.3):
        """Reads until stream `sid` is reset or its response has ended (or `timeout` seconds),
        then for `settle` more, so that a GOAWAY lb sends with it is read too."""
        end = time.monotonic() + timeout
        while not self.closed and sid not in self.rst and sid not in self.ended:
            left = end - time.monotonic()
            if left <= 0:
                return
            self.pump(min(0.05, left))
        self.pump(settle)

    def _parse(self):
        while len(self.buf) >= 9:
            length = int.from_bytes(self.buf[0:3], "big")
            if len(self.buf) < 9 + length:
                return
            ftype, flags = self.buf[3], self.buf[4]
            sid = int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
            payload = self.buf[9:9 + length]
            self.buf = self.buf[9 + length:]
            if ftype == SETTINGS and not flags & ACK:
                self.send(frame(SETTINGS, ACK, 0))
            elif ftype == GOAWAY:
                last = int.from_bytes(payload[0:4], "big") & 0x7FFFFFFF
                self.goaway = (int.from_bytes(payload[4:8], "big"), last)
                self.goaways.append(list(self.goaway))
            elif ftype == RST_STREAM:
                self.rst[sid] = int.from_bytes(payload[0:4], "big")
            elif ftype == HEADERS:
                # Every block goes through the decoder, in order: HPACK's table is shared.
                status = self._status(payload)
                if sid not in self.status:
                    self.status[sid] = status
                if flags & END_STREAM:
                    self.ended.add(sid)
            elif ftype == DATA and flags & END_STREAM:
                self.ended.add(sid)

    def _status(self, payload):
        # HEADERS may be padded or carry priority; lb sends neither.
        for name, value in self.dec.decode(payload):
            name = name.decode() if isinstance(name, bytes) else name
            if name == ":status":
                return int(value)
        return None

    def result(self, **extra):
        out = {"goaway_code": self.goaway[0] if self.goaway else None,
               "goaway_last": self.goaway[1] if self.goaway else None,
               "closed": self.closed,
               "rst": {str(k): v for k, v in self.rst.items()},
               "status": {str(k): v for k, v in self.status.items()}}
        out.update(extra)
        return out


def settled(port):
    """A raw connection whose SETTINGS exchange is done (lb's limits are in force)."""
    c = Raw(port)
    c.pump(min(0.3, SETTLE))
    return c


# ---- well-behaved ---------------------------------------------------------------------

def h2_client(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    return sock, conn


def keys(port, n):
    """n streams at once on one connection, key-0 .. key-(n-1): which backend answered each."""
    sock, conn = h2_client(port)
    ids = {}
    for i in range(n):
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":path", "/k"),
                                (":authority", "127.0.0.1:%d" % port),
                                ("x-key", "key-%d" % i)], end_stream=True)
        ids[sid] = "key-%d" % i
    sock.sendall(conn.data_to_send())
    backends, statuses, done = {}, {}, set()
    deadline = time.monotonic() + 20
    while len(done) < n and time.monotonic() < deadline:
        data = sock.recv(1 << 20)
        if not data:
            break
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.ResponseReceived):
                h = {k.decode(): v.decode() for k, v in ev.headers}
                backends[ids[ev.stream_id]] = h.get("x-backend")
                statuses[ids[ev.stream_id]] = int(h[":status"])
            elif isinstance(ev, h2.events.DataReceived):
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                done.add(ev.stream_id)
        sock.sendall(conn.data_to_send())
    return {"backends": backends, "statuses": statuses, "ended": len(done),
            "concurrent": conn.remote_settings.max_concurrent_streams}


def crumbs(port, cookies):
    """One request whose cookie is split into crumbs, one field each (RFC 9113 §8.2.3)."""
    sock, conn = h2_client(port)
    hdrs = [(":method", "GET"), (":scheme", "http"), (":path", "/c"),
            (":authority", "127.0.0.1:%d" % port)] + [("cookie", c) for c in cookies]
    conn.send_headers(1, hdrs, end_stream=True)
    sock.sendall(conn.data_to_send())
    backend, status, ended = None, None, False
    deadline = time.monotonic() + 10
    while not ended and time.monotonic() < deadline:
        data = sock.recv(1 << 20)
        if not data:
            break
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.ResponseReceived):
                h = {k.decode(): v.decode() for k, v in ev.headers}
                backend, status = h.get("x-backend"), int(h[":status"])
            elif isinstance(ev, h2.events.StreamEnded):
                ended = True
        sock.sendall(conn.data_to_send())
    return {"backend": backend, "status": status}


def trailers(port, body, request_trailers):
    """A POST whose body ends in trailer fields ("name=value" each; none: END_STREAM on the
    DATA), and what comes back: status, body, and the response's trailers, if the stream
    ended on them."""
    sock, conn = h2_client(port)
    conn.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":path", "/t"),
                          (":authority", "127.0.0.1:%d" % port), ("te", "trailers")])
    fields = [tuple(t.split("=", 1)) for t in request_trailers]
    conn.send_data(1, body.encode(), end_stream=not fields)
    if fields:
        conn.send_headers(1, fields, end_stream=True)
    sock.sendall(conn.data_to_send())
    out = {"status": None, "body": "", "trailers": None, "ended": False, "reset": None}
    deadline = time.monotonic() + 10
    while not out["ended"] and out["reset"] is None and time.monotonic() < deadline:
        data = sock.recv(1 << 20)
        if not data:
            break
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.ResponseReceived):
                out["status"] = int(dict(ev.headers)[b":status"])
            elif isinstance(ev, h2.events.DataReceived):
                out["body"] += ev.data.decode()
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.TrailersReceived):
                out["trailers"] = [[k.decode(), v.decode()] for k, v in ev.headers]
            elif isinstance(ev, h2.events.StreamEnded):
                out["ended"] = True
            elif isinstance(ev, h2.events.StreamReset):
                out["reset"] = ev.error_code
        sock.sendall(conn.data_to_send())
    return out


def drain(port, pid):
    """A slow stream (the origin waits 1.5 s) open when lb is told to drain: every GOAWAY lb
    sends, and whether the stream still ends with its answer. Raw frames: python3-h2 takes
    the first GOAWAY as the end of the connection, and the point is what comes after it."""
    c = settled(port)
    c.send(c.request(1, extra=[("x-key", "slow")], path="/slow?delay_ms=1500"))
    c.pump(0.3)   # the stream reached lb (the origin holds it for 1.5 s)
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not c.closed and 1 not in c.ended:
        c.pump(0.2)
    c.pump(0.5)
    return {"goaways": c.goaways, "status": c.status.get(1), "ended": 1 in c.ended}


# ---- hostile --------------------------------------------------------------------------

MALFORMED = {
    # RFC 9113 §8.2: field names are lowercase.
    "uppercase": dict(extra=[("X-Key", "a")]),
    # §8.2.2: connection-specific fields make a request malformed.
    "connection": dict(extra=[("connection", "keep-alive")]),
    "transfer_encoding": dict(extra=[("transfer-encoding", "chunked")]),
    "te": dict(extra=[("te", "gzip")]),
    # §8.3: pseudo-header fields come first, once each, and :path is required.
    "pseudo_after": dict(extra=[("x-key", "a")], pseudo_after=True),
    "no_path": dict(raw_headers=[(":method", "GET"), (":scheme", "http"),
                                 (":authority", "a")]),
    "dup_method": dict(raw_headers=[(":method", "GET"), (":method", "GET"),
                                    (":scheme", "http"), (":path", "/"), (":authority", "a")]),
    "unknown_pseudo": dict(extra=[(":foo", "bar")]),
}


def malformed(port, case):
    c = settled(port)
    if case == "content_length":   # §8.1.1: content-length must match the DATA
        # One write: lb reads the HEADERS with the DATA that ends the stream short, so the
        # stream is reset before it starts (split over two reads, the head and the first
        # bytes would go up, and the backend would see its connection close mid-body).
        c.send(c.request(1, extra=[("content-length", "10")], end_stream=False, method="POST") +
               frame(DATA, END_STREAM, 1, b"12345"))
    elif case == "content_length_exact":   # the well-formed twin of the two below
        c.send(c.request(1, extra=[("content-length", "5")], end_stream=False, method="POST") +
               frame(DATA, 0, 1, b"hel"))
        c.pump(0.3)
        c.send(frame(DATA, END_STREAM, 1, b"lo"))
    elif case in ("content_length_over", "content_length_short_late"):
        # The head and the body's bytes in one write, what contradicts them in a later one
        # (lb has read, started and sent up the first by then): a DATA frame past the
        # declared length, or END_STREAM short of it. The backend must never get a whole
        # request.
        c.send(c.request(1, extra=[("content-length", "5")], end_stream=False, method="POST") +
               frame(DATA, 0, 1, b"hello" if case == "content_length_over" else b"hel"))
        c.pump(0.3)
        c.send(frame(DATA, END_STREAM, 1, b"x" if case == "content_length_over" else b""))
    else:
        c.send(c.request(1, **MALFORMED[case]))
    c.pump_until_done(1, 2)
    return c.result()


def rapid_reset(port, seconds):
    """HEADERS and RST_STREAM for a new stream each, as fast as the socket takes them."""
    c = settled(port)
    sid, sent, start = 1, 0, time.monotonic()
    while time.monotonic() - start < seconds and not c.closed and c.goaway is None:
        batch = b""
        for _ in range(50):
            batch += c.request(sid) + frame(RST_STREAM, 0, sid, struct.pack(">I", 8))
            sid += 2
            sent += 1
        if not c.send(batch):
            break
        c.pump(0)
    c.pump(SETTLE)
    return c.result(streams=sent, elapsed=round(time.monotonic() - start, 3))


def continuation(port, frames):
    """One header block that never ends: HEADERS, then CONTINUATION after CONTINUATION."""
    c = settled(port)
    block = c.enc.encode([(":method", "GET"), (":scheme", "http"), (":path", "/"),
                          (":authority", "a")])
    c.send(frame(HEADERS, 0, 1, block))
    piece = hpack.Encoder().encode([("x-pad", "p" * 1000)])
    sent = 0
    for _ in range(frames):
        if not c.send(frame(CONTINUATION, 0, 1, piece)):
            break
        sent += 1
        if sent % 64 == 0:
            c.pump(0)
            if c.goaway is not None or c.closed:
                break
    c.pump(SETTLE)
    return c.result(sent=sent)


def control_flood(port, kind, count):
    c = settled(port)
    sent = 0
    one = frame(SETTINGS, 0, 0) if kind == "settings" else frame(PING, 0, 0, b"12345678")
    while sent < count and not c.closed and c.goaway is None:
        if not c.send(one * 100):
            break
        sent += 100
        c.pump(0)
    c.pump(SETTLE)
    return c.result(sent=sent)


def empty_data(port, count):
    c = settled(port)
    c.send(c.request(1, end_stream=False, method="POST"))
    sent = 0
    while sent < count and not c.closed and c.goaway is None:
        if not c.send(frame(DATA, 0, 1) * 50):
            break
        sent += 50
        c.pump(0)
    c.pump(SETTLE)
    return c.result(sent=sent)


def hpack_bomb(port, streams, refs=2000):
    """Each stream's block names one 4000-byte field from the dynamic table `refs` times:
    at 2000, about 8 MB decoded from about 4 KB sent."""
    c = settled(port)
    base = [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "a")]
    c.send(frame(HEADERS, END_HEADERS | END_STREAM, 1,
                 c.enc.encode(base + [("x-bomb", "b" * 4000)])))
    deadline = time.monotonic() + 5   # the honest request's answer first, whatever lb's speed
    while 1 not in c.ended and not c.closed and time.monotonic() < deadline:
        c.pump(0.05)
    sid = 3
    for _ in range(streams):
        if not c.send(frame(HEADERS, END_HEADERS | END_STREAM, sid,
                            c.enc.encode(base + [("x-bomb", "b" * 4000)] * refs))):
            break
        sid += 2
        c.pump(0.05)
    c.pump(SETTLE)
    return c.result()


def past_max(port, count):
    """`count` streams opened (no END_STREAM) on a listener allowing far fewer at once."""
    c = settled(port)
    sid, sent = 1, 0
    while sent < count and not c.closed and c.goaway is None:
        batch = b""
        for _ in range(100):
            batch += c.request(sid, end_stream=False, method="POST", path="/?delay_ms=3000")
            sid += 2
            sent += 1
        if not c.send(batch):
            break
        c.pump(0)
    c.pump(SETTLE)
    codes = {}
    for code in c.rst.values():
        codes[str(code)] = codes.get(str(code), 0) + 1
    out = c.result(sent=sent)
    out["rst_count"] = len(c.rst)
    out["rst_codes"] = codes
    del out["rst"]
    return out


def zero_window(port, seconds):
    """A download asked for with every stream's window shut (SETTINGS_INITIAL_WINDOW_SIZE 0)
    and never opened: lb holds the response and nothing moves."""
    c = Raw(port)
    c.send(frame(SETTINGS, 0, 0, struct.pack(">HI", 4, 0)))
    c.pump(min(0.3, SETTLE))
    c.send(c.request(1, extra=[("x-key", "w")], path="/bytes?n=100000"))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not c.closed and c.goaway is None:
        c.pump(0.1)
    c.pump(0.2)
    return c.result()


def paced(port, rate, seconds):
    """A steady, light load: `rate` requests a second for `seconds` on one connection, each
    with its own key; how many were answered 200 and how many were not."""
    sock, conn = h2_client(port)
    sock.setblocking(False)
    start, sent, ok, bad, n = time.monotonic(), 0, 0, 0, 0
    open_ids = set()
    while time.monotonic() - start < seconds or open_ids:
        if time.monotonic() - start > seconds + 5:
            break
        due = int((time.monotonic() - start) * rate)
        while sent < due and time.monotonic() - start < seconds and len(open_ids) < 90:
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":path", "/p"),
                                    (":authority", "127.0.0.1:%d" % port),
                                    ("x-key", "k%d" % (n % 1000))], end_stream=True)
            open_ids.add(sid)
            sent += 1
            n += 1
        try:
            sock.sendall(conn.data_to_send())
        except BlockingIOError:
            pass
        r, _, _ = select.select([sock], [], [], 0.002)
        if r:
            try:
                data = sock.recv(1 << 20)
            except BlockingIOError:
                continue
            if not data:
                break
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.ResponseReceived):
                    if dict(ev.headers)[b":status"] == b"200":
                        ok += 1
                    else:
                        bad += 1
                elif isinstance(ev, h2.events.DataReceived):
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)):
                    open_ids.discard(ev.stream_id)
    return {"sent": sent, "ok": ok, "bad": bad + len(open_ids)}


def attack(port, kind, seconds):
    """One hostile scenario after another, each on a new connection, for `seconds`: an
    attacker reconnects as soon as lb ends a connection. Counts the GOAWAY codes it got."""
    global SETTLE
    SETTLE = 0.05
    run = {"rapid_reset": lambda: rapid_reset(port, 1), "continuation": lambda: continuation(port, 500),
           "settings": lambda: control_flood(port, "settings", 100000),
           "ping": lambda: control_flood(port, "ping", 100000),
           "empty_data": lambda: empty_data(port, 100000),
           "hpack_bomb": lambda: hpack_bomb(port, 20)}[kind]
    start, conns, codes = time.monotonic(), 0, {}
    while time.monotonic() - start < seconds:
        try:
            out = run()
        except OSError:
            continue
        conns += 1
        code = str(out["goaway_code"])
        codes[code] = codes.get(code, 0) + 1
    return {"connections": conns, "goaway_codes": codes}


def main():
    port, scenario, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    if scenario == "keys":
        out = keys(port, int(args[0]))
    elif scenario == "crumbs":
        out = crumbs(port, args)
    elif scenario == "trailers":
        out = trailers(port, args[0], args[1:])
    elif scenario == "drain":
        out = drain(port, int(args[0]))
    elif scenario == "malformed":
        out = malformed(port, args[0])
    elif scenario == "rapid_reset":
        out = rapid_reset(port, float(args[0]))
    elif scenario == "continuation":
        out = continuation(port, int(args[0]))
    elif scenario in ("settings", "ping"):
        out = control_flood(port, scenario, int(args[0]))
    elif scenario == "empty_data":
        out = empty_data(port, int(args[0]))
    elif scenario == "hpack_bomb":
        out = hpack_bomb(port, int(args[0]), int(args[1]) if len(args) > 1 else 2000)
    elif scenario == "past_max":
        out = past_max(port, int(args[0]))
    elif scenario == "zero_window":
        out = zero_window(port, float(args[0]))
    elif scenario == "paced":
        out = paced(port, int(args[0]), float(args[1]))
    elif scenario == "attack":
        out = attack(port, args[0], float(args[1]))
    else:
        sys.exit("unknown scenario " + scenario)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
