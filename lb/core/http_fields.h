// An HTTP request head as the key plugins, the proxy and the test origin see it: views into
// the bytes as received, and the lookups on them (a header, a cookie, a query parameter, the
// path). Pure functions on the caller's buffers: no allocation, no locks, no throw; a view
// is valid as long as the buffer it points into.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "lb/core/duration.h"

namespace lb {

struct HttpHeader {
  std::string_view name;    // as received; compare case-insensitively
  std::string_view value;
};

// A parsed request head, viewed in place in the session's buffer. Valid only during the call.
struct HttpRequestView {
  std::string_view method;
  std::string_view target;  // request-target as sent: /path?query
  std::span<const HttpHeader> headers;
};

// Where the cookie plugin writes a cookie it generated, for the session to send back as
// Set-Cookie. Fixed storage: generating one must not allocate.
struct GeneratedCookie {
  std::string_view name;          // the policy's cookie name (lives in the plugin)
  Duration ttl{0};
  char value[32];
  uint8_t value_len = 0;
  bool set = false;
};

// The value of the first header named `name` (case-insensitive) with leading and trailing
// spaces and tabs removed (RFC 9110 §5.5 OWS), or nullopt when no such header. A header that
// is present with an empty value yields an empty view: present, not absent.
std::optional<std::string_view> findHeader(const HttpRequestView& request,
                                           std::string_view name) noexcept;

// The value of cookie `name` in one Cookie header value ("a=b; c=d", RFC 6265 §4.2.1), with
// one pair of surrounding double quotes removed (RFC 6265 §4.1.1 allows a quoted value), or
// nullopt when absent. Cookie names are case-sensitive. The first occurrence wins.
std::optional<std::string_view> findCookie(std::string_view cookie_header,
                                           std::string_view name) noexcept;

// The value of query parameter `name` in a request-target ("/p?a=1&b=2"): the first
// occurrence wins; "?a" and "?a=" both give an empty value; a '#' fragment (which clients
// should not send, but some do) ends the query. Names compare exactly (case-sensitive) and
// nothing is percent-decoded: "?k=a%20b" yields "a%20b", and "?k%3D=1" does not match "k=".
// That keeps it allocation-free and matches what a cache keyed on the raw URL sees.
std::optional<std::string_view> findQueryParam(std::string_view target,
                                               std::string_view name) noexcept;

// The path of a request-target, without query or fragment and not percent-decoded:
// "/a/b?x=1" -> "/a/b". An absolute-form target ("http://host:80/a?x", RFC 9112 §3.2.2) gives
// its path ("/a", or "/" when it has none). "*" (OPTIONS) gives "*". Empty target -> empty.
std::string_view targetPath(std::string_view target) noexcept;

}  // namespace lb
