#include "lb/http/buffered_handler.h"

#include <exception>
#include <memory>

#include "lb/core/log.h"
#include "lb/core/strings.h"
#include "lb/http/status.h"

namespace lb {

namespace {

// One connection's handler: collects each request, then answers it in one write.
class Buffered final : public HttpHandler {
 public:
  Buffered(std::shared_ptr<const BufferedHandler> fn, size_t max_body)
      : fn_(std::move(fn)), max_body_(max_body) {}

  void onRequest(HttpServerConn& conn, const HttpRequestHead& head) override {
    if (head.contentLength() > max_body_) {
      conn.refuse(413);
      return;
    }
    req_ = BufferedRequest{};
    req_.method = head.method();
    std::string_view target = head.target();
    size_t q = target.find('?');
    req_.path = target.substr(0, q);
    if (q != std::string_view::npos) req_.query = target.substr(q + 1);
    for (uint32_t i = 0; i < head.headerCount(); ++i)
      req_.headers.emplace_back(head.headerName(i), head.headerValue(i));
    head_only_ = head.methodCode() == HTTP_HEAD;
    auto expect = head.header("expect");
    if (expect && equalsNoCase(*expect, "100-continue") && head.hasBody() &&
        head.httpMinor() >= 1)
      conn.write("HTTP/1.1 100 Continue\r\n\r\n");
  }

  void onBody(HttpServerConn& conn, std::string_view data) override {
    if (data.size() > max_body_ - req_.body.size()) {   // chunked: no length up front
      conn.refuse(413);
      return;
    }
    req_.body.append(data);
  }

  void onRequestComplete(HttpServerConn& conn) override {
    BufferedResponse r;
    try {
      r = (*fn_)(req_);
    } catch (const std::exception& e) {
      LB_WARN("http server: %s %s failed: %s", req_.method.c_str(), req_.path.c_str(), e.what());
      conn.refuse(500);
      return;
    }
    std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + reasonPhrase(r.status) +
                      "\r\nContent-Type: " + r.content_type +
                      "\r\nContent-Length: " + std::to_string(r.body.size()) +
                      "\r\nConnection: " + (conn.keepAlive() ? "keep-alive" : "close") +
                      "\r\n" + r.extra_headers + "\r\n";
    if (!head_only_) out += r.body;
    conn.write(std::move(out));
    conn.finish();
  }

 private:
  std::shared_ptr<const BufferedHandler> fn_;   // shared by every connection of the server
  size_t max_body_;
  BufferedRequest req_;
  bool head_only_ = false;
};

}  // namespace

HttpServer::HandlerFactory bufferedHandlers(BufferedHandler handler, size_t max_body_bytes) {
  auto fn = std::make_shared<const BufferedHandler>(std::move(handler));
  return [fn, max_body_bytes](HttpServerConn&) -> std::unique_ptr<HttpHandler> {
    return std::make_unique<Buffered>(fn, max_body_bytes);
  };
}

}  // namespace lb
