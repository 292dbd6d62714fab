// One client connection of lb-origin, the test origin server (tools/origin/main.cc documents the
// per-request behaviours): the HttpHandler that lb's HTTP server (lb/http/server_conn.h) gives
// each connection. The server parses and answers pipelined requests strictly in order, one at
// a time, and does the lingering close; this object decides what each request gets and
// streams it: an echoed body as it arrives, /bytes one chunk per drained write, a delay on a
// timer, a raw echo after an upgrade.
//
// Loop thread only; the server connection owns and deletes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lb/http/server_conn.h"

namespace lb::origin {

// Shared by every worker of one lb-origin process; the counters back /stats.
struct OriginShared {
  std::string name;                                  // X-Backend value
  std::atomic<uint64_t> connections_accepted{0};
  std::atomic<uint64_t> requests_served{0};          // counted when a request head is parsed
  std::atomic<int64_t> connections_active{0};
};

std::string hexSize(uint64_t n);   // a chunk-size line's number: 1000 -> "3e8"

class OriginConn final : public HttpHandler {
 public:
  explicit OriginConn(OriginShared* shared);
  ~OriginConn() override;
  OriginConn(const OriginConn&) = delete;
  OriginConn& operator=(const OriginConn&) = delete;

  void onRequest(HttpServerConn& conn, const HttpRequestHead& head) override;
  void onBody(HttpServerConn& conn, std::string_view data) override;
  void onRequestComplete(HttpServerConn& conn) override;
  void onWritten(HttpServerConn& conn) override;
  void onTimer(HttpServerConn& conn) override;
  void onTunnelData(HttpServerConn& conn, std::string_view data) override;

 private:
  enum class Mode { kFixed, kEcho, kBytes };

  // The current request, copied from its head (a delayed answer outlives the head's view),
  // and how its answer goes.
  struct Exchange {
    std::string method;
    std::string url;
    std::vector<std::pair<std::string, std::string>> headers;
    uint8_t method_code = 0;
    int http_major = 1, http_minor = 1;
    bool has_body = false;
    bool chunked_in = false;
    uint64_t content_length = 0;
    bool upgrade = false;
    bool chunked_out = false;
    Mode mode = Mode::kFixed;
    bool answer_done = false;
    uint64_t body_bytes = 0;       // request body bytes seen
    uint64_t bytes_left = 0;       // /bytes: still to send
  };

  // tools/origin/respond.cc: writes the head (and a fixed body) of the current exchange.
  void startResponse(HttpServerConn& conn);
  void sendBytesChunk(HttpServerConn& conn);   // /bytes: one chunk, the next once written
  void finishResponse(HttpServerConn& conn);

  OriginShared* shared_;
  uint64_t id_;                    // X-Connection-Id
  uint64_t exchanges_ = 0;         // X-Request-Number
  Exchange ex_;
};

}  // namespace lb::origin
