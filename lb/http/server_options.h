// The limits and socket options of lb's HTTP server (lb/http/server.h), apart so that the
// connection (lb/http/server_conn.h) reads them without knowing the server.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lb {

struct HttpServerOptions {
  size_t max_head_bytes = 16 * 1024;   // request line + headers; beyond: 431, then close
  size_t max_connections = 0;          // 0: no limit; beyond: accepted and closed at once
  uint64_t request_timeout_ms = 0;     // 0: none; else each request must arrive and be
                                       // answered within it, from accept or from the
                                       // previous answer (a slow or idle client is closed)
  uint64_t linger_ms = 1000;           // after FIN, how long input is read and dropped
  std::string error_headers;           // lines ("Name: v\r\n") added to the server's own
                                       // refusals (400, 413, 431, a handler's refuse())
  bool reuse_port = false;             // SO_REUSEPORT: one socket per thread on one port
  int backlog = 128;
  int fd = -1;                         // a listening socket to serve instead of binding one
                                       // (inherited, lb/net/inherited_sockets.h); owned by
                                       // the server from start() on
};

}  // namespace lb
