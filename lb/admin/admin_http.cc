#include "lb/admin/admin_http.h"

#include "lb/core/address.h"
#include "lb/net/inherited_sockets.h"

namespace lb {

namespace {

// Every admin answer is live state: a cache between lb and its operator must not keep one.
constexpr char kNoStore[] = "Cache-Control: no-store\r\n";

}  // namespace

HttpServer* startAdminHttp(uv_loop_t* loop, const std::string& listen, AdminHandler handler,
                           std::function<void()> on_closed, std::string* error,
                           AdminLimits limits) {
  sockaddr_storage address;
  socklen_t len = 0;
  std::string why;
  if (!parseAddress(listen, &address, &len, &why, PortZero::kAllow)) {
    *error = "admin.listen: " + why;
    return nullptr;
  }
  HttpServerOptions options;
  // The admin socket of the lb this one replaced, or systemd's, is served rather than bound.
  options.fd = takeInheritedAdminSocket(reinterpret_cast<const sockaddr*>(&address), len);
  options.max_head_bytes = limits.max_request_bytes;
  options.max_connections = limits.max_connections;
  options.request_timeout_ms = limits.idle_timeout_ms;
  options.error_headers = kNoStore;
  auto answer = [handler = std::move(handler)](const AdminRequest& request) {
    AdminResponse r;
    if (request.method == "GET" || request.method == "HEAD") {
      r = handler(request);
    } else {
      r.status = 405;
      r.body = "method not allowed\n";
      r.extra_headers = "Allow: GET, HEAD\r\n";
    }
    r.extra_headers += kNoStore;
    return r;
  };
  HttpServer* server =
      HttpServer::start(loop, address, std::move(options),
                        bufferedHandlers(std::move(answer), limits.max_request_bytes),
                        std::move(on_closed), error);
  if (server == nullptr) *error = "admin.listen: " + *error;
  return server;
}

}  // namespace lb
