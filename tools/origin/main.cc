// lb-origin: a small HTTP/1.1 origin server for lb's tests, demo and benchmarks.
//
//   lb-origin --listen 127.0.0.1:PORT --name NAME [--workers N]
//
// Prints "lb-origin NAME listening on HOST:PORT" to stderr once it accepts connections (with
// port 0, the port the kernel chose). SIGTERM/SIGINT end it with exit code 0.
//
// Every response carries `X-Backend: NAME`, `X-Connection-Id: C` (the C-th connection this
// process accepted) and `X-Request-Number: R` (the R-th request on that connection), and
// echoes these request headers as `X-Echo-<Name>`: Host, X-Forwarded-For, X-Forwarded-Proto,
// X-Forwarded-Host, X-Real-IP, Forwarded, Via, Connection, Upgrade, TE, Keep-Alive,
// Proxy-Connection, X-Request-Id (a proxy's header handling can be checked on any request).
// Keep-alive follows HTTP/1.1 (HTTP/1.0: close unless `Connection: keep-alive`); pipelined
// requests are answered in order, one at a time.
//
// What a request gets, by path:
//   /stats      JSON: {"name","connections_accepted","connections_active","requests_served"};
//               requests_served counts request heads parsed so far, this one included.
//   /headers    the request head as received, as the body (request line and header lines).
//   /bytes      ?n=N bytes of body (byte i is "0123456789abcdef"[i % 16]) with Content-Length,
//               or chunked with &chunked=1; streamed 64 KiB at a time, each chunk written only
//               when the previous one has gone (never n bytes in memory).
//   any other   a request with a body gets it echoed, streaming, with the same framing
//               (Content-Length in -> Content-Length out plus `X-Body-Bytes: N`; chunked in ->
//               chunked out with `X-Body-Bytes` as a trailer); without a body, "NAME\n".
// Switches, on any path, as query parameters or as request headers `X-Origin-<Name>` with
// '_' written '-' (`?delay_ms=50` or `X-Origin-Delay-Ms: 50`). Values are not percent-decoded.
//   status=N               answer status N (200..599); 204 and 304 carry no body.
//   set_status=N           from the next request on, answer every request of this process
//                          that names no status=N with N (200..599; 0 goes back to 200): an
//                          origin that fails everything, health checks included.
//   delay_ms=N             wait N ms (at most 60000) before answering (and before reading the
//                          request body).
//   close=1                reset the connection (RST) as soon as the request head is read.
//   close_after_headers=1  send the head (its Content-Length promising a body), then close
//                          the connection (FIN) without the body: a truncated response.
// Protocol features:
//   `Expect: 100-continue` with a body: `100 Continue` first, then the final response.
//   `Upgrade: websocket` + `Connection: Upgrade`: `101 Switching Protocols`, then every byte
//               received is echoed back raw (no WebSocket framing, no Sec-WebSocket-Accept:
//               enough to prove a proxy tunnels an upgrade). Other upgrades and CONNECT get a
//               normal answer (CONNECT: 405) and the connection closes.
//   Malformed input: 400 (431 for a head over 64 KiB) with `Connection: close`, then the
//               connection closes (FIN, after draining input so the 400 is not lost to RST).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "tools/origin/origin_server.h"

namespace {

void usage(FILE* out) {
  fputs("usage: lb-origin --listen HOST:PORT --name NAME [--workers N]\n", out);
}

int run(int argc, char** argv) {
  lb::origin::OriginOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        fprintf(stderr, "lb-origin: %s needs a value\n", flag);
        return nullptr;
      }
      return argv[++i];
    };
    if (a == "--listen") {
      const char* v = value("--listen");
      if (v == nullptr) return 2;
      o.listen = v;
    } else if (a == "--name") {
      const char* v = value("--name");
      if (v == nullptr) return 2;
      o.name = v;
    } else if (a == "--workers") {
      const char* v = value("--workers");
      if (v == nullptr) return 2;
      char* end = nullptr;
      long n = strtol(v, &end, 10);
      if (*end != '\0' || n < 1 || n > 256) {
        fprintf(stderr, "lb-origin: --workers must be 1..256, got '%s'\n", v);
        return 2;
      }
      o.workers = static_cast<unsigned>(n);
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "lb-origin: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  return lb::origin::runOrigin(o);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fprintf(stderr, "lb-origin: fatal: %s\n", e.what());
    return 1;
  }
}
