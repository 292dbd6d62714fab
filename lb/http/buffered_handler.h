// Request in, response out: the HTTP server's handler for endpoints whose answers are small
// and computed at once (the admin server). The request is read whole (its body up to a
// bound) before the function runs, and the response is written whole with Content-Length.
// Streaming answers implement HttpHandler themselves (lb/http/server_conn.h).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "lb/http/server.h"

namespace lb {

struct BufferedRequest {
  std::string method;   // as sent: "GET"
  std::string path;     // the target before '?', undecoded
  std::string query;    // the target after '?', undecoded; "" when absent
  std::vector<std::pair<std::string, std::string>> headers;   // as received, in order
  std::string body;
};

struct BufferedResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::string extra_headers;   // whole lines, each ending "\r\n"
};

// Called on the loop thread once per complete request. May throw: the client gets 500 and
// the connection closes.
using BufferedHandler = std::function<BufferedResponse(const BufferedRequest&)>;

// A factory for HttpServer::start that answers every request through `handler`: bodies over
// `max_body_bytes` get 413 and the connection closes; `Expect: 100-continue` gets its 100;
// the response carries Content-Type, Content-Length, Connection (keep-alive or close) and
// its extra headers, and no body when the request was HEAD.
HttpServer::HandlerFactory bufferedHandlers(BufferedHandler handler, size_t max_body_bytes);

}  // namespace lb
