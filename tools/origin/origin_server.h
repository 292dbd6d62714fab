// lb-origin's process: listening sockets, worker threads each with its own uv loop, and the
// signal handling that ends them. The connection itself lives in tools/origin/conn.h.
#pragma once

#include <string>

namespace lb::origin {

struct OriginOptions {
  std::string listen = "127.0.0.1:8000";   // "host:port" or "[v6]:port"; port 0 = any free one
  std::string name = "origin";              // the X-Backend value
  unsigned workers = 1;                     // threads, each accepting on its own SO_REUSEPORT socket
};

// Binds every worker's socket, prints "lb-origin NAME listening on HOST:PORT" (the bound port,
// also when asked for port 0) to stderr, and serves until SIGTERM or SIGINT. Returns the exit
// code: 0 after a signal, 1 when it cannot bind. Main thread only; call once.
int runOrigin(const OriginOptions& options);

}  // namespace lb::origin
