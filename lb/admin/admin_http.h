// The admin endpoints' HTTP server: lb's HTTP server (lb/http/server.h) answering buffered
// requests on the main thread's loop. Admin traffic is a scraper and an operator's curl, so
// it answers only GET and HEAD, never lets a response be cached, and bounds each request's
// size, the number of connections and the time a request may take.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <string>

#include "lb/http/buffered_handler.h"
#include "lb/http/server.h"

namespace lb {

// method is "GET" or "HEAD": any other gets 405 before the handler runs.
using AdminRequest = BufferedRequest;
using AdminResponse = BufferedResponse;
// Called on the loop thread for each complete request. May throw: the client gets 500.
using AdminHandler = std::function<AdminResponse(const AdminRequest&)>;

// Limits an operator never meets and a misbehaving client cannot exceed.
struct AdminLimits {
  size_t max_request_bytes = 16 * 1024;   // the head (beyond: 431), and the body (beyond: 413)
  size_t max_connections = 64;            // beyond: accepted and closed at once
  uint64_t idle_timeout_ms = 30000;       // a request must arrive and be answered within
                                          // this, from accept or from the previous answer
};

// Loop thread only. Listens on `listen` ("127.0.0.1:9901", "[::1]:9901"; port 0 picks a free
// one) and answers through `handler`. nullptr with *error set when the address is bad or the
// bind fails. Stop it with HttpServer::stop(); `on_closed` runs once it freed itself.
HttpServer* startAdminHttp(uv_loop_t* loop, const std::string& listen, AdminHandler handler,
                           std::function<void()> on_closed, std::string* error,
                           AdminLimits limits = {});

}  // namespace lb
