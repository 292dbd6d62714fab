// Header rewriting at the proxy boundary (RFC 9110 §7.6.1): hop-by-hop headers stop here,
// X-Forwarded-For / X-Forwarded-Proto are added on the way up, Set-Cookie for a generated
// affinity cookie and the downstream Connection decision on the way down. Bodies are not
// touched: Content-Length and Transfer-Encoding pass unchanged with the body's own framing.
// Pure functions over a parsed head: unit-tested without sockets.
#pragma once

#include <cstddef>
#include <string_view>

#include "lb/http/parser.h"
#include "lb/core/http_fields.h"

namespace lb {

// A bounded writer into a fixed block; overflow() once anything did not fit.
class HeadWriter {
 public:
  HeadWriter(char* out, size_t cap) : out_(out), cap_(cap) {}
  void put(std::string_view s) noexcept;
  void putUint(uint64_t v) noexcept;
  size_t size() const noexcept { return len_; }
  bool overflow() const noexcept { return overflow_; }

 private:
  char* out_;
  size_t cap_;
  size_t len_ = 0;
  bool overflow_ = false;
};

// The tokens of a head's Connection headers ("close", "upgrade", "x-foo", ...), viewed in
// place. Headers named there are hop-by-hop too (RFC 9110 §7.6.1).
struct ConnectionTokens {
  static constexpr int kMax = 16;
  std::string_view tok[kMax];
  int count = 0;
  // More tokens than kMax: some header named for removal would not be known as such, so the
  // head cannot be rewritten faithfully and the writers below refuse it (return 0).
  bool overflow = false;
  bool has(std::string_view name) const noexcept;
};
ConnectionTokens connectionTokens(const ParsedHead& head, const char* base) noexcept;

// Hop-by-hop by definition (Connection, Keep-Alive, Proxy-Connection, TE, Trailer, Upgrade);
// Transfer-Encoding is not on the list: lb passes the body's framing through unchanged. Nor
// does a Connection header drop Content-Length, Transfer-Encoding or Host: the writers below
// keep those whatever Connection names.
bool isHopByHop(std::string_view name) noexcept;

// Fills the HttpRequestView the key plugins read; headers[] must hold head.header_count.
HttpRequestView requestView(const ParsedHead& head, const char* base, HttpHeader* headers) noexcept;

struct UpstreamRequestOptions {
  std::string_view client_ip;   // appended to X-Forwarded-For
  bool upgrade = false;         // keep Upgrade and send Connection: upgrade
};

// The request head sent to the backend: the request line as received (method, target,
// version), end-to-end headers, X-Forwarded-For (existing value + ", " + client),
// X-Forwarded-Proto: http, and for HTTP/1.0 "Connection: keep-alive" so the upstream
// connection can be pooled. Returns bytes written, 0 when it did not fit.
size_t writeUpstreamRequest(const ParsedHead& head, const char* base,
                            const UpstreamRequestOptions& opt, char* out, size_t cap) noexcept;

struct DownstreamResponseOptions {
  bool keep_alive = true;       // lb keeps the client connection after this response
  bool client_http10 = false;   // the client spoke HTTP/1.0: keep-alive must be explicit
  bool upgrade = false;         // a 101: keep Upgrade, send Connection: upgrade
  const GeneratedCookie* cookie = nullptr;   // Set-Cookie when set
};

// The response head sent to the client: the backend's status line, end-to-end headers,
// Set-Cookie for a generated affinity cookie, and lb's own Connection header. Returns bytes
// written, 0 when it did not fit.
size_t writeDownstreamResponse(const ParsedHead& head, const char* base,
                               const DownstreamResponseOptions& opt, char* out,
                               size_t cap) noexcept;

// A complete error response lb answers itself ("HTTP/1.1 503 Service Unavailable", a short
// text body, Connection: close). Static storage: no allocation.
std::string_view errorResponse(int status) noexcept;

}  // namespace lb
